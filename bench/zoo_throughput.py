"""Model-zoo throughput: items per minute of `graphmend validate --all` on the local pool and on a local
Ray cluster with the same number of workers, the same zoo, on this machine, each from an empty results
folder (nothing reused). The figure that matters is the ratio Ray / local pool (the cost of Ray's
scheduling and process model on top of the same items); absolute times depend on the machine.

    .venv/bin/python bench/zoo_throughput.py [--graphmend build/graphmend] [--zoo examples/zoo.toml] [--jobs 2]

Writes bench/results/zoo_throughput.json (--results) and the `zoo_throughput` section of docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from common import machine, machine_line, replace_section  # noqa: E402


def run_once(graphmend, zoo, jobs, engine, folder):
    cmd = [graphmend, "validate", "--all", "--targets", zoo, "--report", folder, "--jobs", str(jobs),
           "--python", sys.executable, "--json", "--quiet"]
    if engine == "ray":
        cmd.append("--ray")
    env = dict(os.environ, OMP_NUM_THREADS="1", TORCHINDUCTOR_COMPILE_THREADS="1")
    began = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - began
    if done.returncode not in (0, 1):
        raise SystemExit(f"zoo run on {engine} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout)
    items = report["items_done"]
    item_s = sorted(i["wall_s"] for i in report["items"])
    return {"engine": engine, "jobs": jobs, "items": items, "wall_s": round(wall, 2),
            "items_per_minute": round(60.0 * items / wall, 2),
            "item_median_s": round(item_s[len(item_s) // 2], 2) if item_s else None,
            "behaviour": [{k: v for k, v in r.items() if not k.endswith(("_s", "_speedup"))} for r in report["rows"]]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphmend", default=os.environ.get("GRAPHMEND_BIN", os.path.join(ROOT, "build", "graphmend")))
    parser.add_argument("--zoo", default=os.path.join(ROOT, "examples", "zoo.toml"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--report", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    parser.add_argument("--results", default=os.path.join(ROOT, "bench", "results", "zoo_throughput.json"))
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for engine in ("local", "ray"):
            print(f"zoo_throughput: {engine} with {args.jobs} workers ...", flush=True)
            results.append(run_once(args.graphmend, args.zoo, args.jobs, engine, os.path.join(tmp, engine)))
    local, ray = results
    same = local["behaviour"] == ray["behaviour"]
    ratio = ray["items_per_minute"] / local["items_per_minute"]
    for r in results:
        print(f"  {r['engine']:6} {r['items']} items in {r['wall_s']:.1f} s: {r['items_per_minute']:.2f} items/min "
              f"(median item {r['item_median_s']} s)")
    print(f"  ray / local pool: {ratio:.3f}x items per minute; same results: {same}")
    m = machine()
    out = {"machine": m, "zoo": os.path.relpath(args.zoo, ROOT), "jobs": args.jobs, "ratio_ray_over_local": round(ratio, 3),
           "same_results": same, "runs": [{k: v for k, v in r.items() if k != "behaviour"} for r in results]}
    os.makedirs(os.path.dirname(os.path.abspath(args.results)), exist_ok=True)
    with open(args.results, "w") as f:
        json.dump(out, f, indent=2)
    rows = "\n".join(f"| {r['engine']} | {r['jobs']} | {r['items']} | {r['wall_s']:.1f} | {r['items_per_minute']:.2f} | "
                     f"{r['item_median_s']} |" for r in results)
    body = f"""## Model zoo throughput

`graphmend validate --all --targets {out['zoo']}` ({local['items']} items, backend eager, one CPU item per
target and mode), from an empty results folder, with {args.jobs} workers: the local pool (`--jobs {args.jobs}`)
against a local Ray started for the run (`--ray --jobs {args.jobs}`), one after the other on
{machine_line(m)}.

| engine | workers | items | wall s | items / min | median item s |
|---|---|---|---|---|---|
{rows}

**Ray / local pool: {ratio:.3f}x items per minute**; identical results (every row but the timings): {same}.
Each item is a `graphmend validate` run of 3 fresh Python processes (prepare, original, fixed), so both
engines spend their time in the same children; Ray adds its start (a head, a raylet, the workers) and
task dispatch. Reproduce: `.venv/bin/python bench/zoo_throughput.py --jobs {args.jobs}`.
"""
    replace_section(args.report, "zoo_throughput", body)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
