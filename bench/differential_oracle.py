#!/usr/bin/env python
"""The differential oracle at scale: every safe fix graphmend applies, judged by tests/differential.

    .venv/bin/python bench/differential_oracle.py [--generated N] [--seed S] [--graphmend build/graphmend]
                                                  [--no-doc]

Part (a): every file of `differential.fixable_files()` (rule fixtures, transform fixtures, hazard
fixtures, examples) that a safe fix changes goes through `compare_files` (original against fixed, eager
and compiled, on the input battery). Part (b): N random forwards from tests/differential/generator.py (the
generator of test_generated.py; `random.Random(S)` picks from its catalogs), the same way. Prints per part
and in total the files/programs, how many a safe fix changed, the differential cases run, the cases that
differed (must be 0) and the wall time; every difference and every graphmend failure (crash, timeout,
unparsable output) is printed with the generated source. Writes bench/results/differential_oracle.json and
the `differential` section of docs/benchmarks.md. Torch's own log output while comparing (fake-tensor
tracebacks of inputs that raise) goes to bench/results/tmp/differential_oracle.stderr.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import os
import random
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "differential"))

import common  # noqa: E402


@dataclasses.dataclass
class Part:
    name: str
    items: int = 0
    fixed: int = 0
    cases: int = 0
    differed: int = 0  # cases that differed
    wall_s: float = 0.0
    findings: list = dataclasses.field(default_factory=list)  # differences and failures, with sources


@contextlib.contextmanager
def _output_to(path: str):
    """Send fd 2 (torch's log handlers write there, not to sys.stderr's current object) and the fixtures'
    own prints outside the comparison's transcript (`example()` runs outside it) to a file."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "a") as f:
        os.dup2(f.fileno(), 2)
        try:
            with contextlib.redirect_stdout(f):
                yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


class BinaryMissing(RuntimeError):
    pass


def _binary_ready(timeout_s: float = 600) -> None:
    """Wait while the graphmend binary is being replaced (a rebuild removes it for a while): a missing
    binary is not a graphmend failure. Gives up after timeout_s."""
    path = os.environ["GRAPHMEND_BIN"]
    deadline = time.monotonic() + timeout_s
    while not (os.path.isfile(path) and os.access(path, os.X_OK)):
        if time.monotonic() > deadline:
            raise BinaryMissing(f"{path} missing for {timeout_s:.0f} s")
        time.sleep(2)


def _retrying(fn):
    """fn(), again once the binary is back when it failed because the binary was missing or changed."""
    for attempt in range(3):
        _binary_ready()
        stamp = os.stat(os.environ["GRAPHMEND_BIN"]).st_mtime_ns
        try:
            return fn()
        except Exception:  # noqa: BLE001
            path = os.environ["GRAPHMEND_BIN"]
            replaced = not os.path.isfile(path) or os.stat(path).st_mtime_ns != stamp
            if attempt == 2 or not replaced:
                raise
            print("  (graphmend binary replaced during a run; retrying)", file=sys.__stdout__, flush=True)
            time.sleep(5)


def _failure(kind: str, label: str, detail: str, differences: list[str] | None = None) -> dict:
    return {"kind": kind, "label": label, "detail": detail, "differences": differences or []}


_DIFF_RE = re.compile(r"^(.*?), (gradients|eager|compiled): (?:(outcome|transcript|state|rng|grad_mode): )?")


def summarize_differences(differences: list[str]) -> str:
    """`observation: input, input, ...` per observation that differed (the inputs are the battery's labels)."""
    groups: dict[str, list[str]] = {}
    for d in differences:
        m = _DIFF_RE.match(d)
        if not m:
            groups.setdefault("other", []).append(d[:80])
            continue
        label, mode, what = m.groups()
        key = "gradients" if mode == "gradients" else f"{what or 'observation'} ({mode})"
        groups.setdefault(key, []).append(label)
    return "; ".join(f"{k}: {', '.join(v)}" for k, v in groups.items())


