#!/usr/bin/env bash
# The test command: installs what is missing, then builds and runs the tests twice — a normal
# build (every test) and an ASan+UBSan build (all but the real hosts and the tests of ACP agents
# other than reasonix or of the browser, CMakeLists.txt rmcp_labels: the C paths they take are the
# ones the other tests take there, and leaving them out keeps CI well under 30 minutes); the normal
# build's ctest also runs the C unit tests under valgrind and builds and installs the packages
# (tests/packaging: a fresh Debian 12 root for the .deb).
# A third build (clang, libFuzzer) runs each fuzz target shortly over its seed corpus (tests/fuzz).
# Ends with a quick benchmark run whose result is reported, never counted (bench/README.md).
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
echo "== build: fuzz (clang + libFuzzer)"
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRMCP_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz

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
  ctest --test-dir build-asan --output-on-failure -j2 -LE 'hosts|other-agents|browser' || status=1
skips build-asan
echo "== tests: normal build"
ctest --test-dir build --output-on-failure -j2 || status=1
skips build
echo "== tests: fuzz (short runs over tests/fuzz/corpus; a crash fails the run)"
ctest --test-dir build-fuzz -L fuzz --output-on-failure -j2 || status=1

# The benchmark, short and report-only: timings depend on the host, so a FAIL mark does not fail
# the run; a crash (2), a missing dependency (3) or a process left behind (1) is said loudly.
echo "== bench (report only)"
bench=0
build/reasonix-mcp script bench/run.lua --quick || bench=$?
case $bench in
  0) ;;
  1) echo "== bench: a process was left behind (see the ! lines above) — report only" ;;
  2) echo "== bench: CRASHED (exit 2; see the ! lines above) — report only" ;;
  3) echo "== bench: a dependency is MISSING (exit 3; rows skipped) — run scripts/install-deps.sh" ;;
  *) echo "== bench: exit $bench — report only" ;;
esac
exit $status
