"""Small random `forward`s for the differential oracle (tests/differential/test_generated.py and
bench/differential_oracle.py).

A program is one module file: `Model.forward(self, x, y)` with an optional prelude statement, one
data-dependent construct (an if/else, an else-less if, an early return, a ternary, a raise guard or an elif
chain) over tests and values drawn from the catalogs below, and a return; plus `example()` and an `inputs()`
battery (other shapes, empty and 0-d tensors, bool/int64/uint8/int8/float16, NaN and inf, a `y` that does not broadcast).
The catalogs mix harmless values with hazardous ones: values that raise on some inputs (`x.mean()` of an
int64 tensor, `x // y` by zero, `x.view(2, 6)`, `torch.cat`), that change shape or dtype against the other
branch (`x.mean()`, `x[0]`, `x.to(torch.float16)`), that consume the RNG (`torch.rand_like`, dropout) or that
leave the tensor world (`x.sum().item()`). A safe fix must keep every observation on all of them.

`build(choose)` is the one generator: `choose(options)` picks one element of a sequence. The hypothesis
strategy `programs()` passes `draw(sampled_from(...))`; `random_program(rng)` passes `rng.choice`.
"""
from __future__ import annotations

import ast
import dataclasses
import random
from pathlib import Path
from typing import Callable, Sequence

TESTS: tuple[str, ...] = (
    "x.sum() > 0",
    "x.mean() > 0",
    "x.max() > 0.5",
    "x.abs().min() < 0.1",
    "(x + y).sum() > 0",
    "x[0].sum() > 0",
    "torch.isnan(x).any()",
    "x.sum() > 0 and y.sum() > 0",
    "not (x.min() < -1)",
    "x.sum()",  # not a bool
    "y.mean() < 0",
    "(x * y).sum() >= 0",
)

VALUES: tuple[str, ...] = (
    "x + 1", "x - 1", "x * 2", "x / 2", "-x", "x", "y", "x + y", "x * y", "x / y", "x // y", "x ** 2",
    "x.abs()", "x.exp()", "x.log()", "torch.relu(x)", "F.gelu(x)", "x.mean()", "x.max()",
    "x.sum(-1, keepdim=True)", "x[:, :1]", "x[0]", "x.view(2, 6)", "x.reshape(-1)", "x.t()",
    "torch.cat([x, y])", "x.to(torch.float16)", "x.float()", "x.clamp(-1, 1)", "x.clamp(0, 300)",
    "x.clamp(max=-1)", "torch.where(x > 0, x, y)",
    "torch.zeros_like(x)", "self.proj(x)", "torch.dropout(x, 0.5, True)", "torch.rand_like(x)",
    "x.sum().item()",
)

# (statement, extra values it makes available)
PRELUDES: tuple[tuple[str | None, tuple[str, ...]], ...] = (
    (None, ()),
    (None, ()),
    ("h = self.proj(x)", ("h", "h + x", "h * 2")),
    ("h = x * 2 + y", ("h", "h - 1")),
    ("x = x + 0.5", ()),
    # a local the function made, floating: values over it are neither an input (aliasing) nor of another dtype
    ("z = x * 1.5 + 0.5", ("z", "z + 1", "z * 2", "z - y")),
)

CONSTRUCTS: tuple[str, ...] = ("if_else", "if_no_else", "early_return", "ternary", "raise_guard", "elif_chain")

HEADER = '''\
import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, y):
'''

FOOTER = '''

def example():
    return Model(), (torch.randn(3, 4), torch.randn(3, 4))


def inputs():
    g = torch.Generator().manual_seed(1234)

    def randn(*shape):
        return torch.randn(*shape, generator=g)

    return [
        (randn(4), randn(4)),
        (randn(2, 3, 4), randn(2, 3, 4)),
        (randn(0, 4), randn(0, 4)),
        (randn(()), randn(())),
        (randn(3, 4) > 0, randn(3, 4) > 0),
        ((randn(3, 4) * 3).round().long(), (randn(3, 4) * 3).round().long()),
        (randn(3, 4).half(), randn(3, 4).half()),
        (torch.full((3, 4), float("nan")), randn(3, 4)),
        (randn(3, 4), torch.full((3, 4), float("inf"))),
        (torch.full((3, 4), float("-inf")), torch.full((3, 4), float("nan"))),
        (randn(3, 4), randn(5)),
        (torch.zeros(3, 4), torch.zeros(3, 4)),
        (torch.zeros(3, 4, dtype=torch.long), torch.zeros(3, 4, dtype=torch.long)),
        (torch.randint(0, 255, (3, 4), dtype=torch.uint8), torch.randint(0, 255, (3, 4), dtype=torch.uint8)),
        (torch.randint(-128, 127, (3, 4), dtype=torch.int8), torch.randint(-128, 127, (3, 4), dtype=torch.int8)),
    ]
'''


