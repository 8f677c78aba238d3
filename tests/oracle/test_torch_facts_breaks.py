"""Which constructs Dynamo (torch 2.13) breaks on, with which gb_type, and which line it blames.

The table of docs/dynamo-facts.md ("inside a compiled nn.Module.forward"), asserted construct by
construct: every line marked `# <- break GBxxxx` must break with exactly those registry ids, no other
line may break, and a case without a marker must compile in one graph with no break. The rule fixtures
(tests/fixtures/rules, test_fixture_markers.py) check the same constructs in context, against a set of
allowed ids per rule; these pin the id of each construct.
"""
import copy
import inspect
import logging
import random
import re
import time
import warnings

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

from torch_facts_asserts import (assert_attr_message, assert_fstring, assert_literal_message, assert_multiline,
                                 assert_no_message)
from torch_facts import explain, line_of, module, observe

# `# <- break GB0007`, or bounded to releases: `# <- break[torch<2.15] GB0007 # <- break[torch>=2.15] GB9193`.
MARK_RE = re.compile(r"# <- break(?:\[torch\s*(<|>=)\s*(\d+\.\d+)\])? ((?:GB\d{4}[ ,]*)+)")
RELEASE = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
logger = logging.getLogger("graphmend.torch_facts")
logger.setLevel(logging.WARNING)  # logger.debug below is disabled, and still breaks


def expected_breaks(fn) -> dict[int, set[str]]:
    lines, start = inspect.getsourcelines(fn)
    found = {}
    for i, text in enumerate(lines):
        for m in MARK_RE.finditer(text):
            if m.group(1) and (RELEASE < tuple(int(p) for p in m.group(2).split("."))) != (m.group(1) == "<"):
                continue  # a fact of other releases
            found.setdefault(start + i, set()).update(re.findall(r"GB\d{4}", m.group(3)))
    return found


@torch.compiler.disable
def _disabled(t):
    return t + 1


_disable_alias = getattr(torch.compiler, "disable", None) or torch._dynamo.disable


@_disable_alias
def _disabled_through_alias(t):
    return t + 1


def _no_scale(t):
    return t * 3


def _with_scale(t, scale=1.0):
    return t * scale


# ---------------------------------------------------------------- cases: forward(self, x)

def if_sum(self, x):
    y = x * 2
    if x.sum() > 0:  # <- break GB0170
        y = y + 1
    return y


def if_bare_tensor(self, x):
    y = x.sum()
    if y:  # <- break GB0170
        return x + 1
    return x - 1


def elif_mean(self, x):
    y = x * 2
    if x.shape[0] > 100:
        y = y - 1
    elif x.mean() > -10:  # <- break GB0170
        y = y + 1
    return y


def if_multiline_and(self, x):
    # each evaluated operand is its own break on its own line (the second one in a resume function)
    y = x * 2
    if (
        x.sum() > 0  # <- break GB0170
        and x.max() < 10  # <- break GB0170
    ):
        y = y + 1
    return y


def elif_chain_multiline(self, x):
    if x.sum() > 1000:  # <- break GB0170
        return x + 1
    elif x.sum() > 500:  # <- break GB0170
        return x + 2
    elif (
        x.mean() > -10  # <- break GB0170
    ):
        return x + 3
    return x


def if_any(self, x):
    if torch.isnan(x).any():  # <- break GB0170
        return x.nan_to_num()
    return x


def if_item(self, x):
    if x.sum().item() > 0:  # <- break GB0124
        return x + 1
    return x - 1


def if_torch_equal(self, x):
    if torch.equal(x, x):  # <- break GB0033
        return x + 1
    return x


def ternary(self, x):
    y = x * 2
    z = y + 1 if x.sum() > 0 else y - 1  # <- break GB0170
    return z


def ternary_multiline(self, x):
    z = (x + 1
         if x.sum() > 0  # <- break GB0170
         else x - 1)
    return z


def or_value(self, x):
    y = x[0, :1] * 0  # one element, zero: `or` takes its right operand
    z = y or x[1, :1]  # <- break GB0170
    return z


def print_call(self, x):
    y = x * 2
    print("hello", y.shape[0])  # <- break GB0059
    return y + 1


def print_tensor(self, x):
    y = x * 2
    print(y)  # <- break GB0059
    return y + 1


