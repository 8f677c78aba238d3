"""The merged view of item records: rows per (target, mode, need, arm), a summary, zoo.json, zoo.csv
(PyTorch's `name,accuracy,graph_breaks` shape plus graphmend's columns) and report.html.

"One graph in default mode" (no break, one graph under plain torch.compile) and "fullgraph=True
compiles" are separate columns and totals: from torch 2.13, fullgraph turns on scalar and
dynamic-shape capture, so `.item()` or `nonzero` compile there but still break in default mode.
"""

import csv
import html
import io
import os
import time

from graphmend_validator.zoo.store import write_atomic, write_json

FORMAT = "graphmend-zoo/1"
# The columns that describe behaviour, not speed: equal across engines, shards and machines.
CSV_COLUMNS = ["name", "accuracy", "graph_breaks", "mode", "need", "arm", "status", "graphs", "break_sites",
               "one_graph", "fullgraph", "outputs_match", "fixes_applied", "cold_start_s", "steady_state_s",
               "cold_start_speedup", "steady_state_speedup", "target"]
TIMING_COLUMNS = ("cold_start_s", "steady_state_s", "cold_start_speedup", "steady_state_speedup")


def accuracy(record, arm):
    """PyTorch's accuracy words for one arm: pass, fail_accuracy, fail_to_run, eager_fail_to_run,
    model_fail_to_load, timeout; `not_run` for an arm that never started (an earlier arm failed)."""
    status = record["status"]
    result = record.get("result") or {}
    if status in ("ok", "outputs_differ", "not_deployable"):
        section = result.get(arm)
        if not section:
            return "not_run"
        compiled_ok = section.get("compiled_matches_eager") is not False
        if arm == "fixed" and result.get("outputs_match") is False:
            return "fail_accuracy"
        return "pass" if compiled_ok else "fail_accuracy"
    error = result.get("error") if isinstance(result, dict) else None
    if not isinstance(error, dict):
        return "fail_to_run"
    kind, failed_arm = error.get("kind"), error.get("arm")
    if kind in ("bad_target", "bad_factory"):
        return "model_fail_to_load"
    if failed_arm == "prepare":
        return "eager_fail_to_run"
    if failed_arm == arm:
        return "timeout" if kind == "timeout" else "fail_to_run"
    partial = result.get("partial") or {}
    if arm in partial:
        return "pass" if partial[arm].get("compiled_matches_eager") is not False else "fail_accuracy"
    return "not_run"


def rows_of(record):
    result = record.get("result") or {}
    item = record["item"]
    arms = ["original"] + (["fixed"] if item["fixed"] != "none" else [])
    rows = []
    for arm in arms:
        section = result.get(arm) or (result.get("partial") or {}).get(arm) or {}
        breaks = section.get("graph_break_count")
        graphs = section.get("graph_count")
        row = {
            "id": record["id"], "name": item["name"], "target": item.get("label", item["target"]), "mode": item["mode"], "need": item["need"], "arm": arm,
            "status": record["status"], "accuracy": accuracy(record, arm),
            "graph_breaks": breaks, "graphs": graphs, "break_sites": section.get("break_sites"),
            "one_graph": (breaks == 0 and graphs == 1) if breaks is not None and graphs is not None else None,
            "fullgraph": section.get("fullgraph"),
            "outputs_match": result.get("outputs_match") if arm == "fixed" else None,
            "fixes_applied": result.get("fixes_applied") if arm == "fixed" else None,
            "cold_start_s": section.get("cold_start_s"), "steady_state_s": section.get("steady_state_s"),
            "cold_start_speedup": result.get("cold_start_speedup") if arm == "fixed" else None,
            "steady_state_speedup": result.get("steady_state_speedup") if arm == "fixed" else None,
        }
        rows.append(row)
    return rows


def summarize(rows, records):
    # Totals over the CPU items (one per target and mode); a GPU-only run (--need gpu) over its own.
    need = "cpu" if any(r["need"] == "cpu" for r in rows) or not rows else "gpu"

    def arm_totals(arm):
        mine = [r for r in rows if r["arm"] == arm and r["need"] == need]
        counted = [r for r in mine if r["graph_breaks"] is not None]
        return {"rows": len(mine), "pass": sum(r["accuracy"] == "pass" for r in mine),
                "graph_breaks": sum(r["graph_breaks"] for r in counted),
                "one_graph_default": sum(bool(r["one_graph"]) for r in mine),
                "fullgraph_compiles": sum(r["fullgraph"] is True for r in mine)}

    statuses = {}
    for record in records:
        statuses[record["status"]] = statuses.get(record["status"], 0) + 1
    return {"items": len(records), "by_status": dict(sorted(statuses.items())), "totals_over": need,
            "original": arm_totals("original"), "fixed": arm_totals("fixed")}


