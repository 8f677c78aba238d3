"""Site extraction and matching of the HF benchmark harness (bench/hf/sites.py): no torch needed."""
import os
import sys
import textwrap

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "hf"))

import sites as S  # noqa: E402

SRC = textwrap.dedent('''\
    import torch


    class Encoder(torch.nn.Module):
        def forward(self, x, layerdrop=0.1):
            for layer in self.layers:
                dropout_probability = torch.rand([])
                if dropout_probability < layerdrop:  # skip the layer
                    continue
                x = layer(
                    x,
                    scale=2,
                )
            if not torch.isfinite(x).all(): raise ValueError("inf")
            return x


    def helper(t):
        return t.item()
    ''')


def _pkg(tmp_path, src=SRC, name="modeling_toy.py"):
    d = tmp_path / "site-packages" / "transformers" / "models" / "toy"
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text(src)
    S._index.cache_clear()
    return str(p)


def test_package_relpath(tmp_path):
    p = _pkg(tmp_path)
    assert S.package_relpath(p) == "models/toy/modeling_toy.py"
    root = str(tmp_path / "site-packages" / "transformers")
    assert S.package_relpath(p, (root,)) == "models/toy/modeling_toy.py"
    assert S.package_relpath("/usr/lib/python3/torch/nn/functional.py") is None
    assert S.package_relpath("") is None


def test_statement_at_header_body_and_multiline(tmp_path):
    p = _pkg(tmp_path)
    # the `if` header line resolves to the header, not to the whole if-block
    start, end, text, func = S.statement_at(p, 8)
    assert (start, end) == (8, 8)
    assert text == "if dropout_probability < layerdrop:"
    assert func == "Encoder.forward"
    # a line inside a multi-line call resolves to the whole statement
    start, end, text, func = S.statement_at(p, 11)
    assert (start, end) == (10, 13)
    assert text == "x = layer( x, scale=2, )"
    # one-line `if ...: raise` keeps the header up to the colon
    assert S.statement_at(p, 14)[2] == "if not torch.isfinite(x).all():"
    assert S.statement_at(p, 19)[3] == "helper"
    assert S.statement_at(p, 2) is None  # blank line


def test_sites_match_by_text_when_lines_move(tmp_path):
    p = _pkg(tmp_path)
    fr = S.frame_of(p, 8, "forward")
    ev = dict(vars(fr), kind="Data-dependent branching", gb_id="GB0170", mode="train")
    # the fixed copy gained lines above the site: same key, different line
    moved = "# a comment added by a fix\nimport math\n" + SRC
    q = _pkg(tmp_path, moved, "modeling_toy2.py")
    fr2 = S.frame_of(q, 10, "forward")
    assert fr2.line != fr.line
    ev2 = dict(vars(fr2), file=fr.file, kind="Data-dependent branching", gb_id="GB0170", mode="train")
    before = S.distinct_sites([ev, dict(ev, mode="eval"), ev])
    assert len(before) == 1 and before[0]["events"] == 3 and sorted(before[0]["modes"]) == ["eval", "train"]
    after = S.distinct_sites([ev2])
    cmp_ = S.compare_sites(before, after)
    assert len(cmp_["left"]) == 1 and not cmp_["fixed"] and not cmp_["new"]
    # a site whose statement text changed is fixed, and the rewritten statement is new
    fr3 = S.frame_of(p, 14, "forward")
    ev3 = dict(vars(fr3), kind="Data-dependent branching", gb_id="GB0170", mode="train")
    cmp2 = S.compare_sites(S.distinct_sites([ev, ev3]), after)
    assert [s["stmt"] for s in cmp2["fixed"]] == ["if not torch.isfinite(x).all():"]


def test_loop_skip_event_takes_cause_kind(tmp_path):
    p = _pkg(tmp_path)
    fr = vars(S.frame_of(p, 8, "forward"))
    loop = dict(fr, kind="graph break in loop", gb_id="GB7000", in_loop=True, mode="train")
    cause = dict(fr, kind="Data-dependent branching", gb_id="GB0170", in_loop=False, mode="train")
    (s,) = S.distinct_sites([loop, cause])
    assert s["kind"] == "Data-dependent branching" and s["in_loop"] and s["events"] == 2


def _finding(rel, row, end=None, code="GM101"):
    return {"code": code, "message": "m", "_rel": rel, "location": {"row": row, "column": 1},
            "end_location": {"row": end or row, "column": 9}}


