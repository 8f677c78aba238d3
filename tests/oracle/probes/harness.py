"""Probe harness: run one callable under Dynamo and print everything we can observe.

Usage: from harness import probe; probe("name", fn_or_module, args)
Observations per probe:
  - graphs: number of FX graphs handed to a counting backend (eager execution),
  - counters: torch._dynamo.utils.counters["graph_break"] (reason msg -> count) and "unimplemented",
  - logged: every InstructionTranslator.log_graph_break call (gb_type, innermost user frame),
  - explain: graph_count, graph_break_count, break_reasons (reason head, innermost frame).
"""
from __future__ import annotations

import json
import os
import sys

import torch
import torch._dynamo
from torch._dynamo import symbolic_convert
from torch._dynamo.utils import counters

_REG = json.load(open(os.path.join(os.path.dirname(torch._dynamo.__file__), "graph_break_registry.json")))
GB_ID = {}
for _id, _variants in _REG.items():
    for _v in _variants:
        GB_ID.setdefault(_v["Gb_type"], _id)

_LOGGED: list = []
_orig = symbolic_convert.InstructionTranslatorBase.log_graph_break


def _patched(self, code_options, reason, exc):
    chain = []
    e = exc
    while e is not None:
        chain.append(getattr(e, "gb_type", type(e).__name__))
        e = e.__cause__
    stack = getattr(exc, "real_stack", None) or []
    frames = [(os.path.basename(f.filename), f.lineno, f.name) for f in stack]
    _LOGGED.append({"gb_chain": chain, "frames": frames, "reason_head": reason.splitlines()[0]})
    return _orig(self, code_options, reason, exc)


symbolic_convert.InstructionTranslatorBase.log_graph_break = _patched


def probe(name, fn, args, *, show_explain=True):
    torch._dynamo.reset()
    counters.clear()
    _LOGGED.clear()
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compiled = torch.compile(fn, backend=backend)
    err = None
    try:
        compiled(*args)
    except Exception as e:  # noqa: BLE001
        err = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    gb = dict(counters["graph_break"])
    unimpl = dict(counters["unimplemented"])
    logged = list(_LOGGED)
    print(f"=== {name}")
    print(f"  graphs={len(graphs)} err={err}")
    for msg, n in gb.items():
        head = msg.splitlines()[0]
        print(f"  counter graph_break x{n}: {head!r} id={GB_ID.get(head, '?')}")
    for msg, n in unimpl.items():
        print(f"  counter unimplemented x{n}: {msg.splitlines()[0]!r}")
    for item in logged:
        ids = [f"{g}[{GB_ID.get(g, '?')}]" for g in item["gb_chain"]]
        print(f"  logged: {' <- '.join(ids)} at {item['frames'][-3:]} | {item['reason_head'][:80]}")
    if show_explain:
        torch._dynamo.reset()
        try:
            ex = torch._dynamo.explain(fn)(*args)
            print(f"  explain: graph_count={ex.graph_count} break_count={ex.graph_break_count}")
            for br in ex.break_reasons:
                fr = br.user_stack[-1] if br.user_stack else None
                loc = (os.path.basename(fr.filename), fr.lineno, fr.name) if fr else None
                print(f"    reason: {br.reason.splitlines()[0][:90]!r} at {loc}")
        except Exception as e:  # noqa: BLE001
            print(f"  explain raised {type(e).__name__}: {str(e).splitlines()[0][:100]}")
    sys.stdout.flush()
    return {"graphs": len(graphs), "gb": gb, "logged": logged, "err": err}
