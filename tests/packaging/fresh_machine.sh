#!/bin/sh
# "On a fresh Debian 12 machine a user goes from nothing to a running fleet in their host": a fresh
# Debian 12 root (mmdebstrap's apt variant plus what every installed Debian has: ca-certificates,
# sudo, passwd; no container), a user in it, and exactly the commands that user types
# (tests/packaging/fresh_machine_root.sh): apt-get install the .deb, Node.js and npm from Debian,
# Claude Code from npm at the version tests/hosts/package.json pins, `reasonix-mcp setup claude
# --install-agent` (the agent from npm), then `claude -p` spawns an agent and watches it to its
# turn's end. Debian's archive and the npm registry are reached over the network; the two model APIs
# run on 127.0.0.1 outside the root, standing for the internet: Claude Code's
# (fresh_machine_api.mjs, the scripted model of tests/hosts) and the agent's
# (tests/provider/mock_provider.py). Prints the transcript: each command, its output trimmed, the
# wall time of each step and the total. Run as root (tests/packaging/README.md):
#   RMCP_SOURCE_DIR=. RMCP_BUILD_DIR=build RMCP_VERSION=0.1.0 sh tests/packaging/fresh_machine.sh build/packages
set -eu
. "$RMCP_SOURCE_DIR/tests/packaging/lib.sh"
deb=$1/reasonix-mcp_${RMCP_VERSION}_$(dpkg --print-architecture).deb
[ -f "$deb" ] || fail "no package $deb"
claude_version=$(sed -n 's/^ *"@anthropic-ai\/claude-code": *"\([^"]*\)".*/\1/p' "$RMCP_SOURCE_DIR/tests/hosts/package.json")
[ -n "$claude_version" ] || fail "tests/hosts/package.json pins no @anthropic-ai/claude-code"
work=$(mktemp -d "$RMCP_BUILD_DIR/packaging-fresh.XXXXXX")
trap 'kill ${provider_pid:-} ${api_pid:-} 2>/dev/null || true; rm -rf "$work"' EXIT
debian_root bookworm-machine.tar ca-certificates,sudo,passwd >&2
start_provider "fresh machine reply"
start_server node "$RMCP_SOURCE_DIR/tests/packaging/fresh_machine_api.mjs"
api_pid=$server_pid api_port=$server_port
mkdir "$root/pkgtest"
# the certificate authorities this machine trusts beyond Debian's (a site's TLS proxy): the fresh
# machine, on the same network, trusts them too (fresh_machine_root.sh installs them)
mkdir "$root/pkgtest/local-ca"
cp /usr/local/share/ca-certificates/*.crt "$root/pkgtest/local-ca/" 2>/dev/null || true
cp "$deb" "$RMCP_SOURCE_DIR/tests/packaging/lib.sh" "$RMCP_SOURCE_DIR/tests/packaging/fresh_machine_root.sh" "$root/pkgtest/"
# the root is made a mount point (bwrap needs / to be one) and apt's cache goes in: the .debs are
# downloaded once (the transcript's first run is the one a user's machine has)
# shellcheck disable=SC2016 # expanded by the inner sh
unshare --mount --pid --fork --mount-proc="$root/proc" sh -c '
  mount --rbind "$2" "$2" &&
  mount --bind "$1/apt-archives" "$2/var/cache/apt/archives" &&
  exec chroot "$2" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    sh /pkgtest/fresh_machine_root.sh "/pkgtest/${3##*/}" "$4" "$5" "$6"' \
  fresh-machine "$RMCP_BUILD_DIR/packaging-cache" "$root" "$deb" "$claude_version" "$provider_port" "$api_port"
kill "$api_pid"
wait "$api_pid" || fail "Claude Code's model did not see the agent end its turn (fresh_machine_api.mjs)"
