#!/usr/bin/env bash
# Every benchmark, regenerating docs/benchmarks.md (each benchmark rewrites only its own section):
#   bash scripts/bench.sh [path/to/graphmend] [-- extra args for bench/hf/run.py]
# `make bench` runs it as `bash scripts/bench.sh build/graphmend`. BENCH_QUICK=1 runs the short subsets.
# The Hugging Face benchmark runs two corpora: the transformers of .venv, then the GraphMend paper's rows on
# transformers 4.52.4 (bench/hf/run.py --corpus paper-4.52.4, workers in .venv-tf452, created here when
# missing; BENCH_PAPER=0 skips it). Extra args go to the first corpus only.
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

echo "== pathological inputs (long elif, and, + chains) against ruff"
"$py" bench/pathological.py --graphmend "$bin"

echo "== memory on the largest input"
"$py" bench/memory.py --graphmend "$bin"

echo "== differential oracle (safe fixes against every observation: fixtures and generated forwards)"
"$py" bench/differential_oracle.py

echo "== model zoo throughput (validate --all: local pool vs Ray, same workers)"
"$py" bench/zoo_throughput.py --graphmend "$bin" --jobs "${BENCH_JOBS:-2}"

echo "== Hugging Face models (break census, detection, fixes, outputs, timing)"
"$py" bench/hf/run.py --jobs "${BENCH_JOBS:-2}" "${quick[@]}" "$@"

if [ "${BENCH_PAPER:-1}" != 0 ]; then
  echo "== Hugging Face models, the GraphMend paper's rows on transformers 4.52.4 (its flags; timing of the rows that reach one graph)"
  if [ ! -x "$root/.venv-tf452/bin/python" ]; then
    python3 -m venv "$root/.venv-tf452"
    "$root/.venv-tf452/bin/pip" install torch==2.13.0 numpy==2.2.6 transformers==4.52.4 matplotlib==3.10.9
  fi
  "$py" bench/hf/run.py --corpus paper-4.52.4 --python "$root/.venv-tf452/bin/python" --timing-count 10 \
    --timing-budget 2400 --jobs "${BENCH_JOBS:-2}" "${quick[@]}"
fi

echo "bench: wrote docs/benchmarks.md and bench/results/"
