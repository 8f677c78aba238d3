#!/usr/bin/env python
"""graphmend on real Hugging Face models: break census, detection, fixes, outputs, timing, report.

    .venv/bin/python bench/hf/run.py [--models a,b] [--quick] [--census-only] [--jobs N]

Phases, each model in fresh subprocesses (bench/hf/worker.py) with a time limit:
 1. census, original arm: Dynamo (counting backend) in eval()/no_grad and train()/grad; every graph
    break with its type and site; explain and fullgraph=True as cross-checks; eager outputs saved.
 2. detection: `$GRAPHMEND_BIN check --output-format json --exit-zero` over the model's modeling files
    and the shared transformers files its breaks come from; recall and precision against phase 1.
 3. fixed arm: a copy of the transformers package (symlinks, with the files above copied for real),
    `$GRAPHMEND_BIN check --fix --exit-zero` on those copies, then phase 1 again importing the copy
    (same weights and inputs): breaks after, fullgraph after, eager outputs compared.
 4. timing (subset): inductor cold start and steady state, fresh process per run, caches disabled
    and a fresh cache dir per run, arms alternated, medians.
Writes bench/results/hf.json (or hf-census.json with --census-only) and the `hf` section of
docs/benchmarks.md with a PNG chart.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import common  # noqa: E402
import report  # noqa: E402
import sites as S  # noqa: E402

WORKER = os.path.join(HERE, "worker.py")
QUICK = ["bart", "whisper", "longformer", "llama", "wav2vec2", "qwen2_moe"]


def log(msg: str) -> None:
    print(f"[hf {dt.datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def tf_root() -> str:
    out = subprocess.run([sys.executable, "-c", "import transformers, os; print(os.path.dirname(transformers.__file__))"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def run_worker(task: str, model: str, out: str, *, timeout: float, pkg_root=None, ref_dir=None,
               env_extra=None, extra=()) -> dict:
    cmd = [sys.executable, WORKER, task, "--model", model, "--out", out, *extra]
    if pkg_root:
        cmd += ["--pkg-root", pkg_root]
    if ref_dir:
        cmd += ["--ref-dir", ref_dir]
    if os.path.exists(out):
        os.unlink(out)  # never read a stale result
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PYTHONWARNINGS="ignore")
    env.update(env_extra or {})
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"model": model, "status": "timeout", "error": f"exceeded {timeout:.0f} s", "wall_s": timeout}
    wall = time.time() - t0
    if os.path.exists(out):
        with open(out) as f:
            res = json.load(f)
    else:
        res = {"model": model, "status": "error", "error": f"worker exited {p.returncode}: {p.stderr[-1500:]}"}
    res["wall_s"] = round(wall, 2)
    return res


def summarize_arm(res: dict) -> dict:
    """Per-arm numbers from a census worker result: distinct sites (union of modes), events, graphs."""
    events = []
    summ: dict = {"events": {}, "graphs": {}, "explain_breaks": {}, "fullgraph": {}, "counter_breaks": {},
                  "errors": {}, "sites_by_mode": {}}
    for mode, m in res.get("modes", {}).items():
        evs = [e for e in m["events"] if e.get("kind") != "harness error"]
        events += evs
        summ["events"][mode] = len(evs)
        summ["graphs"][mode] = m["graphs"]
        summ["explain_breaks"][mode] = m.get("explain", {}).get("graph_break_count")
        summ["counter_breaks"][mode] = m["counters"]["graph_break"]
        summ["fullgraph"][mode] = m["fullgraph"]["ok"]
        summ["sites_by_mode"][mode] = len(S.distinct_sites(evs))
        if not m.get("ok"):
            summ["errors"][mode] = m.get("error")
        unattributed = [e for e in evs if e.get("file") is None]
        if unattributed:
            summ.setdefault("unattributed", {})[mode] = [
                {k: e.get(k) for k in ("kind", "gb_id", "reason", "innermost")} for e in unattributed]
    summ["sites"] = S.distinct_sites(events)
    kinds: dict[str, int] = {}
    for s in summ["sites"]:
        kinds[s["kind"]] = kinds.get(s["kind"], 0) + 1
    summ["kinds"] = kinds
    return summ


# ---------------------------------------------------------------------------------------------
# graphmend


def graphmend_bin() -> str | None:
    b = os.environ.get("GRAPHMEND_BIN", os.path.join(ROOT, "build", "graphmend"))
    return b if os.path.isfile(b) and os.access(b, os.X_OK) else None


def files_for(model_res: dict, summ: dict, root: str) -> list[str]:
    """Package-relative files graphmend works on for a model: its modeling files plus every
    transformers file a break site (or a frame on a site's stack) lies in."""
    rel = set(model_res.get("modules", []))
    for s in summ["sites"]:
        rel.add(s["file"])
        for f in s.get("chain", []):
            rel.add(f["file"])
    return sorted(r for r in rel if r.endswith(".py") and os.path.isfile(os.path.join(root, r)))


def graphmend_check(binary: str, paths: list[str], fix: bool, timeout: float = 600, extra=()) -> dict:
    cmd = [binary, "check", "--exit-zero"] + (["--fix"] if fix else ["--output-format", "json"]) + list(extra) + paths
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"rc": None, "error": f"timeout after {timeout} s", "wall_s": timeout}
    res = {"rc": p.returncode, "wall_s": round(time.time() - t0, 3), "stderr": p.stderr[-2000:]}
    if not fix:
        try:
            res["findings"] = json.loads(p.stdout) if p.stdout.strip() else []
        except json.JSONDecodeError as e:
            res["error"] = f"bad JSON from graphmend: {e}: {p.stdout[:300]}"
    else:
        res["stdout"] = p.stdout[-2000:]
    if p.returncode not in (0,):
        res["error"] = res.get("error") or f"exit {p.returncode}: {p.stderr[-500:]}"
    return res


