#!/usr/bin/env python
"""graphmend on libraries other than transformers: timm, diffusers, torchvision, torch_geometric, kornia.

    .venv/bin/python bench/libs/run.py [--models a,b] [--libs timm,kornia] [--jobs N] [--census-only] [--no-fix]
                                       [--recensus] [--python .venv-libs/bin/python] [--work DIR]

Phases (workers are bench/libs/worker.py under .venv-libs, one fresh process per model and arm):
 1. census, original arm: Dynamo (counting backend, eager semantics) in eval()/no_grad and train() with
    backward; every graph break with its library site; eager outputs and state_dict saved. Cached in the work
    dir (default bench/results/tmp/libs): the census does not depend on graphmend, so a rerun reuses it
    (`--recensus` redoes it).
 2. detection: `graphmend check --output-format json` over the whole installed package of each library (wall
    time recorded; an exit code other than 0/1, or a timeout, is a crash); recall and precision per model
    and per library (distinct sites, distinct findings).
 3. fixed arm (skipped by --no-fix): a copy of each package (symlinks; every .py file a real copy) rewritten
    by `graphmend check --fix --exit-zero` over the whole copy; the census again importing the copy with the
    original arm's weights and inputs: sites fixed, outputs equal.
Writes bench/results/libs.json (libs-census.json with --census-only), bench/results/libs-misses.txt (the
missed sites and false positives), and the `libs` section of docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as dt
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, HERE)
import recipes as R  # noqa: E402  (bench/libs/recipes.py: imported before bench/hf goes on sys.path)
import score  # noqa: E402

sys.path.insert(0, BENCH)
import common  # noqa: E402


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


HFRUN = _load("hf_run", os.path.join(BENCH, "hf", "run.py"))  # graphmend_check, snapshot, fixed copy, summaries
S = score.S
WORKER = os.path.join(HERE, "worker.py")
DEFAULT_PY = os.path.join(ROOT, ".venv-libs", "bin", "python")
DEFAULT_WORK = os.path.join(ROOT, "bench", "results", "tmp", "libs")
DEFAULT_MISSES = os.path.join(ROOT, "bench", "results", "libs-misses.txt")


def log(msg: str) -> None:
    print(f"[libs {dt.datetime.now().strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def lib_info(python: str, libs: list[str]) -> dict:
    code = ("import json, os, sys, importlib, torch\nout = {'torch': torch.__version__, 'libs': {}}\n"
            "for n in sys.argv[1:]:\n    m = importlib.import_module(n)\n"
            "    out['libs'][n] = {'root': os.path.dirname(os.path.abspath(m.__file__)), "
            "'version': getattr(m, '__version__', '?')}\nprint(json.dumps(out))\n")
    p = subprocess.run([python, "-c", code, *libs], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONWARNINGS="ignore", HF_HUB_OFFLINE="1"))
    if p.returncode:
        raise SystemExit(f"bench/libs: cannot import {libs} under {python}: {p.stderr[-1500:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_worker(python: str, model: str, out: str, timeout: float, pkg_root=None, ref_dir=None, extra=()) -> dict:
    cmd = [python, WORKER, "--model", model, "--out", out, *extra]
    if pkg_root:
        cmd += ["--pkg-root", pkg_root]
    if ref_dir:
        cmd += ["--ref-dir", ref_dir]
    if os.path.exists(out):
        os.unlink(out)
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", PYTHONWARNINGS="ignore")
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"model": model, "status": "timeout", "error": f"exceeded {timeout:.0f} s", "wall_s": timeout}
    if os.path.exists(out):
        with open(out) as f:
            res = json.load(f)
    else:
        res = {"model": model, "status": "error", "error": f"worker exited {p.returncode}: {p.stderr[-1500:]}"}
    res["wall_s"] = round(time.time() - t0, 2)
    return res


def census_original(r, args, work: str) -> dict:
    d = os.path.join(work, r.name)
    path, ref = os.path.join(d, "before.json"), os.path.join(d, "ref")
    if not args.recensus and os.path.exists(path) and os.path.exists(os.path.join(ref, "outputs.pt")):
        with open(path) as f:
            res = json.load(f)
        if res.get("status") == "ok" and "modes" in res:
            res["census_reused"] = True
            if "executed_files" not in res:  # a census from before the worker recorded them: an eager-only pass
                fr = run_worker(args.python, r.name, os.path.join(d, "files.json"), args.timeout, extra=["--files-only"])
                if fr.get("status") == "ok":
                    res["executed_files"] = fr["executed_files"]
                    with open(path, "w") as f:
                        json.dump(res, f)
            return res
    os.makedirs(ref, exist_ok=True)
    extra = ["--fullgraph"] if args.fullgraph else []
    res = run_worker(args.python, r.name, path, args.timeout, ref_dir=ref, extra=extra)
    log(f"{r.name}: census {res.get('status')} in {res.get('wall_s')} s")
    return res


def unattributed(res: dict) -> list[dict]:
    out = []
    for mode, m in res.get("modes", {}).items():
        for e in m.get("events", []):
            if e.get("file") is None and e.get("kind") != "harness error":
                out.append({"model": res.get("model"), "mode": mode, "kind": e.get("kind"), "gb_id": e.get("gb_id"),
                            "reason": e.get("reason"), "innermost": e.get("innermost")})
    return out


def model_entry(r, res: dict) -> dict:
    e = {"name": r.name, "lib": r.lib, "note": r.note, "census_wall_s": res.get("wall_s"),
         "census_reused": bool(res.get("census_reused"))}
    if res.get("status") != "ok":
        e["status"] = "skipped"
        e["skip_reason"] = (res.get("error") or res.get("status", "?")).strip().splitlines()[0][:300]
        return e
    e["status"] = "ok"
    e["params"] = res.get("params")
    b = HFRUN.summarize_arm(res)
    events = [ev for m in res["modes"].values() for ev in m["events"]]
    b["sites"] = score.sites_with_detail(b["sites"], events)
    e["before"] = b
    e["errors"] = {m: v.get("error") for m, v in res["modes"].items() if not v.get("ok")}
    e["eager_errors"] = res.get("eager_errors")
    e["unattributed"] = unattributed(res)
    return e


def check_package(binary: str, root: str, timeout: float) -> dict:
    """`check --output-format json` over a whole package: findings, wall time, crash (exit code not 0/1)."""
    t0 = time.time()
    try:
        p = subprocess.run([binary, "check", "--no-cache", "--output-format", "json", root], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"rc": None, "crashed": True, "error": f"timeout after {timeout} s", "wall_s": timeout, "findings": []}
    res = {"rc": p.returncode, "wall_s": round(time.time() - t0, 3), "crashed": p.returncode not in (0, 1)}
    try:
        res["findings"] = json.loads(p.stdout) if p.stdout.strip() else []
    except json.JSONDecodeError as e:
        res["findings"] = []
        res["error"] = f"bad JSON: {e}: {p.stdout[:300]}"
    if res["crashed"]:
        res["error"] = f"exit {p.returncode}: {p.stderr[-800:]}"
    return res


ARMS = {"": [], "_unsafe": ["--unsafe-fixes"]}  # suffix of the entry keys -> extra flags of check --fix


def fix_package(binary: str, lib: str, root: str, work: str, timeout: float, suffix: str = "") -> dict:
    """A copy of the package under work/fixed<suffix>-<lib>/<lib> (every .py file copied), rewritten by
    `check --fix --exit-zero` (plus --unsafe-fixes for the unsafe arm) over the whole copy."""
    dest = os.path.join(work, f"fixed{suffix}-{lib}")
    shutil.rmtree(dest, ignore_errors=True)
    py = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        py += [os.path.relpath(os.path.join(dirpath, f), root) for f in filenames if f.endswith(".py")]
    pkg = HFRUN.make_fixed_copy(root, sorted(py), dest, name=lib)
    # sibling folders a package's shared objects look for next to it (torchvision.libs for torchvision's _C)
    parent = os.path.dirname(root)
    for sib in os.listdir(parent):
        if sib.startswith(lib + ".libs"):
            os.symlink(os.path.join(parent, sib), os.path.join(dest, sib))
    t0 = time.time()
    try:
        p = subprocess.run([binary, "check", "--no-cache", "--fix", "--exit-zero", *ARMS[suffix], pkg], capture_output=True,
                           text=True, timeout=timeout)
        rc, err = p.returncode, (p.stderr[-800:] if p.returncode else None)
    except subprocess.TimeoutExpired:
        rc, err = None, f"timeout after {timeout} s"
    wall = round(time.time() - t0, 3)
    changed = {}
    for f in py:
        ds = HFRUN.diff_stats(os.path.join(root, f), os.path.join(pkg, f))
        if ds["added"] or ds["removed"]:
            changed[f] = ds
    return {"dir": dest, "pkg": pkg, "rc": rc, "crashed": rc != 0, "error": err, "wall_s": wall,
            "flags": ARMS[suffix], "files_changed": changed}


IMPORT_CHECK = r"""
import importlib, json, sys, warnings
warnings.simplefilter("ignore")
root, lib, mods = sys.argv[1], sys.argv[2], sys.argv[3:]
if root:
    sys.path.insert(0, root)
