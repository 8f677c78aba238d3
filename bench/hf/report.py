"""The `hf` section of docs/benchmarks.md and its chart, from the results JSON of bench/hf/run.py.

Pure functions of the results dict (plus matplotlib for the chart), so a canned JSON regenerates the
report without running any model.
"""
from __future__ import annotations

import os
import statistics

import corpora

PAPER = {"models": 27, "breaks": 147, "fixed": 107, "fixed_pct": 72.8, "fully_fixed": 21,
         "cold_x_max": 26, "cold_x_mean": 5}


def _ok(models):
    return [m for m in models if m.get("status") == "ok"]


def _has_after(m, arm: str = "") -> bool:
    """arm "" is the fixed arm (safe fixes), "_unsafe" the unsafe arm."""
    return m.get("after" + arm) is not None and ("compare" + arm) in m


def _arm_totals(ok: list, arm: str) -> dict:
    fixed_arm = [m for m in ok if _has_after(m, arm)]
    if not fixed_arm:
        return {}
    before = sum(len(m["before"]["sites"]) for m in fixed_arm)
    left = sum(len(m["compare" + arm]["left"]) for m in fixed_arm)
    new = sum(len(m["compare" + arm]["new"]) for m in fixed_arm)
    fixed = before - left - new
    return {"models": len(fixed_arm), "sites_before": before, "sites_after": left + new, "sites_fixed": fixed,
            "sites_left": left, "sites_new": new,
            "fixed_pct": round(100.0 * fixed / before, 1) if before else None,
            "models_fully_fixed": sum(1 for m in fixed_arm if m["before"]["sites"] and not m["after" + arm]["sites"]),
            "fullgraph_after": {mode: sum(1 for m in fixed_arm if m["after" + arm]["fullgraph"].get(mode))
                                for mode in ("eval", "train")},
            "outputs_changed": sorted(m["name"] for m in fixed_arm if any(
                not v.get("equal") for v in (m.get("outputs" + arm) or {}).values())),
            "same_as_safe": sorted(m["name"] for m in fixed_arm if (m.get("fix" + arm) or {}).get("same_as_safe")),
            "errors": sorted(m["name"] for m in ok if m.get("after" + arm + "_error") or
                             (m.get("fix" + arm) or {}).get("status") == "error")}


def totals(results: dict) -> dict:
    models = results["models"]
    ok = _ok(models)
    t: dict = {"models_requested": len(models), "models_ok": len(ok),
               "models_skipped": len(models) - len(ok),
               "paper_models_ok": sum(1 for m in ok if m.get("paper")),
               "models_with_breaks": sum(1 for m in ok if m["before"]["sites"]),
               "sites_before": sum(len(m["before"]["sites"]) for m in ok),
               "events_before": sum(sum(m["before"]["events"].values()) for m in ok),
               "sites_before_eval": sum(m["before"]["sites_by_mode"].get("eval", 0) for m in ok),
               "sites_before_train": sum(m["before"]["sites_by_mode"].get("train", 0) for m in ok),
               "fullgraph_before": {mode: sum(1 for m in ok if m["before"]["fullgraph"].get(mode)) for mode in
                                    ("eval", "train")}}
    kinds: dict[str, dict] = {}
    for m in ok:
        for s in m["before"]["sites"]:
            k = kinds.setdefault(s["kind"], {"sites": 0, "events": 0, "models": set()})
            k["sites"] += 1
            k["events"] += s["events"]
            k["models"].add(m["name"])
    t["kinds_before"] = {k: {"sites": v["sites"], "events": v["events"], "models": len(v["models"])}
                         for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]["sites"])}
    fixed_arm = [m for m in ok if _has_after(m)]
    if fixed_arm:
        gone = sum(len(m["compare"]["fixed"]) for m in fixed_arm)
        before = sum(len(m["before"]["sites"]) for m in fixed_arm)
        left = sum(len(m["compare"]["left"]) for m in fixed_arm)
        new = sum(len(m["compare"]["new"]) for m in fixed_arm)
        # fixed = net reduction: a rewritten statement that still breaks counts as gone + new = 0
        fixed = before - left - new
        with_breaks = [m for m in fixed_arm if m["before"]["sites"]]
        t.update({
            "fixed_arm_models": len(fixed_arm), "sites_before_fixed_arm": before, "sites_fixed": fixed,
            "sites_gone": gone,
            "sites_left": left, "sites_new": new, "sites_after": left + new,
            "fixed_pct": round(100.0 * fixed / before, 1) if before else None,
            "models_fully_fixed": sum(1 for m in with_breaks if not m["after"]["sites"]),
            "events_after": sum(sum(m["after"]["events"].values()) for m in fixed_arm),
            "fullgraph_after": {mode: sum(1 for m in fixed_arm if m["after"]["fullgraph"].get(mode)) for mode in
                                ("eval", "train")},
            "outputs_changed": sorted(m["name"] for m in fixed_arm if any(
                not v.get("equal") for v in (m.get("outputs") or {}).values())),
            "outputs_missing": sorted(m["name"] for m in fixed_arm if not m.get("outputs")),
        })
    t["fixed_arm_errors"] = sorted(m["name"] for m in ok if m.get("after_error") or
                                   (m.get("fix") or {}).get("status") == "error")
    unsafe = _arm_totals(ok, "_unsafe")
    if unsafe:
        t["unsafe"] = unsafe
    paper_rows = [m for m in models if "paper_before" in m]
    if paper_rows:
        t["paper_table2"] = corpora.paper_totals([_paper_row(m) for m in paper_rows])
    det = [m["detection"] for m in ok if "detection" in m and "error" not in m["detection"]]
    if det:
        found = sum(d["sites_found"] for d in det)
        missed = sum(d["sites_missed"] for d in det)
        tp = sum(d["true"] for d in det)
        fp = sum(d["false"] for d in det)
        t["detection"] = {"models": len(det), "sites_found": found, "sites_missed": missed,
                          "recall": round(100.0 * found / (found + missed), 1) if found + missed else None,
                          "true": tp, "false": fp,
                          "precision": round(100.0 * tp / (tp + fp), 1) if tp + fp else None,
                          "unverified": sum(d["unverified"] for d in det),
                          "sites_found_models": sum(d.get("sites_found_models", 0) for d in det),
                          "sites_missed_models": sum(d.get("sites_missed_models", 0) for d in det),
                          "sites_found_by_cause": sum(d.get("sites_found_by_cause", 0) for d in det),
                          "by_mode": _recall_by_mode(det),
                          "findings": sum(d["findings"] for d in det)}
    timed = [m["timing"] for m in ok if m.get("timing") and "cold_x" in m["timing"]]
    if timed:
        t["timing"] = {"models": len(timed), "cold_x_median": round(statistics.median(x["cold_x"] for x in timed), 2),
                       "cold_x_max": round(max(x["cold_x"] for x in timed), 2),
                       "steady_x_median": round(statistics.median(x["steady_x"] for x in timed), 2)}
    return t


