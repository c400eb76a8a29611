#!/usr/bin/env bash
# Installs what building and testing need and is missing: Debian packages (as root), the pinned
# reasonix agent from npm into .agent/, the e2e test clients into tests/e2e/node_modules, the MCP
# hosts the host tests drive (Claude Code, Codex CLI) into tests/hosts/node_modules and the
# benchmark's reference MCP server into bench/node_modules. clang and libclang-rt-14-dev (the
# libFuzzer runtime) build the fuzz targets of tests/fuzz; chromium is the browser the dashboard's
# tests drive (with playwright-core from tests/e2e); tzdata is the zoneinfo daily routines are
# scheduled in; openssh-server and -client carry the remote-agent test (its own sshd on 127.0.0.1);
# git makes the worktrees of isolate=worktree; bubblewrap is the sandbox agentd starts agents in
# (sandbox=workspace|strict).
set -euo pipefail
cd "$(dirname "$0")/.."

debs=(cmake make gcc pkg-config liblua5.4-dev lua-cjson lua-cjson-dev libuv1-dev lua-luv lua-luv-dev libhttp-parser-dev python3 valgrind procps
  clang libclang-rt-14-dev chromium tzdata openssh-server openssh-client git bubblewrap)
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
