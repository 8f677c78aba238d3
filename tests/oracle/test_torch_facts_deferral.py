"""Deferring print / logging / warnings with `torch._dynamo.config.reorderable_logging_functions` (stock
torch 2.13): what it accepts, what it keeps (order, text, dedup) and what it loses (argument snapshots,
the line, calls in inlined frames). docs/dynamo-facts.md, "Deferring print / logging / warnings".
"""
import contextlib
import io
import logging
import sys
import warnings

import pytest
import torch
from torch import nn

from torch_facts import line_of, module, observe

log = logging.getLogger("graphmend.torch_facts.deferral")


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.NOTSET)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture()
def records():
    handler = _Records()
    old = log.level, log.propagate
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    yield handler.records
    log.setLevel(old[0])
    log.propagate = old[1]
    log.removeHandler(handler)


def gm_info(*args):
    """A module-level wrapper: a plain function, so the set accepts it."""
    log.info(*args, stacklevel=2)


def x_input():
    return torch.ones(2, 3)


def defer(*functions):
    return {"reorderable_logging_functions": set(functions)}


# ---------------------------------------------------------------- what the set accepts

def prints_values(self, x):
    y = x * 2
    print("A", y.sum())
    print(f"value {y.sum()}")
    print("value %d" % 3, "fmt {}".format(4))
    return y + 1


def test_deferred_print_does_not_break_and_prints_after_the_graph(capsys):
    obs = observe(module(prints_values), x_input(), **defer(print))
    assert obs.events == [] and obs.graphs == 1
    assert capsys.readouterr().out == "A tensor(12.)\nvalue 12.0\nvalue 3 fmt 4\n"


def print_to_stderr(self, x):
    print("to stderr", file=sys.stderr)  # <- break
    return x + 1


def print_list(self, x):
    print("list", [1, 2])  # <- break
    return x + 1


def print_shape(self, x):
    print(x.shape)  # <- break
    return x + 1


@pytest.mark.parametrize("fn", [print_to_stderr, print_list, print_shape], ids=lambda f: f.__name__)
def test_print_with_other_arguments_cannot_be_reordered(fn, capsys):
    obs = observe(module(fn), x_input(), **defer(print))
    assert obs.ids_by_line(__file__) == {line_of(fn): {"GB0296"}}
    assert obs.events[0].gb_type == "attempted to reorder a debugging function that can't actually be reordered"


def logs_through_logger(self, x):
    y = x * 2
    log.info("info %s", 1)  # <- break
    return y + 1


@pytest.mark.parametrize("entry", [log.info, logging.Logger.info], ids=["bound_method", "Logger.info"])
def test_logger_methods_are_accepted_from_2_14_only(entry, records):
    """torch 2.13 takes only functions: a logger method still breaks. From 2.14 it is deferred (in the root
    frame; an inlined frame drops it, GM205: tests/oracle/test_dropped_calls.py)."""
    obs = observe(module(logs_through_logger), x_input(), **defer(entry))
    if torch.__version__ < (2, 14):
        assert obs.ids_by_line(__file__) == {line_of(logs_through_logger): {"GB0291"}}
    else:
        assert obs.events == [] and obs.graphs == 1
        assert [r.getMessage() for r in records] == ["info 1"]


def logs_module_level(self, x):
    y = x * 2
    logging.warning("root warning %s", 2)
    return y + 1


def warns(self, x):
    y = x * 2
    warnings.warn("careful")
    return y + 1


def logs_wrapped(self, x):
    y = x * 2
    gm_info("wrapped %s", 1)
    return y + 1


def test_module_functions_and_wrappers_are_accepted(records):
    root = logging.getLogger()
    handler = _Records()
    root.addHandler(handler)
    try:
        obs = observe(module(logs_module_level), x_input(), **defer(logging.warning))
    finally:
        root.removeHandler(handler)
    assert obs.events == [] and obs.graphs == 1
    assert [r.getMessage() for r in handler.records] == ["root warning 2"]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        obs = observe(module(warns), x_input(), **defer(warnings.warn))
    assert obs.events == [] and obs.graphs == 1
    assert [str(w.message) for w in caught if w.filename == __file__] == ["careful"]

    obs = observe(module(logs_wrapped), x_input(), **defer(gm_info))
    assert obs.events == [] and obs.graphs == 1
    assert [r.getMessage() for r in records] == ["wrapped 1"]


