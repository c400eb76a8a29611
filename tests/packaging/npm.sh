#!/bin/sh
# The npm package, installed from its tarball (nothing published) into a private project and HOME,
# its dependency (the pinned agent) from npm's cache that scripts/install-deps.sh filled (the
# registry when it is not there): npm links the native binary itself as node_modules/.bin/reasonix-mcp
# (no Node.js shim), which finds its Lua tree through that symlink; `npx -y reasonix-mcp` (the
# command a host is given) answers initialize and tools/list; doctor through npx finds the agent the
# package brought, and so does the binary with no node_modules/.bin on PATH (beside its package);
# a spawn through `npx reasonix-mcp` against the offline provider ends its first turn.
# usage: npm.sh PACKAGES_DIR
# needs: npm python3
set -eu
. "$RMCP_SOURCE_DIR/tests/packaging/lib.sh"
unset REASONIX_BIN # (the agent must be the one the package brought, not the checkout's the test run names)
work=$(mktemp -d)
trap 'kill ${provider_pid:-} 2>/dev/null || true; rm -rf "$work"' EXIT
tgz=$1/reasonix-mcp-$RMCP_VERSION.tgz
[ -f "$tgz" ] || fail "no npm package $tgz"
npm_config_cache=$(npm config get cache)
reply="npm fleet reply"
private_homes "$work"
start_provider "$reply"
use_provider
export npm_config_cache npm_config_userconfig="$work/npmrc" npm_config_prefer_offline=true
mkdir "$work/project"
cd "$work/project"
npm install --no-audit --no-fund --loglevel=error "$tgz" || fail "npm install $tgz failed"
pkg=$work/project/node_modules/reasonix-mcp
[ "$(readlink -f node_modules/.bin/reasonix-mcp)" = "$(readlink -f "$pkg/bin/reasonix-mcp")" ] ||
  fail "node_modules/.bin/reasonix-mcp does not lead to the package's binary"
[ "$(head -c 4 "$pkg/bin/reasonix-mcp" | od -An -c | tr -d ' ')" = '177ELF' ] ||
  fail "the package's bin is not the native binary"
node -e 'const p = require(process.argv[1]); if (p.os.join() !== "linux" || p.cpu.length !== 1) process.exit(1)' \
  "$pkg/package.json" || fail "package.json lacks its os/cpu fields"
lua_dir_is node_modules/.bin/reasonix-mcp "$pkg/share/reasonix-mcp/lua"
mcp_probe npx -y reasonix-mcp
agent=$(readlink -f node_modules/@reasonix/cli-linux-x64/bin/reasonix) || fail "npm did not install the agent"
doctor_passes npx reasonix-mcp
printf '%s\n' "$out" | grep -q '^\[ok  \] agent binary ' || fail "doctor through npx does not find the agent"
out=$(env PATH=/usr/bin:/bin "$pkg/bin/reasonix-mcp" doctor 2>&1) || fail "doctor with no .bin on PATH failed: $out"
printf '%s\n' "$out" | grep '^\[ok  \] agent binary ' | grep -qF "$agent" ||
  fail "with no .bin on PATH doctor does not find the agent beside the package ($agent): $out"
echo "ok: with no node_modules/.bin on PATH the binary finds the agent beside its package"
spawn_and_watch npx reasonix-mcp
no_process_from "$(readlink -f "$pkg")"
