#!/bin/sh
# The npm package, installed from its tarball (nothing published) into a private project, npm cache
# and HOME: npm links the native binary itself as node_modules/.bin/reasonix-mcp (no Node.js shim),
# which finds its Lua tree through that symlink, and `npx -y reasonix-mcp` (the command a host is
# given) answers initialize and tools/list. usage: npm.sh PACKAGES_DIR
# needs: npm
set -eu
. "$RMCP_SOURCE_DIR/tests/packaging/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tgz=$1/reasonix-mcp-$RMCP_VERSION.tgz
[ -f "$tgz" ] || fail "no npm package $tgz"
private_homes "$work"
export npm_config_cache="$work/npm-cache" npm_config_userconfig="$work/npmrc" npm_config_offline=true
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
no_process_from "$(readlink -f "$pkg")"
