#!/usr/bin/env bash
# `make demo`: graphmend on the bundled examples: findings, the fixes as a diff, and the proof that the
# fixed model compiles with fewer breaks and equal outputs (a quick validation with the eager backend),
# and that a fully fixed block deploys without Python (torch.export, AOTInductor, a C++ runner).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build/graphmend}"
cd "$root"

section() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

section "graphmend check examples/   (where torch.compile will break the graph, and why)"
"$bin" check examples/
section "graphmend check --statistics examples/"
"$bin" check --statistics examples/
section "graphmend check --diff examples/   (the safe fixes; nothing is written)"
"$bin" check --diff examples/
section "graphmend validate examples/gated_mlp.py::example --backend eager   (original vs fixed under torch.compile)"
"$bin" validate examples/gated_mlp.py::example --backend eager --repeats 3 --python "$root/.venv/bin/python"
status=$?
section "graphmend validate examples/deployable_block.py::example --deploy   (export, AOTInductor, C++: no Python)"
"$bin" validate examples/deployable_block.py::example --deploy --backend eager --repeats 1 --python "$root/.venv/bin/python"
deploy_status=$?
[ "$status" -eq 0 ] && status=$deploy_status
section "done"
echo "Apply the fixes in place with: $bin check --fix examples/"
echo "Full inductor timings: $bin validate examples/gated_mlp.py::example"
exit $status
