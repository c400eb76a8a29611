#!/usr/bin/env bash
# The main job: installs what it is missing (scripts/install-deps.sh --demo: not the test tools),
# builds, and runs the demo orchestrator — a small fleet of real reasonix agents driven through the
# MCP server (offline provider unless one is configured).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --demo
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
export REASONIX_BIN="${REASONIX_BIN:-$PWD/.agent/node_modules/@reasonix/cli-linux-x64/bin/reasonix}"
exec build/reasonix-mcp script examples/demo_fleet.lua
