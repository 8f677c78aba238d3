"""Ground truth: the graph breaks real TorchDynamo (torch 2.13) takes for a callable.

`find_breaks(fn, args, filename)` compiles `fn` with a counting backend (eager execution), runs it
once, and returns a `DynamoReport`: every graph-break event Dynamo logged, each attributed to the
innermost frame of its user stack that lies in `filename` (the fixture), plus cross-checks.

How events are captured: graphmend_validator.break_recorder (shared with the benchmark) wraps
`InstructionTranslatorBase.log_graph_break`, the single funnel through which every graph break Dynamo
takes (resumed breaks, jumps on tensors, and frames it gives up on) is logged in 2.13, for the duration
of one run, and reads the exception it is handed: `exc.real_stack` (the user stack at the failing
instruction) and `exc.msg`, whose first line is the root gb_type. Attribution uses the innermost fixture
frame, so a break inside a helper that first surfaces at the call site in `forward` and then again inside
the helper's own frame collapses to the helper's line (one site, two events).

Loops: a break inside a `for`/`while` loop makes Dynamo raise "graph break in loop" (GB7000) and
skip the whole frame. That exception carries the original break's stack and message, so we report
the original line and root gb_type, with `in_loop=True` and `wrapper_gb_type` GB7000. Dynamo stops
at the first break in a skipped frame: later breaks in the same frame are never seen (and neither
explain nor counters["graph_break"] mention any of it: explain reports graph_count 0 and
graph_break_count -1, the reason only lands in counters["unimplemented"]).

Cross-checks (raise `OracleInconsistency` on mismatch):
  * every key of counters["graph_break"] has a logged event with that root gb_type;
  * every logged event's root gb_type is a key of counters["graph_break"] or ["unimplemented"];
  * every break reason `torch._dynamo.explain` gives, mapped to its innermost fixture frame, is a
    logged site (explain misses skipped frames, so only this direction holds);
  * no logged event implies at most one graph reached the counting backend.
"""
from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any, Callable, Sequence

import torch
import torch._dynamo
from torch._dynamo.utils import counters

_VALIDATOR_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                              "gpu-validator"))
if _VALIDATOR_DIR not in sys.path:
    sys.path.insert(0, _VALIDATOR_DIR)

from graphmend_validator.break_recorder import BreakRecorder, registry_ids  # noqa: E402

GB_IDS = registry_ids()


class OracleInconsistency(AssertionError):
    """Dynamo's own sources of truth disagree; the oracle refuses to guess."""


@dataclasses.dataclass(frozen=True)
class BreakEvent:
    filename: str  # file of the attributed frame (the fixture, unless no frame lies in it)
    lineno: int
    function: str
    gb_type: str  # root cause gb_type (first line of the exception message)
    gb_id: str  # registry id of gb_type, "" if not in the registry
    in_loop: bool  # Dynamo skipped the frame because the break sits in a loop (GB7000)
    stack: tuple[tuple[str, int, str], ...]  # full user stack (filename, lineno, function)


@dataclasses.dataclass
class DynamoReport:
    events: list[BreakEvent]
    graphs: int  # graphs compiled by the counting backend
    explain_lines: set[int]
    error: BaseException | None  # exception raised by the compiled call, if any

    def sites(self, filename: str | None = None) -> set[tuple[str, int]]:
        return {(e.filename, e.lineno) for e in self.events
                if filename is None or _same_file(e.filename, filename)}

    def lines(self, filename: str) -> set[int]:
        return {line for _, line in self.sites(filename)}

    def foreign_events(self, filename: str) -> list[BreakEvent]:
        return [e for e in self.events if not _same_file(e.filename, filename)]


