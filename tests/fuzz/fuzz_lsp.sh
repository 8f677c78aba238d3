#!/usr/bin/env bash
# Fuzz the language server's framing and dispatch with libFuzzer (tests/fuzz/fuzz_lsp_framing.cpp):
# builds the target with clang (ASan + libFuzzer coverage) and runs it for RUNS inputs or SECONDS,
# seeded from the messages of every tests/lsp/transcripts/*.txt (framed as the transcript sends them)
# and tests/fuzz/lsp_regressions/, plus the corpus earlier runs grew. A failure stops the run and
# leaves the input in $build/artifacts-lsp/; copy it to tests/fuzz/lsp_regressions/ so
# tests/fuzz/test_lsp_fuzz_regressions.py keeps it fixed.
#   bash tests/fuzz/fuzz_lsp.sh [RUNS] [SECONDS]   # default 20000 inputs, no time limit
#   bash tests/fuzz/fuzz_lsp.sh 0 120              # two minutes (RUNS 0: no limit on inputs)
# GRAPHMEND_FUZZ_BUILD picks the build folder (default build-fuzz, shared with scripts/fuzz.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
runs="${1:-20000}"
[ "$runs" = 0 ] && runs=-1
seconds="${2:-0}"
build="${GRAPHMEND_FUZZ_BUILD:-$root/build-fuzz}"
cd "$root"

flags="-fsanitize=address,fuzzer-no-link -fno-omit-frame-pointer"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DGRAPHMEND_FUZZ=ON -DGRAPHMEND_WERROR=OFF -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >/dev/null
fi
cmake --build "$build" --target graphmend_fuzz_lsp_framing -j "${JOBS:-$(nproc)}"

seeds="$(mktemp -d)"
trap 'rm -rf "$seeds"' EXIT
# One seed per transcript: a first byte of 0 (the stream in one read), then what the transcript sends.
python3 - "$root/tests/lsp" "$seeds" <<'PY'
import json, os, sys
sys.path.insert(0, sys.argv[1])
import transcript

for name in sorted(os.listdir(os.path.join(sys.argv[1], "transcripts"))):
    if not name.endswith(".txt"):
        continue
    with open(os.path.join(sys.argv[1], "transcripts", name), encoding="utf-8") as handle:
        steps = transcript.parse_transcript(handle.read())
    variables, stream = {}, bytearray(b"\0")
    for kind, a, b in steps:
        if kind == "text":
            variables[a] = b
        elif kind == "let":
            variables[a] = eval(b, {"__builtins__": {}}, dict(variables))  # noqa: S307 - our own transcripts
        elif kind == "send":
            text = a.replace("${ROOT_URI}", "file:///w").replace("${ROOT}", "/w")
            stream += transcript.frame(transcript.substitute(json.loads(text), variables))
        elif kind == "raw":
            stream += a
    if len(stream) <= 16384:
        with open(os.path.join(sys.argv[2], name[:-4] + ".input"), "wb") as handle:
            handle.write(stream)
PY
if [ -d tests/fuzz/lsp_regressions ]; then cp tests/fuzz/lsp_regressions/*.input "$seeds"/ 2>/dev/null || true; fi
mkdir -p "$build/corpus-lsp" "$build/artifacts-lsp"

# Exit 0 when every input passed; libFuzzer's own exit status otherwise (the reproducer is in artifacts-lsp/).
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" "$build/tests/fuzz/graphmend_fuzz_lsp_framing" \
  -runs="$runs" -max_total_time="$seconds" -seed="${FUZZ_SEED:-1}" -max_len=16384 -timeout=10 -rss_limit_mb=4096 \
  -dict="$root/tests/fuzz/lsp.dict" -artifact_prefix="$build/artifacts-lsp/" -print_final_stats=1 \
  "$build/corpus-lsp" "$seeds"