out = {}
for m in mods:
    try:
        importlib.import_module(m)
        out[m] = None
    except BaseException as e:
        out[m] = f"{type(e).__name__}: {str(e)[:200]}"
mod = sys.modules.get(lib)
out["__file__"] = getattr(mod, "__file__", None)
print(json.dumps(out))
"""


def import_check(python: str, lib: str, fx: dict) -> dict:
    """Each rewritten module imported from the original and from the fixed copy (two fresh processes): the
    modules that import in the original but not in the copy are a fix that broke the package."""
    mods = sorted(lib + "." + f[:-3].replace("/", ".").removesuffix(".__init__") for f in fx["files_changed"])
    if not mods:
        return {"modules": 0, "broken": {}}
    res = {}
    for arm, root in (("original", ""), ("fixed", fx["dir"])):
        p = subprocess.run([python, "-c", IMPORT_CHECK, root, lib, *mods], capture_output=True, text=True,
                           timeout=600, env=dict(os.environ, PYTHONWARNINGS="ignore", HF_HUB_OFFLINE="1"))
        try:
            res[arm] = json.loads(p.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            res[arm] = {"__error__": p.stderr[-500:]}
    broken = {m: res["fixed"].get(m, res["fixed"].get("__error__")) for m in mods
              if res["original"].get(m) is None and res["fixed"].get(m) is not None}
    return {"modules": len(mods), "broken": broken, "fixed_imported_from": res["fixed"].get("__file__")}


def same_files(a: dict, b: dict) -> bool:
    """Two fixed copies with byte-identical rewritten files."""
    if set(a["files_changed"]) != set(b["files_changed"]):
        return False
    return all(HFRUN._same_bytes(os.path.join(a["pkg"], f), os.path.join(b["pkg"], f)) for f in a["files_changed"])


def touched_files(res: dict) -> set[str] | None:
    """Package files a model's runs reach: executed in eager (profiled calls) or traced by Dynamo; None when the
    census did not record the executed files."""
    if "executed_files" not in res:
        return None
    return set(res["executed_files"]) | set(res.get("traced_lines", {}))


def fixed_census(r, entry: dict, fx: dict, args, work: str, suffix: str = "", touched: set[str] | None = None) -> None:
    """The census of one model importing the fixed copy `fx`; entry keys after<suffix>, outputs<suffix>,
    compare<suffix>, sites_fixed<suffix>. When no rewritten file is one the model's runs reach (`touched`),
    the fixed arm runs the original's code and the original census stands for it."""
    before = entry["before"]
    reach = set(fx["files_changed"]) if touched is None else set(fx["files_changed"]) & touched
    entry["fixed_files_reached" + suffix] = sorted(reach)
    if not reach:
        entry["after" + suffix] = before
        why = "identical code" if not fx["files_changed"] else "no rewritten file runs"
        entry["outputs" + suffix] = {m: {"equal": True, "reason": why} for m in ("eval", "train")}
    else:
        res = run_worker(args.python, r.name, os.path.join(work, r.name, f"after{suffix}.json"), args.timeout,
                         pkg_root=fx["dir"], ref_dir=os.path.join(work, r.name, "ref"))
        if res.get("status") != "ok":
            entry["after" + suffix + "_error"] = (res.get("error") or res.get("status")).strip()[:500]
            entry["after" + suffix] = None
            return
        a = HFRUN.summarize_arm(res)
        events = [ev for m in res["modes"].values() for ev in m["events"]]
        a["sites"] = score.sites_with_detail(a["sites"], events)
        a["errors"] = {m: v.get("error") for m, v in res["modes"].items() if not v.get("ok")}
        entry["after" + suffix] = a
        entry["outputs" + suffix] = res.get("outputs")
    cmp_ = S.compare_sites(before["sites"], entry["after" + suffix]["sites"])
    entry["compare" + suffix] = {k: [{kk: s.get(kk) for kk in ("kind", "file", "function", "line", "stmt")}
                                     for s in v] for k, v in cmp_.items()}
    entry["sites_fixed" + suffix] = len(before["sites"]) - len(cmp_["left"]) - len(cmp_["new"])


