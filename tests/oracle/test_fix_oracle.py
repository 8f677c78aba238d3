"""graphmend check --fix keeps the meaning and removes breaks, judged by eager runs and real Dynamo.

For every fixture, on a copy in a temporary folder:
  * `check --fix --exit-zero COPY` succeeds, the result parses, and a second `--fix` changes nothing;
  * a fixture without expected findings is left byte-identical;
  * eager original and eager fixed example() agree on seeds 0, 1, 2 (same seed before building and
    again before calling, the fixed module gets the original's state_dict and train/eval mode): equal outputs (exact, NaN ==
    NaN) or the same exception type and message, and the same transcript (stdout, stderr, log
    records, warnings, in order);
  * torch.compile of the fixed example (breaks allowed, eager backend) matches torch.compile of the
    original on the same seeds (output and transcript; a raising seed must raise with the original
    message, the type may differ);
  * Dynamo break sites (distinct lines, as in test_fixture_markers) after the fix <= before, and ==
    EXPECTED_BREAKS_AFTER_FIX when the fixture declares it; when it declares 0,
    torch.compile(fullgraph=True) of the fixed example succeeds and matches the compiled original
    (output and transcript; where the original raises, the compiled fixed code must raise with the
    original message, its type may differ: torch._assert_async raises RuntimeError).
"""
import ast
import shutil

import pytest
import torch
import torch._dynamo
from torch import nn

from dynamo_breaks import find_breaks, format_report, is_driver
from fixture_support import (CHECK_ARGS, SEEDS, assert_same_output, build_example, call,
                             dynamo_report, fixture_ids, fixture_paths, load_fixture, markers, own_config,
                             run_graphmend, transcript)

PATHS = fixture_paths()


@pytest.fixture(autouse=True)
def _restore_dynamo_config():
    """A fixed file may set Dynamo config at import (e.g. reorderable_logging_functions): undo it."""
    cfg = torch._dynamo.config
    saved = (set(cfg.reorderable_logging_functions), set(cfg.ignore_logging_functions))
    yield
    cfg.reorderable_logging_functions = saved[0]
    cfg.ignore_logging_functions = saved[1]
    torch._dynamo.reset()


def _fixed_copy(path, tmp_path):
    copy = tmp_path / path.name
    shutil.copyfile(path, copy)
    proc = run_graphmend("check", "--fix", "--exit-zero", *CHECK_ARGS, str(copy))
    assert proc.returncode == 0, f"check --fix exited {proc.returncode} on {path.name}\n{proc.stderr}"
    return copy


def _align(orig_fn, fixed_fn):
    if isinstance(orig_fn, nn.Module):
        assert isinstance(fixed_fn, nn.Module), "the fix turned a module example into something else"
        fixed_fn.load_state_dict(orig_fn.state_dict())
        fixed_fn.train(orig_fn.training)


def _seeded_call(fn, args, seed):
    """Calls draw from the global RNG too (layerdrop, dropout): both arms start from the same state."""
    torch.manual_seed(10_000 + seed)
    return call(fn, args)


def _compare(orig, fixed, where):
    kind_o, out_o, log_o = orig
    kind_f, out_f, log_f = fixed
    assert kind_o == kind_f, f"{where}: original {kind_o} {out_o!r}, fixed {kind_f} {out_f!r}"
    if kind_o == "raise":
        assert out_o == out_f, f"{where}: original raised {out_o}, fixed raised {out_f}"
    else:
        assert_same_output(out_o, out_f, f"{where} output")
    assert log_o == log_f, f"{where}: side effects differ\noriginal: {log_o}\nfixed:    {log_f}"


@pytest.mark.parametrize("path", PATHS, ids=fixture_ids())
def test_fix_parses_and_is_idempotent(path, tmp_path):
    copy = _fixed_copy(path, tmp_path)
    fixed_text = copy.read_text(encoding="utf-8")
    try:
        ast.parse(fixed_text, filename=str(copy))
    except SyntaxError as exc:
        raise AssertionError(f"{path.name}: fixed file does not parse: {exc}\n{fixed_text}")
    if not markers(path):
        assert copy.read_bytes() == path.read_bytes(), f"{path.name}: no findings expected, yet --fix edited it"
    before = copy.read_bytes()
    proc = run_graphmend("check", "--fix", "--exit-zero", *CHECK_ARGS, str(copy))
    assert proc.returncode == 0, proc.stderr
    assert copy.read_bytes() == before, f"{path.name}: a second --fix changed the file again"


