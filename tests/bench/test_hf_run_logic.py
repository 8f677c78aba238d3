"""run.py's per-arm summary, file selection and timing choice, on canned worker results."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "hf"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))

import run  # noqa: E402


def _ev(mode, stmt, kind="Data-dependent branching", file="models/bart/modeling_bart.py", in_loop=False, chain=()):
    return {"mode": mode, "kind": kind, "gb_id": "GB0170", "in_loop": in_loop, "file": file,
            "function": "BartEncoder.forward", "line": 537, "stmt": stmt, "stmt_start": 537, "stmt_end": 537,
            "chain": list(chain)}


def _mode(events, graphs, fullgraph):
    return {"ok": True, "events": events, "graphs": graphs, "counters": {"graph_break": len(events)},
            "explain": {"graph_break_count": graphs - 1}, "fullgraph": {"ok": fullgraph}}


def worker_result():
    ld = "if dropout_probability < self.layerdrop:"
    helper = {"file": "utils/generic.py", "line": 5, "function": "f", "stmt": "x = 1", "stmt_start": 5, "stmt_end": 5}
    train = [_ev("train", ld, in_loop=True, kind="graph break in loop"), _ev("train", ld), _ev("train", ld),
             _ev("train", "recordable_keys = {}", kind="Missing tp_iternext", file="utils/output_capturing.py",
                 chain=[helper]),
             {"mode": "train", "kind": "Data-dependent branching", "file": None, "reason": "r", "gb_id": "",
              "innermost": {"file": "/x/torch/foo.py", "line": 1, "function": "g"}}]
    return {"status": "ok", "modules": ["models/bart/modeling_bart.py"],
            "modes": {"eval": _mode([], 1, True), "train": _mode(train, 5, False)}}


def test_summarize_arm():
    s = run.summarize_arm(worker_result())
    assert s["events"] == {"eval": 0, "train": 5}
    assert s["sites_by_mode"] == {"eval": 0, "train": 2}
    assert s["kinds"] == {"Data-dependent branching": 1, "Missing tp_iternext": 1}
    ld = [x for x in s["sites"] if "layerdrop" in x["stmt"]][0]
    assert ld["events"] == 3 and ld["in_loop"]
    assert s["fullgraph"] == {"eval": True, "train": False}
    assert len(s["unattributed"]["train"]) == 1  # a break outside transformers is kept, not lost


def test_files_for(tmp_path):
    for rel in ("models/bart/modeling_bart.py", "utils/output_capturing.py", "utils/generic.py"):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("")
    res = worker_result()
    files = run.files_for(res, run.summarize_arm(res), str(tmp_path))
    assert files == ["models/bart/modeling_bart.py", "utils/generic.py", "utils/output_capturing.py"]


def test_pick_timing_prefers_eval_gain_in_modes_that_reach_one_graph():
    def entry(name, before, after, changed=True, fullgraph=None):
        b = {"sites_by_mode": before, "sites": []}
        a = {"sites_by_mode": after, "sites": [],
             "fullgraph": fullgraph or {mode: n == 0 for mode, n in after.items()}}
        return {"name": name, "status": "ok", "before": b, "after": a,
                "fix": {"files_changed": {"f.py": {}} if changed else {}}}
    entries = [entry("a", {"eval": 0, "train": 3}, {"eval": 0, "train": 0}),
               entry("b", {"eval": 2, "train": 5}, {"eval": 0, "train": 1}),
               entry("c", {"eval": 1, "train": 1}, {"eval": 0, "train": 0}, changed=False),
               entry("d", {"eval": 1, "train": 1}, {"eval": 1, "train": 1}),
               # fewer breaks but still more than one graph: not what the timing measures
               entry("e", {"eval": 3, "train": 3}, {"eval": 1, "train": 1})]
    args = argparse.Namespace(timing_models=None, timing_count=5)
    assert run.pick_timing(entries, args) == [("a", "train"), ("b", "eval")]
    args = argparse.Namespace(timing_models=None, timing_count=1)
    assert run.pick_timing(entries, args) == [("a", "train")]
    args = argparse.Namespace(timing_models="b", timing_count=1)
    assert run.pick_timing(entries, args) == [("b", "eval")]
