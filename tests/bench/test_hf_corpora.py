"""Corpus selection, the paper's Table 2 numbers, the unsafe arm's totals and the paper section, on canned
data: none of it needs transformers 4.52.4 (or torch, except the last test)."""
import os
import sys
from types import SimpleNamespace

import pytest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "hf"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))

import corpora  # noqa: E402
import report  # noqa: E402
import run  # noqa: E402


def test_paper_table_and_totals():
    # GraphMend paper, Table 2: the per-row numbers it states and its total over 14 rows
    assert corpora.PAPER_TABLE2_BEFORE == {"t5": 3, "whisper": 3, "bart": 7, "marian": 6, "biogpt": 2,
                                           "blenderbot": 3, "pegasus": 2, "layoutlmv3": 2, "grounding_dino": 17,
                                           "longformer": 5}
    assert sum(corpora.PAPER_TABLE2_BEFORE.values()) == 50
    assert corpora.PAPER_TABLE2_TOTAL == {"rows": 14, "before": 65, "after": 14, "fixed_pct": 78.5}
    rows = [{"name": "bart", "before": 4, "after_safe": 3, "after_unsafe": 2},
            {"name": "phi3", "before": 1, "after_safe": 1, "after_unsafe": 1},  # no paper number
            {"name": "t5", "before": 0, "after_safe": 0, "after_unsafe": 0},
            {"name": "florence2", "before": None}]  # did not build: not a row
    t = corpora.paper_totals(rows)
    assert (t["rows"], t["before"], t["after_safe"], t["after_unsafe"]) == (3, 5, 4, 3)
    assert (t["known_rows"], t["known_before"], t["known_after_safe"], t["paper_known_before"]) == (2, 4, 3, 10)
    assert t["paper"]["before"] == 65 and t["paper"]["after"] == 14
    # an arm missing on one row: no total for that arm rather than a wrong one
    rows[1]["after_unsafe"] = None
    assert corpora.paper_totals(rows)["after_unsafe"] is None


def test_corpora_and_selection():
    assert corpora.get(None) is corpora.DEFAULT and corpora.get("default") is corpora.DEFAULT
    p = corpora.get("paper-4.52.4")
    assert p.paper_only and p.transformers == "4.52.4" and p.seq_len == 5 and p.eval_context == "inference_mode"
    assert p.fp16 == {"bart", "marian"} and p.results == "hf-paper-4.52.4.json" and p.section == "hf-paper-4.52.4"
    assert p.sub_overrides["clap"]["audio_config"] == {"enable_fusion": True}
    rs = p.overrides["phi3"]["rope_scaling"]
    assert rs["type"] == "longrope" and len(rs["short_factor"]) == len(rs["long_factor"]) == 4  # head_dim 8 // 2
    assert p.overrides["phi3"]["original_max_position_embeddings"] < p.seq_len  # the long factors are live
    with pytest.raises(ValueError):
        corpora.get("nope")
    assert corpora.merged_overrides(p, "phi3", {"hidden_size": 32, "rope_scaling": None})["rope_scaling"] == rs
    assert corpora.merged_sub_overrides(p, "clap", "audio_config", {"hidden_size": 16}) == {
        "hidden_size": 16, "enable_fusion": True}
    assert corpora.merged_overrides(corpora.DEFAULT, "phi3", {"a": 1}) == {"a": 1}

    recs = [SimpleNamespace(name=n, paper=pp) for n, pp in
            (("t5", True), ("bart", True), ("llama", False), ("florence2", True), ("wav2vec2", False))]
    assert corpora.DEFAULT.model_names(recs) == ["t5", "bart", "llama", "florence2", "wav2vec2"]
    assert p.model_names(recs) == ["t5", "bart", "florence2"]
    assert run.select_models(p, recs, None, False) == ["t5", "bart", "florence2"]
    assert run.select_models(p, recs, "bart", False) == ["bart"]
    assert run.select_models(p, recs, None, True) == ["bart"]  # --quick: the quick subset within the corpus
    assert run.select_models(corpora.DEFAULT, recs, None, True) == ["bart", "llama", "wav2vec2"]
    with pytest.raises(ValueError, match="llama"):
        run.select_models(p, recs, "bart,llama", False)

    assert run.worker_python(corpora.DEFAULT, None) == sys.executable
    assert run.worker_python(p, None) == os.path.join(corpora.ROOT, ".venv-tf452", "bin", "python")
    assert run.worker_python(p, "/x/python") == "/x/python"


def _site(stmt, kind="Data-dependent branching", fn="BartEncoder.forward", graphmend=None):
    return {"kind": kind, "gb_id": "GB0170", "file": "models/bart/modeling_bart.py", "function": fn, "line": 10,
            "stmt": stmt, "stmt_start": 10, "stmt_end": 10, "events": 2, "modes": ["train"], "in_loop": False,
            "chain": [], "graphmend": graphmend or []}


