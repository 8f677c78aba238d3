"""Breaks in loops and in helpers, and the grad modes (docs/dynamo-facts.md, "Loops, helpers, modes").

A break inside a for/while loop makes Dynamo 2.13 skip the whole frame that holds the loop ("graph break
in loop", GB7000); a break in a helper is taken twice (at the call site, then in the helper's own frame).
"""
import pytest
import torch
from torch import nn

from torch_facts import explain, line_of, module, observe


def loop_if(self, x):
    y = x * 2
    for _ in range(3):
        y = y + 1
        if y.sum() > 0:  # <- break
            y = y - 1
    return y


def loop_print(self, x):
    y = x * 2
    for i in range(3):
        y = y + 1
        print("iter", i)  # <- break
    return y


def loop_item(self, x):
    y = x * 2
    for _ in range(3):
        y = y + y.sum().item()  # <- break
    return y


def while_count_print(self, x):
    y = x * 2
    i = 0
    while i < 3:
        y = y + 1
        print(i)  # <- break
        i += 1
    return y


@pytest.mark.parametrize("fn, root", [(loop_if, "Data-dependent branching"),
                                      (loop_print, "Failed to trace builtin operator"),
                                      (loop_item, "Unsupported Tensor.item() call with capture_scalar_outputs=False"),
                                      (while_count_print, "Failed to trace builtin operator")],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_break_in_a_loop_skips_the_frame(fn, root):
    x = torch.randn(4, 3).abs()
    obs = observe(module(fn), x)
    assert [(e.gb_chain[0], e.gb_type, e.in_loop) for e in obs.events] == [("graph break in loop", root, True)]
    assert obs.lines(__file__) == {line_of(fn)}  # the original line, not the loop's
    assert obs.events[0].message.splitlines()[0] == root
    assert obs.graphs == 0  # the whole frame ran eagerly
    assert obs.graph_break_counter == {}
    assert obs.unimplemented_counter == {root: 2}  # the original reason, twice
    ex = explain(module(fn), x)
    assert (ex.graph_count, ex.graph_break_count, ex.break_reasons) == (0, -1, [])


def loop_then_print(self, x):
    y = x * 2
    for _ in range(3):
        y = y + 1
    print("after loop")  # <- break
    return y


def test_break_after_a_loop_is_an_ordinary_break():
    obs = observe(module(loop_then_print), torch.randn(4, 3))
    assert [(e.gb_id, e.in_loop) for e in obs.events] == [("GB0059", False)]
    assert obs.lines(__file__) == {line_of(loop_then_print)} and obs.graphs == 1


def two_breaks_in_loop(self, x):
    y = x * 2
    for _ in range(2):
        print("a")  # <- break
        y = y + y.sum().item()
    return y


def test_only_the_first_break_of_a_skipped_frame_is_seen():
    obs = observe(module(two_breaks_in_loop), torch.ones(2))
    assert obs.lines(__file__) == {line_of(two_breaks_in_loop)}
    assert {e.gb_id for e in obs.events} == {"GB0059"}


def helper_loop_print(y):
    for i in range(2):
        y = y + 1
        print("h", i)  # <- break
    return y


def helper_loop_item(y):
    for _ in range(2):
        y = y + y.sum().item()  # <- break
    return y


def calls_loop_helpers(self, x):
    y = x * 2
    y = helper_loop_print(y)  # call 1
    y = y * 3
    y = helper_loop_item(y)  # call 2
    return y - 1


def test_a_loop_skip_is_confined_to_the_frame_that_holds_the_loop():
    obs = observe(module(calls_loop_helpers), torch.ones(2))
    frames = [(e.in_loop, [(f.lineno, f.name) for f in e.frames if f.filename == __file__]) for e in obs.events]
    print_line, item_line = line_of(helper_loop_print), line_of(helper_loop_item)
    call1, call2 = line_of(calls_loop_helpers, "# call 1"), line_of(calls_loop_helpers, "# call 2")
    assert frames == [
        # forward: an ordinary break at the call site ...
        (False, [(call1, "calls_loop_helpers"), (print_line, "helper_loop_print")]),
        # ... then the helper runs as its own frame, which is skipped
        (True, [(print_line, "helper_loop_print")]),
        (False, [(call2, f"torch_dynamo_resume_in_calls_loop_helpers_at_{call1}"), (item_line, "helper_loop_item")]),
        (True, [(item_line, "helper_loop_item")]),
    ]
    assert obs.graphs == 3  # forward's three pieces; the helpers ran eagerly


def helper_if(y):
    z = y + 1
    if z.sum() > 0:  # <- break
        z = z * 3
    return z


def calls_helper_if(self, x):
    y = x * 2
    y = helper_if(y)  # call
    return y + 1


def outer_helper(y):
    return helper_item(y) + 1  # call inner


def helper_item(y):
    return y * y.sum().item()  # <- break


def calls_nested(self, x):
    y = x * 2
    y = outer_helper(y)  # call outer
    return y + 1


class PrintingSub(nn.Module):
    def forward(self, x):
        print("sub")  # <- break
        return x + 1


class CallsSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = PrintingSub()

    def forward(self, x):
        y = x * 2
        y = self.sub(y)  # call
        return y + 1


def test_break_in_a_helper_is_taken_at_the_call_site_then_in_the_helper():
    x = torch.randn(4, 3).abs()
    obs = observe(module(calls_helper_if), x)
    line, call = line_of(helper_if), line_of(calls_helper_if, "# call")
    assert [[(f.lineno, f.name) for f in e.frames if f.filename == __file__] for e in obs.events] == [
        [(call, "calls_helper_if"), (line, "helper_if")], [(line, "helper_if")]]
    assert {e.gb_id for e in obs.events} == {"GB0170"} and obs.lines(__file__) == {line}
    assert obs.graph_break_counter == {"Data-dependent branching": 1}
    assert obs.graphs == 4
    ex = explain(module(calls_helper_if), x)
    assert {br.user_stack[-1].lineno for br in ex.break_reasons} == {line}


def test_nested_helpers_log_three_events_at_the_innermost_line():
    obs = observe(module(calls_nested), torch.randn(4, 3))
    assert len(obs.events) == 3
    assert {e.innermost.lineno for e in obs.events} == {line_of(helper_item)}
    assert [e.frames[-2].lineno for e in obs.events if len(e.frames) > 1][0] == line_of(outer_helper, "# call inner")


def test_submodule_forward_breaks_like_a_helper():
    obs = observe(CallsSubmodule(), torch.randn(4, 3))
    line = line_of(PrintingSub)
    assert [e.innermost.lineno for e in obs.events] == [line, line]
    assert [f.lineno for f in obs.events[0].frames if f.filename == __file__] == [line_of(CallsSubmodule, "# call"),
                                                                                    line]


def loop_calls_helper(self, x):
    y = x * 2
    for _ in range(2):
        y = helper_if(y)  # call
    return y


class Layers(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([PrintingSub(), PrintingSub()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)  # call
        return x


@pytest.mark.parametrize("make, caller, callee", [(lambda: module(loop_calls_helper), loop_calls_helper, helper_if),
                                                  (Layers, Layers, PrintingSub)], ids=["helper", "module_list"])
def test_loop_over_a_breaking_call_skips_forward_and_compiles_the_callee(make, caller, callee):
    obs = observe(make(), torch.randn(4, 3).abs())
    call, line = line_of(caller, "# call"), line_of(callee)
    skipped = [e for e in obs.events if e.in_loop]
    assert len(skipped) == 1
    assert [f.lineno for f in skipped[0].frames if f.filename == __file__] == [call, line]
    # forward ran eagerly; the callee, compiled as its own frame, broke there like any frame
    ordinary = [e for e in obs.events if not e.in_loop]
    assert ordinary and all([f.lineno for f in e.frames if f.filename == __file__] == [line] for e in ordinary)
    assert obs.graphs >= 1


def train_path(self, x):
    y = x * 2
    if self.training and y.sum() > 0:  # <- break
        y = y + 1
    return y


def test_grad_mode_and_eval_change_nothing_but_training_guards():
    x = torch.randn(4, 3).abs()
    base = {fn: observe(module(fn), x).ids_by_line(__file__) for fn in (calls_helper_if, loop_if)}
    with torch.no_grad():
        assert {fn: observe(module(fn), x).ids_by_line(__file__) for fn in base} == base
    assert {fn: observe(module(fn).eval(), x).ids_by_line(__file__) for fn in base} == base
    m = module(train_path)
    assert observe(m, x).ids_by_line(__file__) == {line_of(train_path): {"GB0170"}}
    assert observe(m.eval(), x).events == []  # the tensor test is never reached in eval mode


def break_with_empty_resume(self, x):
    y = x * 2
    print("done")  # <- break
    return y


def test_explain_graph_break_count_is_graphs_minus_one():
    """Not a count of breaks: 0 for a single break whose resume has no tensor op, -1 for a skipped frame."""
    x = torch.randn(4, 3)
    ex = explain(module(break_with_empty_resume), x)
    assert (ex.graph_count, ex.graph_break_count, len(ex.break_reasons)) == (1, 0, 1)
    assert len(observe(module(break_with_empty_resume), x).events) == 1
    ex = explain(module(loop_print), x)
    assert (ex.graph_count, ex.graph_break_count) == (0, -1)