def print_multiline(self, x):
    y = x * 2
    print(  # <- break GB0059
        "multi",
        1,
    )
    return y + 1


def logger_info(self, x):
    y = x * 2
    logger.info("info %s", 1)  # <- break GB0291
    return y + 1


def logger_debug_disabled(self, x):
    y = x * 2
    logger.debug("not emitted %s", 1)  # <- break GB0291
    return y + 1


def logging_warning(self, x):
    # the innermost frame is logging/__init__.py; the innermost frame here is the call
    y = x * 2
    logging.warning("root warning")  # <- break GB4841
    return y + 1


def warnings_warn(self, x):
    y = x * 2
    warnings.warn("careful")  # <- break GB0007
    return y + 1


def warnings_warn_category(self, x):
    warnings.warn("dep", DeprecationWarning)  # <- break GB0007
    return x + 1


def raise_guard(self, x):
    y = x * 2
    if (y < -100).any():  # <- break GB0170
        raise ValueError("too small")
    return y + 1


def item(self, x):
    y = x * 2
    s = y.sum().item()  # <- break GB0124
    return y + s


def item_chain_multiline(self, x):
    y = x * 2
    s = (y
         .sum()
         .item())  # <- break GB0124
    return y + s


def tolist_float(self, x):
    y = x * 2
    s = y.tolist()  # <- break GB0109
    return y + len(s)


def tolist_int(self, x):
    idx = (x > 0).long().sum(0)
    return x + len(idx.tolist())  # <- break GB0033


def int_of_tensor(self, x):
    y = x * 2
    n = int(y.sum())  # <- break GB0124
    return y + n


def float_of_tensor(self, x):
    y = x * 2
    n = float(y.sum())  # <- break GB0124
    return y + n


def bool_of_tensor(self, x):
    y = x * 2
    b = bool(y.sum() > 0)  # <- break GB0124
    return y + b


def numpy_to_python(self, x):
    y = x * 2
    a = y.detach().cpu().numpy()
    return y + float(a.sum())  # <- break GB0033


def mask_read(self, x):
    y = x * 2
    z = y[y > 0]  # <- break GB0036
    return z + 1


def mask_sum(self, x):
    return x[x > 0].sum()  # <- break GB0036


def nonzero(self, x):
    z = torch.nonzero(x > 0)  # <- break GB0036
    return z + 1


def nonzero_method(self, x):
    z = (x > 0).nonzero()  # <- break GB0036
    return z + 1


def argwhere(self, x):
    z = torch.argwhere(x > 0)  # <- break GB0036
    return z + 1


def where_one_argument(self, x):
    z = torch.where(x > 0)  # <- break GB0036
    return z[0] + 1


def unique(self, x):
    return torch.unique(x) + 1  # <- break GB0036


def unique_method(self, x):
    return x.unique() + 1  # <- break GB0036


def unique_consecutive(self, x):
    return torch.unique_consecutive(x)  # <- break GB0036


def masked_select(self, x):
    z = torch.masked_select(x, x > 0)  # <- break GB0036
    return z + 1


def deepcopy_tensor(self, x):
    # the innermost frame is copy.py; the innermost frame here is the call
    y = x * 2
    z = copy.deepcopy(y)  # <- break GB4198
    return z + 1


def deepcopy_module(self, x):
    m = copy.deepcopy(nn.Linear(3, 3))  # <- break GB0264, GB4198
    return m(x)


def time_time(self, x):
    t = time.time()  # <- break[torch<2.15] GB0007 # <- break[torch>=2.15] GB9193
    return x + 1, t


def time_perf_counter(self, x):
    t = time.perf_counter()  # <- break[torch<2.15] GB0007 # <- break[torch>=2.15] GB9193
    return x + 1, t


def time_sleep(self, x):
    time.sleep(0)  # <- break GB0007
    return x + 1


def requires_grad_set_true(self, x):
    y = x * 2
    y.requires_grad = True  # <- break[torch<2.15] GB0206 # <- break[torch>=2.15] GB8985
    return y + 1


def requires_grad_set_false(self, x):
    y = x * 2
    y.requires_grad = False  # <- break GB0206
    return y + 1


def requires_grad_leaked(self, x):
    y = x * 2
    y.requires_grad_()  # <- break GB8985
    return y + 1


def parameter_in_forward(self, x):
    p = nn.Parameter(torch.ones(3))  # <- break GB0264
    return x + p


