"""Observing real Dynamo on tiny callables, for the torch-fact tests (test_torch_facts_*.py).

Each fact test states a behaviour of torch 2.13 that graphmend relies on (docs/dynamo-facts.md) and
asserts it against what Dynamo does: `observe(fn, *args)` compiles `fn` with a counting backend (eager
execution of the captured graphs), runs it once under the shared break recorder
(graphmend_validator.break_recorder) and returns what it saw. Source lines are named by a marker comment
in the test's own source (`# <- break`), found with `line_of`.
"""
from __future__ import annotations

import dataclasses
import inspect
import os
from typing import Any, Callable

import torch
import torch._dynamo
from torch._dynamo.utils import counters

import dynamo_breaks  # noqa: F401 - puts gpu-validator on sys.path (the shared recorder)
from graphmend_validator.break_recorder import BreakEvent, BreakRecorder

MARKER = "# <- break"


@dataclasses.dataclass
class Observation:
    graphs: int  # graphs the counting backend received
    events: list[BreakEvent]
    error: BaseException | None  # what the compiled call raised
    result: Any  # what it returned
    graph_break_counter: dict  # counters["graph_break"], summed by the first line of the message
    unimplemented_counter: dict

    def in_file(self, filename: str) -> list[tuple[BreakEvent, int, str]]:
        """(event, line, function) of the innermost frame of each event's stack that lies in `filename`."""
        found = []
        for e in self.events:
            for f in reversed(e.frames):
                if os.path.realpath(f.filename) == os.path.realpath(filename):
                    found.append((e, f.lineno, f.name))
                    break
        return found

    def lines(self, filename: str) -> set[int]:
        return {line for _, line, _ in self.in_file(filename)}

    def ids_by_line(self, filename: str) -> dict[int, set[str]]:
        by_line: dict[int, set[str]] = {}
        for e, line, _ in self.in_file(filename):
            by_line.setdefault(line, set()).add(e.gb_id)
        return by_line

    def gb_ids(self) -> set[str]:
        return {e.gb_id for e in self.events}


def observe(fn: Callable, *args, backend: str | None = None, **config) -> Observation:
    """Run `torch.compile(fn)(*args)` once from a fresh Dynamo, with `config` patched into
    torch._dynamo.config; the error it raises, if any, is returned, not raised."""
    torch._dynamo.reset()
    counters.clear()
    graphs: list = []

    def counting_backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    error, result = None, None
    with torch._dynamo.config.patch(**config), BreakRecorder() as recorder:
        compiled = torch.compile(fn, backend=backend or counting_backend)
        try:
            result = compiled(*args)
        except Exception as exc:  # noqa: BLE001 - a test decides whether an error is expected
            error = exc
    assert not recorder.errors, recorder.errors
    obs = Observation(graphs=len(graphs), events=list(recorder.events), error=error, result=result,
                      graph_break_counter=_by_head(counters["graph_break"]),
                      unimplemented_counter=_by_head(counters["unimplemented"]))
    torch._dynamo.reset()
    return obs


def _by_head(counter) -> dict[str, int]:
    heads: dict[str, int] = {}
    for key, n in counter.items():
        head = key.splitlines()[0].strip()
        heads[head] = heads.get(head, 0) + n
    return heads


def explain(fn: Callable, *args):
    torch._dynamo.reset()
    try:
        return torch._dynamo.explain(fn)(*args)
    finally:
        torch._dynamo.reset()


def line_of(obj: Any, needle: str = MARKER, nth: int = 0) -> int:
    """The line of `obj`'s source (a function or a class) holding `needle` (the `nth` such line)."""
    return lines_of(obj, needle)[nth]


def lines_of(obj: Any, needle: str = MARKER) -> list[int]:
    lines, start = inspect.getsourcelines(obj)
    found = [start + i for i, text in enumerate(lines) if needle in text]
    if not found:
        raise AssertionError(f"{needle!r} not in the source of {obj!r}")
    return found


def module(forward: Callable, name: str | None = None, **attrs) -> torch.nn.Module:
    """An nn.Module whose `forward` is `forward` itself (its code object is the compiled root frame)."""
    cls = type(name or forward.__name__, (torch.nn.Module,), {"forward": forward, **attrs})
    return cls()
