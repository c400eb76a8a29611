#!/usr/bin/env bash
# The test command: installs what is missing, then builds and runs every test twice — a normal
# build and an ASan+UBSan build; the normal build's ctest also runs the C unit tests under valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

jobs=$(nproc)
export REASONIX_BIN="${REASONIX_BIN:-$PWD/.agent/node_modules/@reasonix/cli-linux-x64/bin/reasonix}"

echo "== build: normal"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
echo "== build: asan+ubsan"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DRMCP_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"

# What a build's run skipped: test files whose agent, provider or client is missing, which
# tests/support/needs.sh skips only with RMCP_TEST_ALLOW_SKIP=1 (without it they fail the run).
skips() {
  log="$1/Testing/Temporary/LastTest.log"
  n=$(grep -c '^# skipped file:' "$log" 2>/dev/null || true)
  if [ "${n:-0}" -gt 0 ]; then
    cases=$(grep -oE '^# skipped file: .*, [0-9]+ case' "$log" | grep -oE '[0-9]+ case$' | awk '{s += $1} END {print s + 0}')
    echo "== $1: SKIPPED $cases case(s) in $n test file(s):"
    grep '^# skipped file:' "$log" | sed 's/^# skipped file: /   /'
  fi
}

status=0
echo "== tests: asan+ubsan build"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j2 || status=1
skips build-asan
echo "== tests: normal build"
ctest --test-dir build --output-on-failure -j2 || status=1
skips build
exit $status
