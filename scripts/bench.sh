#!/usr/bin/env bash
# Every benchmark, regenerating docs/benchmarks.md (each benchmark rewrites only its own section):
#   bash scripts/bench.sh [path/to/graphmend] [-- extra args for bench/hf/run.py]
# `make bench` runs it as `bash scripts/bench.sh build/graphmend`. BENCH_QUICK=1 runs the short subsets.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="${1:-$root/build/graphmend}"
shift || true
[ "${1:-}" = "--" ] && shift
case "$bin" in /*) ;; *) bin="$root/$bin" ;; esac
if [ ! -x "$bin" ]; then
  echo "bench: $bin is not an executable (build it first: make build)" >&2
  exit 2
fi
py="$root/.venv/bin/python"
export GRAPHMEND_BIN="$bin" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
quick=() speed=()
if [ "${BENCH_QUICK:-0}" = 1 ]; then quick=(--quick); speed=(--reps 3); fi

echo "== check speed (graphmend check vs ruff check on transformers' modeling files)"
"$py" bench/check_speed.py --graphmend "$bin" "${speed[@]}"

if [ -f bench/lsp_latency.py ]; then
  echo "== LSP latency"
  "$py" bench/lsp_latency.py  # finds the server through GRAPHMEND_BIN
fi

echo "== differential oracle (safe fixes against every observation: fixtures and generated forwards)"
"$py" bench/differential_oracle.py

echo "== Hugging Face models (break census, detection, fixes, outputs, timing)"
"$py" bench/hf/run.py --jobs "${BENCH_JOBS:-2}" "${quick[@]}" "$@"

echo "bench: wrote docs/benchmarks.md and bench/results/"