def class_in_forward(self, x):
    class Box:  # <- break GB8977
        pass

    Box()
    return x + 1


def calls_disabled(self, x):
    y = x * 2
    z = _disabled(y)  # <- break GB0098
    return z + 1


def calls_disabled_alias(self, x):
    y = x * 2
    z = _disabled_through_alias(y)  # <- break GB0098
    return z + 1


def random_random(self, x):
    p = random.random()  # <- break[torch<2.14] GB0007 (traced, a graph input, from 2.14)
    return x + 1, p


def random_choice(self, x):
    k = random.choice([1, 1])  # <- break GB0007
    return x * k


def pack_and_pad(self, x):
    packed = pack_padded_sequence(x.unsqueeze(0), [4], batch_first=True)  # <- break GB0007
    padded, _ = pad_packed_sequence(packed, batch_first=True)  # <- break GB0007
    # without a tensor or a torch module in it, the resume function would not be compiled at all (Dynamo's
    # has_tensor_in_frame does not look into a PackedSequence): its break would not be logged
    return padded + torch.ones(1)


def to_sparse(self, x):
    # the conversion breaks when its result is wrapped; the resumed line breaks again on the sparse value
    return x.to_sparse().to_dense() + 1  # <- break GB0277, GB0015


def sparse_coo_tensor(self, x):
    i = torch.tensor([[0, 1], [1, 0]])
    return torch.sparse_coo_tensor(i, x[0, :2], (2, 2)).to_dense()  # <- break GB0007, GB0015


def sparse_csr_tensor(self, x):
    rows, cols = torch.tensor([0, 1, 2]), torch.tensor([0, 1])
    return torch.sparse_csr_tensor(rows, cols, x[0, :2], (2, 2))  # <- break GB0374


def typeerror_fallback(self, x):
    try:
        y = _no_scale(x, scale=2.0)  # <- break[torch<2.14] GB7312 (from 2.14 the handler is traced)
    except TypeError:
        y = _no_scale(x)
    return y + 1


# ---------------------------------------------------------------- cases that do not break

def static_tests(self, x, mask=None):
    y = x * 2
    if x.shape[0] > 1:
        y = y + 1
    if mask is None:
        y = y + 2
    if self.training:
        y = y + 3
    if x.dtype == torch.float16:
        y = y.float()
    if self.flag:
        y = y + 4
    if x.numel() and x.dim() == 2:
        y = y + 5
    if x.dim() != 2:
        raise ValueError("need 2d")
    return y if x.size(0) else x


def is_compiling_guards(self, x):
    if not torch.compiler.is_compiling():
        print("eager only")
        warnings.warn("eager only")
        if x.sum() > 0:
            x = x * 2
    if torch.compiler.is_compiling():
        return x + 1
    print("eager")
    return x


def short_circuit_float32(self, x):
    y = x * 2
    if x.dtype == torch.float16 and y.sum() > 0:
        y = y + 1
    return y


def numpy_roundtrip(self, x):
    y = x * 2
    a = y.numpy()
    return torch.from_numpy(a * 2) + y


def mask_store(self, x):
    y = x.clone()
    y[y < 0] = 0
    return y


def where_three_arguments(self, x):
    return torch.where(x > 0, x, torch.zeros_like(x))


def where_dense_sum(self, x):
    return torch.where(x > 0, x, 0).sum()


def count_nonzero(self, x):
    return torch.count_nonzero(x > 0)


def deepcopy_list(self, x):
    y = x * 2
    z = copy.deepcopy([1, 2])
    return y + len(z)


def requires_grad_false_call(self, x):
    y = x * 2
    y.requires_grad_(False)
    return y + 1


def python_numbers(self, x):
    return x + int(x.shape[0]) + float(3)


def random_traced(self, x):
    # randint, randrange and uniform with constant arguments are replayed as graph inputs
    return x * random.randint(1, 1) * random.randrange(1, 2) * random.uniform(1.0, 1.0)


def pad_sequence_call(self, x):
    return pad_sequence([x, x[:2]], batch_first=True) + 1


def keyword_fallback_accepted(self, x):
    try:
        y = _with_scale(x, scale=2.0)
    except TypeError:
        y = _with_scale(x)
    return y + 1


