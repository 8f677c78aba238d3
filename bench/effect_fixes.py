"""What the runtime-effect fixes can do for a package: each guard (GM301) and logging (GM202) finding by the
fix graphmend offers.

    GRAPHMEND_BIN=build/graphmend python bench/effect_fixes.py [--select GM301,GM202] PATH [PATH ...]

GM301, raise-in-graph: the guard's test goes to a custom operator that raises the original exception inside
the graph (safe: it breaks before the operator where the graph wrote state earlier); graph-native: the
`torch._assert_async` fallback (unsafe: RuntimeError under compile).
GM202, log-in-graph: a custom operator emits the same record inside the graph (unsafe: a graph that fails
loses the record); deferred: run after the
graph through reorderable_logging_functions (safe, torch.compile entry only); skip while compiling: unsafe.
none: refused, with the reason. Reads only what `graphmend check --output-format json` says; nothing is run.
"""
import argparse
import collections
import json
import os
import subprocess
import sys

# (rule, start of the fix's title) -> the fix's name, as docs/fix-safety.md calls it.
KINDS = [
    ("GM301", "Raise `", "raise-in-graph"),
    ("GM301", "Keep the guard in the graph with torch._assert_async", "graph-native"),
    ("GM202", "Emit the `", "log-in-graph"),
    ("GM202", "Run `", "deferred"),
    ("GM202", "Skip `", "skip while compiling"),
]


def classify(finding):
    fix = finding.get("fix") or {}
    title = fix.get("message", "")
    for rule, start, kind in KINDS:
        if finding["code"] == rule and title.startswith(start):
            return kind
    if fix:
        return "other: " + " ".join(title.split())[:100]
    return "none: " + " ".join((finding["graphmend"].get("no_fix_reason") or "").split())[:100]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--select", default="GM301,GM202", help="rules to count (default: GM301,GM202)")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    binary = os.environ.get("GRAPHMEND_BIN", "build/graphmend")
    rules = [r for r in args.select.split(",") if r]
    for path in args.paths:
        done = subprocess.run([binary, "check", "--exit-zero", "--select", ",".join(rules), "--output-format", "json",
                               path], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"{path}: graphmend exited {done.returncode}: {done.stderr.strip()}", file=sys.stderr)
            return 2
        findings = json.loads(done.stdout)
        for rule in rules:
            mine = [f for f in findings if f["code"] == rule]
            kinds = collections.Counter(classify(f) for f in mine)
            print(f"{path}: {len(mine)} {rule} findings")
            for kind, count in kinds.most_common():
                print(f"  {count:4d}  {kind}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
