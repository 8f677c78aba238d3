"""`python -m graphmend_validator zoo run|merge ...`: what `graphmend validate --all` and
`graphmend validate merge` run (the C++ command parses the manifest and execs this).

Exit status: 0 every item validated; 1 a fixed arm's outputs differ, or with --baseline the gate
found a regression; 2 an item failed (user code, environment, a lost worker) or did not finish; 3
usage, manifest or results-folder error; 130 interrupted. With --baseline the gate alone decides 0
or 1: a row the baseline already records as failing may go on failing.
"""

import argparse
import importlib.metadata
import json
import os
import shutil
import signal
import sys
import time

from graphmend_validator.zoo import baseline as gate
from graphmend_validator.zoo import plan as planning
from graphmend_validator.zoo import report as reporting
from graphmend_validator.zoo.local_engine import LocalEngine
from graphmend_validator.zoo.progress import ProgressBar
from graphmend_validator.zoo.ray_engine import RayEngine, RayUnavailable
from graphmend_validator.zoo.store import ResultsFolder, StoreError, write_atomic, write_json

EXIT_OK, EXIT_FINDINGS, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class UsageError(Exception):
    pass


def _say(quiet, message):
    if not quiet:
        print(f"graphmend validate: {message}", file=sys.stderr, flush=True)


def _count(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def _torch_version():
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def _exit_code(report, gate_result):
    if gate_result is not None:
        return EXIT_FINDINGS if gate_result[0] else EXIT_OK
    statuses = report["summary"]["by_status"]
    if report["missing"] or any(statuses.get(s) for s in ("error", "environment", "lost")):
        return EXIT_FAILED
    if statuses.get("outputs_differ"):
        return EXIT_FINDINGS
    return EXIT_OK


# Where the report goes: the process's stdout as it was at start. Everything else written to fd 1
# while the run lasts (Ray's raylet messages, user code's prints) is sent to stderr, so that `--json`
# output is one JSON document.
_REPORT_STREAM = sys.stdout


def _keep_stdout_for_the_report():
    global _REPORT_STREAM
    sys.stdout.flush()
    _REPORT_STREAM = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)


def _print_summary(report, header, folder, gate_result, as_json, quiet):
    if as_json:
        print(json.dumps(report, indent=2, sort_keys=True, allow_nan=False, default=str), file=_REPORT_STREAM,
              flush=True)
    else:
        s = report["summary"]
        o, f = s["original"], s["fixed"]
        lines = [header, f"{'':28}{'original':>10}{'fixed':>10}"]
        for label, key in ((f"graph breaks ({s['totals_over']} items)", "graph_breaks"), ("one graph in default mode", "one_graph_default"),
                           ("fullgraph=True compiles", "fullgraph_compiles"), ("accuracy pass", "pass")):
            if key == "graph_breaks":
                lines.append(f"{label:28}{o[key]:>10}{f[key]:>10}")
            else:
                lines.append(f"{label:28}{str(o[key]) + '/' + str(o['rows']):>10}{str(f[key]) + '/' + str(f['rows']):>10}")
        for item in report["items"]:
            if item["status"] != "ok":
                lines.append(f"not ok: {item['id']}: {item['status']}" + (f": {item['message']}" if item["message"] else ""))
        if report["missing"]:
            lines.append(f"missing ({len(report['missing'])}): {', '.join(report['missing'])}")
        if report["pending_gpu"]:
            lines.append(f"need a GPU, not run here ({len(report['pending_gpu'])}): run them with --need gpu on a "
                         f"machine with one, then merge")
        for problem in report["problems"]:
            lines.append(f"warning: {problem}")
        if gate_result is not None:
            regressions, improvements = gate_result
            for line in regressions:
                lines.append(f"regression: {line}")
            for line in improvements:
                lines.append(f"improved: {line} (record it with --update-baseline)")
            lines.append(f"baseline: {len(regressions)} regression{'s' if len(regressions) != 1 else ''}")
        lines.append(f"report: {os.path.join(folder, 'report.html')}")
        print("\n".join(lines), file=_REPORT_STREAM, flush=True)


def _apply_baseline(args, report, planned_ids, quiet):
    if args.update_baseline:
        write_atomic(args.update_baseline, gate.baseline_text(report["rows"]))
        _say(quiet, f"baseline written: {args.update_baseline} ({len(report['rows'])} rows)")
    if args.baseline:
        return gate.compare(gate.read(args.baseline), report["rows"], set(planned_ids))
    return None


