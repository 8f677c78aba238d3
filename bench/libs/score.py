"""Scoring of graphmend's findings against the break sites of bench/libs, per model and per library.

Standard library only (no torch), so it is testable under any interpreter. Site keying, matching and the
per-model scoring are bench/hf/sites.py's (`score_detection`); this module adds what a library-wide run
needs: findings of one whole-package check mapped to package-relative paths, per-model scores, a
library-wide score over *distinct* sites and findings (a site several models hit counts once), and the
plain-text list of missed sites and false positives (`misses_text`).
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_HF = os.path.join(os.path.dirname(HERE), "hf")
if _HF not in sys.path:
    sys.path.insert(0, _HF)

import sites as S  # noqa: E402  (bench/hf/sites.py)


def findings_in(findings: list[dict], root: str, package: str) -> list[dict]:
    """The findings of a check over the package at `root`, each with `_rel` (path relative to the package)."""
    out = []
    for f in findings:
        rel = S.package_relpath(f.get("filename", ""), (root,), package=package)
        if rel is not None:
            out.append(dict(f, _rel=rel))
    return out


def finding_key(f: dict) -> tuple:
    return (f["_rel"], f["location"]["row"], f["location"].get("column", 0), f.get("code"))


def _strip(f: dict, root: str | None = None) -> dict:
    d = {"code": f.get("code"), "file": f["_rel"], "row": f["location"]["row"],
         "message": (f.get("message") or "")[:300], "fixable": f.get("fix") is not None,
         "rule": (f.get("graphmend") or {}).get("rule")}
    if root:
        st = S.statement_at(os.path.join(root, f["_rel"]), f["location"]["row"])
        d["stmt"] = st[2] if st else ""
    return d


SITE_FIELDS = ("kind", "gb_id", "file", "function", "line", "stmt", "stmt_start", "stmt_end", "modes", "events",
               "in_loop", "chain", "detail", "message")


def sites_with_detail(sites: list[dict], events: list[dict]) -> list[dict]:
    """Sites (bench/hf distinct_sites) with Dynamo's words: the `detail` and `message` of the first event of
    each site whose kind is the site's (a loop event's message is about the loop, not the cause)."""
    out = []
    for s in sites:
        s = dict(s)
        evs = [e for e in events if e.get("file") is not None and S._key_of(e) == S._key_of(s)]
        pick = next((e for e in evs if e.get("kind") == s.get("kind") and not e.get("in_loop")), evs[0] if evs else None)
        if pick:
            s["detail"] = pick.get("detail", "")
            s["message"] = pick.get("message", pick.get("detail", ""))
            s["reason"] = pick.get("reason", "")
        out.append(s)
    return out


def score_model(findings: list[dict], sites: list[dict], traced_lines: dict, traced_positions: dict | None) -> dict:
    """bench/hf's score_detection for one model, with the lists cut down to what the JSON keeps."""
    executed = {k: set(v) for k, v in traced_lines.items()}
    positions = ({k: {tuple(p) for p in v} for k, v in traced_positions.items()}
                 if traced_positions is not None else None)
    sc = S.score_detection(findings, sites, executed, positions)
    return {"sites": len(sites), "found": len(sc["found"]), "missed": len(sc["missed"]),
            "found_by_cause": len(sc["found_by_cause"]), "true": len(sc["true_findings"]),
            "false": len(sc["false_findings"]), "unverified": len(sc["unverified_findings"]),
            "recall": ratio(len(sc["found"]), len(sites)),
            "precision": ratio(len(sc["true_findings"]), len(sc["true_findings"]) + len(sc["false_findings"])),
            "_found": sc["found"], "_missed": sc["missed"], "_true": sc["true_findings"],
            "_false": sc["false_findings"]}


def ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def score_library(findings: list[dict], models: list[dict], root: str | None = None) -> dict:
    """Library-wide detection over distinct sites and distinct findings.

    `models`: per model {"name", "sites" (with details), "score" (score_model's, with its private lists)}.
    A distinct site (by key) is found when any model's instance of it was found; its models and modes are
    united. A distinct finding is true when it hit a site of any model, false when some model traced it and
    no model's site was hit by it, unverified otherwise.
    """
    by_key: dict[tuple, dict] = {}
    for m in models:
        sc = m["score"]
        found_keys = {S._key_of(s) for s in sc["_found"]}
        for s in m["sites"]:
            k = S._key_of(s)
            d = by_key.get(k)
            if d is None:
                d = by_key[k] = dict(s, models=[], found=False, modes=list(s.get("modes", [])))
            d["models"].append(m["name"])
            d["modes"] = sorted(set(d["modes"]) | set(s.get("modes", [])))
            d["found"] = d["found"] or k in found_keys
    true_keys = {finding_key(f) for m in models for f in m["score"]["_true"]}
    false_keys = {finding_key(f) for m in models for f in m["score"]["_false"]} - true_keys
    by_fk = {finding_key(f): f for f in findings}
    sites = sorted(by_key.values(), key=lambda s: (s["file"], s.get("stmt_start", 0), s["function"]))
    found = [s for s in sites if s["found"]]
    return {"sites": len(sites), "found": len(found), "missed": len(sites) - len(found),
            "recall": ratio(len(found), len(sites)),
            "findings": len(findings), "true": len(true_keys), "false": len(false_keys),
            "unverified": len(findings) - len(true_keys) - len(false_keys),
            "precision": ratio(len(true_keys), len(true_keys) + len(false_keys)),
            "site_list": [{k: s.get(k) for k in SITE_FIELDS + ("models", "found", "reason")} for s in sites],
            "false_findings": [_strip(by_fk[k], root) for k in sorted(false_keys) if k in by_fk],
            "true_findings": [_strip(by_fk[k], root) for k in sorted(true_keys) if k in by_fk]}