def fix_summary(entries: list[dict], fx: dict, suffix: str = "") -> dict:
    """The fixed arm of one library. Sites are distinct across its models (as in detection): fixed = distinct
    sites before minus those left minus new ones; the per-model sum is kept as `sites_fixed_per_model_sum`."""
    arm = [e for e in entries if e.get("status") == "ok" and ("compare" + suffix) in e]
    before = {S._key_of(s) for e in arm for s in e["before"]["sites"]}
    after = {S._key_of(s) for e in arm for s in e["after" + suffix]["sites"]}
    changed = fx.get("files_changed") or {}
    return {"flags": fx.get("flags"), "sites_before": len(before), "sites_after": len(after),
            "sites_left": len(before & after), "sites_new": len(after - before),
            "sites_fixed": len(before) - len(before & after) - len(after - before),
            "sites_fixed_per_model_sum": sum(e["sites_fixed" + suffix] for e in arm),
            "wall_s": fx.get("wall_s"), "rc": fx.get("rc"), "crashed": fx.get("crashed"), "error": fx.get("error"),
            "same_as_safe": fx.get("same_as_safe", False), "import_check": fx.get("import_check"),
            "files_changed": len(changed), "lines_changed": sum(v["added"] + v["removed"] for v in changed.values()),
            "models": len(arm),
            "outputs_unequal": sorted(e["name"] for e in arm
                                      if any(not v.get("equal") for v in (e.get("outputs" + suffix) or {}).values())),
            "after_errors": sorted(e["name"] for e in entries if e.get("after" + suffix + "_error")),
            "files": changed}