def merged(records, planned, plan_digest, problems=(), pending_gpu=()):
    """The zoo report object from final records of one plan (`planned`: the plan's item ids)."""
    records = sorted(records, key=lambda r: r["id"])
    rows = [row for record in records for row in rows_of(record)]
    done = {r["id"] for r in records}
    return {
        "format": FORMAT,
        "plan_digest": plan_digest,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "items_planned": len(planned),
        "items_done": len(done),
        "missing": sorted(set(planned) - done - set(pending_gpu)),
        "pending_gpu": sorted(pending_gpu),
        "problems": list(problems),
        "summary": summarize(rows, records),
        "rows": rows,
        "items": [{"id": r["id"], "status": r["status"], "exit_code": r.get("exit_code"), "engine": r.get("engine"),
                   "host": r.get("host"), "attempts": r.get("attempts"), "wall_s": r.get("wall_s"),
                   "message": r.get("message"), "report": f"runs/{r['id']}/report.html"} for r in records],
    }


def csv_text(rows, columns=CSV_COLUMNS):
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_cell(row.get(k)) for k in columns})
    return out.getvalue()


def csv_cell(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    return value


def write(folder, report, item_reports=None):
    """zoo.json, zoo.csv and report.html in `folder` (each atomically)."""
    write_json(os.path.join(folder, "zoo.json"), report)
    write_atomic(os.path.join(folder, "zoo.csv"), csv_text(report["rows"]))
    write_atomic(os.path.join(folder, "report.html"), html_page(report, item_reports or set()))


def html_page(report, item_reports):
    s = report["summary"]
    o, f = s["original"], s["fixed"]

    def cell(value):
        text = "" if value is None else ("yes" if value is True else "no" if value is False else
                                        f"{value:.3g}" if isinstance(value, float) else str(value))
        return f"<td>{html.escape(text)}</td>"

    lines = [
        "<!doctype html><html><head><meta charset='utf-8'><title>graphmend zoo</title><style>",
        "body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}",
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}th{background:#f3f3f3}",
        ".pass{color:#176317}.fail{color:#a01010;font-weight:600}</style></head><body>",
        "<h1>graphmend validate: model zoo</h1>",
        f"<p>{report['items_done']} of {report['items_planned']} items; plan {html.escape(report['plan_digest'])}; "
        f"created {html.escape(report['created'])}.</p>",
        "<table><tr><th></th><th>original</th><th>fixed</th></tr>",
        f"<tr><td>graph breaks ({s['totals_over'].upper()} items)</td><td>{o['graph_breaks']}</td><td>{f['graph_breaks']}</td></tr>",
        f"<tr><td>one graph in default mode</td><td>{o['one_graph_default']} / {o['rows']}</td>"
        f"<td>{f['one_graph_default']} / {f['rows']}</td></tr>",
        f"<tr><td><code>fullgraph=True</code> compiles</td><td>{o['fullgraph_compiles']} / {o['rows']}</td>"
        f"<td>{f['fullgraph_compiles']} / {f['rows']}</td></tr>",
        f"<tr><td>accuracy pass</td><td>{o['pass']} / {o['rows']}</td><td>{f['pass']} / {f['rows']}</td></tr>",
        "</table>",
    ]
    for title, ids in (("Missing items", report["missing"]), ("Items that need a GPU, not run", report["pending_gpu"])):
        if ids:
            lines.append(f"<h2>{title}</h2><p>{html.escape(', '.join(ids))}</p>")
    lines.append("<h2>Targets</h2><table><tr>" + "".join(
        f"<th>{c}</th>" for c in ("name", "mode", "need", "arm", "accuracy", "graph breaks", "graphs", "one graph",
                                  "fullgraph", "outputs match", "cold start s", "steady state s", "report")) + "</tr>")
    for row in report["rows"]:
        css = "pass" if row["accuracy"] == "pass" else "fail"
        page = f"runs/{row['id']}/report.html"
        link = f"<a href='{html.escape(page)}'>item</a>" if page in item_reports else ""
        lines.append("<tr>" + cell(row["name"]) + cell(row["mode"]) + cell(row["need"]) + cell(row["arm"]) +
                     f"<td class='{css}'>{html.escape(row['accuracy'])}</td>" + cell(row["graph_breaks"]) +
                     cell(row["graphs"]) + cell(row["one_graph"]) + cell(row["fullgraph"]) +
                     cell(row["outputs_match"]) + cell(row["cold_start_s"]) + cell(row["steady_state_s"]) +
                     f"<td>{link}</td></tr>")
    lines.append("</table></body></html>")
    return "\n".join(lines) + "\n"