def nested_def_and_lambda(self, x):
    def inner(t):
        return t * 2

    f = lambda t: t + 1  # noqa: E731
    return f(inner(x))


def cond(self, x):
    return torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x,))


def assert_async(self, x):
    torch._assert_async((x > -100).all(), "too small")
    return x + 1


BREAKING = [if_sum, if_bare_tensor, elif_mean, if_multiline_and, elif_chain_multiline, if_any, if_item,
            if_torch_equal, ternary, ternary_multiline, or_value, print_call, print_tensor, print_multiline,
            logger_info, logger_debug_disabled, logging_warning, warnings_warn, warnings_warn_category,
            raise_guard, assert_fstring, assert_attr_message, assert_multiline, item, item_chain_multiline,
            tolist_float, tolist_int, int_of_tensor, float_of_tensor, bool_of_tensor, numpy_to_python,
            mask_read, mask_sum, nonzero, nonzero_method, argwhere, where_one_argument, unique, unique_method,
            unique_consecutive, masked_select, deepcopy_tensor, deepcopy_module, time_time, time_perf_counter,
            time_sleep, requires_grad_set_true, requires_grad_set_false, requires_grad_leaked,
            parameter_in_forward, class_in_forward, calls_disabled, calls_disabled_alias, random_random,
            random_choice, pack_and_pad, to_sparse, sparse_coo_tensor, sparse_csr_tensor, typeerror_fallback]
NOT_BREAKING = [static_tests, is_compiling_guards, short_circuit_float32, assert_literal_message,
                assert_no_message, numpy_roundtrip, mask_store, where_three_arguments, where_dense_sum,
                count_nonzero, deepcopy_list, requires_grad_false_call, python_numbers, nested_def_and_lambda,
                cond, assert_async, random_traced, pad_sequence_call, keyword_fallback_accepted]


def _model(fn):
    m = module(fn, MSG="constant attr message", flag=True)
    return m


def _input():
    return torch.randn(4, 3).abs() + 0.1  # positive: both operands of an `and` are evaluated


@pytest.mark.parametrize("fn", BREAKING, ids=lambda f: f.__name__)
def test_construct_breaks_with_its_gb_id_at_the_marked_line(fn):
    expected = expected_breaks(fn)  # empty: the construct breaks on other releases only
    assert "# <- break" in inspect.getsource(fn), f"{fn.__name__}: no `# <- break` marker"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        obs = observe(_model(fn), _input())
    assert obs.error is None, repr(obs.error)
    outside = [e for e in obs.events if not any(f.filename == inspect.getsourcefile(fn) for f in e.frames)]
    assert not outside, f"events without a frame in this file: {outside}"
    assert obs.ids_by_line(inspect.getsourcefile(fn)) == expected


@pytest.mark.parametrize("fn", NOT_BREAKING, ids=lambda f: f.__name__)
def test_construct_compiles_in_one_graph(fn, capsys):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        obs = observe(_model(fn), torch.randn(4, 3))
    assert obs.error is None, repr(obs.error)
    assert obs.events == [] and obs.graphs == 1
    if fn is is_compiling_guards:  # pruned at trace time: nothing of the eager-only branch ran
        assert capsys.readouterr().out == "" and not [w for w in caught if "eager only" in str(w.message)]


def test_value_dependent_break_only_for_float16():
    assert observe(_model(short_circuit_float32), torch.randn(4, 3)).events == []
    obs = observe(_model(short_circuit_float32), torch.randn(4, 3, dtype=torch.float16))
    assert obs.ids_by_line(__file__) == {line_of(short_circuit_float32, "y.sum() > 0"): {"GB0170"}}


