"""The baseline gate: compare a run with a committed CSV (the zoo.csv shape; PyTorch's
`name,accuracy,graph_breaks` columns are the ones it needs) and say what regressed.

A row is keyed by (name, mode, need, arm); a CSV with only PyTorch's three columns is read as the
fixed arm's eval CPU rows. Regressions, each failing the gate:
  - accuracy was `pass` and is not;
  - more graph breaks than the baseline;
  - one graph in default mode (or `fullgraph=True` compiling) was true and is not;
  - a baseline row whose item this run planned has no result.
Improvements (fewer breaks, a failing row now passing) are listed, and pass: `--update-baseline`
records them. Rows of items outside this run (another shard, a `--need` left out) are not judged.
"""

import csv
import io

from graphmend_validator.zoo.plan import safe_name
from graphmend_validator.zoo.report import CSV_COLUMNS, TIMING_COLUMNS, csv_text


class BaselineError(Exception):
    pass


def _key(row):
    return (row["name"], row.get("mode") or "eval", row.get("need") or "cpu", row.get("arm") or "fixed")


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _bool(value):
    return {"true": True, "false": False}.get(str(value).strip().lower())


def read(path):
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            text = handle.read()
    except OSError as exc:
        raise BaselineError(f"cannot read the baseline {path}: {exc.strerror}") from exc
    reader = csv.DictReader(io.StringIO(text))
    missing = {"name", "accuracy", "graph_breaks"} - set(reader.fieldnames or [])
    if missing:
        raise BaselineError(f"{path}:1: the baseline needs the columns name, accuracy, graph_breaks "
                            f"(missing: {', '.join(sorted(missing))})")
    rows = {}
    for line, row in enumerate(reader, start=2):
        key = _key(row)
        if key in rows:
            raise BaselineError(f"{path}:{line}: a second row for {'/'.join(key)}")
        rows[key] = row
    return rows


def compare(baseline, rows, planned_items):
    """(regressions, improvements), lists of strings. `planned_items`: the ids this run planned."""
    now = {_key(r): r for r in rows}
    regressions, improvements = [], []
    for key, old in sorted(baseline.items()):
        name, mode, need, arm = key
        where = f"{name} [{mode}, {need}, {arm}]"
        new = now.get(key)
        if new is None:
            if f"{safe_name(name)}.{mode}.{need}" in planned_items:
                regressions.append(f"{where}: no result (the item did not finish)")
            continue
        old_acc, new_acc = old["accuracy"], new["accuracy"]
        if old_acc == "pass" and new_acc != "pass":
            regressions.append(f"{where}: accuracy pass -> {new_acc}")
        elif old_acc != "pass" and new_acc == "pass":
            improvements.append(f"{where}: accuracy {old_acc} -> pass")
        old_breaks, new_breaks = _int(old.get("graph_breaks")), new.get("graph_breaks")
        if old_breaks is not None and new_breaks is not None:
            if new_breaks > old_breaks:
                regressions.append(f"{where}: graph breaks {old_breaks} -> {new_breaks}")
            elif new_breaks < old_breaks:
                improvements.append(f"{where}: graph breaks {old_breaks} -> {new_breaks}")
        for column, words in (("one_graph", "one graph in default mode"), ("fullgraph", "fullgraph=True compiles")):
            was = _bool(old.get(column))
            if was is True and new.get(column) is not True:
                regressions.append(f"{where}: {words} no longer")
            elif was is False and new.get(column) is True:
                improvements.append(f"{where}: {words} now")
    return regressions, improvements


def baseline_text(rows):
    """The baseline to commit: zoo.csv's rows without the timing columns (they vary run to run)."""
    return csv_text(rows, [c for c in CSV_COLUMNS if c not in TIMING_COLUMNS])