def test_score_detection_recall_precision(tmp_path):
    p = _pkg(tmp_path)
    rel = "models/toy/modeling_toy.py"
    s_if = dict(vars(S.frame_of(p, 8, "forward")), kind="Data-dependent branching")
    s_item = dict(vars(S.frame_of(p, 19, "helper")), kind="item")
    # the .item() site was reached through a call on line 11: a finding at that call site counts
    s_item["chain"] = [vars(S.frame_of(p, 11, "forward"))]
    sites = S.distinct_sites([s_if, s_item])
    findings = [
        _finding(rel, 8),          # true: the if
        _finding(rel, 12),         # true: inside the call statement that leads to .item()
        _finding(rel, 14),         # false: traced, no break there
        _finding(rel, 16),         # unverified: never traced
        _finding("models/other/modeling_other.py", 8),  # other file: unverified
    ]
    traced = {rel: {5, 6, 7, 8, 10, 11, 14, 15, 19}}
    sc = S.score_detection(findings, sites, traced)
    assert len(sc["found"]) == 2 and not sc["missed"]
    assert len(sc["true_findings"]) == 2
    assert [f["location"]["row"] for f in sc["false_findings"]] == [14]
    assert len(sc["unverified_findings"]) == 2
    # without the call-site finding the .item() site is missed
    sc2 = S.score_detection([findings[0]], sites, traced)
    assert [s["function"] for s in sc2["missed"]] == ["helper"]


def test_comprehension_frame_marked_secondary(tmp_path):
    p = _pkg(tmp_path)
    fr = vars(S.frame_of(p, 19, "helper"))
    ev = dict(fr, kind="Missing tp_iternext", gb_id="GB4347", mode="train",
              reason="Failed to handle graph break gracefully. Skipping the function and falling back to eager.",
              innermost={"file": p, "line": 19, "function": "<dictcomp>"})
    (s,) = S.distinct_sites([ev])
    assert s.get("comprehension_frame") is True
    (s2,) = S.distinct_sites([dict(ev, innermost={"file": p, "line": 19, "function": "helper"})])
    assert not s2.get("comprehension_frame")


def test_finding_on_a_short_circuited_operand_is_unverified_with_positions(tmp_path):
    p = _pkg(tmp_path)
    rel = "models/toy/modeling_toy.py"
    sites = S.distinct_sites([dict(vars(S.frame_of(p, 8, "forward")), kind="Data-dependent branching")])
    # a finding on columns 30..60 of line 14: the line ran, but no instruction inside the range did
    f = {"code": "GM101", "message": "m", "_rel": rel, "location": {"row": 14, "column": 30},
         "end_location": {"row": 14, "column": 60}}
    traced = {rel: {8, 14}}
    sc = S.score_detection([f], sites, traced, {rel: {(14, 4), (14, 20)}})
    assert not sc["false_findings"] and len(sc["unverified_findings"]) == 1
    # an instruction at column 35 (0-based 34) lies inside: the finding was traced and is false
    sc = S.score_detection([f], sites, traced, {rel: {(14, 4), (14, 34)}})
    assert len(sc["false_findings"]) == 1
    # the end column is exclusive
    sc = S.score_detection([f], sites, traced, {rel: {(14, 59)}})
    assert not sc["false_findings"]
    # without positions the line decides, as before
    sc = S.score_detection([f], sites, traced)
    assert len(sc["false_findings"]) == 1


def test_secondary_comprehension_site_is_found_by_its_cause_only(tmp_path):
    p = _pkg(tmp_path)
    rel = "models/toy/modeling_toy.py"
    helper = vars(S.frame_of(p, 19, "helper"))
    cause = dict(vars(S.frame_of(p, 8, "forward")), kind="Data-dependent branching", chain=[helper])
    comp = dict(helper, kind="Missing tp_iternext", gb_id="GB4347", mode="train",
                reason="Failed to handle graph break gracefully. Skipping the function and falling back to eager.",
                innermost={"file": p, "line": 19, "function": "<dictcomp>"})
    sites = S.distinct_sites([cause, comp])
    traced = {rel: {8, 19}}
    sc = S.score_detection([_finding(rel, 8)], sites, traced)
    assert len(sc["found"]) == 2 and [s["kind"] for s in sc["found_by_cause"]] == ["Missing tp_iternext"]
    assert not sc["missed"]
    # the cause not found: the secondary site is missed too
    sc = S.score_detection([], sites, traced)
    assert len(sc["missed"]) == 2 and not sc["found_by_cause"]
    # a cause whose stack does not pass through the comprehension's function does not explain it
    other = dict(vars(S.frame_of(p, 8, "forward")), kind="Data-dependent branching")
    sc = S.score_detection([_finding(rel, 8)], S.distinct_sites([other, comp]), traced)
    assert [s["kind"] for s in sc["missed"]] == ["Missing tp_iternext"]
