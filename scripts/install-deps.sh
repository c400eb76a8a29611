#!/usr/bin/env bash
# Installs what is missing, for one of two jobs:
#   scripts/install-deps.sh          the tests (scripts/test.sh): everything below
#   scripts/install-deps.sh --demo   the demo (scripts/demo.sh): building, and running the demo fleet
# The demo needs the build's Debian packages, what the product runs (git for worktrees, bubblewrap
# for sandboxes, tzdata for routines' time zones), python3 (its offline provider runs on it), Node.js
# and npm, and the pinned reasonix agent from npm into .agent/. The tests add: valgrind (the unit tests
# under it), procps; clang and libclang-rt-14-dev (the libFuzzer runtime) for tests/fuzz; chromium,
# the browser the dashboard's tests drive (with playwright-core from tests/e2e); tzdata, the zoneinfo
# daily routines are scheduled in; openssh-server and -client for the remote-agent test (its own sshd
# on 127.0.0.1); git, which makes the worktrees of isolate=worktree; bubblewrap, the sandbox agentd
# starts agents in (sandbox=workspace|strict); dpkg-dev (dpkg-shlibdeps, for the .deb's Depends) and
# mmdebstrap (the fresh Debian root the .deb is installed in) for tests/packaging; the built-in ACP
# agents; the e2e test clients into tests/e2e/node_modules, the MCP hosts the host tests drive
# (Claude Code, Codex CLI) into tests/hosts/node_modules and the benchmark's reference MCP server
# into bench/node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."

debs=(cmake make gcc pkg-config liblua5.4-dev lua-cjson lua-cjson-dev libuv1-dev lua-luv lua-luv-dev libhttp-parser-dev python3
      git bubblewrap tzdata) # (the last three: what the product runs, as the .deb's Depends)
case "${1:-}" in
  --demo) job=demo ;;
  "") job=test
    debs+=(valgrind procps clang libclang-rt-14-dev chromium openssh-server openssh-client dpkg-dev mmdebstrap) ;;
  *) echo "usage: scripts/install-deps.sh [--demo]" >&2; exit 2 ;;
esac
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing packages: ${missing[*]} — run as root (or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

scripts/install-agent.sh
[ "$job" = test ] || exit 0
scripts/install-agent.sh codex gemini opencode   # the built-in ACP agents the tests run (claude comes with tests/e2e)

# The Node packages: the e2e test clients, the pinned hosts, and the benchmark's reference MCP
# server (bench/README.md).
for dir in tests/e2e tests/hosts bench; do
  [ -f "$dir/package.json" ] || continue
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package.json" -nt "$dir/node_modules" ]; then
    if [ -f "$dir/package-lock.json" ]; then
      npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
    else
      npm install --prefix "$dir" --no-audit --no-fund --loglevel=error
    fi
    touch "$dir/node_modules"
  fi
done
