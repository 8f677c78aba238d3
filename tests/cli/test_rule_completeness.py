"""Every rule is whole: one source file, fixtures and (when fixable) transforms with snapshot cases, all
under the rule's own name, and a row in the README's table (generated from the metadata). Read from the rule metadata
(`graphmend rule --all --output-format json`), so a new rule that misses one of them fails here."""
import json
import re
import subprocess
import sys

import pytest

from cli_support import BIN, ROOT

# GM001's fix (dropping unused codes from a noqa comment) is made by the noqa module, not a transform.
FIXED_OUTSIDE_TRANSFORMS = {"GM001"}


@pytest.fixture(scope="module")
def rules():
    out = subprocess.run([BIN, "rule", "--all", "--output-format", "json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def stem(rule):
    return f"{rule['code']}_{rule['name'].replace('-', '_')}"


def test_each_rule_has_one_source_file_named_after_it(rules):
    for rule in rules:
        sources = sorted(p.name for p in (ROOT / "analysis" / "rules").glob(f"{rule['code']}_*.cpp"))
        assert sources == [stem(rule) + ".cpp"], (rule["code"], sources)


def test_each_rule_has_a_fixture_named_after_it(rules):
    fixtures = ROOT / "tests" / "fixtures" / "rules"
    for rule in rules:
        assert (fixtures / (stem(rule) + ".py")).is_file(), f"{rule['code']}: no tests/fixtures/rules/{stem(rule)}.py"
        others = [p.name for p in fixtures.glob(f"{rule['code']}_*.py") if not p.name.startswith(stem(rule))]
        assert not others, f"{rule['code']}: fixtures not named after the rule: {others}"


def test_each_fixable_rule_has_transforms_with_snapshot_cases(rules):
    cases = ROOT / "tests" / "fixtures" / "transforms"
    transforms = set()
    for rule in rules:
        if rule["fixable"] and rule["code"] not in FIXED_OUTSIDE_TRANSFORMS:
            assert rule["transforms"], f"{rule['code']} is fixable but no transform names it"
        if not rule["fixable"]:
            assert not rule["transforms"], f"{rule['code']} has transforms but says it is not fixable"
        transforms.update(rule["transforms"])
    for name in sorted(transforms):
        folder = cases / name.replace("-", "_")
        assert any(p for p in folder.glob("*.py") if not p.name.endswith(".expected.py")), (
            f"transform {name}: no snapshot case in tests/fixtures/transforms/{folder.name}/")


def test_the_readme_table_lists_each_rule_in_its_family(rules):
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("| family | rules |"):].split("\n\n")[0]
    rows = dict(re.findall(r"^\| ([A-Za-z -]+?)(?: \([^)]*\))? \| (.+) \|$", table, re.M))
    for rule in rules:
        assert rule["family"] in rows, f"README: no row for the family {rule['family']!r}"
    listed = {code: family for family, text in rows.items() for code in re.findall(r"\bGM\d{3}\b", text)}
    assert listed == {rule["code"]: rule["family"] for rule in rules}


def test_the_readme_table_is_the_one_generated_from_the_metadata():
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "generate-rule-table.py"), "--check",
                            "--graphmend", str(BIN)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_the_table_generator_notices_a_stale_table(tmp_path):
    readme = tmp_path / "README.md"
    text = (ROOT / "README.md").read_text()
    begin = text.index("<!-- rules:begin -->")
    readme.write_text(text[:begin] + text[begin:].replace("| side effects |", "| side effect |", 1))
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "generate-rule-table.py"), "--check",
                            "--graphmend", str(BIN), "--readme", str(readme)], capture_output=True, text=True)
    assert check.returncode == 1 and "out of date" in check.stderr
    fixed = subprocess.run([sys.executable, str(ROOT / "scripts" / "generate-rule-table.py"),
                            "--graphmend", str(BIN), "--readme", str(readme)], capture_output=True, text=True)
    assert fixed.returncode == 0 and readme.read_text() == text