def _msg_lines(s: dict, width: int = 6) -> list[str]:
    msg = (s.get("message") or s.get("detail") or "").strip()
    lines = [ln.rstrip() for ln in msg.splitlines() if ln.strip()]
    return lines[:width]


def misses_text(results: dict) -> str:
    """The plain-text list: per-library summary, then one block per missed site, then false positives."""
    out = []
    meta = results.get("meta", {})
    out.append(f"bench/libs: graphmend's missed break sites and false positives ({meta.get('date', '')})")
    out.append(f"graphmend: {meta.get('graphmend_version', '?')} (sha256 {str(meta.get('graphmend_sha256'))[:12]}); "
               f"torch {meta.get('torch', '?')}; libraries {meta.get('lib_versions', {})}")
    out.append("Site = innermost frame of the break's user stack in the library package. Found = a finding overlaps "
               "the statement of that frame or of any library frame on its stack. Precision is over findings on "
               "code Dynamo traced (distinct findings, all models of the library).")
    out.append("")
    out.append(f"{'library':<16}{'models':>7}{'sites':>7}{'found':>7}{'recall':>8}{'true':>6}{'false':>7}"
               f"{'precision':>11}{'unverif.':>10}{'check s':>9}")
    libs = results.get("libraries", {})
    for lib, L in libs.items():
        d = L.get("detection") or {}
        out.append(f"{lib:<16}{L.get('models_ok', 0):>7}{d.get('sites', '-'):>7}{d.get('found', '-'):>7}"
                   f"{_pct(d.get('recall')):>8}{d.get('true', '-'):>6}{d.get('false', '-'):>7}"
                   f"{_pct(d.get('precision')):>11}{d.get('unverified', '-'):>10}"
                   f"{(L.get('check') or {}).get('wall_s', '-'):>9}")
    t = results.get("totals", {})
    out.append(f"{'total':<16}{t.get('models_ok', 0):>7}{t.get('sites', '-'):>7}{t.get('found', '-'):>7}"
               f"{_pct(t.get('recall')):>8}{t.get('true', '-'):>6}{t.get('false', '-'):>7}"
               f"{_pct(t.get('precision')):>11}{t.get('unverified', '-'):>10}")
    out.append("")
    n = 0
    for lib, L in libs.items():
        d = L.get("detection") or {}
        missed = [s for s in d.get("site_list", []) if not s.get("found")]
        if not missed:
            continue
        out.append("=" * 100)
        out.append(f"MISSED SITES: {lib} ({len(missed)})")
        out.append("=" * 100)
        for s in missed:
            n += 1
            out.append(f"[{n}] {lib} | models: {', '.join(s.get('models', []))} | modes: {', '.join(s.get('modes', []))}")
            out.append(f"    break: {s.get('kind')} ({s.get('gb_id') or 'no id'})" + (" [graph break in loop: frame "
                                                                                     "skipped]" if s.get("in_loop") else ""))
            for ln in _msg_lines(s):
                out.append(f"    dynamo: {ln[:220]}")
            out.append(f"    at: {lib}/{s['file']}:{s['line']}  in {s['function']}")
            out.append(f"        {s['stmt'][:300]}")
            chain = s.get("chain") or []
            if chain:
                out.append("    library stack (outermost first):")
                for fr in chain:
                    out.append(f"      {lib}/{fr['file']}:{fr['line']} {fr['function']}: {fr.get('stmt', '')[:200]}")
            out.append("")
    for lib, L in libs.items():
        un = L.get("unattributed") or []
        if un:
            out.append("=" * 100)
            out.append(f"BREAKS WITH NO {lib} FRAME ON THE STACK (not sites; in torch or the recipe's wrapper): {lib}")
            out.append("=" * 100)
            for u in un:
                out.append(f"  {u.get('model')} {u.get('mode')}: {u.get('kind')} ({u.get('gb_id') or 'no id'}) at "
                           f"{(u.get('innermost') or {}).get('file', '?')}:{(u.get('innermost') or {}).get('line', '?')}")
            out.append("")
    for lib, L in libs.items():
        d = L.get("detection") or {}
        fps = d.get("false_findings") or []
        if not fps:
            continue
        out.append("=" * 100)
        out.append(f"FALSE POSITIVES: {lib} ({len(fps)}; findings on code Dynamo traced without a break there)")
        out.append("=" * 100)
        for f in fps:
            out.append(f"  {f['code']} {f.get('rule') or ''} {lib}/{f['file']}:{f['row']}")
            out.append(f"      {(f.get('stmt') or '')[:240]}")
            out.append(f"      -> {f['message'][:200]}")
        out.append("")
    return "\n".join(out) + "\n"


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"
