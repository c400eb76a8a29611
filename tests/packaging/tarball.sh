#!/bin/sh
# The relocatable tarball, unpacked into a random temp dir and run from another dir with no
# REASONIX_MCP_LUA_DIR: it finds the Lua tree beside it, answers initialize and tools/list, and its
# doctor passes with the pinned agent on PATH; it carries no path of the build tree, so with its Lua
# tree moved away it says so and where it looked instead of running another tree. usage: tarball.sh PACKAGES_DIR
# needs: agent
set -eu
. "$RMCP_SOURCE_DIR/tests/packaging/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
set -- "$1"/reasonix-mcp-"$RMCP_VERSION"-linux-*.tar.gz
{ [ $# -eq 1 ] && [ -f "$1" ]; } || fail "no single tarball: $*"
dest=$(mktemp -d "$work/unpacked.XXXXXX")
tar -C "$dest" -xzf "$1"
top=$(echo "$dest"/reasonix-mcp-*)
[ "$(ls "$top")" = "bin
share" ] || fail "the tarball holds more than bin/ and share/: $(ls "$top")"
unset REASONIX_MCP_LUA_DIR
private_homes "$work"
cd "$HOME"
lua_dir_is "$top/bin/reasonix-mcp" "$top/share/reasonix-mcp/lua"
mcp_probe "$top/bin/reasonix-mcp"
mkdir "$work/bin"  # the agent on PATH, where a user installs it (then a Codex registration finds it too)
ln -s "${REASONIX_BIN:-$RMCP_SOURCE_DIR/.agent/node_modules/@reasonix/cli-linux-x64/bin/reasonix}" "$work/bin/reasonix"
PATH=$work/bin:$PATH doctor_passes "$top/bin/reasonix-mcp"
no_process_from "$top"
grep -qF "$RMCP_SOURCE_DIR" "$top/bin/reasonix-mcp" && fail "the binary carries the build tree's path $RMCP_SOURCE_DIR"
mv "$top/share" "$work/share-moved"
if out=$("$top/bin/reasonix-mcp" --version 2>&1); then fail "ran with its Lua tree moved away: $out"; fi
printf '%s\n' "$out" | grep -qF "its Lua tree is missing: no $top/bin/../share/reasonix-mcp/lua/rmcp/main.lua" ||
  fail "with its Lua tree moved away it does not say so: $out"
echo "ok: no build path inside; without its Lua tree: $out"
