"""Detection only, against a kept census: recall and precision of the current binary on the original arm that
`run.py --census-only --work DIR` (or any run with `--work DIR`) left in DIR, without running a fixed arm.

    .venv/bin/python bench/hf/run.py --census-only --work /tmp/hfwork --jobs 1      # once (~15-30 min)
    .venv/bin/python bench/hf/rescore.py --work /tmp/hfwork [--corpus paper-4.52.4]  # seconds per binary

Prints one JSON line: sites found and missed, true/false/unverified findings, recall, precision, and the
missed sites and false findings (model, file, line). The scoring is run.py's (sites.score_detection).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True, help="the work dir of a census run")
    ap.add_argument("--corpus", default="default", help="the corpus the census ran (its transformers is scored)")
    ap.add_argument("--binary", default=os.environ.get("GRAPHMEND_BIN", "build/graphmend"))
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("hf_run", os.path.join(HERE, "run.py"))
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    corpus = run.corpora.CORPORA[args.corpus]
    root = run.tf_root() if args.corpus == "default" else run.tf_info(run.worker_python(corpus, None))["root"]
    total = {"found": 0, "missed": 0, "true": 0, "false": 0, "unverified": 0, "missed_sites": [], "false_findings": []}
    for name in sorted(os.listdir(args.work)):
        path = os.path.join(args.work, name, "before.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            before = json.load(f)
        if before.get("status") != "ok":
            continue
        summary = run.summarize_arm(before)
        if not summary["sites"]:
            continue
        files = run.files_for(before, summary, root)
        det = run.graphmend_check(args.binary, [os.path.join(root, f) for f in files], fix=False)
        if "findings" not in det:
            print(f"{name}: check failed: {det.get('error')}", file=sys.stderr)
            return 2
        findings = []
        for finding in det["findings"]:
            rel = run.S.package_relpath(finding.get("filename", ""), (root,))
            if rel is not None:
                findings.append(dict(finding, _rel=rel))
        traced = {k: set(v) for k, v in before.get("traced_lines", {}).items()}
        positions = ({k: {tuple(p) for p in v} for k, v in before["traced_positions"].items()}
                     if "traced_positions" in before else None)
        score = run.S.score_detection(findings, summary["sites"], traced, positions)
        total["found"] += len(score["found"])
        total["missed"] += len(score["missed"])
        total["true"] += len(score["true_findings"])
        total["false"] += len(score["false_findings"])
        total["unverified"] += len(score["unverified_findings"])
        total["missed_sites"] += [[name, s["file"], s["line"]] for s in score["missed"]]
        total["false_findings"] += [[name, f["_rel"], f["location"]["row"], f["code"]] for f in score["false_findings"]]
    sites = total["found"] + total["missed"]
    total["recall"] = round(100 * total["found"] / sites, 1) if sites else None
    judged = total["true"] + total["false"]
    total["precision"] = round(100 * total["true"] / judged, 1) if judged else None
    print(json.dumps(total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