def make_fixed_copy(root: str, rel_files: list[str], dest: str) -> str:
    """A transformers package under dest/transformers: symlinks to the original files, except
    `rel_files`, which are real copies (graphmend rewrites those in place)."""
    pkg = os.path.join(dest, "transformers")
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        rel = os.path.relpath(dirpath, root)
        out = os.path.join(pkg, rel) if rel != "." else pkg
        os.makedirs(out, exist_ok=True)
        for fn in filenames:
            os.symlink(os.path.join(dirpath, fn), os.path.join(out, fn))
    for r in rel_files:
        p = os.path.join(pkg, r)
        os.unlink(p)
        shutil.copy2(os.path.join(root, r), p)
    return pkg


def diff_stats(a: str, b: str) -> dict:
    import difflib

    la = open(a, encoding="utf-8").read().splitlines()
    lb = open(b, encoding="utf-8").read().splitlines()
    plus = minus = 0
    for line in difflib.unified_diff(la, lb, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            plus += 1
        elif line.startswith("-") and not line.startswith("---"):
            minus += 1
    return {"added": plus, "removed": minus}


# ---------------------------------------------------------------------------------------------


def process_model(name: str, args, root: str, work: str, binary: str | None) -> dict:
    import recipes

    r = recipes.BY_NAME[name]
    entry: dict = {"name": name, "paper": r.paper, "category": r.category, "note": r.note,
                   "class": r.model_class}
    ref = os.path.join(work, name, "ref")
    os.makedirs(ref, exist_ok=True)
    t0 = time.time()
    before_path = os.path.join(work, name, "before.json")
    before = None
    if args.work and os.path.exists(before_path) and os.path.exists(os.path.join(ref, "outputs.pt")):
        # --work DIR: the original arm does not depend on graphmend; reuse a finished census
        with open(before_path) as f:
            before = json.load(f)
        if before.get("status") != "ok" or "modes" not in before:
            before = None
        else:
            entry["census_reused"] = True
            log(f"{name}: reusing the original arm from {before_path}")
    if before is None:
        before = run_worker("census", name, before_path, timeout=args.timeout, ref_dir=ref)
    entry["census_wall_s"] = before.get("wall_s")
    entry["census_elapsed_s"] = before.get("elapsed_s")
    if before.get("status") != "ok":
        entry["status"] = "skipped"
        entry["skip_reason"] = (before.get("error") or before.get("status", "?")).strip().splitlines()[0][:300]
        log(f"{name}: skipped ({entry['skip_reason'][:120]})")
        return entry
    entry["status"] = "ok"
    entry["params"] = before.get("params")
    entry["modules"] = before.get("modules")
    b = summarize_arm(before)
    entry["before"] = b
    log(f"{name}: {len(b['sites'])} sites, events {b['events']}, graphs {b['graphs']} ({before.get('wall_s', 'reused')} s)")
    if args.census_only or binary is None:
        entry["fix"] = {"status": "census only" if args.census_only else "graphmend binary not found"}
        return entry

    files = files_for(before, b, root)
    entry["files"] = files
    # detection on the original files
    det = graphmend_check(binary, [os.path.join(root, f) for f in files], fix=False)
    traced = {k: set(v) for k, v in before.get("traced_lines", {}).items()}
    if "findings" in det:
        findings = []
        for f in det["findings"]:
            rel = S.package_relpath(f.get("filename", ""), (root,))
            if rel is None:
                continue
            f = dict(f, _rel=rel)
            findings.append(f)
        sc = S.score_detection(findings, b["sites"], traced)
        strip = lambda fs: [{"code": f.get("code"), "file": f["_rel"], "row": f["location"]["row"],  # noqa: E731
                             "message": (f.get("message") or "")[:200], "fixable": f.get("fix") is not None}
                            for f in fs]
        entry["detection"] = {
            "findings": len(findings), "sites_found": len(sc["found"]), "sites_missed": len(sc["missed"]),
            "sites_found_models": sum(1 for x in sc["found"] if x["file"].startswith("models/")),
            "sites_missed_models": sum(1 for x in sc["missed"] if x["file"].startswith("models/")),
            "true": len(sc["true_findings"]), "false": len(sc["false_findings"]),
            "unverified": len(sc["unverified_findings"]),
            "missed": [{k: s[k] for k in ("kind", "file", "function", "line", "stmt")} for s in sc["missed"]],
            "false_findings": strip(sc["false_findings"]), "true_findings": strip(sc["true_findings"]),
            "wall_s": det["wall_s"]}
        # graphmend's own word on each site (the message of the finding that hits it)
        for s in b["sites"]:
            frames = [s] + s.get("chain", [])
            hits = [f for f in findings if any(S.finding_hits_frame(f, fr) for fr in frames)]
            s["graphmend"] = [{"code": f.get("code"), "message": (f.get("message") or "")[:300],
                               "fixable": f.get("fix") is not None,
                               "no_fix_reason": ((f.get("graphmend") or {}).get("no_fix_reason") or "")[:300]}
                              for f in hits]
    else:
        entry["detection"] = {"error": det.get("error")}

    # fixed arm
    fixdir = os.path.join(work, name, "fixed")
    shutil.rmtree(fixdir, ignore_errors=True)
    pkg = make_fixed_copy(root, files, fixdir)
    fx = graphmend_check(binary, [os.path.join(pkg, f) for f in files], fix=True,
                         extra=["--unsafe-fixes"] if args.unsafe_fixes else [])
    changed = {}
    for f in files:
        ds = diff_stats(os.path.join(root, f), os.path.join(pkg, f))
        if ds["added"] or ds["removed"]:
            changed[f] = ds
    entry["fix"] = {"status": "error" if fx.get("error") else "ok", "error": fx.get("error"),
                    "files_changed": changed, "wall_s": fx.get("wall_s")}
    if changed:
        after = run_worker("census", name, os.path.join(work, name, "after.json"), timeout=args.timeout,
                           pkg_root=fixdir, ref_dir=ref, extra=["--skip-explain"])
        if after.get("status") != "ok":
            entry["after_error"] = (after.get("error") or after.get("status")).strip()[:500]
            entry["after"] = None
        else:
            a = summarize_arm(after)
            entry["after"] = a
            entry["outputs"] = after.get("outputs")
    else:
        # no edit: the fixed arm imports byte-identical code, so its census is the original's
        entry["after"] = b
        entry["outputs"] = {"eval": {"equal": True, "reason": "identical code"},
                            "train": {"equal": True, "reason": "identical code"}}
    if entry.get("after") is not None:
        cmp_ = S.compare_sites(b["sites"], entry["after"]["sites"])
        entry["compare"] = {k: [{kk: s[kk] for kk in ("kind", "file", "function", "stmt")} for s in v]
                            for k, v in cmp_.items()}
    entry["wall_s"] = round(time.time() - t0, 1)
    a = entry.get("after")
    log(f"{name}: fixed files {len(changed)}; sites after {len(a['sites']) if a else '?'}")
    return entry


def timing_pair(name: str, mode: str, args, work: str) -> dict:
    ref = os.path.join(work, name, "ref")
    fixdir = os.path.join(work, name, "fixed")
    runs: dict[str, list[dict]] = {"original": [], "fixed": []}
    for i in range(args.timing_reps):
        order = ["original", "fixed"] if i % 2 == 0 else ["fixed", "original"]
        for arm in order:
            cache = tempfile.mkdtemp(prefix="gm-inductor-", dir=work)
            env = {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1", "TORCHINDUCTOR_CACHE_DIR": cache,
                   "TRITON_CACHE_DIR": os.path.join(cache, "triton")}
            out = os.path.join(work, name, f"timing-{arm}-{i}.json")
            res = run_worker("timing", name, out, timeout=args.timing_timeout, ref_dir=ref, env_extra=env,
                             pkg_root=fixdir if arm == "fixed" else None, extra=["--mode", mode])
            shutil.rmtree(cache, ignore_errors=True)
            if res.get("status") != "ok":
                return {"mode": mode, "error": f"{arm}: {res.get('error', res.get('status'))}"[:300]}
            runs[arm].append({k: res[k] for k in ("cold_s", "steady_median_s", "unique_graphs")})
    med = {arm: {"cold_s": statistics.median(r["cold_s"] for r in rs),
                 "steady_s": statistics.median(r["steady_median_s"] for r in rs),
                 "cold_range": [min(r["cold_s"] for r in rs), max(r["cold_s"] for r in rs)],
                 "graphs": rs[0]["unique_graphs"]} for arm, rs in runs.items()}
    return {"mode": mode, "reps": args.timing_reps, "runs": runs, "median": med,
            "cold_x": med["original"]["cold_s"] / med["fixed"]["cold_s"],
            "steady_x": med["original"]["steady_s"] / med["fixed"]["steady_s"]}


def pick_timing(entries: list[dict], args) -> list[tuple[str, str]]:
    cands = []
    for e in entries:
        a, b = e.get("after"), e.get("before")
        if e.get("status") != "ok" or not a or a is b or not e.get("fix", {}).get("files_changed"):
            continue
        best = None
        # eval first: an inductor cold start of forward + backward costs several times a forward's
        for mode in ("eval", "train"):
            gain = b["sites_by_mode"].get(mode, 0) - a["sites_by_mode"].get(mode, 0)
            if gain > 0 and best is None:
                best = (gain, mode)
        if best:
            cands.append((best[0], e["name"], best[1]))
    if args.timing_models:
        want = args.timing_models.split(",")
        return [(n, m) for _, n, m in cands if n in want]
    cands.sort(key=lambda c: -c[0])
    return [(n, m) for _, n, m in cands[: args.timing_count]]


def write_report(results: dict, doc: str) -> None:
    png = os.path.join(os.path.dirname(os.path.abspath(doc)), "img", "hf-breaks.png")
    chart = report.chart(results, png)
    rel_png = os.path.relpath(png, os.path.dirname(os.path.abspath(doc))) if chart else None
    common.replace_section(doc, "hf", report.markdown(results, rel_png))
    log(f"updated {doc}" + (f" and {png}" if chart else " (no chart: matplotlib missing or no breaks)"))


def main(argv=None) -> int:
    import recipes

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", help="comma-separated recipe names (default: all)")
    ap.add_argument("--quick", action="store_true", help=f"only {','.join(QUICK)}, one timing pair, 1 rep")
    ap.add_argument("--census-only", action="store_true", help="only phase 1 (no graphmend); writes hf-census.json")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300, help="seconds per worker process")
    ap.add_argument("--timing-count", type=int, default=2, help="models in the timing subset")
    ap.add_argument("--timing-budget", type=float, default=900,
                    help="seconds after which no further model is timed (keeps the full run within an hour)")
    ap.add_argument("--timing-models", help="comma-separated models to time (default: the most improved)")
    ap.add_argument("--timing-reps", type=int, default=2, help="runs per arm, alternated")
    ap.add_argument("--timing-timeout", type=float, default=900, help="seconds per timing process")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--out", help="results JSON (default bench/results/hf.json or hf-census.json)")
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    ap.add_argument("--no-doc", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the work dir and fixed copies")
    ap.add_argument("--work", help="work dir to keep and reuse: a model's finished original-arm census there "
                                   "is reused (it does not depend on graphmend); fixed arms are redone")
    ap.add_argument("--unsafe-fixes", action="store_true", help="fixed arm with graphmend's unsafe fixes too")
    ap.add_argument("--report-from", metavar="JSON", help="only regenerate the report from a results JSON")
    args = ap.parse_args(argv)
    if args.report_from:
        with open(args.report_from) as f:
            results = json.load(f)
        results["totals"] = report.totals(results)
        write_report(results, args.doc)
        return 0
    if args.quick:
        args.timing_count, args.timing_reps = 1, 1
    names = args.models.split(",") if args.models else (QUICK if args.quick else [r.name for r in recipes.RECIPES])
    unknown = [n for n in names if n not in recipes.BY_NAME]
    if unknown:
        ap.error(f"unknown models: {', '.join(unknown)} (known: {', '.join(recipes.BY_NAME)})")
    binary = None if args.census_only else graphmend_bin()
    if not args.census_only and binary is None:
        log("graphmend binary not found (set GRAPHMEND_BIN or build build/graphmend): census only")
    root = tf_root()
    if args.work:
        work = os.path.abspath(args.work)
        os.makedirs(work, exist_ok=True)
        args.keep = True
    else:
        work = tempfile.mkdtemp(prefix="gm-hf-")
    t0 = time.time()
    import torch
    import transformers

    meta = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": common.machine(),
            "torch": torch.__version__, "transformers": transformers.__version__,
            "graphmend_bin": binary, "graphmend_version": common.tool_version([binary, "--version"]) if binary else None,
            "models_requested": names, "args": {k: v for k, v in vars(args).items() if k not in ("doc",)}}
    entries: dict[str, dict] = {}
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        futs = {ex.submit(process_model, n, args, root, work, binary): n for n in names}
        for fut in cf.as_completed(futs):
            n = futs[fut]
            try:
                entries[n] = fut.result()
            except Exception as e:  # a harness bug in one model must not lose the others
                import traceback

                entries[n] = {"name": n, "status": "skipped", "skip_reason": f"harness error: {e!r}",
                              "traceback": traceback.format_exc()[-2000:]}
                log(f"{n}: harness error {e!r}")
    ordered = [entries[n] for n in names]
    if binary and not args.no_timing and not args.census_only:
        t_timing = time.time()
        for name, mode in pick_timing(ordered, args):
            if time.time() - t_timing > args.timing_budget:
                log(f"timing budget ({args.timing_budget:.0f} s) spent: {name} not timed")
                entries[name]["timing"] = {"mode": mode, "error": "not timed: timing budget spent"}
                continue
            log(f"timing {name} ({mode}), {args.timing_reps} reps per arm")
            entries[name]["timing"] = timing_pair(name, mode, args, work)
    meta["duration_s"] = round(time.time() - t0, 1)
    results = {"meta": meta, "models": ordered}
    results["totals"] = report.totals(results)
    out = args.out or os.path.join(ROOT, "bench", "results", "hf-census.json" if (args.census_only or not binary)
                                   else "hf.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(results, f, indent=1, sort_keys=False)
    log(f"wrote {out} in {meta['duration_s']} s")
    if not args.no_doc:
        write_report(results, args.doc)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        log(f"work dir kept: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
