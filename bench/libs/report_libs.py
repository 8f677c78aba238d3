"""The `libs` section of docs/benchmarks.md, from the results JSON of bench/libs/run.py alone."""
from __future__ import annotations


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _s(x) -> str:
    return "-" if x is None else str(x)


def _eq(L: dict, suffix: str = "") -> str:
    f = L.get("fix" + suffix)
    if not f:
        return "-"
    bad = f.get("outputs_unequal") or []
    errs = f.get("after_errors") or []
    txt = "all" if not bad else f"{f['models'] - len(bad)}/{f['models']} ({', '.join(bad)} differ)"
    return txt + (f"; fixed arm failed: {', '.join(errs)}" if errs else "")


def _fixed(L: dict, suffix: str = "") -> str:
    f = L.get("fix" + suffix)
    if not f:
        return "-"
    txt = f"{f.get('sites_fixed')}/{f.get('sites_before')}"
    if f.get("sites_new"):
        txt += f" ({f['sites_new']} new)"
    if f.get("crashed"):
        txt += " (fix crashed)"
    return txt + (" (= safe)" if f.get("same_as_safe") else "")


def _model_fixed(e: dict, suffix: str) -> str:
    if ("sites_fixed" + suffix) in e:
        return str(e["sites_fixed" + suffix])
    return "error" if e.get("after" + suffix + "_error") else "-"


def _model_eq(e: dict, suffix: str) -> str:
    o = e.get("outputs" + suffix)
    if not o:
        return "-"
    return "yes" if all(v.get("equal") for v in o.values()) else "no"


def markdown(results: dict) -> str:
    meta = results["meta"]
    libs = results["libraries"]
    t = results.get("totals", {})
    m = meta.get("machine", {})
    lines = ["## Other libraries: timm, diffusers, torchvision, torch_geometric, kornia", ""]
    lines.append(
        f"Measured {meta['date']} on {m.get('cpu') or '?'} ({m.get('cores')} cores), CPU only, torch {meta['torch']} "
        f"(`{meta.get('worker_python')}`), " + ", ".join(f"{k} {v}" for k, v in meta["lib_versions"].items())
        + f"; graphmend: `{meta.get('graphmend_version') or '?'}` (snapshot of `{meta.get('graphmend_bin')}`, "
        f"sha256 {str(meta.get('graphmend_sha256'))[:12]}). Regenerate: `bash bench/libs/setup.sh && "
        f".venv/bin/python bench/libs/run.py --jobs 2` (detection only, reusing the cached census: add `--no-fix`); "
        f"data: `bench/results/libs.json`, missed sites and false positives: `bench/results/libs-misses.txt`. "
        f"Definitions: `bench/libs/README.md`.")
    lines.append("")
    lines.append("Sites are distinct per library (a site several models hit counts once). Detection runs "
                 "`graphmend check` over the whole installed package; precision counts findings on code Dynamo "
                 "traced; the fixed arms are the whole package rewritten by `check --fix` (safe fixes) and by "
                 "`check --fix --unsafe-fixes`; \"(= safe)\": the unsafe fixes changed no byte more.")
    lines.append("")
    lines.append("| library | models | sites | found | recall | precision (true/false) | unverified findings | "
                 "check time (whole package) | fixed, safe | fixed, unsafe | outputs equal, safe | outputs equal, unsafe |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for lib, L in libs.items():
        d = L.get("detection") or {}
        c = L.get("check") or {}
        chk = (f"{c.get('wall_s', 0):.1f} s" + (" (crashed)" if c.get("crashed") else "")) if c else "-"
        lines.append(f"| {lib} {L.get('version')} | {L.get('models_ok')}/{L.get('models')} | {_s(d.get('sites'))} | "
                     f"{_s(d.get('found'))} | {_pct(d.get('recall'))} | {_pct(d.get('precision'))} "
                     f"({_s(d.get('true'))}/{_s(d.get('false'))}) | {_s(d.get('unverified'))} | {chk} | {_fixed(L)} | "
                     f"{_fixed(L, '_unsafe')} | {_eq(L)} | {_eq(L, '_unsafe')} |")
    lines.append(f"| **total** | {t.get('models_ok')}/{t.get('models')} | {t.get('sites')} | {t.get('found')} | "
                 f"{_pct(t.get('recall'))} | {_pct(t.get('precision'))} ({t.get('true')}/{t.get('false')}) | "
                 f"{t.get('unverified')} | | {t.get('sites_fixed')}/{t.get('sites_before_fixed_arm')} | "
                 + (f"{t.get('sites_fixed_unsafe')}/{t.get('sites_before_fixed_arm')}"
                    if any(L.get("fix_unsafe") for L in libs.values()) else "-") + " | | |")
    lines.append("")
    lines.append("Per model (sites of that model; fixed = its sites before minus its sites after):")
    lines.append("")
    lines.append("| model | library | sites (eval/train) | found | precision (true/false) | fixed (safe/unsafe) | "
                 "outputs equal (safe/unsafe) | what it exercises |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for e in results["models"]:
        if e.get("status") != "ok":
            lines.append(f"| {e['name']} | {e['lib']} | skipped: {e.get('skip_reason', '')[:120]} | | | | | "
                         f"{e.get('note', '')} |")
            continue
        b = e["before"]
        d = e.get("detection") or {}
        fixed = f"{_model_fixed(e, '')}/{_model_fixed(e, '_unsafe')}"
        eq = f"{_model_eq(e, '')}/{_model_eq(e, '_unsafe')}"
        lines.append(f"| {e['name']} | {e['lib']} | {len(b['sites'])} ({b['sites_by_mode'].get('eval', 0)}/"
                     f"{b['sites_by_mode'].get('train', 0)}) | {_s(d.get('found'))} | {_pct(d.get('precision'))} "
                     f"({_s(d.get('true'))}/{_s(d.get('false'))}) | {fixed} | {eq} | {e.get('note', '')} |")
    return "\n".join(lines) + "\n"
