#!/usr/bin/env python
"""Time of `graphmend check` and `check --fix` on pathological but valid Python, against `ruff check`.

    .venv/bin/python bench/pathological.py [--graphmend build/graphmend] [--ruff .venv/bin/ruff] [--json OUT]

Generated inputs, each a compiled `forward` (so graphmend analyses it as traced code): long if/elif
chains on a tensor's value, long `and` chains, long `+` chains. Each tool runs each input 3 times; the
median wall time is printed with the ratio to ruff (ruff parses and lints the same file). Writes the
`pathological` section of docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import common  # noqa: E402

HEADER = "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"


def elif_chain(n: int) -> str:
    body = "        s = x.float().sum()\n        if s > 0:\n            y = s * 0\n"
    body += "".join(f"        elif s > {i}:\n            y = s * {i}\n" for i in range(1, n))
    return HEADER + body + "        else:\n            y = s + 1\n        return y\n"


def and_chain(n: int) -> str:
    return HEADER + "        return " + " and ".join(["x"] * n) + "\n"


def plus_chain(n: int) -> str:
    return HEADER + "        return " + " + ".join(["x"] * n) + "\n"


INPUTS = [
    ("if/elif chain, 500 tests", lambda: elif_chain(500)),
    ("if/elif chain, 5,000 tests", lambda: elif_chain(5000)),
    ("`and` chain, 1,200 terms", lambda: and_chain(1200)),
    ("`and` chain, 20,000 terms", lambda: and_chain(20000)),
    ("`+` chain, 18,000 terms", lambda: plus_chain(18000)),
]


def timed(cmd: list[str], reps: int = 3) -> tuple[float, int]:
    walls, rc = [], 0
    for _ in range(reps):
        t0 = time.perf_counter()
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600).returncode
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls), rc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphmend", default=os.environ.get("GRAPHMEND_BIN", os.path.join(ROOT, "build", "graphmend")))
    ap.add_argument("--ruff", default=shutil.which("ruff", path=os.path.join(ROOT, ".venv", "bin")) or "ruff")
    ap.add_argument("--json", default=os.path.join(ROOT, "bench", "results", "pathological.json"))
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, make in INPUTS:
            path = os.path.join(tmp, "m.py")
            text = make()
            with open(path, "w") as f:
                f.write(text)
            check, check_rc = timed([args.graphmend, "check", "--no-config", "--exit-zero", path])
            fix_s = []
            for _ in range(3):
                with open(path, "w") as f:
                    f.write(text)
                t0 = time.perf_counter()
                subprocess.run([args.graphmend, "check", "--no-config", "--exit-zero", "--fix", path],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
                fix_s.append(time.perf_counter() - t0)
            with open(path, "w") as f:
                f.write(text)
            ruff, _ = timed([args.ruff, "check", "--no-cache", "--isolated", "--exit-zero", path])
            row = {"input": label, "bytes": len(text), "check_s": check, "check_rc": check_rc,
                   "fix_s": statistics.median(fix_s), "ruff_s": ruff, "ratio": check / ruff if ruff else None}
            rows.append(row)
            print(f"{label:32} {len(text):>9} B  check {check:7.3f} s  fix {row['fix_s']:7.3f} s  "
                  f"ruff {ruff:6.3f} s  check/ruff {row['ratio']:.2f}x", flush=True)
    meta = {"machine": common.machine(), "graphmend": common.tool_version([args.graphmend, "--version"]),
            "ruff": common.tool_version([args.ruff, "--version"])}
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    if not args.no_doc:
        lines = ["## Pathological inputs: time against `ruff check`", "",
                 f"Measured on {common.machine_line(meta['machine'])}; `{meta['graphmend']}` vs `{meta['ruff']}`, "
                 "median of 3 runs each, exit status ignored. Regenerate: `.venv/bin/python bench/pathological.py`; "
                 "data: `bench/results/pathological.json`. Every input is valid Python (CPython compiles it) in a "
                 "compiled `forward`. Before the elif fix (binary of 2cce631): 3.3 s for 500 tests and over 100 s "
                 "for 5,000, each elif finding computing the whole chain's fix.", "",
                 "| input | size | `check` | `check --fix` | `ruff check` | check / ruff |", "|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['input']} | {r['bytes']:,} B | {r['check_s']:.3f} s | {r['fix_s']:.3f} s | "
                         f"{r['ruff_s']:.3f} s | {r['ratio']:.2f}x |")
        common.replace_section(os.path.join(ROOT, "docs", "benchmarks.md"), "pathological", "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
