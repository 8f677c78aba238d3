#!/usr/bin/env python3
"""Writes the README's rule table from the rules' metadata (`graphmend rule --all --output-format json`).

The table lies between `<!-- rules:begin -->` and `<!-- rules:end -->`: one row per family, in the order of
their first code, each rule linked to its page in docs/rules/ with its summary. `make docs` runs this after
`graphmend rule --write-docs docs/rules`; `--check` fails (exit 1) when the README is not what this writes,
which tests/cli/test_rule_completeness.py checks.

usage: generate-rule-table.py [--check] [--graphmend BIN] [--readme README.md]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "<!-- rules:begin -->"
END = "<!-- rules:end -->"


def rule_table(rules: list[dict]) -> str:
    families: dict[str, list[dict]] = {}
    for rule in sorted(rules, key=lambda r: r["code"]):
        families.setdefault(rule["family"], []).append(rule)
    rows = ["| family | rules |", "|---|---|"]
    for family, members in families.items():
        notes = []
        if all(r["opt_in"] for r in members):
            notes.append("opt-in")
        if not any(r["dynamo_registry_id"] for r in members):
            notes.append("no graph break")
        label = family + (f" ({', '.join(notes)})" if notes else "")
        cells = "; ".join(f"[{r['code']}](docs/rules/{r['code']}.md) {r['summary']}" for r in members)
        rows.append(f"| {label} | {cells} |")
    return "\n".join(rows)


def with_table(readme: str, table: str, where: Path) -> str:
    if readme.count(BEGIN) != 1 or readme.count(END) != 1 or readme.index(BEGIN) > readme.index(END):
        raise SystemExit(f"{where}: expected one {BEGIN} ... {END} block")
    head, rest = readme.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{table}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the README's table is out of date")
    parser.add_argument("--graphmend", default=os.environ.get("GRAPHMEND_BIN", str(ROOT / "build" / "graphmend")))
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    args = parser.parse_args()
    listed = subprocess.run([args.graphmend, "rule", "--all", "--output-format", "json"], check=True,
                            capture_output=True, text=True)
    table = rule_table(json.loads(listed.stdout))
    readme = args.readme.read_text(encoding="utf-8")
    updated = with_table(readme, table, args.readme)
    if args.check:
        if updated != readme:
            print(f"{args.readme}: the rule table is out of date; run `make docs`", file=sys.stderr)
            return 1
        return 0
    if updated != readme:
        args.readme.write_text(updated, encoding="utf-8")
        print(f"wrote the rule table of {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