def _n_after(m, arm: str):
    return len(m["after" + arm]["sites"]) if _has_after(m, arm) else None


def _recall_by_mode(det: list[dict]) -> dict:
    out = {}
    for m in ("eval", "train"):
        found = sum(d.get("by_mode", {}).get(m, {}).get("found", 0) for d in det)
        missed = sum(d.get("by_mode", {}).get(m, {}).get("missed", 0) for d in det)
        if found + missed:
            out[m] = {"found": found, "missed": missed, "recall": round(100.0 * found / (found + missed), 1)}
    return out


def _detection_extras(d: dict) -> str:
    """Per-mode recall and the secondary sites, as one sentence (empty for older results)."""
    parts = [f"{m} {v['recall']}% ({v['found']} of {v['found'] + v['missed']})" for m, v in d.get("by_mode", {}).items()]
    s = f" By mode: {', '.join(parts)}." if parts else ""
    n = d.get("sites_found_by_cause", 0)
    if n:
        total = d["sites_found"] + d["sites_missed"]
        s += (f" {n} of the found sites are secondary: a comprehension Dynamo compiled alone because the "
              f"function around it had fallen back to eager after another break; each counts as found "
              f"because that break has a finding and its stack runs through the same function (it goes "
              f"when that break is fixed). Counting them as missed instead: "
              f"{_pct(d['sites_found'] - n, total)}, {d['sites_found'] - n} of {total}.")
    return s


def _paper_row(m) -> dict:
    ok = m.get("status") == "ok"
    return {"name": m["name"], "before": len(m["before"]["sites"]) if ok else None,
            "after_safe": _n_after(m, "") if ok else None, "after_unsafe": _n_after(m, "_unsafe") if ok else None}


