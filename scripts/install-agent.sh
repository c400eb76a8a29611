#!/usr/bin/env bash
# Installs the pinned real agent (npm reasonix@1.38.11) into the git-ignored .agent/ so the e2e
# tests run the exact binary whose wire behaviour shared/reasonix-acp-notes.md measured.
# Idempotent: does nothing when the binary is there and reports the pinned version.
# Prints the binary's path on stdout (progress goes to stderr).
set -euo pipefail
cd "$(dirname "$0")/.."

version=1.38.11
bin="$PWD/.agent/node_modules/@reasonix/cli-linux-x64/bin/reasonix"

have() { [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null)" = "reasonix v$version" ]; }

if ! have; then
  command -v npm >/dev/null || { echo "install-agent: npm not found (apt-get install npm)" >&2; exit 1; }
  echo "install-agent: npm install reasonix@$version into .agent/" >&2
  mkdir -p .agent
  npm install --prefix .agent --no-audit --no-fund --loglevel=error "reasonix@$version" >&2
  have || { echo "install-agent: $bin missing or not v$version after install" >&2; exit 1; }
fi
echo "$bin"
