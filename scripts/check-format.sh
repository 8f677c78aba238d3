#!/usr/bin/env bash
# The C++ sources must be formatted as `make format` (this script with --fix) leaves them (.clang-format:
# Google, 120 columns).
# Pinned to clang-format 14, Debian 12's, which scripts/setup.sh installs there: another version formats
# some constructs differently, so with none of version 14 the check says so and passes.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
formatter="$(command -v clang-format-14 || true)"
if [ -z "$formatter" ]; then
  echo "check-format: clang-format-14 not installed: skipped (Debian 12: apt-get install clang-format-14)"
  exit 0
fi
mapfile -t files < <(git ls-files 'analysis/*.cpp' 'analysis/*.h' 'transforms/*.cpp' 'transforms/*.h' 'protocol/*.cpp' \
  'protocol/*.h' 'server/*.cpp' 'server/*.h' 'tests/*.cpp' 'tests/*.h' | grep -v '/generated/')
if [ "${1:-}" = --fix ]; then
  "$formatter" --style=file -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$formatter" --style=file --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "check-format: ${#bad[@]} file(s) are not formatted (run make format):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
