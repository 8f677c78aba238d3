"""What GM301's fixes can do for the runtime guards of a package: each finding by the fix graphmend offers.

    GRAPHMEND_BIN=build/graphmend python bench/guard_fixes.py PATH [PATH ...]

raise-in-graph: the guard's test goes to a custom operator that raises the original exception inside the
graph (unsafe: state written earlier in the graph is not written back on aot_eager); graph-native: the
`torch._assert_async` fallback (unsafe: RuntimeError under compile); none: refused, with the reason.
Reads only what `graphmend check --output-format json` says; nothing is run.
"""
import argparse
import collections
import json
import os
import subprocess
import sys


def classify(finding):
    title = (finding.get("fix") or {}).get("message", "")
    if title.startswith("Raise `"):
        return "raise-in-graph"
    if title.startswith("Keep the guard in the graph with torch._assert_async"):
        return "graph-native"
    return "none: " + (finding["graphmend"].get("no_fix_reason") or "")[:100]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    binary = os.environ.get("GRAPHMEND_BIN", "build/graphmend")
    for path in args.paths:
        done = subprocess.run([binary, "check", "--exit-zero", "--select", "GM301", "--output-format", "json", path],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"{path}: graphmend exited {done.returncode}: {done.stderr.strip()}", file=sys.stderr)
            return 2
        findings = json.loads(done.stdout)
        kinds = collections.Counter(classify(f) for f in findings)
        print(f"{path}: {len(findings)} GM301 findings")
        for kind, count in kinds.most_common():
            print(f"  {count:4d}  {kind}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
