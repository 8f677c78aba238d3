"""The `hf` section of docs/benchmarks.md and its chart, from the results JSON of bench/hf/run.py.

Pure functions of the results dict (plus matplotlib for the chart), so a canned JSON regenerates the
report without running any model.
"""
from __future__ import annotations

import os
import statistics

PAPER = {"models": 27, "breaks": 147, "fixed": 107, "fixed_pct": 72.8, "fully_fixed": 21,
         "cold_x_max": 26, "cold_x_mean": 5}


def _ok(models):
    return [m for m in models if m.get("status") == "ok"]


def _has_after(m) -> bool:
    return m.get("after") is not None and "compare" in m


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
                          "findings": sum(d["findings"] for d in det)}
    timed = [m["timing"] for m in ok if m.get("timing") and "cold_x" in m["timing"]]
    if timed:
        t["timing"] = {"models": len(timed), "cold_x_median": round(statistics.median(x["cold_x"] for x in timed), 2),
                       "cold_x_max": round(max(x["cold_x"] for x in timed), 2),
                       "steady_x_median": round(statistics.median(x["steady_x"] for x in timed), 2)}
    return t


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
          f"{d['sites_found_models']} of {d['sites_found_models'] + d['sites_missed_models']}.")
        A(f"- **precision {d['precision']}%**: {d['true']} true, {d['false']} false among findings on statements "
          f"Dynamo actually traced in this run (a finding there either is a real break site or is refuted). "
          f"{d['unverified']} findings lie in code Dynamo never traced for these inputs (other branches, other "
          f"model classes in the same file, the rest of a frame skipped after a break in a loop): those are "
          f"unverified and counted neither way.")
        A("")
    A("### Per model")
    A("")
    A("Breaks are distinct sites (events eval/train in brackets). `*` marks the paper's architectures. "
      "fullgraph: does `torch.compile(fullgraph=True)` succeed after the fix (eval/train).")
    A("")
    A("| model | breaks before | after | % fixed | kinds | outputs equal | fullgraph after | cold x | steady x |")
    A("|---|---|---|---|---|---|---|---|---|")
    for m in models:
        name = m["name"] + (" *" if m.get("paper") else "")
        if m.get("status") != "ok":
            A(f"| {name} | skipped: {m.get('skip_reason', '')[:80]} | | | | | | | |")
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
        A(f"| {name} | {nb} ({_modes(m, 'before')}) | {after} | {pct} | {kinds} | {eq} | {fg} | "
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
                        f"{g['code']} {g['message'][:100]}" for g in gm)
                else:
                    why = "detected, no fix: " + "; ".join(
                        f"{g['code']}: {g.get('no_fix_reason') or g['message'][:120]}" for g in gm)
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
    skipped = [m for m in models if m.get("status") != "ok"]
    if skipped:
        A("### Skipped models")
        A("")
        for m in skipped:
            A(f"- {m['name']}: {m.get('skip_reason', '')}")
        A("")
    return "\n".join(L)
