"""bench/libs: site keying for packages other than transformers, per-model and library-wide scoring, the
misses list and the report. Standard library only (no .venv-libs, no torch needed)."""
import importlib.util
import os
import sys
import textwrap

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "bench")
sys.path.insert(0, os.path.join(BENCH, "hf"))

import sites as S  # noqa: E402


def _load(name, rel):
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH, rel))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


score = _load("libs_score", "libs/score.py")
report_libs = _load("libs_report", "libs/report_libs.py")
recipes = _load("libs_recipes", "libs/recipes.py")

SRC = textwrap.dedent('''\
    import torch


    def filter_adj(row, col, mask):
        row, col = row[mask], col[mask]
        return row, col


    def pool(x, batch):
        size = int(batch.max()) + 1
        if x.sum() > 0:
            x = x * 2
        return x, size
    ''')


def _pkg(tmp_path, name="torch_geometric"):
    d = tmp_path / "site-packages" / name / "nn" / "pool"
    d.mkdir(parents=True, exist_ok=True)
    p = d / "topk.py"
    p.write_text(SRC)
    S._index.cache_clear()
    return str(tmp_path / "site-packages" / name), str(p)


def test_package_relpath_for_other_packages(tmp_path):
    root, p = _pkg(tmp_path)
    assert S.package_relpath(p, (root,)) == "nn/pool/topk.py"
    assert S.package_relpath(p, package="torch_geometric") == "nn/pool/topk.py"
    assert S.package_relpath(p) is None  # the default package is still transformers (bench/hf unchanged)
    old = S.PACKAGE
    try:
        S.PACKAGE = "torch_geometric"  # what bench/libs/worker.py sets
        assert S.package_relpath(p) == "nn/pool/topk.py"
        fr = S.frame_of(p, 5, "filter_adj")
        assert (fr.file, fr.function, fr.stmt) == ("nn/pool/topk.py", "filter_adj", "row, col = row[mask], col[mask]")
    finally:
        S.PACKAGE = old


def _site(root, p, line, kind="Dynamic shape operator", chain=()):
    fr = vars(S.frame_of(p, line, "f", (root,)))
    return dict(fr, kind=kind, gb_id="GB0036", mode="train", chain=list(chain), detail=kind,
                message=kind + "\n  Explanation: x")


def _finding(p, row, code="GM501", end=None):
    return {"code": code, "filename": p, "location": {"row": row, "column": 5},
            "end_location": {"row": end or row, "column": 40}, "message": "m", "fix": None,
            "graphmend": {"rule": "r"}}


def test_findings_in_maps_paths_and_drops_other_files(tmp_path):
    root, p = _pkg(tmp_path)
    fs = score.findings_in([_finding(p, 5), _finding("/elsewhere/x.py", 1)], root, "torch_geometric")
    assert [f["_rel"] for f in fs] == ["nn/pool/topk.py"]


def test_model_and_library_scores(tmp_path):
    root, p = _pkg(tmp_path)
    s_mask = _site(root, p, 5)
    s_item = _site(root, p, 10, kind="Unsupported Tensor.item() call with capture_scalar_outputs=False")
    s_branch = _site(root, p, 11, kind="Data-dependent branching")
    sites_a = score.sites_with_detail(S.distinct_sites([s_mask, s_item]), [s_mask, s_item])
    sites_b = score.sites_with_detail(S.distinct_sites([s_mask, s_branch]), [s_mask, s_branch])
    # findings: one on the mask (true), one on the return of pool (traced, no break: false), one never traced
    findings = score.findings_in([_finding(p, 5), _finding(p, 13, code="GM403"), _finding(p, 2, code="GM101")],
                                 root, "torch_geometric")
    traced = {"nn/pool/topk.py": [5, 10, 11, 12, 13]}
    a = score.score_model(findings, sites_a, traced, None)
    b = score.score_model(findings, sites_b, traced, None)
    assert (a["sites"], a["found"], a["true"], a["false"], a["unverified"]) == (2, 1, 1, 1, 1)
    assert a["recall"] == 0.5 and a["precision"] == 0.5
    lib = score.score_library(findings, [{"name": "a", "sites": sites_a, "score": a},
                                         {"name": "b", "sites": sites_b, "score": b}], root)
    # the mask site is shared by both models: one distinct site
    assert (lib["sites"], lib["found"], lib["missed"]) == (3, 1, 2)
    assert (lib["true"], lib["false"], lib["unverified"]) == (1, 1, 1)
    shared = [s for s in lib["site_list"] if s["line"] == 5][0]
    assert shared["models"] == ["a", "b"] and shared["found"]
    assert lib["false_findings"][0]["stmt"] == "return x, size"
    # the misses list names each missed site with Dynamo's words and the false positive with its statement
    results = {"meta": {"date": "d", "lib_versions": {}}, "libraries": {"torch_geometric": {
        "models_ok": 2, "detection": lib, "check": {"wall_s": 1.0}}}, "totals": {}}
    txt = score.misses_text(results)
    assert "MISSED SITES: torch_geometric (2)" in txt
    assert "torch_geometric/nn/pool/topk.py:10" in txt and "size = int(batch.max()) + 1" in txt
    assert "Explanation: x" in txt
    assert "FALSE POSITIVES: torch_geometric (1;" in txt and "GM403" in txt


