"""GM205 (deferred-call-dropped) is no graph break, so the oracle's break comparison cannot judge it: this does.
For every fixture that registers functions in torch._dynamo.config.reorderable_logging_functions, the calls
whose output is present in an eager run and missing under torch.compile (stdout, log records, warnings) must
be exactly the rows of its GM205 markers for the running torch. A fixture's messages start with a word and a
colon ("scale: ...") that names the line that emits them.
"""
import contextlib
import io
import logging
import re
import warnings

import pytest
import torch

from fixture_support import build_example, fixture_paths, load_fixture, markers, own_config, registrations_kept

PATHS = [p for p in fixture_paths() if "reorderable_logging_functions" in p.read_text(encoding="utf-8")]


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.NOTSET)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _emitted(fn, args) -> list[str]:
    """What one call prints, logs (through the root logger) and warns."""
    out, handler, root = io.StringIO(), _Records(), logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        with contextlib.redirect_stdout(out), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(*args)
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    return out.getvalue().splitlines() + handler.messages + [str(w.message) for w in caught]


def _rows(path, messages) -> set[int]:
    """The fixture rows that emitted `messages` (those that start with a word of the fixture and a colon)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = set()
    for message in messages:
        word = re.match(r"(\w+):", message)
        if not word:
            continue
        found = [i + 1 for i, line in enumerate(lines) if f'"{word.group(1)}:' in line]
        assert len(found) <= 1, f"{path.name}: message {message!r} matches rows {found}"
        rows.update(found)
    return rows


def test_fixtures_are_found():
    assert {p.stem for p in PATHS} >= {"GM205_deferred_call_dropped", "deferred_logger_method"}


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_gm205_marks_exactly_the_calls_torch_compile_drops(path):
    with registrations_kept():
        module = load_fixture(path)
        fn, args = build_example(module, 0)
        eager = _rows(path, _emitted(fn, args))
        torch._dynamo.reset()
        with torch._dynamo.config.patch(**own_config(module)):
            fn, args = build_example(module, 0)
            compiled = _rows(path, _emitted(torch.compile(fn, backend="eager"), args))
        torch._dynamo.reset()
    expected = {row for row, code in markers(path) if code == "GM205"}
    assert eager - compiled == expected, (f"{path.name}: compile dropped rows {sorted(eager - compiled)}, "
                                          f"GM205 marks {sorted(expected)}")
    assert compiled <= eager
