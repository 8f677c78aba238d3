#!/usr/bin/env bash
# Creates .venv-libs (git-ignored) for bench/libs: torch 2.14.1 + torchvision 0.29.1 and the libraries under
# test, pinned. Idempotent: a venv that already imports every pinned version is left as it is.
#
# Why torch 2.14.1 and not the project's torch 2.13.0+cpu (.venv): the torchvision wheel on PyPI for 2.13 is
# built against the CUDA torch and does not load its C++ ops (torchvision::nms, roi_align, ...) against the
# CPU 2.13 wheel, so the detection models cannot run there. torch 2.14.1 and torchvision 0.29.1 are CUDA
# builds from pip's configured extra index; they run on the CPU (no GPU is needed or used).
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${VENV_LIBS:-.venv-libs}
PINS=(torch==2.14.1 torchvision==0.29.1 timm==1.0.31 diffusers==0.42.1 torch-geometric==2.8.1 kornia==0.9.0
      numpy==2.2.6 matplotlib==3.10.9)
check() {
  "$VENV/bin/python" - "${PINS[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    if version(name) != want:
        sys.exit(1)
PY
}
if [ -x "$VENV/bin/python" ] && check; then
  echo "$VENV: up to date"
  exit 0
fi
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q "${PINS[@]}"
check && echo "$VENV: ready"
