"""Self-test of the oracle's break collector on tiny functions defined here (pure torch)."""
import inspect

import torch

from dynamo_breaks import GB_IDS, find_breaks


def _line_of(fn, needle):
    lines, start = inspect.getsourcelines(fn)
    for offset, text in enumerate(lines):
        if needle in text:
            return start + offset
    raise AssertionError(f"{needle!r} not in {fn.__name__}")


def no_break(x):
    return torch.relu(x * 2) + 1


def item_break(x):
    y = x * 2
    s = y.sum().item()
    return y + s


def loop_print(x):
    for i in range(2):
        x = x + 1
        print("iteration", i)
    return x


def helper(t):
    if t.sum() > 0:
        return t - 1
    return t + 1


def calls_helper(x):
    y = x * 2
    y = helper(y)
    return y * 3


def test_registry_is_read():
    assert GB_IDS["Data-dependent branching"] == "GB0170"
    assert GB_IDS["graph break in loop"] == "GB7000"


def test_no_break_means_one_graph_and_no_events():
    report = find_breaks(no_break, (torch.randn(3),), __file__)
    assert report.events == [] and report.graphs == 1 and report.error is None


def test_item_break_line_and_type():
    report = find_breaks(item_break, (torch.randn(3),), __file__)
    assert report.lines(__file__) == {_line_of(item_break, ".item()")}
    assert {e.gb_id for e in report.events} == {"GB0124"}
    assert report.explain_lines == report.lines(__file__)
    assert report.graphs == 2


def test_loop_break_is_original_line_with_frame_skipped():
    report = find_breaks(loop_print, (torch.randn(3),), __file__)
    assert report.lines(__file__) == {_line_of(loop_print, 'print("iteration"')}
    assert all(e.in_loop for e in report.events)
    assert {e.gb_type for e in report.events} == {"Failed to trace builtin operator"}
    assert report.graphs == 0  # the whole frame ran eagerly
    assert report.explain_lines == set()  # explain() sees nothing in a skipped frame


def test_helper_break_collapses_to_helper_line():
    report = find_breaks(calls_helper, (torch.ones(3),), __file__)
    assert report.lines(__file__) == {_line_of(helper, "if t.sum() > 0")}
    assert len(report.events) >= 2  # once at the call site in calls_helper, once in helper's own frame
    assert any(len(e.stack) >= 2 and e.stack[-2][2] == "calls_helper" for e in report.events)
