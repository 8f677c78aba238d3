#!/usr/bin/env python
"""graphmend on real Hugging Face models: break census, detection, fixes, outputs, timing, report.

    .venv/bin/python bench/hf/run.py [--corpus default|paper-4.52.4] [--models a,b] [--quick] [--census-only]
                                     [--jobs N] [--no-timing] [--no-unsafe-arm]

Phases, each model in fresh subprocesses (bench/hf/worker.py) with a time limit:
 1. census, original arm: Dynamo (counting backend) in eval()/no_grad and train()/grad; every graph
    break with its type and site; explain and fullgraph=True as cross-checks; eager outputs saved.
 2. detection: `$GRAPHMEND_BIN check --output-format json --exit-zero` over the model's modeling files
    and the shared transformers files its breaks come from; recall and precision against phase 1.
 3. fixed arm: a copy of the transformers package (symlinks, with the files above copied for real),
    `$GRAPHMEND_BIN check --fix --exit-zero` on those copies, then phase 1 again importing the copy
    (same weights and inputs): breaks after, fullgraph after, eager outputs compared. Then the
    unsafe arm: the same with `check --fix --unsafe-fixes` (its census is the safe arm's when the
    unsafe fixes change no byte more).
 4. timing (subset): inductor cold start and steady state, fresh process per run, caches disabled
    and a fresh cache dir per run, arms alternated, medians.
Writes bench/results/hf.json (or hf-census.json with --census-only) and the `hf` section of
docs/benchmarks.md with a PNG chart.

--corpus paper-4.52.4: the GraphMend paper's rows (recipes marked paper=True) on transformers 4.52.4, with
the paper's flags (bench/hf/corpora.py); workers run under .venv-tf452/bin/python (or --python), results go
to bench/results/hf-paper-4.52.4.json and the `hf-paper-4.52.4` section of docs/benchmarks.md.
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
import corpora  # noqa: E402
import report  # noqa: E402
import sites as S  # noqa: E402

WORKER = os.path.join(HERE, "worker.py")
QUICK = ["bart", "whisper", "longformer", "llama", "wav2vec2", "qwen2_moe"]


def log(msg: str) -> None:
    print(f"[hf {dt.datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


PYTHON = sys.executable  # the workers' interpreter (main() sets it from --python or the corpus)
CORPUS = corpora.DEFAULT  # main() sets it from --corpus


def worker_python(corpus: corpora.Corpus, override: str | None) -> str:
    """The interpreter the workers of `corpus` run under: --python, else the corpus's, else this one."""
    return override or corpus.worker_python() or sys.executable


def tf_info(python: str | None = None) -> dict:
    """transformers' package root and the torch and transformers versions, as the workers see them."""
    code = ("import json, os, torch, transformers; print(json.dumps({'root': os.path.dirname(transformers.__file__), "
            "'torch': torch.__version__, 'transformers': transformers.__version__}))")
    out = subprocess.run([python or PYTHON, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONWARNINGS="ignore"))
    return json.loads(out.stdout.strip().splitlines()[-1])


def tf_root() -> str:
    return tf_info()["root"]


def run_worker(task: str, model: str, out: str, *, timeout: float, pkg_root=None, ref_dir=None,
               env_extra=None, extra=()) -> dict:
    cmd = [PYTHON, WORKER, task, "--model", model, "--out", out, "--corpus", CORPUS.name, *extra]
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


def _shown(path: str | None) -> str | None:
    """A path as the report shows it: relative to the checkout when inside it (no machine paths in docs)."""
    if path and os.path.isabs(path) and path.startswith(ROOT + os.sep):
        return os.path.relpath(path, ROOT)
    return path


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


