#!/usr/bin/env bash
# The rule facts on the newest supported torch (docs/torch-versions.md): a venv with torch 2.15.0 from PyPI (a
# CUDA build, run on the CPU; the project's .venv keeps 2.13.0), then the Dynamo oracle's rule fixtures, the fix
# oracle, the dropped-call check, the torch-fact tests, the speculation table and the runtime-operator fixes
# (raise-in-graph, check-in-graph, log-in-graph, in-graph print) against it (with transformers
# 5.17.0 for the fixtures that use it). Run by scripts/test.sh; GRAPHMEND_SKIP_NEWEST_TORCH=1 skips it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
venv="$root/.cache/venv-torch-2.15.0"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import torch, numpy, pytest, xdist, transformers" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  # the project's pip constraint caps torch at the CPU build's release: this venv takes PyPI's newest
  PIP_CONSTRAINT=/dev/null "$venv/bin/pip" install -q --disable-pip-version-check \
    "torch==2.15.0" "numpy==2.2.6" "pytest==8.3.4" "pytest-xdist==3.6.1" "transformers==5.17.0"
fi
"$venv/bin/python" -c 'import torch; print("torch", torch.__version__)'
# one worker per core, a test file per worker (files share module-level fixtures)
"$venv/bin/python" -m pytest -q -p no:cacheprovider -n "$(nproc)" --dist loadfile \
  tests/oracle/test_oracle.py tests/oracle/test_fixture_markers.py tests/oracle/test_fix_oracle.py \
  tests/oracle/test_dropped_calls.py tests/oracle/test_speculation_ops.py tests/oracle/test_torch_facts_breaks.py \
  tests/oracle/test_torch_facts_deferral.py tests/oracle/test_torch_facts_loops.py tests/oracle/test_torch_facts_fixes.py \
  tests/oracle/test_raise_in_graph.py tests/oracle/test_check_in_graph.py tests/oracle/test_log_in_graph.py tests/oracle/test_print_in_graph.py
