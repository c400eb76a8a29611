#!/usr/bin/env bash
# Installs the pinned agents into the git-ignored .agent/ beside this checkout.
#   scripts/install-agent.sh            reasonix (npm, the version lua/rmcp/config.lua's AGENT_PACKAGE
#                                       pins), the default agent, whose wire behaviour
#                                       shared/reasonix-acp-notes.md measured
#   scripts/install-agent.sh NAME…      the built-in ACP agents named (claude, codex, gemini, opencode:
#                                       lua/rmcp/rules/agents/NAME.lua), each from its pinned lock in
#                                       scripts/agents/NAME/ (its package.json names the binary:
#                                       "agent_bin") into .agent/NAME/ (agentd finds it there)
# Idempotent: an agent already installed from the same lock is left as it is. Prints each binary's
# path on stdout (progress goes to stderr).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v npm >/dev/null || { echo "install-agent: npm not found (apt-get install npm)" >&2; exit 1; }

# reasonix, pinned.
install_reasonix() {
  local version
  version=$(sed -n 's/^M.AGENT_PACKAGE = "reasonix@\([^"]*\)"$/\1/p' lua/rmcp/config.lua)
  [ -n "$version" ] || { echo "install-agent: no AGENT_PACKAGE pin in lua/rmcp/config.lua" >&2; exit 1; }
  local bin="$PWD/.agent/node_modules/@reasonix/cli-linux-x64/bin/reasonix"
  have() { [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null)" = "reasonix v$version" ]; }
  if ! have; then
    echo "install-agent: npm install reasonix@$version into .agent/" >&2
    mkdir -p .agent
    npm install --prefix .agent --no-audit --no-fund --loglevel=error "reasonix@$version" >&2
    have || { echo "install-agent: $bin missing or not v$version after install" >&2; exit 1; }
  fi
  echo "$bin"
}

# Built-in agent $1, from scripts/agents/$1's lock.
install_named() {
  local name=$1 src="scripts/agents/$1" dir="$PWD/.agent/$1"
  [ -f "$src/package-lock.json" ] || { echo "install-agent: no agent $name (scripts/agents/ has: $(ls scripts/agents | tr '\n' ' '))" >&2; exit 2; }
  local bin
  bin=$(sed -n 's/^ *"agent_bin": *"\([^"]*\)".*/\1/p' "$src/package.json")
  if ! cmp -s "$src/package-lock.json" "$dir/package-lock.json" || [ ! -x "$dir/node_modules/.bin/$bin" ]; then
    echo "install-agent: npm ci $name into .agent/$name/" >&2
    mkdir -p "$dir"
    cp "$src/package.json" "$src/package-lock.json" "$dir/"
    npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >&2
  fi
  [ -x "$dir/node_modules/.bin/$bin" ] || { echo "install-agent: $dir/node_modules/.bin/$bin missing after install" >&2; exit 1; }
  echo "$dir/node_modules/.bin/$bin"
}

if [ $# -eq 0 ]; then install_reasonix; fi
for name in "$@"; do
  if [ "$name" = reasonix ]; then install_reasonix; else install_named "$name"; fi
done