def chart(results: dict, png: str) -> bool:
    """Bar chart of break sites before and after per model (models with breaks). False if no
    matplotlib or nothing to draw."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    ok = [m for m in _ok(results["models"]) if m["before"]["sites"]]
    if not ok:
        return False
    names = [m["name"] + (" *" if m.get("paper") else "") for m in ok]
    before = [len(m["before"]["sites"]) for m in ok]
    after = [len(m["after"]["sites"]) if _has_after(m) else None for m in ok]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.42 * len(ok) + 2), 4.2), dpi=110)
    xs = range(len(ok))
    has_after = any(a is not None for a in after)
    w = 0.4 if has_after else 0.6
    ax.bar([x - w / 2 if has_after else x for x in xs], before, w, label="before", color="#c0504d")
    if has_after:
        ax.bar([x + w / 2 for x in xs], [a or 0 for a in after], w, label="after graphmend --fix", color="#4f81bd")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("distinct graph-break sites (eval + train)")
    t = results.get("totals") or totals(results)
    title = f"Dynamo graph-break sites per model, transformers {results['meta'].get('transformers')}"
    if t.get("fixed_pct") is not None:
        title += f": {t['sites_fixed']}/{t['sites_before_fixed_arm']} fixed ({t['fixed_pct']}%)"
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.text(0.01, 0.01, "* architecture of the GraphMend paper's table", fontsize=7)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(png)), exist_ok=True)
    fig.savefig(png)
    plt.close(fig)
    return True


def _short(kind: str) -> str:
    return {"Data-dependent branching": "data-dep branch",
            "Failed to trace builtin operator": "builtin op",
            "Missing tp_iternext": "iter (tp_iternext)",
            "Unsupported Tensor.item() call with capture_scalar_outputs=False": ".item()",
            "Dynamic shape operator": "dynamic shape op",
            "Data dependent operator": "data-dep op",
            "Attempted to call function marked as skipped": "skipped fn",
            "Unsupported method call": "method call",
            "Unsupported function call": "function call",
            "logging.Logger method not supported for non-export cases": "logger call",
            "Tensor.tolist() with non-integer tensor": ".tolist()",
            }.get(kind, kind[:40])


def _reuse_note(models) -> str:
    n = sum(1 for m in models if m.get("census_reused"))
    if not n:
        return ""
    t = sum(m.get("census_elapsed_s") or 0 for m in models if m.get("census_reused"))
    return (f" (the original arm of {n} models was reused from an earlier run's work dir, `--work`: it does "
            f"not depend on graphmend; those censuses took {t:.0f} s of worker time)")


def _pct(a, b) -> str:
    return f"{100.0 * a / b:.1f}%" if b else "-"


def _modes(m, arm) -> str:
    ev = m[arm]["events"]
    return f"{ev.get('eval', 0)}/{ev.get('train', 0)}"


def _fmt_x(x):
    return f"{x:.2f}x" if isinstance(x, (int, float)) else "-"


def _timing_cell(m: dict, key: str) -> str:
    """A row's timing ratio, or why it has none (not timed: '-'; a failed timing run: its error, short)."""
    tm = m.get("timing") or {}
    if key in tm:
        return _fmt_x(tm[key])
    return f"not timed ({tm['error'][:40]})" if tm.get("error") else "-"