def run_files(log: str) -> Part:
    from differential import compare_files, fixable_files, graphmend_fix

    part = Part("fixture and example files")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i, path in enumerate(fixable_files()):
            part.items += 1
            label = os.path.relpath(path, ROOT)
            dest = Path(tmp) / str(i) / path.name
            dest.parent.mkdir()
            try:
                changed = _retrying(lambda: graphmend_fix(path, dest))
            except BinaryMissing:
                raise
            except Exception as exc:  # noqa: BLE001 - a graphmend failure is a finding
                part.findings.append(_failure("graphmend failure", label, f"{type(exc).__name__}: {exc}"))
                continue
            if not changed:
                continue
            part.fixed += 1
            try:
                with _output_to(log):
                    result = compare_files(path, dest)
            except Exception:  # noqa: BLE001
                part.findings.append(_failure("comparison error", label, traceback.format_exc(limit=5)))
                continue
            part.cases += result.cases
            part.differed += len(result.differences)
            if result.differences:
                part.findings.append(_failure("difference", label, "\n".join(result.differences[:10]) +
                                              "\n--- fixed file:\n" + dest.read_text(encoding="utf-8"),
                                              result.differences))
    part.wall_s = time.perf_counter() - t0
    return part


def run_generated(n: int, seed: int, log: str) -> Part:
    from generator import GraphmendFailure, check, random_program

    part = Part("generated forwards")
    rng = random.Random(seed)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            if i and i % 50 == 0:
                print(f"  generated {i}/{n}: {part.fixed} fixed, {part.differed} differing cases "
                      f"({time.perf_counter() - t0:.0f} s)", flush=True)
            program = random_program(rng)
            part.items += 1
            try:
                with _output_to(log):
                    res = _retrying(lambda: check(program, Path(tmp) / str(i)))
            except BinaryMissing:
                raise
            except GraphmendFailure as exc:
                part.findings.append(_failure("graphmend failure", f"#{i} {program.label}", str(exc)))
                continue
            except Exception:  # noqa: BLE001
                part.findings.append(_failure("comparison error", f"#{i} {program.label}",
                                              traceback.format_exc(limit=5) + "\n--- generated file:\n" +
                                              program.source))
                continue
            if not res.changed:
                continue
            part.fixed += 1
            part.cases += res.cases
            part.differed += len(res.differences)
            if res.differences:
                part.findings.append(_failure("difference", f"#{i} {program.label}", res.report(),
                                              res.differences))
    part.wall_s = time.perf_counter() - t0
    return part


def table(parts: list[Part]) -> list[str]:
    total = Part("total", sum(p.items for p in parts), sum(p.fixed for p in parts), sum(p.cases for p in parts),
                 sum(p.differed for p in parts), sum(p.wall_s for p in parts),
                 [f for p in parts for f in p.findings])
    lines = ["| part | files / programs | changed by a safe fix | differential cases | cases that differed | "
             "graphmend failures | oracle errors | wall |", "|---|---|---|---|---|---|---|---|"]
    for p in parts + [total]:
        crashes = sum(1 for f in p.findings if f["kind"] == "graphmend failure")
        errors = sum(1 for f in p.findings if f["kind"] == "comparison error")
        name = f"**{p.name}**" if p is total else p.name
        lines.append(f"| {name} | {p.items} | {p.fixed} | {p.cases} | {p.differed} | {crashes} | {errors} | "
                     f"{p.wall_s:.1f} s |")
    return lines