def warns_once_wrapped(self, x):
    y = x * 2
    gm_warning_once("wrapped once")
    gm_warning_once("wrapped once")
    return y + 1


def gm_warning_once(*args):
    _hf_logger().warning_once(*args)


def _hf_logger():
    hf_logging = pytest.importorskip("transformers.utils.logging")
    return hf_logging.get_logger("graphmend.torch_facts.hf")


def test_wrapped_hf_warning_once_still_warns_once():
    hf = _hf_logger()
    handler = _Records()
    hf.addHandler(handler)
    try:
        obs = observe(module(warns_once_wrapped), x_input(), **defer(gm_warning_once))
    finally:
        hf.removeHandler(handler)
    assert obs.events == [] and obs.graphs == 1
    assert [r.getMessage() for r in handler.records] == ["wrapped once"]


def test_warnings_once_per_location_still_dedups():
    torch._dynamo.reset()
    with torch._dynamo.config.patch(**defer(warnings.warn)), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        compiled = torch.compile(module(warns), backend="eager")
        compiled(x_input())
        compiled(x_input())
    torch._dynamo.reset()
    assert [str(w.message) for w in caught if w.filename == __file__] == ["careful"]


# ---------------------------------------------------------------- what deferral keeps and loses

def order(self, x):
    y = x * 2
    print("A", y.sum())
    log.info("B")  # <- break
    print("C")
    return y + 1


def test_deferred_calls_run_before_the_next_breaking_statement(records):
    events = []
    ordered = _Records()
    ordered.emit = lambda record: events.append(("log", record.getMessage()))
    log.addHandler(ordered)
    try:
        with contextlib.redirect_stdout(_Lines(events)):
            obs = observe(module(order), x_input(), **defer(print))
    finally:
        log.removeHandler(ordered)
    assert obs.ids_by_line(__file__) == {line_of(order): {"GB0291"}}
    assert events == [("out", "A tensor(12.)"), ("log", "B"), ("out", "C")]  # as in eager


class _Lines(io.TextIOBase):
    """A stdout that appends each complete line to `events`."""

    def __init__(self, events):
        self.events = events
        self.pending = ""

    def write(self, s):
        self.pending += s
        while "\n" in self.pending:
            line, self.pending = self.pending.split("\n", 1)
            self.events.append(("out", line))
        return len(s)


def print_in_loop(self, x):
    y = x * 2
    for i in range(2):
        y = y + 1
        print("iter", i, y.sum())
    return y


def test_deferred_print_in_a_loop_keeps_one_graph_and_each_value(capsys):
    obs = observe(module(print_in_loop), x_input(), **defer(print))
    assert obs.events == [] and obs.graphs == 1
    assert capsys.readouterr().out == "iter 0 tensor(18.)\niter 1 tensor(24.)\n"


def snapshot_element(self, x):
    y = x * 2
    print("value", y[0, 0])
    y.add_(5)
    return y


def snapshot_whole(self, x):
    y = x * 2
    print("whole", y)
    y.add_(5)
    return y


def snapshot_clone(self, x):
    y = x * 2
    print("value", y[0, 0].clone())
    y.add_(5)
    return y


@pytest.mark.parametrize("fn, compiled_value", [(snapshot_element, "tensor(7.)"), (snapshot_whole, "7."),
                                                (snapshot_clone, "tensor(2.)")], ids=lambda v: getattr(v, "__name__", v))
def test_deferred_arguments_are_not_snapshotted(fn, compiled_value, capsys):
    module(fn)(x_input())
    eager = capsys.readouterr().out
    assert "7." not in eager and "2." in eager
    obs = observe(module(fn), x_input(), **defer(print))
    assert obs.events == []
    compiled = capsys.readouterr().out
    assert compiled_value in compiled
    assert (compiled == eager) == (fn is snapshot_clone)