def markdown(results: dict, chart_path: str | None) -> str:
    meta, t, models = results["meta"], results.get("totals") or totals(results), results["models"]
    ok = _ok(models)
    mach = meta.get("machine", {})
    L: list[str] = []
    A = L.append
    A("## graphmend on Hugging Face models")
    A("")
    A(f"Measured {meta.get('date')} on {mach.get('cpu')} ({mach.get('cores')} cores, {mach.get('mem_gb')} GB), "
      f"CPU only, torch {meta.get('torch')}, transformers {meta.get('transformers')}, Python {mach.get('python')}; "
      f"graphmend: `{meta.get('graphmend_version') or meta.get('graphmend_bin') or 'not run (census only)'}`"
      f"{' with `--unsafe-fixes`' if (meta.get('args') or {}).get('unsafe_fixes') else ''}. "
      f"Run time {meta.get('duration_s')} s{_reuse_note(models)}. Regenerate: `.venv/bin/python bench/hf/run.py` "
      f"(`--models a,b` or `--quick` for a subset); data: `bench/results/hf.json`.")
    A("")
    A("How it is measured. Each model is built from a tiny random config (`bench/hf/recipes.py`: dimensions "
      "and layer counts shrunk; training-path flags such as layer drop and SpecAugment left at the library's "
      "defaults) with realistic inputs for its task (token ids with a padded mask, decoder inputs, pixel values, "
      "audio features, boxes). In a fresh process per model and arm, `torch.compile` with a counting backend "
      "(eager execution of the captured graphs) runs the forward in `eval()` under `no_grad`, and forward + "
      "backward in `train()`. Every graph break Dynamo logs is recorded (a hook on its break logger) with its "
      "type and its *site*: the innermost frame of the user stack inside transformers, named by file, function "
      "and statement text (never by line number). **Breaks** below are distinct sites (union of both modes); "
      "**events** count every break Dynamo logged (eval/train), a site repeating once per layer or resume "
      "function. `explain()` and `fullgraph=True` run as cross-checks. The fixed arm imports a copy of the "
      "transformers package in which graphmend's `check --fix` rewrote the model's modeling files and the "
      "shared files its breaks come from, loads the original arm's `state_dict`, and compares eager outputs "
      "on the same inputs and seeds (rtol 1e-5, atol 1e-6; train mode compares outputs, loss and the "
      "gradient norm).")
    A("")
    A("### Totals next to the GraphMend paper")
    A("")
    fixed_cell = lambda k: t.get(k) if t.get("fixed_arm_models") else "-"  # noqa: E731
    A("| | GraphMend paper (Table 2) | graphmend, here |")
    A("|---|---|---|")
    A(f"| models | 27 (Hugging Face, transformers 4.x) | {t['models_ok']} built ({t['paper_models_ok']} of the paper's "
      f"architectures), {t['models_skipped']} skipped; {t['models_with_breaks']} with breaks |")
    A(f"| graph breaks (distinct sites) | 147 | {t['sites_before']} (eval {t['sites_before_eval']}, "
      f"train {t['sites_before_train']}); {t['events_before']} break events |")
    if t.get("fixed_arm_models"):
        A(f"| fixed | 107 (73%) | {t['sites_fixed']} of {t['sites_before_fixed_arm']} "
          f"({t['fixed_pct'] if t['fixed_pct'] is not None else '-'}%, net: sites before minus after); {t['sites_gone']} sites gone, {t['sites_new']} new |")
        A(f"| models fully fixed | 21 | {fixed_cell('models_fully_fixed')} of "
          f"{sum(1 for m in ok if m.get('after') is not None and m['before']['sites'])} with breaks |")
        A(f"| `fullgraph=True` compiles (eval / train) | - | before {t['fullgraph_before']['eval']}/"
          f"{t['fullgraph_before']['train']}, after {t['fullgraph_after']['eval']}/{t['fullgraph_after']['train']} "
          f"of {t['fixed_arm_models']} |")
        A(f"| changed eager outputs | - | {len(t['outputs_changed'])}"
          f"{' (' + ', '.join(t['outputs_changed']) + ')' if t['outputs_changed'] else ''} |")
        if t.get("fixed_arm_errors"):
            A(f"| fixed arm failed (fix or import/run error) | - | {len(t['fixed_arm_errors'])}: "
              f"{', '.join(t['fixed_arm_errors'])} |")
    else:
        A("| fixed | 107 (73%) | not run (graphmend binary not available) |")
    if t.get("timing"):
        tm = t["timing"]
        A(f"| cold start speed-up | up to 26x, mean ~5x (RTX 3090) | median {tm['cold_x_median']}x, "
          f"max {tm['cold_x_max']}x over {tm['models']} models (CPU, inductor) |")
        A(f"| steady state speed-up | mostly 1.05-1.19x | median {tm['steady_x_median']}x |")
        carried = results.get("meta", {}).get("timing_from")
        if carried:
            # A --no-timing rerun keeps the timing of models whose fixed files came out identical.
            A("")
            A(f"Timing rows ({', '.join(carried['models'])}) are from the run of {carried['date']} (binary sha256 "
              f"{carried['graphmend_sha256']}): this run skipped the timing phase, and their fixed files and "
              f"Dynamo counts came out identical.")
    A("")
    if t.get("detection"):
        d = t["detection"]
        A("### Detection against Dynamo")
        A("")
        A(f"`graphmend check --output-format json` over each model's modeling files and the shared files its "
          f"breaks come from ({d['findings']} findings on {d['models']} models):")
        A("")
        A(f"- **recall {d['recall']}%**: {d['sites_found']} of {d['sites_found'] + d['sites_missed']} real break "
          f"sites have a finding on the site's statement or on a transformers frame of its stack (the call site "
          f"of a helper that breaks counts). On the models' own files (`models/*/modeling_*.py`, leaving out "
          f"shared helpers in `utils/` and `modeling_utils.py`): "
          f"{_pct(d['sites_found_models'], d['sites_found_models'] + d['sites_missed_models'])}, "
          f"{d['sites_found_models']} of {d['sites_found_models'] + d['sites_missed_models']}."
          + _detection_extras(d))
        A(f"- **precision {d['precision']}%**: {d['true']} true, {d['false']} false among findings whose range "
          f"Dynamo actually traced in this run (an instruction inside the finding's columns; a finding there "
          f"either is a real break site or is refuted; a tensor operand behind a static test that was false, "
          f"such as `dtype == torch.float16 and ...` in float32, was not traced). "
          f"{d['unverified']} findings lie in code Dynamo never traced for these inputs (other branches, other "
          f"model classes in the same file, the rest of a frame skipped after a break in a loop): those are "
          f"unverified and counted neither way.")
        A("")
    A("### Per model")
    A("")
    A("Breaks are distinct sites (events eval/train in brackets). `*` marks the paper's architectures. "
      "fullgraph: does `torch.compile(fullgraph=True)` succeed after the fix (eval/train).")
    A("")
    has_unsafe = any("fix_unsafe" in m for m in ok)
    if has_unsafe:
        A("*after unsafe*: the third arm, `check --fix --unsafe-fixes` (outputs equal eval/train; `(= safe)` when "
          "the unsafe fixes changed nothing more than the safe ones, so the safe arm's census stands for it).")
        A("")
    A("| model | breaks before | after | % fixed | kinds | outputs equal | fullgraph after | "
      + ("after unsafe | outputs equal unsafe | " if has_unsafe else "") + "cold x | steady x |")
    A("|---|---|---|---|---|---|---|" + ("---|---|" if has_unsafe else "") + "---|---|")
    for m in models:
        name = m["name"] + (" *" if m.get("paper") else "")
        if m.get("status") != "ok":
            A(f"| {name} | skipped: {m.get('skip_reason', '')[:80]} |" + " |" * (7 + 2 * has_unsafe))
            continue
        b = m["before"]
        kinds = ", ".join(f"{_short(k)} {n}" for k, n in b["kinds"].items()) or "-"
        nb = len(b["sites"])
        if _has_after(m):
            a = m["after"]
            na = len(a["sites"])
            pct = f"{100.0 * (nb - na) / nb:.0f}%" if nb else "-"
            after = f"{na} ({_modes(m, 'after')})"
            outs = m.get("outputs") or {}
            eq = "/".join("yes" if outs.get(k, {}).get("equal") else ("NO" if k in outs else "?") for k in ("eval", "train"))
            if all(outs.get(k, {}).get("reason") == "identical code" for k in ("eval", "train")):
                eq = "yes (no edit)"
            fg = "/".join("yes" if a["fullgraph"].get(k) else "no" for k in ("eval", "train"))
        else:
            after, pct, eq, fg = ("-", "-", "-", "/".join("yes" if b["fullgraph"].get(k) else "no" for k in ("eval", "train")) + " (before)")
            if m.get("after_error"):
                after = f"error: {m['after_error'][:60]}"
        tm = m.get("timing") or {}
        uns = ""
        if has_unsafe:
            uns = f"{_after_cell(m, '_unsafe')} | {_eq_cell(m, '_unsafe')} | "
        A(f"| {name} | {nb} ({_modes(m, 'before')}) | {after} | {pct} | {kinds} | {eq} | {fg} | {uns}"
          f"{_fmt_x(tm.get('cold_x'))} | {_fmt_x(tm.get('steady_x'))} |")
    A("")
    if chart_path:
        A(f"![graph-break sites before and after per model]({chart_path})")
        A("")
    # census: kinds and top sites
    A("### Break census: kinds and the most common sites")
    A("")
    A("| kind (Dynamo graph-break type) | sites | events | models |")
    A("|---|---|---|---|")
    for k, v in t["kinds_before"].items():
        A(f"| {k} | {v['sites']} | {v['events']} | {v['models']} |")
    A("")
    by_stmt: dict[tuple, dict] = {}
    for m in ok:
        for s in m["before"]["sites"]:
            key = (s["function"].split(".")[-1], s["stmt"], s["kind"])
            e = by_stmt.setdefault(key, {"models": [], "files": set(), "modes": set()})
            e["models"].append(m["name"])
            e["files"].add(s["file"])
            e["modes"].update(s.get("modes", []))
    comp = [(m["name"], s) for m in ok for s in m["before"]["sites"] if s.get("comprehension_frame")]
    if comp:
        A(f"{len(comp)} sites in {len({n for n, _ in comp})} models are comprehension frames (Python "
          f"{results['meta'].get('machine', {}).get('python')} runs a comprehension as a frame of its own) that "
          "Dynamo met alone because their caller had already fallen back to eager after an earlier break: "
          "secondary breaks, gone when the first break is fixed.")
        A("")
    top = sorted(by_stmt.items(), key=lambda kv: -len(kv[1]["models"]))[:15]
    if top:
        A("Most common sites (same function name and statement text across models):")
        A("")
        A("| statement | function | kind | modes | sites | models |")
        A("|---|---|---|---|---|---|")
        for (fn, stmt, kind), e in top:
            st = stmt.replace("|", "\\|")
            st = st if len(st) <= 90 else st[:87] + "..."
            uniq = list(dict.fromkeys(e["models"]))
            A(f"| `{st}` | {fn} | {_short(kind)} | {'/'.join(sorted(e['modes']))} | {len(e['models'])} | "
              f"{len(uniq)}: {', '.join(uniq[:10])}{' ...' if len(uniq) > 10 else ''} |")
        A("")
    # breaks left
    left_models = [m for m in ok if _has_after(m) and (m["compare"]["left"] or m["compare"]["new"])]
    if left_models:
        A("### Breaks left after the fix, by kind, with reason")
        A("")
        by_kind: dict[str, list] = {}
        for m in left_models:
            bsites = {(s["file"], s["function"], s["stmt"]): s for s in m["before"]["sites"]}
            for s in m["compare"]["left"]:
                full = bsites.get((s["file"], s["function"], s["stmt"]), {})
                gm = full.get("graphmend") or []
                if not gm:
                    why = "not detected by graphmend"
                elif any(g["fixable"] for g in gm):
                    why = "detected with a fix, but the break remains: " + "; ".join(
                        f"{g['code']} {_one_line(g['message'])[:100]}" for g in gm)
                else:
                    why = "detected, no fix: " + "; ".join(
                        f"{g['code']}: {_one_line(g.get('no_fix_reason') or g['message'][:120])}" for g in gm)
                by_kind.setdefault(s["kind"], []).append((m["name"], s, why))
            for s in m["compare"]["new"]:
                by_kind.setdefault(s["kind"], []).append((m["name"], s, "new after the fix"))
        for kind, items in sorted(by_kind.items(), key=lambda kv: -len(kv[1])):
            A(f"- **{kind}** ({len(items)})")
            for name, s, why in items[:25]:
                st = s["stmt"] if len(s["stmt"]) <= 80 else s["stmt"][:77] + "..."
                A(f"  - {name}: `{s['file']}` {s['function']}: `{st}`: {why}")
            if len(items) > 25:
                A(f"  - ... {len(items) - 25} more in bench/results/hf.json")
        A("")
    fps = [(m["name"], f) for m in ok for f in (m.get("detection") or {}).get("false_findings", [])]
    if fps:
        A("### Findings Dynamo refuted (precision misses)")
        A("")
        A("Findings on statements Dynamo traced in this run without breaking there:")
        A("")
        seen = set()
        for name, f in fps:
            key = (f["file"], f["row"])
            if key in seen:  # a shared file is checked once per model that uses it
                continue
            seen.add(key)
            A(f"- {name}: {f['code']} `{f['file']}:{f['row']}`: {f['message'][:110]}")
        A("")
    # cross-check
    A("### Cross-check of the counts")
    A("")
    A("Break events from the hook against `explain().graph_break_count` and Dynamo's `graph_break` counter "
      "(eval/train). explain counts graphs minus one, so it misses breaks in frames Dynamo skipped (a break "
      "inside a loop skips the whole frame).")
    A("")
    A("| model | events (hook) | explain | counter | graphs |")
    A("|---|---|---|---|---|")
    for m in ok:
        b = m["before"]
        if not any(b["events"].values()):
            continue
        f = lambda d: f"{d.get('eval')}/{d.get('train')}"  # noqa: E731
        A(f"| {m['name']} | {f(b['events'])} | {f(b['explain_breaks'])} | {f(b['counter_breaks'])} | {f(b['graphs'])} |")
    A("")
    L += _skipped_lines(models, "### Skipped models")
    return "\n".join(L)