def _item_reports(folder, ids):
    return {f"runs/{i}/report.html" for i in ids if os.path.isfile(os.path.join(folder, "runs", i, "report.html"))}


def command_run(args):
    quiet = args.quiet
    try:
        with open(args.manifest, encoding="utf-8") as handle:
            manifest = json.load(handle)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the manifest {args.manifest}: {exc}") from exc
    environment = {"graphmend": planning.file_digest(args.graphmend), "torch": _torch_version()}
    everything = planning.expand(manifest, environment)
    if not everything:
        raise UsageError(f"the manifest {manifest.get('source')} names no targets")
    plan_digest = planning.digest(everything)
    selected = everything
    shard_text = None
    if args.shard:
        index, count = planning.parse_shard(args.shard)
        selected = planning.shard(selected, index, count)
        shard_text = f"{index}/{count}"
    selected = planning.select_need(selected, args.need)

    folder = ResultsFolder(args.report)
    folder.lock()
    try:
        records, problems = folder.records()
        reused, to_run = [], []
        for item in selected:
            (reused if folder.reusable(item, records) else to_run).append(item)

        engine = _engine(args)
        if hasattr(engine, "connect"):
            try:
                resources = engine.connect()
            except RayUnavailable as exc:
                raise UsageError(str(exc)) from exc
            except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError... for a bad address
                raise UsageError(f"cannot start or join Ray ({args.ray}): {type(exc).__name__}: {exc}") from exc
            _say(quiet, f"Ray cluster: {resources.get('CPU', 0):g} CPUs, {resources.get('GPU', 0):g} GPUs")
        pending_gpu = []
        if any(i["need"] == "gpu" for i in to_run) and not engine.gpus():
            pending_gpu = [i["id"] for i in to_run if i["need"] == "gpu"]
            to_run = [i for i in to_run if i["need"] != "gpu"]
        write_json(os.path.join(folder.path, "plan.json"), {
            "format": reporting.FORMAT, "plan_digest": plan_digest, "manifest": manifest.get("source"),
            "shard": shard_text, "need": args.need, "environment": environment,
            "all_items": [{"id": i["id"], "key": i["key"], "need": i["need"]} for i in everything],
            "items": selected, "pending_gpu": pending_gpu})
        bar = ProgressBar(len(selected) - len(pending_gpu), len(reused), quiet=quiet)
        unit = "worker" if engine.name == "ray" else "job"
        where = f"{engine.name} ({args.jobs} {unit}{'s' if args.jobs != 1 else ''})"
        if engine.name == "ray" and args.ray != "local":
            where = f"the Ray cluster at {args.ray}"
        bar.start(f"{_count(len(selected), 'item')}{' of shard ' + shard_text if shard_text else ''}: {len(reused)} done "
                  f"before, {len(to_run)} to run on {where}" + (f", {len(pending_gpu)} need a GPU" if pending_gpu else ""))
        began = time.monotonic()

        def on_done(record, files):
            folder.save(record, files)
            bar.item_done(record)

        try:
            engine.run(to_run, on_done)
        finally:
            bar.close()
            if hasattr(engine, "close"):
                engine.close()

        records, more_problems = folder.records()
        keys = {i["id"]: i["key"] for i in selected}
        final = [r for r in records.values() if keys.get(r["id"]) == r.get("key")]
        report = reporting.merged(final, list(keys), plan_digest, problems + more_problems, pending_gpu)
        report["shard"] = shard_text
        report["engine"] = engine.name
        reporting.write(folder.path, report, _item_reports(folder.path, keys))
        gate_result = _apply_baseline(args, report, list(keys), quiet)
        header = (f"zoo: {_count(len({i['name'] for i in selected}), 'target')}, {_count(len(selected), 'item')} "
                  f"({len(to_run)} run, {len(reused)} reused) in {time.monotonic() - began:.0f} s on {where}")
        _print_summary(report, header, folder.path, gate_result, args.json, quiet)
        return _exit_code(report, gate_result)
    finally:
        folder.unlock()