def strip_private(d: dict) -> dict:
    return {k: v for k, v in d.items() if not k.startswith("_")}


def detection(lib: str, info: dict, entries: list[dict], census: dict, chk: dict) -> dict:
    root = info["root"]
    findings = score.findings_in(chk.get("findings", []), root, lib)
    scored = []
    for e in entries:
        if e.get("status") != "ok":
            continue
        res = census[e["name"]]
        sc = score.score_model(findings, e["before"]["sites"], res.get("traced_lines", {}), res.get("traced_positions"))
        e["detection"] = strip_private(sc)
        e["detection"]["missed_sites"] = [{k: s.get(k) for k in ("kind", "gb_id", "file", "function", "line", "stmt")}
                                          for s in sc["_missed"]]
        e["detection"]["false_findings"] = [score._strip(f, root) for f in sc["_false"]]
        found = {S._key_of(s) for s in sc["_found"]}
        for s in e["before"]["sites"]:
            s["found"] = S._key_of(s) in found
        scored.append({"name": e["name"], "sites": e["before"]["sites"], "score": sc})
    return score.score_library(findings, scored, root)


def totals(libs: dict) -> dict:
    t = {k: 0 for k in ("models", "models_ok", "sites", "found", "true", "false", "unverified", "sites_fixed",
                        "sites_before_fixed_arm", "outputs_unequal", "sites_fixed_unsafe", "outputs_unequal_unsafe")}
    for L in libs.values():
        t["models"] += L["models"]
        t["models_ok"] += L["models_ok"]
        d = L.get("detection") or {}
        for k in ("sites", "found", "true", "false", "unverified"):
            t[k] += d.get(k) or 0
        f = L.get("fix") or {}
        t["sites_fixed"] += f.get("sites_fixed") or 0
        t["sites_before_fixed_arm"] += f.get("sites_before") or 0
        t["outputs_unequal"] += len(f.get("outputs_unequal") or [])
        u = L.get("fix_unsafe") or {}
        t["sites_fixed_unsafe"] += u.get("sites_fixed") or 0
        t["outputs_unequal_unsafe"] += len(u.get("outputs_unequal") or [])
    t["recall"] = score.ratio(t["found"], t["sites"])
    t["precision"] = score.ratio(t["true"], t["true"] + t["false"])
    return t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", help="comma-separated recipe names (bench/libs/recipes.py)")
    ap.add_argument("--libs", help=f"comma-separated libraries ({','.join(R.LIBS)})")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--census-only", action="store_true", help="phase 1 only (no graphmend): libs-census.json")
    ap.add_argument("--no-fix", action="store_true", help="skip the fixed arms (census + detection only)")
    ap.add_argument("--no-unsafe-arm", dest="unsafe_arm", action="store_false",
                    help="skip the second fixed arm (check --fix --unsafe-fixes)")
    ap.add_argument("--recensus", action="store_true", help="redo the original arm's census even when cached")
    ap.add_argument("--fullgraph", action="store_true", help="census also compiles each mode with fullgraph=True")
    ap.add_argument("--python", default=DEFAULT_PY, help="workers' interpreter (default .venv-libs/bin/python)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per worker process")
    ap.add_argument("--check-timeout", type=float, default=600, help="seconds per whole-package check")
    ap.add_argument("--work", default=DEFAULT_WORK, help="work dir: census cache, references, fixed copies")
    ap.add_argument("--out", help="results JSON (default bench/results/libs.json or libs-census.json)")
    ap.add_argument("--misses", default=DEFAULT_MISSES, help="plain-text list of missed sites and false positives "
                    "(a run with --models or --libs writes libs-misses-partial.txt)")
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    ap.add_argument("--no-doc", action="store_true")
    ap.add_argument("--report-from", metavar="JSON", help="only regenerate the misses list and the docs section from "
                    "a results JSON (with --out, write the JSON again)")
    args = ap.parse_args(argv)
    import report_libs

    if args.report_from:
        with open(args.report_from) as f:
            results = json.load(f)
        results["totals"] = totals(results["libraries"])
        write_outputs(results, args, json_path=args.out)  # --out: rewrite the JSON too (slimmed)
        return 0
    if not (os.path.isfile(args.python) and os.access(args.python, os.X_OK)):
        ap.error(f"{args.python} not found: create it with bash bench/libs/setup.sh")
    try:
        rows = R.select(args.models, args.libs)
    except ValueError as e:
        ap.error(str(e))
    libs = [lib for lib in R.LIBS if any(r.lib == lib for r in rows)]
    info = lib_info(args.python, libs)
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    binary, snap = None, None
    if not args.census_only:
        binary = HFRUN.graphmend_bin()
        if binary is None:
            log("graphmend binary not found (set GRAPHMEND_BIN or build build/graphmend): census only")
        else:
            snap = HFRUN.snapshot_binary(binary, work)
    log(f"{len(rows)} models in {', '.join(libs)}; workers under {args.python} (torch {info['torch']})")
    t0 = time.time()

    # phase 1: census (cached)
    census: dict[str, dict] = {}
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        futs = {ex.submit(census_original, r, args, work): r for r in rows}
        for fut in cf.as_completed(futs):
            census[futs[fut].name] = fut.result()
    entries = {r.name: model_entry(r, census[r.name]) for r in rows}
    log(f"census done in {time.time() - t0:.0f} s ({sum(1 for e in entries.values() if e.get('census_reused'))} reused)")

    out_libs: dict[str, dict] = {}
    for lib in libs:
        es = [entries[r.name] for r in rows if r.lib == lib]
        out_libs[lib] = {"version": info["libs"][lib]["version"], "models": len(es),
                         "models_ok": sum(1 for e in es if e.get("status") == "ok"),
                         "sites_per_model_sum": sum(len(e["before"]["sites"]) for e in es if e.get("status") == "ok"),
                         "unattributed": [u for e in es for u in e.get("unattributed", [])]}
    # phase 2: detection over each whole package
    if snap:
        for lib in libs:
            chk = check_package(snap["path"], info["libs"][lib]["root"], args.check_timeout)
            es = [entries[r.name] for r in rows if r.lib == lib]
            out_libs[lib]["check"] = {k: chk.get(k) for k in ("rc", "wall_s", "crashed", "error")}
            out_libs[lib]["check"]["findings"] = len(chk.get("findings", []))
            out_libs[lib]["detection"] = detection(lib, info["libs"][lib], es, census, chk)
            d = out_libs[lib]["detection"]
            log(f"{lib}: check {chk['wall_s']} s rc {chk['rc']}; sites {d['sites']}, found {d['found']}, "
                f"recall {score._pct(d['recall'])}, precision {score._pct(d['precision'])} "
                f"(true {d['true']}, false {d['false']}, unverified {d['unverified']})")
    # phase 3: fixed arms (safe fixes, then safe + unsafe fixes)
    if snap and not args.no_fix:
        for lib in libs:
            es = [r for r in rows if r.lib == lib and entries[r.name].get("status") == "ok"]
            fxs = {}
            for suffix in ("", "_unsafe") if args.unsafe_arm else ("",):
                fx = fix_package(snap["path"], lib, info["libs"][lib]["root"], work, args.check_timeout, suffix)
                fxs[suffix] = fx
                fx["import_check"] = import_check(args.python, lib, fx)
                log(f"{lib}: fix{suffix or ' (safe)'} {fx['wall_s']} s rc {fx['rc']}, "
                    f"{len(fx['files_changed'])} files changed; modules that no longer import: "
                    f"{sorted(fx['import_check']['broken']) or 'none'}")
                if suffix and same_files(fx, fxs[""]):
                    fx["same_as_safe"] = True  # the unsafe fixes change nothing more: the safe arm's census stands
                    for r in es:
                        e = entries[r.name]
                        for k in ("after", "outputs", "compare", "sites_fixed", "after_error"):
                            if k in e:
                                e[k + suffix] = e[k]
                else:
                    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
                        list(ex.map(lambda r: fixed_census(r, entries[r.name], fx, args, work, suffix,
                                                           touched_files(census[r.name])), es))
                f = out_libs[lib]["fix" + suffix] = fix_summary([entries[r.name] for r in rows if r.lib == lib], fx,
                                                                suffix)
                log(f"{lib}: fixed{suffix or ' (safe)'} {f['sites_fixed']} of {f['sites_before']} sites; "
                    f"outputs unequal: {f['outputs_unequal'] or 'none'}; errors: {f['after_errors'] or 'none'}")
    meta = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": common.machine(),
            "torch": info["torch"], "lib_versions": {k: v["version"] for k, v in info["libs"].items()},
            "worker_python": os.path.relpath(args.python, ROOT) if args.python.startswith(ROOT) else args.python,
            "graphmend_bin": HFRUN._shown(binary), "graphmend_sha256": snap["sha256"] if snap else None,
            "graphmend_mtime": snap["mtime"] if snap else None,
            "graphmend_version": common.tool_version([snap["path"], "--version"]) if snap else None,
            "models_requested": [r.name for r in rows], "duration_s": round(time.time() - t0, 1),
            "args": {k: v for k, v in vars(args).items() if k not in ("doc", "work", "misses", "python")}}
    results = {"meta": meta, "libraries": out_libs, "models": [entries[r.name] for r in rows]}
    results["totals"] = totals(out_libs)
    partial = bool(args.models or args.libs)
    name = ("libs-census" if not snap else "libs-detection" if args.no_fix else "libs") + ("-partial" if partial else "")
    out = args.out or os.path.join(ROOT, "bench", "results", name + ".json")
    if partial and args.misses == DEFAULT_MISSES:
        args.misses = DEFAULT_MISSES.replace(".txt", "-partial.txt")
    write_outputs(results, args, json_path=out)
    return 0


