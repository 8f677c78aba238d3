"""Report generation of the HF benchmark from a canned results JSON, and the section markers."""
import copy
import os
import sys

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "hf"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))

import common  # noqa: E402
import report  # noqa: E402


def _site(stmt, kind="Data-dependent branching", file="models/bart/modeling_bart.py", fn="BartEncoder.forward",
          modes=("train",), events=2, graphmend=None):
    return {"kind": kind, "gb_id": "GB0170", "file": file, "function": fn, "line": 10, "stmt": stmt,
            "stmt_start": 10, "stmt_end": 10, "events": events, "modes": list(modes), "in_loop": True,
            "chain": [], "graphmend": graphmend or []}


def _arm(sites, fullgraph=(True, False)):
    kinds = {}
    for s in sites:
        kinds[s["kind"]] = kinds.get(s["kind"], 0) + 1
    return {"sites": sites, "kinds": kinds, "events": {"eval": 0, "train": sum(s["events"] for s in sites)},
            "graphs": {"eval": 1, "train": 1 + len(sites)}, "explain_breaks": {"eval": 0, "train": len(sites)},
            "counter_breaks": {"eval": 0, "train": len(sites)},
            "fullgraph": {"eval": fullgraph[0], "train": fullgraph[1]},
            "sites_by_mode": {"eval": 0, "train": len(sites)}, "errors": {}}


def canned():
    a = _site("if dropout_probability < self.layerdrop:")
    b = _site("if not torch.isfinite(hidden_states).all():", graphmend=[
        {"code": "GM301", "message": "guard", "fixable": False, "no_fix_reason": "raises a custom type"}])
    c = _site("logger.warning_once(msg)", kind="logging.Logger method not supported for non-export cases",
              file="models/whisper/modeling_whisper.py", fn="WhisperDecoder.forward")
    bart = {"name": "bart", "paper": True, "category": "seq2seq", "status": "ok",
            "before": _arm([a, b]), "after": _arm([b]),
            "compare": {"fixed": [a], "left": [b], "new": []},
            "outputs": {"eval": {"equal": True}, "train": {"equal": True}},
            "detection": {"findings": 3, "sites_found": 2, "sites_missed": 0, "true": 2, "false": 1,
                          "unverified": 4},
            "timing": {"mode": "train", "cold_x": 2.0, "steady_x": 1.1}}
    whisper = {"name": "whisper", "paper": True, "category": "speech", "status": "ok",
               "before": _arm([c]), "after": _arm([], fullgraph=(True, True)),
               "compare": {"fixed": [c], "left": [], "new": []},
               "outputs": {"eval": {"equal": True}, "train": {"equal": False, "reason": "loss: values differ"}},
               "detection": {"findings": 1, "sites_found": 0, "sites_missed": 1, "true": 0, "false": 0,
                             "unverified": 1}}
    t5 = {"name": "t5", "paper": True, "category": "seq2seq", "status": "ok", "before": _arm([], (True, True)),
          "after": None}
    broken = {"name": "florence2", "paper": True, "status": "skipped", "skip_reason": "ValueError: bad config"}
    bad_fix = {"name": "marian", "paper": True, "status": "ok", "before": _arm([a]), "after": None,
               "after_error": "SyntaxError: invalid syntax", "fix": {"status": "ok", "files_changed": {"x.py": {}}}}
    return {"meta": {"date": "2026-01-01 00:00 UTC", "machine": {"cpu": "Test CPU", "cores": 2, "mem_gb": 8,
                                                                   "python": "3.11"},
                     "torch": "2.13.0", "transformers": "5.17.0", "graphmend_version": "graphmend 0.1.0",
                     "duration_s": 12.0},
            "models": [bart, whisper, t5, broken, bad_fix]}


def test_totals_from_canned_results():
    t = report.totals(canned())
    assert t["models_ok"] == 4 and t["models_skipped"] == 1 and t["models_with_breaks"] == 3
    assert t["sites_before"] == 4
    assert t["fixed_arm_errors"] == ["marian"]
    assert t["fixed_arm_models"] == 2  # t5 has no fixed arm
    assert t["sites_fixed"] == 2 and t["sites_left"] == 1 and t["sites_new"] == 0
    assert t["fixed_pct"] == round(100 * 2 / 3, 1)
    assert t["models_fully_fixed"] == 1  # whisper
    assert t["outputs_changed"] == ["whisper"]
    d = t["detection"]
    assert d["recall"] == round(100 * 2 / 3, 1) and d["precision"] == round(100 * 2 / 3, 1)
    assert d["unverified"] == 5
    assert t["kinds_before"]["Data-dependent branching"]["sites"] == 3
    assert t["timing"]["cold_x_median"] == 2.0


def test_markdown_table_and_left_breaks():
    res = canned()
    res["totals"] = report.totals(res)
    md = report.markdown(res, "img/hf-breaks.png")
    assert "| bart * | 2 (0/4) | 1 (0/2) | 50% |" in md
    assert "| whisper * | 1 (0/2) | 0 (0/0) | 100% |" in md
    assert "yes/NO" in md  # whisper's changed train output is visible
    assert "florence2" in md and "bad config" in md
    assert "| marian * | 1 (0/2) | error: SyntaxError: invalid syntax |" in md
    assert "fixed arm failed (fix or import/run error) | - | 1: marian |" in md
    assert "2 of 3 (66.7%, net" in md
    assert "raises a custom type" in md  # graphmend's no-fix reason for the break left
    assert "![graph-break sites before and after per model](img/hf-breaks.png)" in md
    assert "| 2.00x | 1.10x |" in md
    assert "not run (graphmend binary not available)" not in md
    census = {"meta": res["meta"], "models": [m for m in res["models"] if m["name"] == "t5"]}
    assert "not run (graphmend binary not available)" in report.markdown(census, None)


def test_replace_section_keeps_other_sections(tmp_path):
    doc = tmp_path / "benchmarks.md"
    common.replace_section(str(doc), "check-speed", "## speed\nold")
    common.replace_section(str(doc), "hf", "## hf\nfirst")
    common.replace_section(str(doc), "check-speed", "## speed\nnew")
    text = doc.read_text()
    assert text.startswith("# Benchmarks")
    assert "new" in text and "old" not in text
    assert text.count("<!-- hf:begin -->") == 1 and "first" in text
    assert text.index("check-speed:begin") < text.index("hf:begin")  # order kept
    assert common.read_section(str(doc), "hf").strip() == "## hf\nfirst"


def test_chart_png(tmp_path):
    res = canned()
    png = tmp_path / "img" / "c.png"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert report.chart(res, str(png)) is False
        return
    assert report.chart(res, str(png)) is True
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # nothing with breaks: no chart
    empty = copy.deepcopy(res)
    empty["models"] = [m for m in empty["models"] if m["name"] == "t5"]
    assert report.chart(empty, str(tmp_path / "none.png")) is False
