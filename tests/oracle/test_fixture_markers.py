"""The fixtures are honest: `# expect:` lines are exactly the lines where real Dynamo breaks.

Pure torch; needs no graphmend binary. For every fixture in tests/fixtures/rules/, example() is
compiled with a counting backend and every graph-break event is attributed to its innermost frame in
the fixture file (see dynamo_breaks.py, which also cross-checks explain() and Dynamo's counters).
"""
import pytest

from dynamo_breaks import format_report
from fixture_support import EXPECTED_GB_IDS, NON_BREAK_RULES, break_markers, fixture_ids, fixture_paths, markers

PATHS = fixture_paths()


def test_fixture_directory_is_populated():
    stems = {p.stem.split("_")[0] for p in PATHS}
    missing = sorted((set(EXPECTED_GB_IDS) | NON_BREAK_RULES) - stems)
    assert not missing, f"rules without a fixture: {missing}"


@pytest.mark.parametrize("path", PATHS, ids=fixture_ids())
def test_fixture_shape(path):
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 80, f"{path.name}: keep fixtures under 80 lines"
    assert "def example():" in text, f"{path.name}: needs `def example():`"
    prefix = path.stem.split("_")[0]
    if prefix in EXPECTED_GB_IDS or prefix in NON_BREAK_RULES:
        codes = {code for _, code in markers(path)}
        assert codes <= {prefix}, f"{path.name}: markers {codes} in the fixture of {prefix}"


@pytest.mark.parametrize("path", PATHS, ids=fixture_ids())
def test_markers_equal_dynamo_breaks(path):
    from fixture_support import dynamo_report

    report = dynamo_report(path)
    detail = format_report(report)
    assert report.error is None, f"example() raised under torch.compile: {report.error!r}\n{detail}"
    foreign = report.foreign_events(str(path))
    assert not foreign, f"breaks outside the fixture file:\n{detail}"
    expected = sorted({row for row, _ in break_markers(path)})
    actual = sorted(report.lines(str(path)))
    assert actual == expected, (f"{path.name}: Dynamo breaks at lines {actual}, markers at {expected}\n"
                                f"{detail}")


@pytest.mark.parametrize("path", PATHS, ids=fixture_ids())
def test_marker_codes_match_dynamo_break_types(path):
    from fixture_support import dynamo_report

    report = dynamo_report(path)
    by_line: dict[int, set[str]] = {}
    for event in report.events:
        by_line.setdefault(event.lineno, set()).add(event.gb_id)
    for row, code in sorted(break_markers(path)):
        ids = by_line.get(row, set())
        allowed = EXPECTED_GB_IDS[code]
        assert ids and ids <= allowed, (f"{path.name}:{row}: {code} expects a break of {sorted(allowed)}, "
                                        f"Dynamo took {sorted(ids)}")