def test_innermost_frame_of_library_breaks_is_the_library():
    """GB4841 and GB4198 happen inside logging/copy: the user's call is the innermost frame *here*."""
    for fn, library in ((logging_warning, "logging"), (deepcopy_tensor, "copy.py")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obs = observe(_model(fn), _input())
        innermost = {e.innermost.filename for e in obs.events}
        assert innermost and all(library in f and f != __file__ for f in innermost), innermost


def tensor_while(self, x):
    y = x * 2
    while y.sum() > 1:  # <- break GB0170
        y = y / 2
    return y


def test_tensor_while_is_logged_twice_and_does_not_skip_the_frame():
    obs = observe(_model(tensor_while), torch.randn(4, 3).abs() + 1)
    line = line_of(tensor_while)
    sites = obs.in_file(__file__)
    assert {ln for _, ln, _ in sites} == {line} and {e.gb_id for e, _, _ in sites} == {"GB0170"}
    functions = [fn for _, _, fn in sites]
    assert "tensor_while" in functions
    assert any(f.startswith("torch_dynamo_resume_in_tensor_while_at_") for f in functions)
    assert not any(e.in_loop for e in obs.events)  # no GB7000: the backedge heuristic misses it
    assert obs.graphs >= 2


def not_any(self, x):
    y = x * 2
    flag = not y.any()  # <- break GB0033
    return x + 1, flag


def test_not_tensor_skips_the_whole_frame():
    obs = observe(_model(not_any), torch.randn(4, 3))
    assert obs.ids_by_line(__file__) == {line_of(not_any): {"GB0033"}}
    assert obs.graphs == 0
    assert all(e.reason.startswith("Failed to handle graph break gracefully. Skipping the function")
               for e in obs.events)
    ex = explain(_model(not_any), torch.randn(4, 3))
    assert (ex.graph_count, ex.graph_break_count) == (0, -1)


def item_chain_in_resume(self, x):
    y = x * 2
    print("first break")  # <- break GB0059
    s = (y
         .sum()
         .item())
    return y + s  # <- break GB0124


def test_method_chain_in_a_resume_function_is_blamed_one_line_late():
    """In the original frame a chain split over lines breaks on its `.item()` line (item_chain_multiline);
    after an earlier break, in the resume function, Dynamo blames the line after it."""
    obs = observe(_model(item_chain_in_resume), torch.randn(4, 3))
    assert obs.ids_by_line(__file__) == expected_breaks(item_chain_in_resume)
    late = line_of(item_chain_in_resume, "return y + s")
    assert late == line_of(item_chain_in_resume, ".item())") + 1
    assert any(fn.startswith("torch_dynamo_resume_in_") for _, ln, fn in obs.in_file(__file__) if ln == late)


def rnn_module(self, x):
    y, _ = self.lstm(x.unsqueeze(0))  # <- break[torch<2.15] GB0014 # <- break[torch>=2.15] GB0148
    print("eager from here on")  # <- break[torch>=2.15] GB0059 (before 2.15 the rest of forward runs eagerly)
    z, _ = self.lstm(y)  # <- break[torch>=2.15] GB0148 (no second break before 2.15)
    h, _ = self.cell(x)  # a cell is traced (when it is)
    return z + h.sum()


def test_rnn_module_breaks_once_and_the_rest_of_the_frame_runs_eagerly(capsys):
    """Wrapping an nn.LSTM/GRU/RNN fails (GB0014, not at a call: no resume function): Dynamo runs the rest
    of the frame eagerly, so later breaks of that frame are never seen. The cells are traced. From torch 2.15
    the module is a delayed unsupported call (GB0148): each use breaks and Dynamo resumes after it."""
    m = _model(rnn_module)
    m.lstm, m.cell = nn.LSTM(3, 3), nn.LSTMCell(3, 3)
    obs = observe(m, torch.randn(4, 3))
    assert obs.error is None, repr(obs.error)
    assert obs.ids_by_line(__file__) == expected_breaks(rnn_module)
    assert capsys.readouterr().out == "eager from here on\n"
    cell = module(lambda self, x: self.cell(x)[0] + 1, "cell_only")
    cell.cell = nn.LSTMCell(3, 3)
    traced = observe(cell, torch.randn(4, 3))
    assert traced.events == [] and traced.graphs == 1


def break_in_try(self, x):
    try:
        print("in try")  # <- break GB0059
    except TypeError:
        pass
    print("after")  # no break: the rest of forward runs eagerly
    with torch.no_grad():
        y = x + 1
    return y


def test_break_inside_a_try_block_runs_the_rest_of_the_frame_eagerly(capsys):
    """A break inside a try block is not resumed there: the rest of the frame runs eagerly (a print after
    the try does not break). A break inside a `with` block is resumed as usual."""
    obs = observe(_model(break_in_try), torch.randn(4, 3))
    assert obs.error is None, repr(obs.error)
    assert obs.ids_by_line(__file__) == expected_breaks(break_in_try)
    assert capsys.readouterr().out == "in try\nafter\n"