def _arm(sites, fullgraph=(False, False)):
    kinds = {}
    for s in sites:
        kinds[s["kind"]] = kinds.get(s["kind"], 0) + 1
    return {"sites": sites, "kinds": kinds, "events": {"eval": 0, "train": 2 * len(sites)},
            "fullgraph": {"eval": fullgraph[0], "train": fullgraph[1]},
            "sites_by_mode": {"eval": 0, "train": len(sites)}, "graphs": {"eval": 1, "train": 1 + len(sites)},
            "explain_breaks": {"eval": 0, "train": len(sites)}, "counter_breaks": {"eval": 0, "train": len(sites)}}


def canned():
    ld = _site("if dropout_probability < self.layerdrop:",
               graphmend=[{"code": "GM101", "message": "m", "fixable": False, "no_fix_reason": "continue"}])
    f16 = _site("if hidden_states.dtype == torch.float16 and torch.isinf(hidden_states).any():",
                fn="BartEncoderLayer.forward")
    log = _site("logger.warning_once(msg)", kind="logging.Logger method not supported for non-export cases")
    eq = {"eval": {"equal": True}, "train": {"equal": True}}
    cmp_ = lambda b, a: {"fixed": [s for s in b if s not in a], "left": [s for s in b if s in a],  # noqa: E731
                         "new": [s for s in a if s not in b]}
    bart = {"name": "bart", "paper": True, "status": "ok", "paper_before": 7, "dtype": "torch.float16",
            "before": _arm([ld, f16, log]), "after": _arm([ld, f16]), "compare": cmp_([ld, f16, log], [ld, f16]),
            "outputs": eq, "fix": {"status": "ok", "files_changed": {"x.py": {}}},
            "after_unsafe": _arm([f16]), "compare_unsafe": cmp_([ld, f16, log], [f16]),
            "outputs_unsafe": {"eval": {"equal": True}, "train": {"equal": False, "reason": "loss: values differ"}},
            "fix_unsafe": {"status": "ok", "files_changed": {"x.py": {}}}}
    b0 = _arm([])
    t5 = {"name": "t5", "paper": True, "status": "ok", "paper_before": 3, "dtype": "torch.float32",
          "before": b0, "after": b0, "compare": cmp_([], []), "after_unsafe": b0, "compare_unsafe": cmp_([], []),
          "outputs": {"eval": {"equal": True, "reason": "identical code"},
                      "train": {"equal": True, "reason": "identical code"}},
          "outputs_unsafe": {"eval": {"equal": True, "reason": "identical code"},
                             "train": {"equal": True, "reason": "identical code"}},
          "fix": {"status": "ok", "files_changed": {}}, "fix_unsafe": {"status": "ok", "same_as_safe": True}}
    phi3 = {"name": "phi3", "paper": True, "status": "ok", "paper_before": None, "dtype": "torch.float32",
            "before": _arm([ld]), "after": _arm([ld]), "compare": cmp_([ld], [ld]), "outputs": eq,
            "after_unsafe": _arm([ld]), "compare_unsafe": cmp_([ld], [ld]), "outputs_unsafe": eq,
            "fix": {"status": "ok", "files_changed": {"y.py": {}}},
            "fix_unsafe": {"status": "ok", "same_as_safe": True, "files_changed": {"y.py": {}}}}
    flo = {"name": "florence2", "paper": True, "status": "skipped", "paper_before": None,
           "skip_reason": "AttributeError: module transformers has no attribute Florence2VisionConfig"}
    return {"meta": {"date": "2026-01-01 00:00 UTC", "machine": {"cpu": "Test CPU", "cores": 2, "mem_gb": 8,
                                                                   "python": "3.11"},
                     "torch": "2.13.0", "transformers": "4.52.4", "corpus": "paper-4.52.4",
                     "corpus_flags": corpora.PAPER_452.flags, "worker_python": ".venv-tf452/bin/python",
                     "graphmend_version": "graphmend 0.1.0", "duration_s": 99.0,
                     "args": {"jobs": 1, "no_timing": True}},
            "models": [t5, bart, phi3, flo]}


