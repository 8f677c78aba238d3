#!/usr/bin/env python
"""`graphmend check` against `ruff check` on every modeling_*.py of the installed transformers.

    .venv/bin/python bench/check_speed.py [--graphmend build/graphmend] [--ruff .venv/bin/ruff] [--reps 5]

Both tools get the same file list in the same run, alternately: cold (no cache: `--no-cache` for
both) and warm (each tool's cache primed by one run over the unchanged files, in a temporary
`--cache-dir` of its own), JSON output to a pipe that is read and discarded. Each invocation runs under a small wrapper
process whose RUSAGE_CHILDREN peak RSS is the tool's own. Reports the median wall time with its
range, files/s, MB/s, peak memory and the wall-time ratio; writes bench/results/check_speed.json and
the `check-speed` section of docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import common  # noqa: E402

# Runs one command, discards its stdout, prints {"wall_s", "maxrss_kb", "rc", "out_bytes"} as JSON.
WRAPPER = r"""
import json, resource, subprocess, sys, time
cmd = json.loads(sys.argv[1])
t0 = time.perf_counter()
p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall_s": wall, "maxrss_kb": ru.ru_maxrss, "rc": p.returncode, "out_bytes": len(p.stdout),
                  "user_s": ru.ru_utime, "sys_s": ru.ru_stime, "stdout": p.stdout.decode("utf-8", "replace")
                  if len(p.stdout) < 50_000_000 else "", "stderr": p.stderr.decode("utf-8", "replace")[-2000:]}))
"""


def _name(program: str) -> str:
    return os.path.basename(program)


def measure(cmd: list[str], env: dict | None = None) -> dict:
    p = subprocess.run([sys.executable, "-c", WRAPPER, json.dumps(cmd)], capture_output=True, text=True,
                       env=env, check=True)
    return json.loads(p.stdout)


def transformers_files() -> tuple[str, list[str]]:
    out = subprocess.run([sys.executable, "-c", "import transformers, os; print(os.path.dirname(transformers.__file__))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    files = sorted(glob.glob(os.path.join(out, "**", "modeling_*.py"), recursive=True))
    return out, files


def count_findings(stdout: str) -> int | None:
    try:
        data = json.loads(stdout) if stdout.strip() else []
    except json.JSONDecodeError:
        return None
    return len(data) if isinstance(data, list) else None


PHASE_RE = re.compile(r"^  (\w+) +([0-9.]+) s +([0-9.]+)% +(\d+) entries$", re.M)


def phases(stderr: str) -> dict:
    """`graphmend check --timings`' table: phase -> {cpu_s, share, entries}."""
    return {m[1]: {"cpu_s": float(m[2]), "share": float(m[3]) / 100, "entries": int(m[4])}
            for m in PHASE_RE.finditer(stderr)}


def summarize(runs: list[dict], n_files: int, n_bytes: int) -> dict:
    walls = [r["wall_s"] for r in runs]
    med = statistics.median(walls)
    return {"wall_median_s": med, "wall_min_s": min(walls), "wall_max_s": max(walls),
            "cpu_median_s": statistics.median(r["user_s"] + r["sys_s"] for r in runs),
            "files_per_s": n_files / med, "mb_per_s": n_bytes / 2**20 / med,
            "peak_rss_mb": max(r["maxrss_kb"] for r in runs) / 1024.0, "rc": runs[-1]["rc"],
            "findings": count_findings(runs[-1].get("stdout", ""))}


ROWS = (("graphmend check, cold", "graphmend"), ("ruff check, cold", "ruff"),
        ("graphmend check, warm cache", "graphmend_warm"), ("ruff check, warm cache", "ruff_warm"))


