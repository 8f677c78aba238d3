"""The speculation table (analysis/src/speculation_ops.def) against the installed torch.

Each SPECULATION_OP row claims: in each listed form (M: `x.name(...)`, T: `torch.name(x, ...)`, F:
`torch.nn.functional.name(x, ...)`), with the listed argument forms, the op never raises and never warns on
any tensor that meets the row's dtype condition (Any, NotBool, Floating), whatever its shape (0-d to 4-d,
empty ones too) and values (NaN, inf). graphmend evaluates these ops on paths the original never took,
so a row that is wrong here is a wrong "safe" fix. SPECULATION_MODULE rows make the same claim for
`torch.nn.<class>()` called on one tensor.
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

TABLE = Path(__file__).resolve().parents[2] / "analysis" / "src" / "speculation_ops.def"
OP_RE = re.compile(r'^SPECULATION_OP\((\w+), "([MTF]+)", (\w+), (\w+)\)\s*$')
MODULE_RE = re.compile(r"^SPECULATION_MODULE\((\w+), (\w+)\)\s*$")

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
          torch.float64]
SHAPES = [(), (0,), (3,), (2, 3), (2, 0, 3), (1, 2, 3, 4)]


def _rows():
    ops, modules = [], []
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        if m := OP_RE.match(line):
            ops.append(m.groups())
        elif m := MODULE_RE.match(line):
            modules.append(m.groups())
        elif line.startswith("SPECULATION_"):
            raise AssertionError(f"unparsed row in {TABLE.name}: {line}")
    return ops, modules


OPS, MODULES = _rows()


def _tensors():
    gen = torch.Generator().manual_seed(0)
    for dtype in DTYPES:
        for shape in SHAPES:
            if dtype == torch.bool:
                t = torch.randint(0, 2, shape, generator=gen).bool()
            elif dtype.is_floating_point:
                t = torch.randn(shape, generator=gen).to(dtype)
                flat = t.view(-1)
                if flat.numel() > 0:
                    flat[0] = float("nan")
                if flat.numel() > 1:
                    flat[1] = float("inf")
                if flat.numel() > 2:
                    flat[2] = float("-inf")
            else:
                low = 0 if dtype == torch.uint8 else -3
                t = torch.randint(low, 4, shape, generator=gen).to(dtype)
            yield t


def _meets(dtype_condition: str, t: torch.Tensor) -> bool:
    if dtype_condition == "Any":
        return True
    if dtype_condition == "NotBool":
        return t.dtype != torch.bool
    if dtype_condition == "Floating":
        return t.is_floating_point()
    raise AssertionError(f"unknown dtype condition {dtype_condition}")


# Static-number arguments each Scalars row is exercised with (the engine accepts any static numbers).
SCALAR_ARGUMENTS = {
    "nan_to_num": [((), {}), ((0.0,), {}), ((), {"nan": 0.0, "posinf": 1.0, "neginf": -1.0})],
    "leaky_relu": [((), {}), ((0.2,), {})],
}
DEFAULT_SCALARS = [((), {"min": -1}), ((-1, 1), {}), ((), {"min": 0.5}), ((), {"max": -0.5}), ((1, -1), {})]

# Bounds rows (numbers converted to the tensor's dtype): the engine accepts literals in [0, 127] on any
# tensor, other literals within float16's range only on floating ones, and `torch.finfo(x.dtype).max - c`
# (negated too) on x itself. Each set is exercised at the edges of what is accepted.
ANY_DTYPE_BOUNDS = [0, 127, 0.5, 126.5]
FLOATING_BOUNDS = [-65504, 65504, -1, -0.5, 128, 1e4]


def _bounds(name: str, t: torch.Tensor):
    values = ANY_DTYPE_BOUNDS + (FLOATING_BOUNDS if t.is_floating_point() else [])
    if t.is_floating_point():
        top = torch.finfo(t.dtype).max - 1000
        values += [top, -top, torch.finfo(t.dtype).max, torch.finfo(t.dtype).min]
    if name in ("clamp", "clip"):
        return ([((lo, hi), {}) for lo in values for hi in values] + [((), {"min": v}) for v in values] +
                [((), {"max": v}) for v in values] + [((None, v), {}) for v in values])
    return [((v,), {}) for v in values]


def _argument_sets(name: str, args: str, t: torch.Tensor):
    """(positional, keyword) argument sets the engine accepts for this argument form."""
    if args == "None":
        return [((), {})]
    if args == "Full":
        return [((), {})] if t.numel() > 0 else []
    if args == "Scalars":
        return SCALAR_ARGUMENTS.get(name, DEFAULT_SCALARS)
    if args == "Bounds":
        return _bounds(name, t)
    # Literal dims: -1 and 0 need nothing, k >= 1 or -k need more dimensions (the engine checks those).
    dims = [-1, 0] + ([1, -2] if t.dim() >= 2 else [])
    sets = [((d,), {}) for d in dims] + [((), {"dim": d}) for d in dims]
    if args == "Dim":  # reductions: no dim at all, and keepdim
        sets += [((), {}), ((), {"dim": -1, "keepdim": True}), ((0,), {"keepdim": False})]
    return sets


def _call(name: str, form: str, t: torch.Tensor, pos, kw):
    if form == "M":
        return getattr(t, name)(*pos, **kw)
    if form == "T":
        return getattr(torch, name)(t, *pos, **kw)
    return getattr(F, name)(t, *pos, **kw)


@pytest.mark.parametrize("row", OPS, ids=[f"{r[0]}[{r[1]}]" for r in OPS])
def test_op_row_is_total_where_it_claims(row):
    name, forms, args, dtype_condition = row
    for form in forms:
        owner = {"M": torch.Tensor, "T": torch, "F": F}[form]
        member = getattr(owner, name, None)
        assert callable(member) and not isinstance(member, torch.dtype), f"{form}-form `{name}` does not exist"
    checked = 0
    for t in _tensors():
        if not _meets(dtype_condition, t):
            continue
        for pos, kw in _argument_sets(name, args, t):
            for form in forms:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    try:
                        _call(name, form, t.clone(), pos, kw)
                    except Exception as exc:  # noqa: BLE001 - the claim under test
                        raise AssertionError(
                            f"{form}-form {name}(*{pos}, **{kw}) raised on a {t.dtype} tensor of shape "
                            f"{tuple(t.shape)} ({dtype_condition} claimed): {type(exc).__name__}: {exc}") from exc
                checked += 1
    assert checked > 0


@pytest.mark.parametrize("row", MODULES, ids=[r[0] for r in MODULES])
def test_module_row_is_total_where_it_claims(row):
    cls_name, dtype_condition = row
    cls = getattr(torch.nn, cls_name)
    import inspect

    assert "inplace" not in inspect.signature(cls).parameters, f"nn.{cls_name} has an inplace option"
    module = cls()
    assert not list(module.parameters()) and not list(module.buffers()), f"nn.{cls_name}() has state"
    for t in _tensors():
        if not _meets(dtype_condition, t):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            module(t.clone())


def test_table_is_not_empty():
    assert len(OPS) > 50 and len(MODULES) >= 3


MASK_SHAPES = [(), (0,), (1,), (3,), (1, 3), (2, 1), (2, 3), (3, 3), (1, 1, 3), (2, 2, 3), (2, 0, 3)]


def test_masked_fill_check_is_exactly_when_the_fill_keeps_the_shape(tmp_path):
    """`x.masked_fill(mask, v)` runs on the untaken path only behind the trace-time check graphmend writes
    (RaiseCondition BroadcastTo): for every pair of shapes, the check, as written into a fixed file, holds
    exactly when the fill neither raises nor changes x's shape."""
    from fixture_support import run_graphmend

    source = tmp_path / "m.py"
    source.write_text(
        "import torch\n\n\ndef f(scores: torch.Tensor, mask: torch.Tensor):\n"
        "    if (mask > 0).any():\n        scores = scores.masked_fill(mask > 0, 1.0)\n    return scores * 1\n",
        encoding="utf-8")  # `* 1`: the input itself is not returned (aliasing would make the fix unsafe)
    proc = run_graphmend("check", "--fix", "--exit-zero", "-q", str(source))
    assert proc.returncode == 0, proc.stderr
    line = next(l for l in source.read_text(encoding="utf-8").splitlines() if "zip(mask.shape" in l)
    check = line.strip().removeprefix("if ").removesuffix(":")
    check = check.replace("scores.is_floating_point() and ", "")  # the value 1.0's condition, not the shape's
    seen = 0
    for xs in MASK_SHAPES:
        for ms in MASK_SHAPES:
            scores, mask = torch.zeros(xs), torch.zeros(ms)
            try:
                fine = scores.masked_fill(mask > 0, 1.0).shape == scores.shape
            except RuntimeError:
                fine = False
            assert eval(check, {"scores": scores, "mask": mask}) == fine, (xs, ms, check)
            seen += fine
    assert 0 < seen < len(MASK_SHAPES) ** 2