def snapshot_binary(binary: str, work: str) -> dict:
    """Copy `binary` into `work` (retrying while it is being rewritten: the copy must run `--version` and
    hash the same before and after) and return its path, sha256 and build time."""
    import hashlib

    dest = os.path.join(work, "graphmend-snapshot")
    for attempt in range(12):
        try:
            st = os.stat(binary)
            shutil.copy2(binary, dest)
            with open(dest, "rb") as f:
                sha = hashlib.sha256(f.read()).hexdigest()
            ok = subprocess.run([dest, "--version"], capture_output=True, timeout=30).returncode == 0
            if ok and os.stat(binary).st_mtime == st.st_mtime:
                mtime = dt.datetime.fromtimestamp(st.st_mtime, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
                log(f"graphmend: snapshot of {binary} (sha256 {sha[:12]}, built {mtime})")
                return {"path": dest, "sha256": sha, "mtime": mtime}
        except (OSError, subprocess.TimeoutExpired) as e:
            log(f"cannot snapshot {binary} ({e})")
        time.sleep(5)
    raise SystemExit(f"bench/hf: {binary} kept changing or would not run; no snapshot")


def graphmend_check(binary: str, paths: list[str], fix: bool, timeout: float = 600, extra=()) -> dict:
    cmd = [binary, "check", "--exit-zero"] + (["--fix"] if fix else ["--output-format", "json"]) + list(extra) + paths
    t0 = time.time()
    for attempt in range(13):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            break
        except subprocess.TimeoutExpired:
            return {"rc": None, "error": f"timeout after {timeout} s", "wall_s": timeout}
        except (PermissionError, FileNotFoundError, OSError) as e:
            # the binary is being rebuilt (replaced or not yet executable): wait for it, up to a minute
            if attempt == 12:
                return {"rc": None, "error": f"cannot run {binary}: {e}", "wall_s": round(time.time() - t0, 3)}
            log(f"cannot run {binary} ({e}); retrying in 5 s")
            time.sleep(5)
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


def make_fixed_copy(root: str, rel_files: list[str], dest: str, name: str = "transformers") -> str:
    """A package under dest/<name> (transformers by default): symlinks to the original files, except
    `rel_files`, which are real copies (graphmend rewrites those in place)."""
    pkg = os.path.join(dest, name)
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
    if CORPUS.name == corpora.PAPER_452.name:
        entry["paper_before"] = corpora.PAPER_TABLE2_BEFORE.get(name)
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
    entry["dtype"] = before.get("dtype")
    b = summarize_arm(before)
    entry["before"] = b
    log(f"{name}: {len(b['sites'])} sites, events {b['events']}, graphs {b['graphs']} ({before.get('wall_s', 'reused')} s)")
    if args.census_only or binary is None:
        entry["fix"] = {"status": "census only" if args.census_only else "graphmend binary not found"}
        entry["breaks"] = break_lists(entry)
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
        positions = ({k: {tuple(p) for p in v} for k, v in before["traced_positions"].items()}
                     if "traced_positions" in before else None)
        sc = S.score_detection(findings, b["sites"], traced, positions)
        strip = lambda fs: [{"code": f.get("code"), "file": f["_rel"], "row": f["location"]["row"],  # noqa: E731
                             "message": (f.get("message") or "")[:200], "fixable": f.get("fix") is not None}
                            for f in fs]
        entry["detection"] = {
            "findings": len(findings), "sites_found": len(sc["found"]), "sites_missed": len(sc["missed"]),
            "sites_found_by_cause": len(sc["found_by_cause"]),
            # recall per mode: a site counts in each mode whose run logged it
            "by_mode": {m: {"found": sum(1 for x in sc["found"] if m in x.get("modes", [])),
                            "missed": sum(1 for x in sc["missed"] if m in x.get("modes", []))}
                        for m in ("eval", "train")},
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

    # fixed arm (safe fixes; with --unsafe-fixes, unsafe ones too), then the unsafe arm
    safe = fixed_arm(name, "fixed", args, root, work, files, binary, ref, b,
                     ["--unsafe-fixes"] if args.unsafe_fixes else [])
    entry.update(safe)
    if args.unsafe_arm and not args.unsafe_fixes:
        uns = fixed_arm(name, "fixed-unsafe", args, root, work, files, binary, ref, b, ["--unsafe-fixes"],
                        same_as=(os.path.join(work, name, "fixed", "transformers"), safe))
        entry.update({k + "_unsafe" if k != "after_error" else "after_unsafe_error": v for k, v in uns.items()})
    entry["breaks"] = break_lists(entry)
    entry["wall_s"] = round(time.time() - t0, 1)
    a, au = entry.get("after"), entry.get("after_unsafe")
    log(f"{name}: fixed files {len(entry['fix'].get('files_changed') or {})}; sites after "
        f"{len(a['sites']) if a else '?'}" + (f", after unsafe {len(au['sites']) if au else '?'}"
                                              if "fix_unsafe" in entry else ""))
    return entry


def fixed_arm(name: str, label: str, args, root: str, work: str, files: list[str], binary: str, ref: str,
              b: dict, fix_flags: list[str], same_as=None) -> dict:
    """A copy of the package under work/name/label, `check --fix` (plus fix_flags) on its copies of
    `files`, and the census importing it. same_as = (package dir, result) of an arm already run: when
    this arm's files are byte-identical to that arm's, its result is reused instead of a census."""
    fixdir = os.path.join(work, name, label)
    shutil.rmtree(fixdir, ignore_errors=True)
    pkg = make_fixed_copy(root, files, fixdir)
    fx = graphmend_check(binary, [os.path.join(pkg, f) for f in files], fix=True, extra=fix_flags)
    changed = {}
    for f in files:
        ds = diff_stats(os.path.join(root, f), os.path.join(pkg, f))
        if ds["added"] or ds["removed"]:
            changed[f] = ds
    res: dict = {"fix": {"status": "error" if fx.get("error") else "ok", "error": fx.get("error"),
                         "flags": fix_flags, "files_changed": changed, "wall_s": fx.get("wall_s")}}
    if same_as is not None and all(_same_bytes(os.path.join(pkg, f), os.path.join(same_as[0], f)) for f in files):
        other = same_as[1]
        res["fix"]["same_as_safe"] = True
        for k in ("after", "outputs", "compare", "after_error"):
            if k in other:
                res[k] = other[k]
        return res
    if changed:
        after = run_worker("census", name, os.path.join(work, name, f"after-{label}.json"), timeout=args.timeout,
                           pkg_root=fixdir, ref_dir=ref, extra=["--skip-explain"])
        if after.get("status") != "ok":
            res["after_error"] = (after.get("error") or after.get("status")).strip()[:500]
            res["after"] = None
        else:
            res["after"] = summarize_arm(after)
            res["outputs"] = after.get("outputs")
    else:
        # no edit: the fixed arm imports byte-identical code, so its census is the original's
        res["after"] = b
        res["outputs"] = {"eval": {"equal": True, "reason": "identical code"},
                          "train": {"equal": True, "reason": "identical code"}}
    if res.get("after") is not None:
        cmp_ = S.compare_sites(b["sites"], res["after"]["sites"])
        res["compare"] = {k: [{kk: s[kk] for kk in ("kind", "file", "function", "stmt")} for s in v]
                          for k, v in cmp_.items()}
    return res


def _same_bytes(a: str, b: str) -> bool:
    try:
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


SITE_FIELDS = ("kind", "gb_id", "file", "function", "line", "stmt", "modes", "events", "in_loop")


def break_lists(entry: dict) -> dict:
    """Per arm, the break sites (file, function, line, statement, break type, modes): what is left to fix."""
    out = {}
    for arm, key in (("before", "before"), ("after_safe", "after"), ("after_unsafe", "after_unsafe")):
        a = entry.get(key)
        if a is not None and "sites" in a:
            out[arm] = [{k: s.get(k) for k in SITE_FIELDS} for s in a["sites"]]
    return out


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
        # eval first: an inductor cold start of forward + backward costs several times a forward's. Only
        # modes the fix brought to one graph: the speed-up of a whole graph is what is measured.
        for mode in ("eval", "train"):
            gain = b["sites_by_mode"].get(mode, 0) - a["sites_by_mode"].get(mode, 0)
            if gain > 0 and a.get("fullgraph", {}).get(mode) and best is None:
                best = (gain, mode)
        if best:
            cands.append((best[0], e["name"], best[1]))
    if args.timing_models:
        want = args.timing_models.split(",")
        return [(n, m) for _, n, m in cands if n in want]
    cands.sort(key=lambda c: -c[0])
    return [(n, m) for _, n, m in cands[: args.timing_count]]


def write_report(results: dict, doc: str) -> None:
    corpus = corpora.get((results.get("meta") or {}).get("corpus"))
    if corpus.name == corpora.PAPER_452.name:
        common.replace_section(doc, corpus.section, report.paper_markdown(results))
        log(f"updated the {corpus.section} section of {doc}")
        return
    png = os.path.join(os.path.dirname(os.path.abspath(doc)), "img", "hf-breaks.png")
    chart = report.chart(results, png) if corpus.chart else False
    rel_png = os.path.relpath(png, os.path.dirname(os.path.abspath(doc))) if chart else None
    common.replace_section(doc, corpus.section, report.markdown(results, rel_png))
    log(f"updated {doc}" + (f" and {png}" if chart else " (no chart: matplotlib missing or no breaks)"))


def select_models(corpus: corpora.Corpus, recipes_list: list, models: str | None, quick: bool) -> list[str]:
    """The rows to run: --models (each must be in the corpus), else --quick's subset of the corpus, else
    the whole corpus. Raises ValueError naming unknown models."""
    in_corpus = corpus.model_names(recipes_list)
    if models:
        names = [n for n in models.split(",") if n]
        unknown = [n for n in names if n not in in_corpus]
        if unknown:
            raise ValueError(f"not in corpus {corpus.name}: {', '.join(unknown)} (known: {', '.join(in_corpus)})")
        return names
    if quick:
        return [n for n in QUICK if n in in_corpus]
    return in_corpus


def main(argv=None) -> int:
    import recipes

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="default", choices=list(corpora.CORPORA),
                    help="default: every recipe on the transformers of .venv; paper-4.52.4: the GraphMend paper's "
                         "rows with its flags on transformers 4.52.4 (workers under .venv-tf452/bin/python)")
    ap.add_argument("--python", help="interpreter for the workers (default: the corpus's, else this one)")
    ap.add_argument("--models", help="comma-separated recipe names (default: all of the corpus)")
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
    ap.add_argument("--unsafe-fixes", action="store_true",
                    help="the fixed arm itself with graphmend's unsafe fixes too (no separate unsafe arm)")
    ap.add_argument("--no-unsafe-arm", dest="unsafe_arm", action="store_false",
                    help="skip the third arm (check --fix --unsafe-fixes); it reuses the safe arm's census when "
                         "the unsafe fixes change nothing more")
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
    global PYTHON, CORPUS
    CORPUS = corpora.get(args.corpus)
    PYTHON = worker_python(CORPUS, args.python)
    if not (os.path.isfile(PYTHON) and os.access(PYTHON, os.X_OK)):
        ap.error(f"worker interpreter {PYTHON} not found (corpus {CORPUS.name}; create it as scripts/bench.sh does, "
                 f"or pass --python)")
    try:
        names = select_models(CORPUS, recipes.RECIPES, args.models, args.quick)
    except ValueError as e:
        ap.error(str(e))
    binary = None if args.census_only else graphmend_bin()
    for _ in range(12 if not args.census_only and binary is None and os.environ.get("GRAPHMEND_BIN") else 0):
        log("graphmend binary missing or not executable (being rebuilt?); waiting 5 s")
        time.sleep(5)
        binary = graphmend_bin()
        if binary:
            break
    if not args.census_only and binary is None:
        log("graphmend binary not found (set GRAPHMEND_BIN or build build/graphmend): census only")
    binary_src, snap = binary, None
    info = tf_info()
    root = info["root"]
    if CORPUS.transformers and info["transformers"] != CORPUS.transformers:
        log(f"warning: corpus {CORPUS.name} is defined for transformers {CORPUS.transformers}; {PYTHON} has "
            f"{info['transformers']}")
    log(f"corpus {CORPUS.name}: {len(names)} models, workers under {PYTHON} (torch {info['torch']}, "
        f"transformers {info['transformers']})")
    if args.work:
        work = os.path.abspath(args.work)
        os.makedirs(work, exist_ok=True)
        args.keep = True
    else:
        work = tempfile.mkdtemp(prefix="gm-hf-")
    if binary:
        # one binary for the whole run: a copy, so a rebuild of GRAPHMEND_BIN mid-run changes no row
        snap = snapshot_binary(binary, work)
        binary = snap["path"]
    t0 = time.time()
    meta = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": common.machine(),
            "torch": info["torch"], "transformers": info["transformers"], "corpus": CORPUS.name,
            "corpus_flags": CORPUS.flags, "worker_python": os.path.relpath(PYTHON, ROOT) if PYTHON.startswith(ROOT)
            else PYTHON, "eval_context": CORPUS.eval_context, "seq_len": CORPUS.seq_len,
            "fp16": sorted(CORPUS.fp16),
            "graphmend_bin": _shown(binary_src), "graphmend_version": common.tool_version([binary, "--version"]) if binary else None,
            "graphmend_sha256": snap["sha256"] if snap else None, "graphmend_mtime": snap["mtime"] if snap else None,
            "models_requested": names, "args": {k: v for k, v in vars(args).items() if k not in ("doc", "work")}}
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
    out = args.out or os.path.join(ROOT, "bench", "results", CORPUS.census_results if (args.census_only or not binary)
                                   else CORPUS.results)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(results, f, indent=1, sort_keys=False)
    log(f"wrote {out} in {meta['duration_s']} s")
    # A census alone has no detection or fix columns: it would replace the section's with blanks.
    if not args.no_doc and not args.census_only:
        write_report(results, args.doc)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        log(f"work dir kept: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