def _same_file(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _in_fixture(frame_file: str, filename: str) -> bool:
    # Dynamo may report a nested function's frame under the file of an *equal* code object it met
    # earlier (code objects compare equal across files, co_filename is not part of equality): a
    # fixed copy's `def` inside forward shows up under the original fixture's path. Equal code
    # means equal line numbers, so a frame from a file with the same name counts as the fixture's.
    return _same_file(frame_file, filename) or os.path.basename(frame_file) == os.path.basename(filename)


def _attribute(stack: Sequence[Any], filename: str) -> tuple[str, int, str]:
    for frame in reversed(stack):
        if _in_fixture(frame.filename, filename):
            return filename, frame.lineno, frame.name
    if stack:
        last = stack[-1]
        return last.filename, last.lineno, last.name
    return "<unknown>", 0, "<unknown>"


def _site(event, filename: str) -> BreakEvent:
    fname, lineno, func = _attribute(event.frames, filename)
    return BreakEvent(filename=fname, lineno=lineno, function=func, gb_type=event.gb_type, gb_id=event.gb_id,
                      in_loop=event.in_loop, stack=event.frames)


def is_driver(fn: Any) -> bool:
    """example() returned an eager driver whose callees compile themselves (see find_breaks)."""
    return bool(getattr(fn, "_torchdynamo_disable", False))


def _heads(counter: dict) -> set[str]:
    return {key.splitlines()[0].strip() for key in counter}


def find_breaks(fn: Callable, args: tuple, filename: str, *, cross_check: bool = True) -> DynamoReport:
    """Run `fn(*args)` once under torch.compile (counting eager backend) and report its breaks."""
    torch._dynamo.reset()
    counters.clear()
    graphs: list[Any] = []

    def counting_backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    error: BaseException | None = None
    driver = is_driver(fn)
    with BreakRecorder() as recorder:
        # an eager driver (a @torch.compiler.disable function, like a training script) is called
        # as is: the compiled functions it calls are then root frames, as in real use; wrapping it
        # in another torch.compile would make them inlined frames and change Dynamo's behaviour
        compiled = fn if driver else torch.compile(fn, backend=counting_backend)
        try:
            compiled(*args)
        except Exception as exc:  # noqa: BLE001 - the caller decides whether an error is expected
            error = exc
    graph_break_counter = dict(counters["graph_break"])
    unimplemented_counter = dict(counters["unimplemented"])

    explain_lines: set[int] = set()
    if cross_check and not driver:
        torch._dynamo.reset()
        try:
            explained = torch._dynamo.explain(fn)(*args)
        except Exception:  # noqa: BLE001 - same error as above; explain adds nothing then
            explained = None
        if explained is not None:
            for reason in explained.break_reasons:
                stack = list(reason.user_stack or [])
                if any(_in_fixture(f.filename, filename) for f in stack):
                    explain_lines.add(_attribute(stack, filename)[1])
        torch._dynamo.reset()

    if recorder.errors:
        raise OracleInconsistency(f"the break recorder failed: {recorder.errors[0]!r}")
    events = [_site(e, filename) for e in recorder.events]
    report = DynamoReport(events=events, graphs=len(graphs), explain_lines=explain_lines, error=error)
    if cross_check:
        _cross_check(report, filename, graph_break_counter, unimplemented_counter)
    return report


def _cross_check(report: DynamoReport, filename: str, graph_break_counter: dict,
                 unimplemented_counter: dict) -> None:
    logged_types = {e.gb_type for e in report.events}
    missing = _heads(graph_break_counter) - logged_types
    if missing:
        raise OracleInconsistency(f"counters['graph_break'] has {sorted(missing)} but no logged event")
    known = _heads(graph_break_counter) | _heads(unimplemented_counter)
    unknown = logged_types - known
    if unknown:
        raise OracleInconsistency(f"logged events {sorted(unknown)} absent from Dynamo's counters")
    unexplained = report.explain_lines - report.lines(filename)
    if unexplained:
        raise OracleInconsistency(f"explain() reports breaks at lines {sorted(unexplained)} "
                                  f"that the event log lacks (logged: {sorted(report.lines(filename))})")
    if not report.events and report.graphs > 1:  # (0 graphs for an eager driver: not counted)
        raise OracleInconsistency(f"{report.graphs} graphs compiled but no graph break was logged")


def format_report(report: DynamoReport) -> str:
    rows = [f"graphs={report.graphs} error={report.error!r}"]
    for e in report.events:
        loop = " [frame skipped: in loop, GB7000]" if e.in_loop else ""
        rows.append(f"  {os.path.basename(e.filename)}:{e.lineno} in {e.function}: {e.gb_type} ({e.gb_id}){loop}")
    return "\n".join(rows)
