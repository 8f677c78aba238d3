#!/usr/bin/env bash
# The pre-commit hooks (.pre-commit-hooks.yaml) run by pre-commit itself (pinned, in a venv of its own)
# against a scratch git repository, the way a project that adopts graphmend uses them: pre-commit
# installs graphmend from this checkout's HEAD commit with pip (a source build of the wheel, a few
# minutes), then
#   graphmend-check fails on a file with a graph break and names the rule;
#   graphmend-fix rewrites the file with the safe fix (pre-commit fails: files were modified);
#   graphmend-check then passes on the fixed file.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
PRE_COMMIT_VERSION=4.7.0
start=$SECONDS
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test-precommit: $*" >&2; [ -f "$tmp/out" ] && cat "$tmp/out" >&2; exit 1; }

python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q --disable-pip-version-check "pre-commit==$PRE_COMMIT_VERSION"
export PRE_COMMIT_HOME="$tmp/pre-commit-home"
pre_commit="$tmp/venv/bin/pre-commit"

repo="$tmp/project"
mkdir -p "$repo"
cd "$repo"
git init -q
git config user.email ci@example.invalid
git config user.name ci
cat >model.py <<'PY'
import torch
from torch import nn


class Block(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x + 1
        return x * 2


def example():
    return Block(), (torch.randn(2, 3),)
PY
git add model.py
git commit -qm "a model with a graph break"

# The hooks of this checkout's HEAD commit (uncommitted changes are not part of it): pre-commit builds
# graphmend once for that (repo, rev) and reuses it for every run below (try-repo would rebuild each time).
rev="$(git -C "$root" rev-parse HEAD)"
cat >.pre-commit-config.yaml <<YAML
repos:
  - repo: $root
    rev: $rev
    hooks:
      - id: graphmend-check
      - id: graphmend-fix
YAML
git add .pre-commit-config.yaml
git commit -qm "pre-commit configuration"

if "$pre_commit" run graphmend-check --all-files >"$tmp/out" 2>&1; then
  fail "graphmend-check passed on a file with a tensor-valued if in forward"
fi
grep -q "GM101" "$tmp/out" || fail "graphmend-check did not name GM101"
echo "test-precommit: graphmend-check reports the break ($((SECONDS - start))s, the first run builds graphmend)"

if "$pre_commit" run graphmend-fix --all-files >"$tmp/out" 2>&1; then
  fail "graphmend-fix passed although it rewrote model.py"
fi
grep -q "torch.where" model.py || fail "graphmend-fix did not apply the safe fix"
grep -q "files were modified by this hook" "$tmp/out" || fail "pre-commit did not see the rewrite"

"$pre_commit" run graphmend-check --all-files >"$tmp/out" 2>&1 || fail "graphmend-check fails on the fixed file"
echo "test-precommit: passed ($((SECONDS - start))s)"
