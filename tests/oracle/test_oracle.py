"""graphmend check against real Dynamo, fixture by fixture.

For every fixture: `$GRAPHMEND_BIN check --output-format json --exit-zero --extend-select GM001 FIXTURE`
(default build/graphmend under the repo root) must report exactly the `# expect:` (row, code) pairs, and
the set of rows of its graph-break findings (all but NON_BREAK_RULES') must equal the lines where torch
2.13 Dynamo breaks when running example().
A missing binary is a failure, not a skip.
"""
import json

import pytest

from fixture_support import (CHECK_ARGS, NON_BREAK_RULES, dynamo_report, fixture_ids, fixture_paths, markers,
                             run_graphmend)

PATHS = fixture_paths()


def _check_json(path):
    proc = run_graphmend("check", "--output-format", "json", "--exit-zero", *CHECK_ARGS, str(path))
    assert proc.returncode == 0, (f"graphmend check --exit-zero exited {proc.returncode} on {path.name}\n"
                                  f"stderr:\n{proc.stderr}")
    try:
        findings = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"graphmend printed invalid JSON for {path.name}: {exc}\n{proc.stdout[:2000]}")
    assert isinstance(findings, list), f"JSON output must be a list (ruff's shape), got {type(findings)}"
    return findings


def _validate_shape(finding, path):
    for key in ("code", "message", "filename", "location", "end_location", "fix", "url", "noqa_row"):
        assert key in finding, f"{path.name}: finding lacks {key!r}: {finding}"
    assert isinstance(finding["code"], str) and finding["code"].startswith("GM"), finding
    assert isinstance(finding["message"], str) and finding["message"].strip(), finding
    for key in ("location", "end_location"):
        loc = finding[key]
        assert isinstance(loc.get("row"), int) and loc["row"] >= 1, f"{key} rows are 1-based: {finding}"
        assert isinstance(loc.get("column"), int) and loc["column"] >= 1, f"{key} columns are 1-based: {finding}"
    start, end = finding["location"], finding["end_location"]
    assert (end["row"], end["column"]) >= (start["row"], start["column"]), f"range ends before it starts: {finding}"
    fix = finding["fix"]
    if fix is not None:
        assert fix.get("applicability") in ("safe", "unsafe"), fix
        assert isinstance(fix.get("edits"), list) and fix["edits"], fix
        for edit in fix["edits"]:
            assert {"content", "location", "end_location"} <= edit.keys(), edit


@pytest.mark.parametrize("path", PATHS, ids=fixture_ids())
def test_check_reports_exactly_the_markers(path):
    findings = _check_json(path)
    for finding in findings:
        _validate_shape(finding, path)
        assert finding["filename"].endswith(path.name), f"finding for another file: {finding['filename']}"
    reported = sorted({(f["location"]["row"], f["code"]) for f in findings})
    expected = sorted(markers(path))
    assert reported == expected, (
        f"{path.name}: graphmend reported {reported}, fixture expects {expected}\n"
        f"missing: {sorted(set(expected) - set(reported))}\nextra: {sorted(set(reported) - set(expected))}")


@pytest.mark.parametrize("path", PATHS, ids=fixture_ids())
def test_locations_point_into_the_source(path):
    """Rows/columns are 1-based and count characters (code points, as ruff does): the start points
    at the first character of the flagged code, the end stays within its line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for finding in _check_json(path):
        row, col = finding["location"]["row"], finding["location"]["column"]
        end_row, end_col = finding["end_location"]["row"], finding["end_location"]["column"]
        assert 1 <= row <= len(lines) and 1 <= end_row <= len(lines), finding
        line = lines[row - 1]
        assert col <= len(line), f"{path.name}:{row}: column {col} beyond the line ({len(line)} chars)"
        if finding["code"] == "GM001":  # a rule about comments: at its directive's `#`
            assert line[col - 1] == "#", f"{path.name}:{row}:{col}: finding starts at {line[col - 1:col + 10]!r}"
        else:
            assert not line[col - 1].isspace() and line[col - 1] != "#", (
                f"{path.name}:{row}:{col}: finding starts at {line[col - 1:col + 10]!r}")
        assert end_col <= len(lines[end_row - 1]) + 1, f"{path.name}: end {end_row}:{end_col} beyond its line"


@pytest.mark.parametrize("path", PATHS, ids=fixture_ids())
def test_check_rows_equal_dynamo_break_lines(path):
    findings = _check_json(path)
    rows = sorted({f["location"]["row"] for f in findings if f["code"] not in NON_BREAK_RULES})
    report = dynamo_report(path)
    assert report.error is None, f"example() raised under torch.compile: {report.error!r}"
    lines = sorted(report.lines(str(path)))
    assert rows == lines, (f"{path.name}: graphmend rows {rows}, Dynamo breaks at {lines}\n"
                           f"false positives: {sorted(set(rows) - set(lines))}\n"
                           f"missed breaks: {sorted(set(lines) - set(rows))}")


# The rules whose findings name the id of the release (docs/torch-versions.md), or one id per kind of site
# (GM614: the branch, the arithmetic, the conversion...): it must be Dynamo's at the line.
VERSIONED_IDS = {"GM602", "GM603", "GM609", "GM614", "GM615"}


@pytest.mark.parametrize("path", PATHS, ids=fixture_ids())
def test_registry_ids_are_those_of_the_running_torch(path):
    """Each finding names the break id the running torch gives it (`--torch-version` of this torch): the ids of
    a few breaks moved between releases (`time.time()` is GB0007 before 2.15 and GB9193 from it)."""
    from fixture_support import EXPECTED_GB_IDS, TORCH_RELEASE, dynamo_report

    report = dynamo_report(path)
    by_line: dict[int, set[str]] = {}
    for event in report.events:
        by_line.setdefault(event.lineno, set()).add(event.gb_id)
    for finding in _check_json(path):
        ids = by_line.get(finding["location"]["row"])
        if finding["code"] in NON_BREAK_RULES or not ids:
            continue
        assert finding["graphmend"]["torch_version"] == "{}.{}".format(*TORCH_RELEASE), finding["graphmend"]
        named = finding["graphmend"]["dynamo_registry_id"]
        if finding["code"] not in VERSIONED_IDS:
            # One id per rule: Dynamo may file the same construct under a sibling id (GM101: GB0170, GB0124).
            assert named in EXPECTED_GB_IDS[finding["code"]], finding
            continue
        assert named in ids, (
            f"{path.name}:{finding['location']['row']}: {finding['code']} names "
            f"{finding['graphmend']['dynamo_registry_id']}, Dynamo took {sorted(ids)}")
