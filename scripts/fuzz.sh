#!/usr/bin/env bash
# Fuzz check and fix with libFuzzer: builds build-fuzz with clang (ASan + libFuzzer coverage) and runs
# tests/fuzz/fuzz_check_fix.cpp for RUNS inputs (default 20000), seeded from tests/fixtures (copied at
# run time) plus the corpus earlier runs grew in build-fuzz/corpus. A crash, sanitizer report, parse
# failure or idempotence failure stops the run and leaves the input in build-fuzz/artifacts/; copy it to
# tests/fuzz/regressions/ so tests/fuzz/test_fuzz_regressions.py keeps it fixed.
#   bash scripts/fuzz.sh [RUNS] [SECONDS]   # stops after RUNS inputs or SECONDS (0: no time limit)
#   bash scripts/fuzz.sh 2000 45            # short run (make test / CI)
#   bash scripts/fuzz.sh 1000000            # long run (make fuzz)
# GRAPHMEND_FUZZ_EACH_FIX=1 also checks that every offered fix, applied alone, leaves a file that parses.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-20000}"
seconds="${2:-0}"
build="${GRAPHMEND_FUZZ_BUILD:-$root/build-fuzz}"
cd "$root"

flags="-fsanitize=address,fuzzer-no-link -fno-omit-frame-pointer"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DGRAPHMEND_FUZZ=ON -DGRAPHMEND_WERROR=OFF -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >/dev/null
fi
cmake --build "$build" --target graphmend_fuzz_check_fix -j "${JOBS:-$(nproc)}"

seeds="$(mktemp -d)"
trap 'rm -rf "$seeds"' EXIT
for dir in tests/fixtures tests/fuzz/regressions; do
  [ -d "$dir" ] || continue
  find "$dir" -type f \( -name '*.py' -o -name '*.crash' -o -name '*.input' \) | while read -r f; do
    cp "$f" "$seeds/$(echo "$f" | tr '/' '_')"
  done
done
mkdir -p "$build/corpus" "$build/artifacts"

# Exit 0 when every input passed; libFuzzer's own exit status otherwise (the reproducer is in artifacts/).
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" "$build/tests/fuzz/graphmend_fuzz_check_fix" \
  -runs="$runs" -max_total_time="$seconds" -seed="${FUZZ_SEED:-1}" -max_len=8192 -timeout=10 -rss_limit_mb=4096 \
  -dict="$root/tests/fuzz/python.dict" -artifact_prefix="$build/artifacts/" -print_final_stats=1 \
  "$build/corpus" "$seeds"