AFTER_FIELDS = ("kind", "gb_id", "file", "function", "line", "stmt", "modes", "events", "in_loop")


def slim(results: dict) -> dict:
    """Keep the results JSON small (under 1 MB): Dynamo's whole message once per distinct site (in the library's
    `detection.site_list`, cut), the models' sites with its first line only, and the fixed arms' sites without
    their stacks (the original arm's sites carry them)."""
    for L in results.get("libraries", {}).values():
        for s in (L.get("detection") or {}).get("site_list", []):
            if s.get("message"):
                s["message"] = s["message"][:700]
    for e in results.get("models", []):
        for s in (e.get("before") or {}).get("sites", []):
            s.pop("message", None)
        for k in ("after", "after_unsafe"):
            a = e.get(k)
            if a and a is not e.get("before") and a.get("sites") and "chain" in a["sites"][0]:
                a["sites"] = [{f: s.get(f) for f in AFTER_FIELDS} for s in a["sites"]]
    return results


def write_outputs(results: dict, args, json_path: str | None) -> None:
    import report_libs

    slim(results)
    if json_path:
        os.makedirs(os.path.dirname(json_path), exist_ok=True)
        with open(json_path, "w") as f:
            json.dump(results, f, indent=1)
        log(f"wrote {json_path} ({os.path.getsize(json_path) // 1024} KiB)")
    if any("detection" in L for L in results["libraries"].values()):
        with open(args.misses, "w") as f:
            f.write(score.misses_text(results))
        log(f"wrote {args.misses}")
    # the report shows whole runs only: every model, fixed arm included
    if not args.no_doc and (args.report_from or (json_path and os.path.basename(json_path) == "libs.json")):
        common.replace_section(args.doc, "libs", report_libs.markdown(results))
        log(f"updated the libs section of {args.doc}")


if __name__ == "__main__":
    sys.exit(main())