def markdown(meta: dict, parts: list[Part]) -> str:
    findings = [f for p in parts for f in p.findings]
    lines = [
        "## Differential oracle: safe fixes against every observation",
        "",
        f"Measured {meta['date']} on {common.machine_line(meta['machine'])}, CPU only, torch {meta['torch']}, "
        f"Python {meta['machine']['python']}; `{meta['graphmend_version']}`; load average {meta['load'][0]:.1f} at the "
        f"start, {meta['load'][1]:.1f} at the end (wall times are one sequential process). Regenerate: "
        f"`{meta['command']}`; data: `bench/results/differential_oracle.json`.",
        "",
        "Each file a safe fix (`graphmend check --fix`) changes is run, original and fixed, by "
        "`tests/differential/differential.py`'s `compare_files`: eagerly and under `torch.compile` (backend "
        f"{meta.get('backend', 'eager')}), on the example's inputs and the battery (other branches, NaN, inf, "
        "zeros, empty, bool, int64, float16, non-contiguous, and the file's `inputs()`), comparing outcome or "
        "exception, "
        "transcript, module state, RNG state and gradients; a case is one (input, mode) pair or one "
        "input's gradients. Part (a): the files of `differential.fixable_files()` (rule, transform and "
        "hazard fixtures, examples). Part (b): random forwards from `tests/differential/generator.py` (the "
        f"generator of `test_generated.py`), `random.Random({meta['seed']})`, {meta['generated']} programs.",
        "",
        *table(parts),
        "",
    ]
    if not findings:
        lines.append("No case differed and graphmend never failed.")
    else:
        lines.append(f"{len(findings)} finding(s): the observations that differed and on which inputs (the "
                     "battery's labels); the differences and both sources are in the JSON and the printed report.")
        lines.append("")
        for f in findings[:30]:
            if f["kind"] == "difference":
                n = len(f["differences"])
                what = f"{n} case{'s' if n != 1 else ''}; {summarize_differences(f['differences'])}"
            else:
                what = f["detail"].splitlines()[0][:200]
            lines.append(f"- {f['kind']}: `{f['label']}`: {what}")
        if len(findings) > 30:
            lines.append(f"- ... and {len(findings) - 30} more")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--generated", type=int, default=300, help="random forwards to generate (default 300)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--graphmend", default=os.environ.get("GRAPHMEND_BIN", os.path.join(ROOT, "build", "graphmend")))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "differential_oracle.json"))
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args(argv)
    if not (os.path.isfile(args.graphmend) and os.access(args.graphmend, os.X_OK)):
        print(f"differential_oracle: {args.graphmend} is not an executable", file=sys.stderr)
        return 2
    os.environ["GRAPHMEND_BIN"] = os.path.abspath(args.graphmend)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch

    log = os.path.join(ROOT, "bench", "results", "tmp", "differential_oracle.stderr")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    open(log, "w").close()
    command = ".venv/bin/python bench/differential_oracle.py" + (
        f" --generated {args.generated}" if args.generated != 300 else "") + (
        f" --seed {args.seed}" if args.seed != 0 else "")
    t0 = time.perf_counter()
    load_start = os.getloadavg()[0]
    try:
        print("== (a) fixture and example files", flush=True)
        files = run_files(log)
        print(f"== (b) {args.generated} generated forwards (seed {args.seed})", flush=True)
        generated = run_generated(args.generated, args.seed, log)
    except BinaryMissing as exc:
        print(f"differential_oracle: {exc}; nothing written", file=sys.stderr)
        return 2
    parts = [files, generated]
    meta = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": common.machine(),
            "torch": torch.__version__, "graphmend_version": common.tool_version([args.graphmend, "--version"]),
            "generated": args.generated, "seed": args.seed, "command": command,
            "wall_s": time.perf_counter() - t0, "load": [load_start, os.getloadavg()[0]],
            "backend": getattr(sys.modules.get("differential"), "BACKEND", "eager")}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "parts": [dataclasses.asdict(p) for p in parts]}, f, indent=1)
    text = markdown(meta, parts)
    if not args.no_doc:
        common.replace_section(args.doc, "differential", text)
    print()
    print("\n".join(table(parts)))
    for p in parts:
        for finding in p.findings:
            print(f"\n== {finding['kind']} ({p.name}): {finding['label']}\n{finding['detail']}")
    print(f"\ntotal wall {meta['wall_s']:.1f} s; torch log output in {os.path.relpath(log, ROOT)}")
    return 1 if any(p.findings for p in parts) else 0


if __name__ == "__main__":
    sys.exit(main())
