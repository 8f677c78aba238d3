#!/usr/bin/env python
"""Peak memory of `graphmend check` (and `--fix`) against `ruff check` on one large generated file.

    .venv/bin/python bench/memory.py [--graphmend build/graphmend] [--ruff .venv/bin/ruff] [--size-mb 28]
                                     [--source PATH] [--json OUT]

The input repeats a real modeling file (default: the installed transformers' modeling_llama.py, else
the largest example) until it reaches --size-mb, so its content is realistic: classes, forwards, graph
breaks. Each tool runs once per mode under a wrapper process whose RUSAGE_CHILDREN peak RSS is the tool's
own; `--fix` runs on a fresh copy. Prints peak RSS, wall time and the ratio to ruff.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Runs one command, discards its output, prints {"wall_s", "maxrss_kb", "rc"} as JSON.
WRAPPER = r"""
import json, resource, subprocess, sys, time
cmd = json.loads(sys.argv[1])
t0 = time.perf_counter()
p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall_s": wall, "maxrss_kb": ru.ru_maxrss, "rc": p.returncode,
                  "stderr": p.stderr.decode("utf-8", "replace")[-500:]}))
"""


def measure(cmd: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-c", WRAPPER, json.dumps(cmd)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def default_source() -> str:
    found = glob.glob(os.path.join(sys.prefix, "lib", "python*", "site-packages", "transformers", "models", "llama",
                                   "modeling_llama.py"))
    if found:
        return found[0]
    examples = sorted(glob.glob(os.path.join(ROOT, "examples", "*.py")), key=os.path.getsize)
    if not examples:
        sys.exit("bench/memory.py: no source file found: pass --source")
    return examples[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphmend", default=os.environ.get("GRAPHMEND_BIN", os.path.join(ROOT, "build", "graphmend")))
    ap.add_argument("--ruff", default=os.path.join(ROOT, ".venv", "bin", "ruff"))
    ap.add_argument("--size-mb", type=float, default=28.0)
    ap.add_argument("--source", default=None, help="the file to repeat")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()

    source = args.source or default_source()
    text = open(source, encoding="utf-8").read()
    if not text.endswith("\n"):
        text += "\n"
    copies = max(1, int(args.size_mb * 1e6 // len(text.encode("utf-8"))) + 1)
    work = tempfile.mkdtemp(prefix="graphmend-memory-")
    try:
        big = os.path.join(work, "big.py")
        with open(big, "w", encoding="utf-8") as f:
            f.write(text * copies)
        size = os.path.getsize(big)
        fix_copy = os.path.join(work, "big_fix.py")
        shutil.copyfile(big, fix_copy)
        runs = {
            "graphmend check": [args.graphmend, "check", "--no-config", "--exit-zero", "--output-format", "json", big],
            "graphmend check --fix": [args.graphmend, "check", "--no-config", "--exit-zero", "--fix", fix_copy],
            "ruff check": [args.ruff, "check", "--no-cache", "--isolated", "--exit-zero", "--output-format", "json",
                           big],
        }
        results = {name: measure(cmd) for name, cmd in runs.items()}
    finally:
        shutil.rmtree(work, ignore_errors=True)

    ruff_kb = results["ruff check"]["maxrss_kb"]
    print(f"input: {copies} copies of {os.path.relpath(source)} = {size / 1e6:.1f} MB")
    print(f"{'command':<24} {'peak RSS':>10} {'x source':>9} {'vs ruff':>8} {'wall':>8}  rc")
    for name, r in results.items():
        mb = r["maxrss_kb"] / 1024
        print(f"{name:<24} {mb:>7.0f} MiB {r['maxrss_kb'] * 1024 / size:>8.1f}x {r['maxrss_kb'] / ruff_kb:>7.2f}x "
              f"{r['wall_s']:>7.1f}s  {r['rc']}")
        if r["rc"] not in (0,):
            print(f"  stderr: {r['stderr'].strip()}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"source": source, "copies": copies, "bytes": size, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