# ---------------------------------------------------------------------------------------------
# the hf-paper-4.52.4 section: the GraphMend paper's rows next to its Table 2


def _skipped_lines(models, heading: str) -> list[str]:
    """The rows that did not build, with why, under `heading` (nothing when every row built)."""
    skipped = [m for m in models if m.get("status") != "ok"]
    if not skipped:
        return []
    return [heading, "", *(f"- {m['name']}: {m.get('skip_reason', '')}" for m in skipped), ""]


def _yn(v) -> str:
    return "yes" if v else "no"


def _after_cell(m, arm: str) -> str:
    if m.get("status") != "ok":
        return "-"
    if _has_after(m, arm):
        return f"{len(m['after' + arm]['sites'])} ({_modes(m, 'after' + arm)})"
    err = m.get("after" + arm + "_error")
    if err:
        return f"error: {err.strip().splitlines()[0][:60]}"
    return "-"


def _eq_cell(m, arm: str) -> str:
    if not _has_after(m, arm):
        return "-"
    outs = m.get("outputs" + arm) or {}
    if all(outs.get(k, {}).get("reason") == "identical code" for k in ("eval", "train")):
        return "yes (no edit)"
    cell = "/".join("yes" if outs.get(k, {}).get("equal") else ("NO" if k in outs else "?") for k in ("eval", "train"))
    if arm and (m.get("fix" + arm) or {}).get("same_as_safe"):
        cell += " (= safe)"
    return cell


