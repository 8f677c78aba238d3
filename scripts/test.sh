#!/usr/bin/env bash
# Every test: C++ unit and transcript tests (ctest), then the Python suites (oracle, validator, bench
# harness, editor end-to-end) under pytest with the project's .venv, the oracle's rule suites on the newest
# torch (scripts/test-newest-torch.sh; GRAPHMEND_SKIP_NEWEST_TORCH=1 skips it), then the pip wheel installed in a fresh
# venv (scripts/test-wheel.sh) and the pre-commit hooks (scripts/test-precommit.sh; GRAPHMEND_SKIP_WHEEL=1
# skips both), then the VS Code client's tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="$(cd "${1:-build}" && pwd)"
export GRAPHMEND_BIN="$build/graphmend"
export HF_HUB_OFFLINE=1

echo "== format (clang-format 14, .clang-format)"
bash "$root/scripts/check-format.sh"

echo "== ctest"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"

echo "== fuzz (short run; \`make fuzz\` runs a million inputs)"
bash "$root/scripts/fuzz.sh" 2000 45

echo "== pytest"
# one worker per core (pytest-xdist), a test file per worker: files share module-level fixtures (the zoo's run)
"$root/.venv/bin/python" -m pytest -q -p no:cacheprovider -n "$(nproc)" --dist loadfile tests

if [ "${GRAPHMEND_SKIP_NEWEST_TORCH:-0}" != 1 ]; then
  echo "== newest torch (2.15.0): rule fixtures, fix oracle, dropped calls, speculation table"
  bash "$root/scripts/test-newest-torch.sh"
fi

if [ "${GRAPHMEND_SKIP_WHEEL:-0}" != 1 ]; then
  echo "== wheel (make dist when stale, pip install into a fresh venv, run it outside the checkout)"
  bash "$root/scripts/test-wheel.sh"
  echo "== pre-commit hooks (pinned pre-commit on a scratch repository; builds graphmend from HEAD)"
  bash "$root/scripts/test-precommit.sh"
fi

if [ -f "$root/clients/vscode/package.json" ]; then
  echo "== vscode client"
  (cd "$root/clients/vscode" && { [ -d node_modules ] || npm ci --no-audit --no-fund --silent; } && npm test --silent)
fi
