"""Property: every safe fix graphmend applies to a small random `forward` keeps every observation.

The programs come from generator.py (an if/else, an else-less if, an early return, a ternary, a raise
guard or an elif chain over tests and values, harmless and hazardous, drawn from catalogs); each is fixed
with `graphmend check --fix` (safe fixes only) and, when the file changed, judged by differential.py's
`compare_files` on its input battery plus the program's `inputs()`. A program no safe fix changes is
vacuous (hypothesis event "no safe fix"; `--hypothesis-show-statistics` shows the counts).

Bounded and reproducible: GRAPHMEND_GENERATED_EXAMPLES examples (default 30), derandomized, no example
database. Shrinking is off: one comparison takes seconds and the programs are a few lines already.
`bench/differential_oracle.py` runs the same generator on more programs.
"""
from __future__ import annotations

import os
import random

from hypothesis import HealthCheck, Phase, event, given, settings

from differential import compare_files
from generator import CONSTRUCTS, check, programs, random_program, render

EXAMPLES = int(os.environ.get("GRAPHMEND_GENERATED_EXAMPLES", "30"))


@settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck), phases=(Phase.explicit, Phase.generate))
@given(program=programs())
def test_generated_safe_fix_keeps_every_observation(program, tmp_path_factory):
    result = check(program, tmp_path_factory.mktemp("generated"))
    if not result.changed:
        event("no safe fix")
        return
    event(f"safe fix: {program.construct}")
    event(f"safe fix on: {program.label}")
    assert result.cases > 0
    assert not result.differences, result.report()


def test_generator_reaches_safe_fixes(tmp_path):
    """Not vacuous: over a fixed sample, every construct occurs and some programs get a safe fix (graphmend
    only, no comparison: cheap)."""
    from differential import graphmend_fix

    rng = random.Random(0)
    seen, fixed = set(), 0
    for i in range(150):
        program = random_program(rng)
        seen.add(program.construct)
        src, dest = tmp_path / f"p{i}.py", tmp_path / f"p{i}_fixed.py"
        src.write_text(program.source, encoding="utf-8")
        fixed += graphmend_fix(src, dest)
    assert seen == set(CONSTRUCTS)
    # Most draws mix an input into the result, which aliasing (an input returned itself) or dtypes make unsafe.
    assert fixed >= 3, f"only {fixed} of 150 generated programs got a safe fix"


def test_oracle_rejects_a_wrong_fix(tmp_path):
    """The property can fail: a hand-written wrong fix (both branches evaluated, the tensor test fed to
    torch.where; with a bool x, `x - 1` raises and the original took the other branch) is caught."""
    original = tmp_path / "original" / "generated.py"
    fixed = tmp_path / "fixed" / "generated.py"
    original.parent.mkdir()
    fixed.parent.mkdir()
    original.write_text(render(["if x.sum() > 0:", "    a = x + 1", "else:", "    a = x - 1", "return a"]))
    fixed.write_text(render(["a = torch.where(x.sum() > 0, x + 1, x - 1)", "return a"]))
    result = compare_files(original, fixed)
    assert result.cases > 0
    assert result.differences, "the oracle accepted a fix that raises for bool inputs"
    assert any(d.startswith("bool,") for d in result.differences), result.differences