def _fg_cell(m, arm: str) -> str:
    if not _has_after(m, arm):
        return "-"
    fg = m["after" + arm]["fullgraph"]
    return "/".join(_yn(fg.get(k)) for k in ("eval", "train"))


def _one_line(text: str) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def _why_left(full: dict) -> str:
    gm = full.get("graphmend") or []
    if not gm:
        return "not detected by graphmend"
    if any(g.get("fixable") for g in gm):
        return "detected with a fix, still breaks: " + "; ".join(
            f"{g['code']} {_one_line(g['message'])[:90]}" for g in gm)
    return "detected, no fix: " + "; ".join(
        f"{g['code']}: {_one_line(g.get('no_fix_reason') or g['message'])[:110]}" for g in gm)


def _key(s) -> tuple:
    return (s["file"], s["function"], s["stmt"])


def _bin_note(meta: dict) -> str:
    sha = meta.get("graphmend_sha256")
    if not sha:
        return ""
    return (f"Binary: a snapshot of `{meta.get('graphmend_bin')}` taken at the start (sha256 {sha[:12]}, built "
            f"{meta.get('graphmend_mtime')}), used for every row. ")


def paper_markdown(results: dict) -> str:
    meta, models = results["meta"], results["models"]
    t = results.get("totals") or totals(results)
    pt = t.get("paper_table2") or corpora.paper_totals([_paper_row(m) for m in models])
    paper = pt["paper"]
    ok = _ok(models)
    mach = meta.get("machine", {})
    args = meta.get("args") or {}
    L: list[str] = []
    A = L.append
    A(f"## graphmend on the GraphMend paper's rows (transformers {meta.get('transformers')})")
    A("")
    timing = "timing phase skipped" if args.get("no_timing") else "with the timing phase"
    A(f"Measured {meta.get('date')} on {mach.get('cpu')} ({mach.get('cores')} cores, {mach.get('mem_gb')} GB), "
      f"CPU only, torch {meta.get('torch')}, transformers {meta.get('transformers')}, Python {mach.get('python')}, "
      f"workers under `{meta.get('worker_python')}`; graphmend: "
      f"`{meta.get('graphmend_version') or meta.get('graphmend_bin') or 'not run (census only)'}`. "
      f"{_bin_note(meta)}Run time {meta.get('duration_s')} s (`--jobs {args.get('jobs', 1)}`, {timing}). Regenerate: "
      f"`.venv/bin/python bench/hf/run.py --corpus {meta.get('corpus')}` (with `--no-timing` it skips phase 4, the "
      f"timing; `bash scripts/bench.sh` runs it too and creates `.venv-tf452` when missing); data: `bench/results/hf-paper-4.52.4.json` (per row, "
      f"`breaks` lists every site of each arm).")
    A("")
    A(f"Flags: {meta.get('corpus_flags')}; train() runs forward + backward. Rows: the recipes marked as the "
      "paper's architectures (`paper=True` in `bench/hf/recipes.py`) that build on this transformers. Definitions "
      "as in the `hf` section: **breaks** are distinct sites (innermost transformers frame: file, function, "
      "statement text) united over eval and train, events eval/train in brackets. Three arms: the original, "
      "*safe* (`graphmend check --fix`) and *unsafe* (`check --fix --unsafe-fixes`), each importing its own copy "
      "of the package. *Outputs equal*: the arm's eager outputs against the original's with the same weights "
      "and inputs (eval outputs; train outputs, loss and gradient-norm sum; rtol 1e-5, atol 1e-6), eval/train. "
      "*fullgraph*: `torch.compile(fullgraph=True)` succeeds (eval/train). *paper*: the break count of the "
      "GraphMend paper's Table 2 where it gives one for the row.")
    A("")

    def pct(b, a):
        return f"{100.0 * (b - a) / b:.1f}%" if b and a is not None else "-"

    A(f"**Totals.** Ours, {pt['rows']} rows: {pt['before']} breaks before, {pt['after_safe']} after safe fixes "
      f"({pct(pt['before'], pt['after_safe'])} fixed), {pt['after_unsafe']} after unsafe fixes "
      f"({pct(pt['before'], pt['after_unsafe'])} fixed). Paper, {paper['rows']} reproducible rows: "
      f"{paper['before']} before, {paper['after']} after ({paper['fixed_pct']}% fixed). On the {pt['known_rows']} "
      f"rows with a per-row paper number: ours {pt['known_before']} before ({pt['known_after_safe']} after safe, "
      f"{pt['known_after_unsafe']} after unsafe), paper {pt['paper_known_before']} before.")
    det = (results.get("totals") or {}).get("detection")
    if det:
        A("")
        A(f"**Detection against Dynamo** (defined as in the `hf` section): recall {det['recall']}% "
          f"({det['sites_found']} of {det['sites_found'] + det['sites_missed']} break sites have a finding), "
          f"precision {det['precision']}% ({det['true']} true, {det['false']} refuted among findings on traced "
          f"statements; {det['unverified']} in code these inputs did not reach)." + _detection_extras(det))
    tm = t.get("timing")
    if tm:
        timed = [m for m in ok if (m.get("timing") or {}).get("cold_x") is not None]
        modes = sorted({m["timing"]["mode"] for m in timed})
        A("")
        A(f"**Cold start and steady state** (phase 4 of `bench/hf/run.py`: inductor, CPU, {'/'.join(modes)}, a fresh "
          f"process per run with compile caches off, arms alternated, medians of "
          f"{timed[0]['timing'].get('reps')} runs per arm; the rows the safe fix brings to one graph): cold start "
          f"original / fixed median **{tm['cold_x_median']}x**, max {tm['cold_x_max']}x over {tm['models']} rows "
          f"(paper: up to 26x, mean ~5x, on an RTX 3090); steady state median {tm['steady_x_median']}x (paper: "
          "mostly 1.05-1.19x). Per row in the *cold x* and *steady x* columns.")
    A("")
    A("| model | dtype | breaks before | after safe | after unsafe | paper | outputs equal safe | "
      "outputs equal unsafe | fullgraph before | fullgraph after safe | fullgraph after unsafe | kinds before | "
      "cold x | steady x |")
    A("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for m in models:
        pap = m.get("paper_before")
        pap = "-" if pap is None else str(pap)
        if m.get("status") != "ok":
            A(f"| {m['name']} | | skipped: {m.get('skip_reason', '')[:80]} | | | {pap} | | | | | | | | |")
            continue
        b = m["before"]
        dtype = (m.get("dtype") or "").replace("torch.", "")
        kinds = ", ".join(f"{_short(k)} {n}" for k, n in b["kinds"].items()) or "-"
        fgb = "/".join(_yn(b["fullgraph"].get(k)) for k in ("eval", "train"))
        A(f"| {m['name']} | {dtype} | {len(b['sites'])} ({_modes(m, 'before')}) | {_after_cell(m, '')} | "
          f"{_after_cell(m, '_unsafe')} | {pap} | {_eq_cell(m, '')} | {_eq_cell(m, '_unsafe')} | {fgb} | "
          f"{_fg_cell(m, '')} | {_fg_cell(m, '_unsafe')} | {kinds} | {_timing_cell(m, 'cold_x')} | "
          f"{_timing_cell(m, 'steady_x')} |")
    A(f"| **total** | | {pt['before']} | {pt['after_safe']} | {pt['after_unsafe']} | {paper['before']} -> "
      f"{paper['after']} ({paper['rows']} rows; {pt['paper_known_before']} on the {pt['known_rows']} rows above) "
      f"| | | | | | | | |")
    A("")
    changed = sorted({n for arm in ("", "_unsafe") for n in (_arm_totals(ok, arm).get("outputs_changed") or [])})
    errors = sorted({n for arm in ("", "_unsafe") for n in (_arm_totals(ok, arm).get("errors") or [])})
    if changed:
        A(f"Changed eager outputs: {', '.join(changed)}.")
        A("")
    if errors:
        A(f"Fixed arm failed (fix, import or run error): {', '.join(errors)}.")
        A("")
    # what still breaks
    left = []
    for m in ok:
        if not _has_after(m, ""):
            continue
        full = {_key(s): s for s in m["before"]["sites"]}
        after_unsafe = {_key(s) for s in m["after_unsafe"]["sites"]} if _has_after(m, "_unsafe") else None
        for s in m["after"]["sites"]:
            k = _key(s)
            origin = full.get(k)
            why = _why_left(origin) if origin is not None else "new after the safe fix"
            uns = "" if after_unsafe is None else ("; still breaks after unsafe" if k in after_unsafe
                                                   else "; gone after unsafe")
            left.append((s["kind"], m["name"], s, why + uns))
    A("### What still breaks after the safe fix")
    A("")
    if not left:
        A("Nothing: every row compiles without a break site after `check --fix`.")
    else:
        A(f"{len(left)} sites in {len({n for _, n, _, _ in left})} rows, by break type (model: file, function, "
          "statement, line, modes: why it is left):")
        A("")
        by_kind: dict[str, list] = {}
        for kind, name, s, why in left:
            by_kind.setdefault(kind, []).append((name, s, why))
        for kind, items in sorted(by_kind.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            A(f"- **{kind}** ({len(items)})")
            for name, s, why in items:
                st = s["stmt"] if len(s["stmt"]) <= 90 else s["stmt"][:87] + "..."
                st = st.replace("`", "'")
                A(f"  - {name}: `{s['file']}` {s['function']}: `{st}` (line {s.get('line')}, "
                  f"{'/'.join(s.get('modes') or [])}): {why}")
    A("")
    new_unsafe = []
    for m in ok:
        if _has_after(m, "_unsafe") and _has_after(m, ""):
            safe_keys = {_key(s) for s in m["after"]["sites"]}
            new_unsafe += [(m["name"], s) for s in m["after_unsafe"]["sites"] if _key(s) not in safe_keys]
    if new_unsafe:
        A("Sites after the unsafe fixes that the safe arm does not have:")
        A("")
        for name, s in new_unsafe:
            A(f"- {name}: `{s['file']}` {s['function']}: `{s['stmt'][:90]}` ({s['kind']})")
        A("")
    L += _skipped_lines(models, "Rows that do not build here:")
    return "\n".join(L)