def logs_and_warns(self, x):
    y = x * 2
    gm_info("deferred %s", 1)  # log call
    warnings.warn("direct warn")  # warn call
    return y + 1


def test_deferred_calls_keep_file_and_function_but_not_the_line(records):
    fn = logs_and_warns
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module(fn)(x_input())
        obs = observe(module(fn), x_input(), **defer(gm_info, warnings.warn))
    assert obs.events == [] and obs.graphs == 1
    log_line, warn_line = line_of(fn, "# log call"), line_of(fn, "# warn call")
    eager_rec, compiled_rec = records
    assert (eager_rec.funcName, eager_rec.lineno) == (fn.__name__, log_line)
    assert compiled_rec.funcName == fn.__name__ and compiled_rec.pathname == __file__
    assert compiled_rec.lineno != log_line
    eager_warn, compiled_warn = [w for w in caught if str(w.message) == "direct warn"]
    assert (eager_warn.filename, eager_warn.lineno) == (__file__, warn_line)
    assert compiled_warn.filename == __file__ and compiled_warn.lineno != warn_line


def test_ignore_logging_functions_drops_the_call(records):
    obs = observe(module(logs_through_logger), x_input(), ignore_logging_functions={logging.Logger.info})
    assert obs.events == [] and obs.graphs == 1
    assert records == []  # the output is lost


# ---------------------------------------------------------------- calls in inlined frames are dropped

def report(t):
    print("in helper", t.mean())
    return t


def forward_and_helper_print(self, x):
    y = x * 2
    print("in forward", y.sum())
    y = report(y * 2)
    return y + 1


def helper_only(self, x):
    y = report(x * 2)
    return y + 1


class WarningSub(nn.Module):
    def forward(self, x):
        print("in submodule forward", x.sum())
        gm_info("wrapper in submodule %s", 1)
        warnings.warn("warn in submodule")
        return x * 2


class Parent(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = WarningSub()

    def forward(self, x):
        gm_info("wrapper in parent %s", 2)
        return self.sub(x) + 1


def test_deferred_calls_in_inlined_frames_are_silently_dropped(capsys, records):
    x = torch.ones(2)
    module(forward_and_helper_print)(x)
    assert capsys.readouterr().out == "in forward tensor(4.)\nin helper tensor(4.)\n"
    obs = observe(module(forward_and_helper_print), x, **defer(print))
    assert obs.events == [] and obs.graphs == 1
    assert capsys.readouterr().out == "in forward tensor(4.)\n"  # the helper's print: gone, no break
    obs = observe(module(helper_only), x, **defer(print))
    assert obs.events == [] and obs.graphs == 1 and capsys.readouterr().out == ""

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        obs = observe(Parent(), x, **defer(print, gm_info, warnings.warn))
    assert obs.events == [] and obs.graphs == 1
    assert capsys.readouterr().out == ""
    assert [r.getMessage() for r in records] == ["wrapper in parent 2"]
    assert not [w for w in caught if "submodule" in str(w.message)]


# ---------------------------------------------------------------- torch.ops.aten._print

def aten_helper(t):
    torch.ops.aten._print("helper says hi")
    return t * 2


def aten_print(self, x):
    torch.ops.aten._print("forward says hi")
    y = aten_helper(x)
    return y + 1


def test_aten_print_stays_in_the_graph_and_bypasses_sys_stdout(capfd):
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        obs = observe(module(aten_print), torch.ones(2))
    assert obs.error is None and obs.events == [] and obs.graphs == 1
    assert captured.getvalue() == ""  # not through sys.stdout
    assert capfd.readouterr().out == "forward says hi\nhelper says hi\n"  # the C-level stdout
    torch._dynamo.reset()
    out = torch.compile(module(aten_print), backend="aot_eager", fullgraph=True)(torch.ones(2))
    torch._dynamo.reset()
    assert torch.equal(out, torch.full((2,), 3.0))
    assert capfd.readouterr().out == "forward says hi\nhelper says hi\n"
