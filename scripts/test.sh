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

status=0
echo "== tests: asan+ubsan build"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j2 || status=1
echo "== tests: normal build"
ctest --test-dir build --output-on-failure -j2 || status=1
exit $status