@dataclasses.dataclass(frozen=True)
class Program:
    construct: str
    prelude: str | None
    tests: tuple[str, ...]
    values: tuple[str, ...]
    source: str

    @property
    def label(self) -> str:
        return f"{self.construct}: if {' / '.join(self.tests)} -> {' | '.join(self.values)}"


def _body(construct: str, tests: Sequence[str], values: Sequence[str]) -> list[str]:
    t, v = tests, values
    if construct == "if_else":
        return [f"if {t[0]}:", f"    a = {v[0]}", "else:", f"    a = {v[1]}", "return a"]
    if construct == "if_no_else":
        return [f"if {t[0]}:", f"    x = {v[0]}", "return x"]
    if construct == "early_return":
        return [f"if {t[0]}:", f"    return {v[0]}", f"return {v[1]}"]
    if construct == "ternary":
        return [f"a = {v[0]} if {t[0]} else {v[1]}", "return a"]
    if construct == "raise_guard":
        return [f"if {t[0]}:", '    raise ValueError("rejected input")', f"return {v[0]}"]
    if construct == "elif_chain":
        return [f"if {t[0]}:", f"    a = {v[0]}", f"elif {t[1]}:", f"    a = {v[1]}", "else:", f"    a = {v[2]}",
                "return a"]
    raise ValueError(construct)


N_TESTS = {"elif_chain": 2}
N_VALUES = {"if_no_else": 1, "raise_guard": 1, "elif_chain": 3}


def build(choose: Callable[[Sequence], object]) -> Program:
    construct = choose(CONSTRUCTS)
    prelude, extra = choose(PRELUDES)
    tests = tuple(choose(TESTS) for _ in range(N_TESTS.get(construct, 1)))
    catalog = VALUES + extra
    values = tuple(choose(catalog) for _ in range(N_VALUES.get(construct, 2)))
    lines = ([prelude] if prelude else []) + _body(construct, tests, values)
    return Program(construct, prelude, tests, values, render(lines))


def render(forward_body: Sequence[str]) -> str:
    """The module file around `forward`'s body (lines without the method's indentation)."""
    source = HEADER + "".join(f"        {line}\n" for line in forward_body) + FOOTER
    ast.parse(source)  # the generator only writes valid Python
    return source


def random_program(rng: random.Random) -> Program:
    return build(rng.choice)


def programs():
    """The hypothesis strategy over programs."""
    from hypothesis import strategies as st

    @st.composite
    def _programs(draw):
        return build(lambda options: draw(st.sampled_from(tuple(options))))

    return _programs()


# ---------------------------------------------------------------- one program through graphmend and the oracle


class GraphmendFailure(AssertionError):
    """graphmend crashed, timed out or wrote a file that does not parse: a bug to report."""


@dataclasses.dataclass
class Check:
    program: Program
    original: Path
    fixed: Path
    changed: bool
    fixed_source: str = ""
    cases: int = 0
    differences: list[str] = dataclasses.field(default_factory=list)

    def report(self, limit: int = 10) -> str:
        return (f"{self.program.label}\n{len(self.differences)} of {self.cases} cases differ:\n"
                + "\n".join(d[:600] for d in self.differences[:limit])
                + "\n--- original file:\n" + self.program.source + "--- fixed file:\n" + self.fixed_source)


def check(program: Program, workdir: Path) -> Check:
    """Writes `program` to workdir/original/generated.py, applies graphmend's safe fixes to a copy in
    workdir/fixed/ and, when the copy changed, runs the differential comparison on the pair."""
    import subprocess

    from differential import compare_files, graphmend_fix

    original, fixed = workdir / "original" / "generated.py", workdir / "fixed" / "generated.py"
    original.parent.mkdir(parents=True, exist_ok=True)
    fixed.parent.mkdir(parents=True, exist_ok=True)
    original.write_text(program.source, encoding="utf-8")
    try:
        changed = graphmend_fix(original, fixed)
    except subprocess.TimeoutExpired as exc:
        raise GraphmendFailure(f"graphmend check --fix timed out ({exc.timeout} s) on:\n{program.source}") from None
    except AssertionError as exc:
        raise GraphmendFailure(f"{exc}\n--- generated file:\n{program.source}") from None
    out = Check(program, original, fixed, changed)
    if not changed:
        return out
    out.fixed_source = fixed.read_text(encoding="utf-8")
    try:
        ast.parse(out.fixed_source)
    except SyntaxError as exc:
        raise GraphmendFailure(f"graphmend's fixed file does not parse ({exc}):\n--- generated file:\n"
                               f"{program.source}--- fixed file:\n{out.fixed_source}") from None
    result = compare_files(original, fixed)
    out.cases, out.differences = result.cases, result.differences
    return out