def markdown(res: dict) -> str:
    m = res["meta"]
    lines = [
        "## `graphmend check` speed against `ruff check`",
        "",
        f"Measured {m['date']} on {common.machine_line(m['machine'])}. Input: every `modeling_*.py` of the "
        f"installed transformers {m['transformers']} ({m['files']} files, {m['bytes'] / 2**20:.1f} MB). "
        f"Same file list for both tools, alternated, {m['reps']} runs each after one warm-up run. *Cold*: no cache "
        f"(`--no-cache` for both; ruff also `--isolated`). *Warm*: each tool's own cache (`--cache-dir`, a fresh "
        f"temporary folder per tool) primed by the warm-up run over the same unchanged files. JSON output to a "
        f"pipe. Peak memory is the tool process's max RSS (`getrusage(RUSAGE_CHILDREN)` in a wrapper per run). "
        f"`{m['graphmend_version'] or m['graphmend_cmd'][0]}` vs `{m['ruff_version']}`. "
        f"Regenerate: `.venv/bin/python bench/check_speed.py`; data: `bench/results/check_speed.json`.",
        "",
        "| tool | wall (median, range) | CPU time | files/s | MB/s | peak RSS | findings | exit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, key in ROWS:
        if key not in res:
            continue
        s = res[key]
        lines.append(f"| {name} | {s['wall_median_s']:.3f} s ({s['wall_min_s']:.3f}-{s['wall_max_s']:.3f}) | "
                     f"{s['cpu_median_s']:.3f} s | {s['files_per_s']:.0f} | {s['mb_per_s']:.1f} | "
                     f"{s['peak_rss_mb']:.0f} MB | {s['findings'] if s['findings'] is not None else '?'} | {s['rc']} |")
    lines += ["", f"Wall-time ratio graphmend / ruff, cold: **{res['ratio_wall']:.2f}** "
              f"(CPU-time ratio {res['ratio_cpu']:.2f}; peak-memory ratio {res['ratio_rss']:.2f})."]
    if "ratio_wall_warm" in res:
        lines[-1] += (f" Warm cache: **{res['ratio_wall_warm']:.2f}** (graphmend warm / ruff warm); graphmend's warm "
                      f"run takes {res['warm_over_cold']:.1%} of its cold run, and "
                      f"{res['graphmend_warm']['wall_median_s'] / res['ruff']['wall_median_s']:.2f}x ruff's cold run.")
    lines[-1] += (" ruff runs its default rule set (pyflakes and pycodestyle errors), graphmend its graph-break "
                  "rules; both parse every file on a cold run. ruff uses all cores; graphmend as configured by its "
                  "defaults.")
    if res.get("phases"):
        ph = res["phases"]
        total = sum(v["cpu_s"] for v in ph["by_phase"].values())
        lines += ["", f"Where graphmend's cold time goes (`graphmend check --timings`, the cold command with `-j1`, median "
                  f"of {ph['reps']} runs by total; CPU seconds of each phase alone, a parse or analysis inside the fix "
                  f"loop counted as parse or semantic), next to ruff's whole cold run:", "",
                  "| phase | CPU time | share | entries | / ruff's cold wall time |", "|---|---|---|---|---|"]
        for name, v in ph["by_phase"].items():
            lines.append(f"| {name} | {v['cpu_s']:.3f} s | {v['share']:.1%} | {v['entries']} | "
                         f"{v['cpu_s'] / res['ruff']['wall_median_s']:.2f}x |")
        lines.append(f"| **total** | {total:.3f} s | | | {total / res['ruff']['wall_median_s']:.2f}x |")
        parse = ph["by_phase"].get("parse", {}).get("cpu_s", 0.0)
        ratio = parse / res["ruff"]["wall_median_s"]
        lines += ["", f"Parsing alone (tree-sitter, every file once) takes {ratio:.1f}x ruff's whole cold run"
                  + (": with this parser a cold run cannot match ruff's time on this machine; the warm cache is the "
                     "fast path." if ratio > 1 else ".")]
    if res.get("graphmend_errors"):
        lines += ["", f"graphmend stderr (last run): `{res['graphmend_errors'][:300]}`"]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphmend", default=os.environ.get("GRAPHMEND_BIN", os.path.join(ROOT, "build", "graphmend")))
    ap.add_argument("--ruff", default=os.path.join(ROOT, ".venv", "bin", "ruff"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "check_speed.json"))
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    ap.add_argument("--no-doc", action="store_true")
    ap.add_argument("--files", help="a glob of files to check instead of transformers' modeling_*.py")
    args = ap.parse_args(argv)
    for tool in (args.graphmend, args.ruff):
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            print(f"check_speed: {tool} is not an executable", file=sys.stderr)
            return 2
    if args.files:
        files = sorted(glob.glob(args.files, recursive=True))
        version = ""
    else:
        _, files = transformers_files()
        version = subprocess.run([sys.executable, "-c", "import transformers; print(transformers.__version__)"],
                                 capture_output=True, text=True).stdout.strip()
    if not files:
        print("check_speed: no files", file=sys.stderr)
        return 2
    n_bytes = sum(os.path.getsize(f) for f in files)
    cache_root = tempfile.mkdtemp(prefix="check-speed-")
    gcmd = [args.graphmend, "check", "--no-cache", "--exit-zero", "--output-format", "json", *files]
    rcmd = [args.ruff, "check", "--no-cache", "--isolated", "--exit-zero", "--output-format", "json", *files]
    gwarm = [args.graphmend, "check", "--cache-dir", os.path.join(cache_root, "graphmend"), "--exit-zero",
             "--output-format", "json", *files]
    rwarm = [args.ruff, "check", "--cache-dir", os.path.join(cache_root, "ruff"), "--isolated", "--exit-zero",
             "--output-format", "json", *files]
    commands = {"graphmend": gcmd, "ruff": rcmd, "graphmend_warm": gwarm, "ruff_warm": rwarm}
    runs: dict[str, list[dict]] = {k: [] for k in commands}
    try:
        for cmd in commands.values():
            measure(cmd)  # warm-up: the page cache for all, and each warm run's cache
        for i in range(args.reps):
            order = list(commands) if i % 2 == 0 else list(reversed(commands))
            for key in order:
                runs[key].append(measure(commands[key]))
    finally:
        shutil.rmtree(cache_root, ignore_errors=True)
    # Where the time goes: the cold command with --timings, single-threaded so that CPU adds up to wall.
    timed = [measure([gcmd[0], "check", "--timings", "-j1", *gcmd[2:]]) for _ in range(3)]
    timed = [phases(t["stderr"]) for t in timed]
    timed.sort(key=lambda t: sum(v["cpu_s"] for v in t.values()))
    phase_table = {"reps": len(timed), "by_phase": timed[len(timed) // 2]} if timed and timed[0] else None
    summary = {k: summarize(v, len(files), n_bytes) for k, v in runs.items()}
    g, r = summary["graphmend"], summary["ruff"]
    gr = runs["graphmend"]
    res = {"meta": {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                    "machine": common.machine(), "transformers": version, "files": len(files), "bytes": n_bytes,
                    # programs by name only: the results say nothing about this machine's paths
                    "reps": args.reps, "graphmend_cmd": [_name(gcmd[0]), *gcmd[1:6], "FILES"],
                    "ruff_cmd": [_name(rcmd[0]), *rcmd[1:7], "FILES"],
                    "graphmend_warm_cmd": [_name(gwarm[0]), *gwarm[1:3], "TMP", *gwarm[4:7], "FILES"],
                    "ruff_warm_cmd": [_name(rwarm[0]), *rwarm[1:3], "TMP", *rwarm[4:8], "FILES"],
                    "graphmend_version": common.tool_version([args.graphmend, "--version"]),
                    "ruff_version": common.tool_version([args.ruff, "--version"])},
           **summary,
           "ratio_wall": g["wall_median_s"] / r["wall_median_s"],
           "ratio_cpu": g["cpu_median_s"] / max(r["cpu_median_s"], 1e-9),
           "ratio_rss": g["peak_rss_mb"] / max(r["peak_rss_mb"], 1e-9),
           "ratio_wall_warm": summary["graphmend_warm"]["wall_median_s"] / summary["ruff_warm"]["wall_median_s"],
           "warm_over_cold": summary["graphmend_warm"]["wall_median_s"] / g["wall_median_s"],
           "phases": phase_table,
           "graphmend_errors": gr[-1]["stderr"].strip() if gr[-1]["rc"] != 0 else ""}
    if summary["graphmend_warm"]["findings"] != g["findings"]:
        print(f"check_speed: the warm run reported {summary['graphmend_warm']['findings']} findings, the cold run "
              f"{g['findings']}", file=sys.stderr)
        return 1
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    text = markdown(res)
    if not args.no_doc:
        common.replace_section(args.doc, "check-speed", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