def test_unsafe_totals_and_paper_section():
    res = canned()
    t = report.totals(res)
    assert t["sites_before"] == 4 and t["sites_after"] == 3
    u = t["unsafe"]
    assert (u["sites_before"], u["sites_after"], u["sites_fixed"]) == (4, 2, 2)
    assert u["outputs_changed"] == ["bart"] and u["same_as_safe"] == ["phi3", "t5"]
    pt = t["paper_table2"]
    assert (pt["rows"], pt["before"], pt["after_safe"], pt["after_unsafe"]) == (3, 4, 3, 2)
    assert (pt["known_rows"], pt["known_before"], pt["paper_known_before"]) == (2, 3, 10)
    res["totals"] = t
    md = report.paper_markdown(res)
    assert md.startswith("## graphmend on the GraphMend paper's rows (transformers 4.52.4)")
    assert "| bart | float16 | 3 (0/6) | 2 (0/4) | 1 (0/2) | 7 | yes/yes | yes/NO |" in md
    assert "| t5 | float32 | 0 (0/0) | 0 (0/0) | 0 (0/0) | 3 | yes (no edit) | yes (no edit) |" in md
    assert "| phi3 | float32 | 1 (0/2) | 1 (0/2) | 1 (0/2) | - | yes/yes | yes/yes (= safe) |" in md
    assert "| florence2 | | skipped: AttributeError" in md
    assert "| **total** | | 4 | 3 | 2 | 65 -> 14 (14 rows; 10 on the 2 rows above)" in md
    assert "Changed eager outputs: bart." in md
    # what still breaks: every site left after the safe fix, with its type, and whether unsafe removed it
    assert "3 sites in 2 rows" in md
    assert "- **Data-dependent branching** (3)" in md
    assert ("bart: `models/bart/modeling_bart.py` BartEncoder.forward: `if dropout_probability < self.layerdrop:` "
            "(line 10, train): detected, no fix: GM101: continue; gone after unsafe") in md
    assert "BartEncoderLayer.forward" in md and "not detected by graphmend; still breaks after unsafe" in md
    assert "Florence2VisionConfig" in md
    assert "Cold start and steady state" not in md  # no row was timed


def test_paper_section_shows_the_timing_of_rows_that_reach_one_graph():
    res = canned()
    bart = next(m for m in res["models"] if m["name"] == "bart")
    bart["timing"] = {"mode": "eval", "reps": 2, "cold_x": 2.5, "steady_x": 1.1}
    phi3 = next(m for m in res["models"] if m["name"] == "phi3")
    phi3["timing"] = {"mode": "eval", "error": "fixed: timeout"}
    res["totals"] = report.totals(res)
    md = report.paper_markdown(res)
    assert "cold start original / fixed median **2.5x**, max 2.5x over 1 rows" in md
    assert "steady state median 1.1x" in md
    bart_row = next(line for line in md.splitlines() if line.startswith("| bart |"))
    assert bart_row.endswith("| 2.50x | 1.10x |")
    phi3_row = next(line for line in md.splitlines() if line.startswith("| phi3 |"))
    assert phi3_row.endswith("| not timed (fixed: timeout) | not timed (fixed: timeout) |")
    t5_row = next(line for line in md.splitlines() if line.startswith("| t5 |"))
    assert t5_row.endswith("| - | - |")


def test_default_markdown_gets_the_unsafe_column_only_with_data():
    res = canned()
    res["meta"]["corpus"] = "default"
    md = report.markdown(res, None)
    assert "| after unsafe | outputs equal unsafe |" in md
    assert "| 1 (0/2) | yes/NO | - | - |" in md  # bart: after unsafe, outputs unsafe, no timing
    for m in res["models"]:
        for k in ("after_unsafe", "compare_unsafe", "outputs_unsafe", "fix_unsafe"):
            m.pop(k, None)
    assert "after unsafe" not in report.markdown(res, None)


def test_corpus_flags_reach_the_inputs():
    """The paper corpus's flags on the recipes: sequence length 5 (decoder inputs too) and fp16 weights and
    floating inputs; checked on the installed transformers, whatever its version."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import recipes

    r = recipes.BY_NAME["bart"]
    model, cfg = recipes.build(r, corpus="paper-4.52.4")
    assert next(model.parameters()).dtype == torch.float16
    ev = recipes.make_inputs(r, cfg, False, corpus="paper-4.52.4")
    assert ev["input_ids"].shape == (2, 5) and ev["decoder_input_ids"].shape == (2, 5)
    assert ev["attention_mask"][0].all() and not ev["attention_mask"][1].all()  # still a ragged batch
    default = recipes.make_inputs(r, cfg, False)
    assert default["input_ids"].shape == (2, 16) and default["decoder_input_ids"].shape == (2, 8)
    assert int((default["attention_mask"][1] == 0).sum()) == 4  # unchanged default padding
    w = recipes.BY_NAME["whisper"]
    c = corpora.Corpus(name="test", fp16=frozenset({"whisper"}), seq_len=5)
    _, wcfg = recipes.build(w)
    wi = recipes.make_inputs(w, wcfg, True, corpus=c)
    assert wi["input_features"].dtype == torch.float16 and wi["labels"].dtype == torch.long
    assert wi["labels"].shape == (2, 5)


def test_snapshot_binary(tmp_path):
    """The run uses a copy of GRAPHMEND_BIN taken at the start, so a rebuild mid-run changes no row."""
    import hashlib

    b = tmp_path / "graphmend"
    b.write_text("#!/bin/sh\necho 'graphmend 0.0.test'\n")
    b.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    snap = run.snapshot_binary(str(b), str(work))
    assert snap["path"] == str(work / "graphmend-snapshot") and os.access(snap["path"], os.X_OK)
    assert snap["sha256"] == hashlib.sha256(b.read_bytes()).hexdigest()
    b.write_text("#!/bin/sh\necho changed\n")  # a rebuild after the snapshot does not reach the copy
    assert "0.0.test" in open(snap["path"]).read()
