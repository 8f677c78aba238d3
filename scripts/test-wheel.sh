#!/usr/bin/env bash
# The install test (docs/install.md): installs the wheel from dist/ (built by `make dist` first when missing or
# older than the sources) and torch into a fresh venv outside the checkout, then runs tests/install/test_wheel.py
# against that venv: `graphmend` from its bin/, run from a temporary folder with no GRAPHMEND_* variables.
# GRAPHMEND_WHEEL=path.whl tests that wheel instead.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
TORCH_VERSION=2.13.0
start=$SECONDS

wheel="${GRAPHMEND_WHEEL:-}"
if [ -z "$wheel" ]; then
  wheel="$(ls -t dist/graphmend-*.whl 2>/dev/null | head -n 1 || true)"
  if [ -z "$wheel" ] || [ -n "$(find CMakeLists.txt pyproject.toml analysis protocol transforms server python \
                                   gpu-validator docs -type f -newer "$wheel" -not -path '*/__pycache__/*' \
                                   -print -quit)" ]; then
    echo "test-wheel: building the wheel (make dist)"
    make --no-print-directory dist
    wheel="$(ls -t dist/graphmend-*.whl | head -n 1)"
  fi
fi
wheel="$(cd "$(dirname "$wheel")" && pwd)/$(basename "$wheel")"
echo "test-wheel: $(basename "$wheel") ($((SECONDS - start))s)"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
venv="$tmp/venv"
python3 -m venv "$venv"
if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "torch==$TORCH_VERSION" "$wheel" \
  >"$tmp/pip.log" 2>&1; then
  cat "$tmp/pip.log" >&2
  exit 1
fi
echo "test-wheel: installed into a fresh venv ($((SECONDS - start))s)"

GRAPHMEND_INSTALLED_VENV="$venv" HF_HUB_OFFLINE=1 \
  "$root/.venv/bin/python" -m pytest -q -p no:cacheprovider "$root/tests/install"
echo "test-wheel: passed ($((SECONDS - start))s)"