def test_a_finding_on_a_library_caller_frame_counts(tmp_path):
    root, p = _pkg(tmp_path)
    caller = vars(S.frame_of(p, 10, "pool", (root,)))
    s = S.distinct_sites([_site(root, p, 5, chain=[caller])])
    findings = score.findings_in([_finding(p, 10)], root, "torch_geometric")
    sc = score.score_model(findings, s, {"nn/pool/topk.py": [5, 10]}, None)
    assert sc["found"] == 1 and sc["true"] == 1


def test_sites_with_detail_prefers_the_cause_over_the_loop_event(tmp_path):
    root, p = _pkg(tmp_path)
    loop = dict(_site(root, p, 11), kind="graph break in loop", in_loop=True, message="loop")
    cause = dict(_site(root, p, 11, kind="Data-dependent branching"), message="cause")
    sites = S.distinct_sites([loop, cause])
    out = score.sites_with_detail(sites, [loop, cause])
    assert out[0]["kind"] == "Data-dependent branching" and out[0]["message"] == "cause"


def test_report_and_recipe_table():
    assert len(recipes.RECIPES) >= 40
    assert {r.lib for r in recipes.RECIPES} == set(recipes.LIBS)
    assert [r.name for r in recipes.select(libs="kornia")] == [r.name for r in recipes.RECIPES if r.lib == "kornia"]
    results = {"meta": {"date": "d", "torch": "2.14.1", "lib_versions": {"kornia": "0.9.0"}, "machine": {}},
               "libraries": {"kornia": {"version": "0.9.0", "models": 1, "models_ok": 1,
                                        "detection": {"sites": 2, "found": 1, "recall": 0.5, "precision": 1.0,
                                                      "true": 1, "false": 0, "unverified": 3},
                                        "check": {"wall_s": 2.0, "crashed": False},
                                        "fix": {"sites_fixed": 1, "sites_before": 2, "models": 1,
                                                "outputs_unequal": [], "after_errors": []},
                                        "fix_unsafe": {"sites_fixed": 2, "sites_before": 2, "models": 1,
                                                       "outputs_unequal": ["kornia_x"], "after_errors": []}}},
               "totals": {"models": 1, "models_ok": 1, "sites": 2, "found": 1, "recall": 0.5},
               "models": [{"name": "kornia_x", "lib": "kornia", "status": "ok", "note": "n",
                           "before": {"sites": [{}, {}], "sites_by_mode": {"eval": 1, "train": 2}},
                           "detection": {"found": 1, "precision": 1.0, "true": 1, "false": 0}, "sites_fixed": 1,
                           "outputs": {"eval": {"equal": True}, "train": {"equal": True}}, "sites_fixed_unsafe": 2,
                           "outputs_unsafe": {"eval": {"equal": True}, "train": {"equal": False}}}]}
    md = report_libs.markdown(results)
    assert ("| kornia 0.9.0 | 1/1 | 2 | 1 | 50% | 100% (1/0) | 3 | 2.0 s | 1/2 | 2/2 | all | 0/1 (kornia_x differ) |"
            in md)
    assert "| kornia_x | kornia | 2 (1/2) | 1 | 100% (1/0) | 1/2 | yes/no | n |" in md