def _engine(args):
    if args.ray:
        try:
            return RayEngine(args.graphmend, args.python, args.ray, args.jobs, args.retries)
        except RayUnavailable as exc:
            raise UsageError(str(exc)) from exc
    threads = max(1, (os.cpu_count() or 1) // max(1, args.jobs))
    return LocalEngine(args.graphmend, args.python, args.jobs, args.retries, threads)


def command_merge(args):
    quiet = args.quiet
    plans = []
    for path in args.folders:
        try:
            with open(os.path.join(path, "plan.json"), encoding="utf-8") as handle:
                plans.append((path, json.load(handle)))
        except (OSError, ValueError) as exc:
            raise UsageError(f"{path} is not a graphmend zoo results folder (plan.json: {exc})") from exc
    digests = {p["plan_digest"] for _, p in plans}
    if len(digests) != 1:
        listing = "; ".join(f"{path}: {p['plan_digest']}" for path, p in plans)
        raise UsageError(f"the folders come from different plans (manifest, sources, graphmend or torch differ): {listing}")
    plan_digest = digests.pop()
    needs = {p["need"] for _, p in plans}
    all_items = plans[0][1]["all_items"]
    keys = {i["id"]: i["key"] for i in all_items}
    planned = [i["id"] for i in all_items if "all" in needs or i["need"] in needs]
    chosen, origin, problems = {}, {}, []
    for path, _ in plans:
        records, bad = ResultsFolder(path).records()
        problems += bad
        for record in records.values():
            if keys.get(record["id"]) != record.get("key") or record["id"] not in planned:
                continue
            if record["id"] in chosen:
                keep_new = record.get("finished", 0) > chosen[record["id"]].get("finished", 0)
                problems.append(f"item {record['id']} is in {origin[record['id']]} and {path}: kept the one from "
                                f"{path if keep_new else origin[record['id']]} (finished later), counted once")
                if not keep_new:
                    continue
            chosen[record["id"]] = record
            origin[record["id"]] = path
    out = os.path.abspath(args.report)
    os.makedirs(out, exist_ok=True)
    for item_id, path in origin.items():
        source = os.path.join(os.path.abspath(path), "runs", item_id)
        target = os.path.join(out, "runs", item_id)
        if os.path.isdir(source) and os.path.abspath(source) != target:
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target)
    pending_gpu = sorted({i for _, p in plans for i in p.get("pending_gpu", [])} - set(chosen))
    report = reporting.merged(list(chosen.values()), planned, plan_digest, problems, pending_gpu)
    report["merged_from"] = [os.path.abspath(p) for p, _ in plans]
    reporting.write(out, report, _item_reports(out, chosen))
    gate_result = _apply_baseline(args, report, planned, quiet)
    header = f"zoo: merged {len(plans)} folders: {len(chosen)} of {len(planned)} items"
    _print_summary(report, header, out, gate_result, args.json, quiet)
    return _exit_code(report, gate_result)


def default_jobs():
    """One item per core, at most one per 4 GiB of memory (an inductor arm can take 2-3 GiB)."""
    try:
        memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    except (ValueError, OSError, AttributeError):
        memory_gib = 8
    return max(1, min(os.cpu_count() or 1, int(memory_gib // 4)))


def parser():
    top = argparse.ArgumentParser(prog="python -m graphmend_validator zoo")
    sub = top.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a manifest's items (graphmend validate --all)")
    run.add_argument("--manifest", required=True, help="the manifest as JSON (written by graphmend validate --all)")
    run.add_argument("--graphmend", required=True, help="the graphmend executable each item runs")
    run.add_argument("--report", required=True, help="results folder (resumable)")
    run.add_argument("--python", default=None, help="interpreter with torch for the items")
    run.add_argument("--shard", default=None)
    run.add_argument("--need", default="all", choices=["all", "cpu", "gpu"])
    run.add_argument("--jobs", type=int, default=default_jobs())
    run.add_argument("--ray", default=None)
    run.add_argument("--retries", type=int, default=1)
    merge = sub.add_parser("merge", help="join results folders (shards) into one report")
    merge.add_argument("folders", nargs="+")
    merge.add_argument("--report", required=True)
    for p in (run, merge):
        p.add_argument("--baseline", default=None)
        p.add_argument("--update-baseline", default=None)
        p.add_argument("--json", action="store_true")
        p.add_argument("--quiet", action="store_true")
    return top


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv):
    args = parser().parse_args(argv)
    # SIGTERM (a CI runner's cancel, the scheduler's preemption) ends the run like Ctrl-C: finished
    # items are already on disk; running ones are stopped and redone next time.
    signal.signal(signal.SIGTERM, _interrupt)
    _keep_stdout_for_the_report()
    try:
        return command_run(args) if args.command == "run" else command_merge(args)
    except (UsageError, planning.PlanError, StoreError, gate.BaselineError) as exc:
        print(f"graphmend validate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("graphmend validate: interrupted; finished items are kept, rerun to continue", file=sys.stderr)
        return EXIT_INTERRUPTED
