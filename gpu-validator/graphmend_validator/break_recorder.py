"""One recorder of the graph breaks TorchDynamo takes, read from Dynamo itself (torch 2.13).

Used by the oracle (tests/oracle/dynamo_breaks.py), the torch-fact tests (tests/oracle/test_torch_facts*.py)
and the Hugging Face benchmark (bench/hf/worker.py). The validator's arms (arm.py) read Dynamo's
`graph_breaks` log records instead: the validator supports torch >= 2.2, and the hook below needs a torch
whose `InstructionTranslatorBase.log_graph_break` is handed the exception (2.13 is; older releases log
through a module-level function without it).

How: every graph break Dynamo takes in 2.13 (a resumed break, a jump on a tensor, a frame it gives up on,
"graph break in loop" included) is logged through `InstructionTranslatorBase.log_graph_break(code_options,
reason, exc)`, once per exception (`exc.logged` marks the repeats, which are not recorded). A recorder wraps
it while installed and turns each call into a `BreakEvent`:

  * `gb_chain`: the gb_type of `exc` (its class name where it has none), then of each `__cause__`;
  * `gb_type`: the root cause, the first line of `exc.msg` when that is a registry gb_type (Dynamo puts the
    original break's message first when it wraps it: "graph break in loop" GB7000, "While handling this
    graph break, another graph break occurred"), else `exc`'s own gb_type;
  * `gb_id`: the registry id (GBxxxx) of `gb_type`, "" when it has none;
  * `frames`: `exc.real_stack`, the user stack at the failing instruction, outermost first (Dynamo's own
    fallback, `TracingContext.extract_stack()`, when it has none). It is read before Dynamo logs the break:
    logging renames resume frames (`torch_dynamo_resume_in_f_at_9` -> `f`) in place.

Importing this module does not import torch (the validator package must import without it); torch is
imported when the registry is first read or a recorder is installed.
"""
from __future__ import annotations

import functools
import json
import os
from typing import Any, Callable, NamedTuple, Optional, Tuple

LOOP_GB_TYPE = "graph break in loop"  # GB7000: Dynamo skipped the frame because the break sits in a loop


def registry_path() -> str:
    import torch._dynamo

    return os.path.join(os.path.dirname(torch._dynamo.__file__), "graph_break_registry.json")


@functools.lru_cache(maxsize=None)
def registry_ids() -> dict:
    """gb_type -> registry id ("GB0170"), from torch's graph_break_registry.json. A gb_type listed under
    several ids maps to the first (torch's own documentation links take the last; no break the project
    meets is listed twice). Empty when this torch has no registry."""
    try:
        with open(registry_path(), encoding="utf-8") as f:
            registry = json.load(f)
    except OSError:
        return {}
    ids: dict = {}
    for gb_id, variants in registry.items():
        for variant in variants:
            ids.setdefault(variant["Gb_type"], gb_id)
    return ids


class Frame(NamedTuple):
    filename: str
    lineno: Optional[int]
    name: str  # the function (a resume function keeps Dynamo's name: torch_dynamo_resume_in_f_at_9)


class BreakEvent(NamedTuple):
    gb_type: str  # root cause gb_type
    gb_id: str  # registry id of gb_type, "" if it has none
    gb_chain: Tuple[str, ...]  # exc's own gb_type first, then each __cause__'s
    reason: str  # first line of the reason Dynamo logs ("Encountered graph break when attempting to trace ...")
    message: str  # exc.msg (str(exc) when it has none), whole
    frames: Tuple[Frame, ...]  # the user stack, outermost first

    @property
    def in_loop(self) -> bool:
        """Dynamo skipped the frame because the break sits in a for/while loop (GB7000)."""
        return self.gb_chain[0] == LOOP_GB_TYPE

    @property
    def innermost(self) -> Optional[Frame]:
        return self.frames[-1] if self.frames else None


def gb_chain(exc: BaseException) -> Tuple[str, ...]:
    chain = []
    seen = set()
    e: Optional[BaseException] = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        chain.append(getattr(e, "gb_type", None) or type(e).__name__)
        e = e.__cause__
    return tuple(chain)


def message_of(exc: BaseException) -> str:
    return getattr(exc, "msg", None) or str(exc)


def root_gb_type(exc: BaseException) -> str:
    msg = message_of(exc)
    head = msg.splitlines()[0].strip() if msg else ""
    if head in registry_ids():
        return head
    return getattr(exc, "gb_type", "") or type(exc).__name__


def make_event(reason: str, exc: BaseException) -> BreakEvent:
    """The event for one `log_graph_break(code_options, reason, exc)` call."""
    stack = getattr(exc, "real_stack", None)
    if not stack:
        import torch._guards

        stack = torch._guards.TracingContext.extract_stack()
    root = root_gb_type(exc)
    reason = reason or ""
    return BreakEvent(
        gb_type=root, gb_id=registry_ids().get(root, ""), gb_chain=gb_chain(exc),
        reason=reason.strip().splitlines()[0] if reason.strip() else "",
        message=message_of(exc),
        frames=tuple(Frame(f.filename, f.lineno, f.name) for f in stack))


class BreakRecorder:
    """Records every graph break Dynamo logs while installed: `with BreakRecorder() as rec: ...; rec.events`.

    `on_event(event)` is called as each break is logged (for callers that tag events with their own
    context); an exception in building the event or in `on_event` never reaches Dynamo: it is kept in
    `errors` and handed to `on_error(exc)`. Recorders nest (uninstall in reverse order).
    """

    def __init__(self, on_event: Optional[Callable[[BreakEvent], Any]] = None,
                 on_error: Optional[Callable[[BaseException], Any]] = None):
        self.events: list = []
        self.errors: list = []
        self._on_event = on_event
        self._on_error = on_error
        self._original = None

    def install(self) -> "BreakRecorder":
        from torch._dynamo import symbolic_convert

        itb = getattr(symbolic_convert, "InstructionTranslatorBase", None)
        original = getattr(itb, "log_graph_break", None)
        if original is None:
            import torch

            raise RuntimeError(f"torch {torch.__version__} has no InstructionTranslatorBase.log_graph_break "
                               "to record graph breaks from")
        if self._original is not None:
            raise RuntimeError("this BreakRecorder is already installed")
        recorder = self

        def log_graph_break(self_, code_options, reason, exc):
            if not getattr(exc, "logged", False):
                recorder._record(reason, exc)
            return original(self_, code_options, reason, exc)

        itb.log_graph_break = log_graph_break
        self._original = (itb, original)
        return self

    def uninstall(self) -> None:
        if self._original is not None:
            itb, original = self._original
            itb.log_graph_break = original
            self._original = None

    def __enter__(self) -> "BreakRecorder":
        return self.install()

    def __exit__(self, *exc_info) -> None:
        self.uninstall()

    def _record(self, reason: str, exc: BaseException) -> None:
        try:
            event = make_event(reason, exc)
            self.events.append(event)
            if self._on_event is not None:
                self._on_event(event)
        except Exception as error:  # never let the recorder change what Dynamo does
            self.errors.append(error)
            if self._on_error is not None:
                self._on_error(error)