@pytest.mark.parametrize("path", PATHS, ids=fixture_ids())
def test_fix_keeps_eager_semantics(path, tmp_path):
    copy = _fixed_copy(path, tmp_path)
    original = load_fixture(path)
    fixed = load_fixture(copy)
    for seed in SEEDS:
        orig_fn, orig_args = build_example(original, seed)
        fixed_fn, fixed_args = build_example(fixed, seed)
        _align(orig_fn, fixed_fn)
        _compare(_seeded_call(orig_fn, orig_args, seed), _seeded_call(fixed_fn, fixed_args, seed),
                 f"{path.name} seed {seed}")


@pytest.mark.parametrize("path", PATHS, ids=fixture_ids())
def test_fix_removes_breaks(path, tmp_path):
    copy = _fixed_copy(path, tmp_path)
    before = dynamo_report(path)
    before_sites = before.sites()
    fixed = load_fixture(copy)
    fn, args = build_example(fixed, SEEDS[0])
    with transcript():
        after = find_breaks(fn, args, str(copy), cross_check=False)  # originals are cross-checked
    after_sites = after.sites()
    detail = f"before:\n{format_report(before)}\nafter:\n{format_report(after)}"
    assert after.error is None, f"{path.name}: fixed example raised under torch.compile: {after.error!r}"
    assert len(after_sites) <= len(before_sites), f"{path.name}: the fix added breaks\n{detail}"
    declared = getattr(load_fixture(path), "EXPECTED_BREAKS_AFTER_FIX", None)
    if declared is not None:
        assert len(after_sites) == declared, (f"{path.name}: {len(after_sites)} break sites after the fix, "
                                              f"fixture declares {declared}\n{detail}")
    if declared == 0:
        _assert_fullgraph_matches_eager(path, copy)


@pytest.mark.parametrize("path", PATHS, ids=fixture_ids())
def test_compiled_fix_matches_compiled_original(path, tmp_path):
    """Under torch.compile (breaks allowed) the fixed code behaves like the original under
    torch.compile: this is where a deferral shows its differences (order, argument snapshots,
    streams). The baseline is the compiled original, not the eager one, because code guarded by
    `torch.compiler.is_compiling()` legitimately behaves differently under compile."""
    copy = _fixed_copy(path, tmp_path)
    _assert_compiled_matches_original(path, copy, fullgraph=False)


def _assert_fullgraph_matches_eager(path, copy):
    _assert_compiled_matches_original(path, copy, fullgraph=True)


_COMPILED_ORIGINAL: dict = {}


def _compiled(fn, fullgraph):
    torch._dynamo.reset()
    if is_driver(fn):  # an eager driver: the functions it calls compile themselves (dynamo_breaks.py)
        return fn
    return torch.compile(fn, fullgraph=fullgraph, backend="eager")


def _assert_compiled_matches_original(path, copy, fullgraph):
    original = load_fixture(path)
    fixed = load_fixture(copy)
    for seed in SEEDS:
        orig_fn, orig_args = build_example(original, seed)
        fixed_fn, fixed_args = build_example(fixed, seed)
        _align(orig_fn, fixed_fn)
        where = f"{path.name} {'fullgraph' if fullgraph else 'compiled'} seed {seed}"
        key = (str(path), seed)
        if key not in _COMPILED_ORIGINAL:  # fixtures are read-only: one compiled run per seed
            with torch._dynamo.config.patch(**own_config(original)):
                _COMPILED_ORIGINAL[key] = _seeded_call(_compiled(orig_fn, False), orig_args, seed)
        orig = _COMPILED_ORIGINAL[key]
        comp = _seeded_call(_compiled(fixed_fn, fullgraph), fixed_args, seed)
        if orig[0] == "raise":
            # a graph-native guard (torch._assert_async) raises RuntimeError under compile: the type
            # may differ by design (docs/dynamo-facts.md), the message may not
            assert comp[0] == "raise", f"{where}: original raised {orig[1]}, compiled fixed returned"
            assert orig[1][1] in comp[1][1], f"{where}: original raised {orig[1]}, compiled fixed {comp[1]}"
        else:
            _compare(orig, comp, where)
