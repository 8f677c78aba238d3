"""`graphmend check`'s options as a ruff user relies on them: repeated options, usage errors with a
suggestion, colour, report destinations, quiet modes, fix listings and exit codes, CI formats."""
import json
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

from cli_support import BIN, BREAKING

TWO_RULES = BREAKING  # GM101 (if on a tensor) and GM201 (print)


def run(*args, env=None, cwd=None):
    import os

    full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    full_env.update(env or {})
    return subprocess.run([BIN, *map(str, args)], capture_output=True, env=full_env, cwd=cwd, timeout=120)


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(TWO_RULES)
    return path


def codes(proc):
    return sorted(item["code"] for item in json.loads(proc.stdout))


def test_repeated_select_adds_up(model):
    assert codes(run("check", "--no-cache", "--output-format", "json", "--select", "GM1", model)) == ["GM101"]
    both = run("check", "--no-cache", "--output-format", "json", "--select", "GM1", "--select", "GM2", model)
    assert codes(both) == ["GM101", "GM201"]
    assert codes(run("check", "--no-cache", "--output-format", "json", "--select", "GM1,GM2", model)) == ["GM101", "GM201"]
    assert codes(run("check", "--no-cache", "--output-format", "json", "--ignore", "GM1", "--ignore", "GM2", model)) == []


def test_usage_errors_are_short_and_suggest(model):
    proc = run("check", "--selct", "GM1", model)
    err = proc.stderr.decode()
    assert proc.returncode == 2
    assert "unexpected argument '--selct'" in err and "'--select'" in err
    assert "--output-format" not in err  # not the whole help
    proc = run("check", "--select", "GM10X", model)
    assert proc.returncode == 2
    assert "unknown rule selector `GM10X`" in proc.stderr.decode() and "GM101" in proc.stderr.decode()
    assert "Usage:" not in proc.stderr.decode()
    proc = run("check", "--output-format", "yaml", model)
    assert proc.returncode == 2 and "yaml" in proc.stderr.decode()
    proc = run("chekc")
    assert proc.returncode == 2 and "`check`" in proc.stderr.decode()


def test_every_subcommand_has_help():
    for command in ("check", "rule", "config", "server", "validate"):
        proc = run(command, "--help")
        assert proc.returncode == 0, (command, proc.stderr)
        assert proc.stdout.startswith(b"") and b"Usage: graphmend " + command.encode() in proc.stdout


ESC = b"\x1b["


def test_colour(model):
    plain = run("check", "--no-cache", "--output-format", "concise", model)
    assert ESC not in plain.stdout  # a pipe is not a terminal
    assert ESC in run("check", "--no-cache", "--output-format", "concise", model, env={"FORCE_COLOR": "1"}).stdout
    assert ESC in run("check", "--no-cache", "--color", "always", "--output-format", "concise", model).stdout
    assert ESC not in run("check", "--no-cache", "--color", "never", model, env={"FORCE_COLOR": "1"}).stdout
    # Colour never reaches machine formats.
    assert ESC not in run("check", "--no-cache", "--color", "always", "--output-format", "json", model).stdout
    assert ESC not in run("check", "--no-cache", "--output-format", "concise", model, env={"NO_COLOR": "1"}).stdout


def test_output_file_quiet_and_silent(model, tmp_path):
    out = tmp_path / "report.json"
    proc = run("check", "--no-cache", "--output-format", "json", "-o", out, model)
    assert proc.returncode == 1 and proc.stdout == b""
    assert sorted(item["code"] for item in json.loads(out.read_text())) == ["GM101", "GM201"]
    quiet = run("check", "--no-cache", "-q", "--output-format", "concise", model)
    assert quiet.returncode == 1 and b"GM101" in quiet.stdout and b"Found" not in quiet.stdout
    silent = run("check", "--no-cache", "-s", model)
    assert silent.returncode == 1 and silent.stdout == b"" and silent.stderr == b""
    bad = run("check", "--no-cache", "-o", tmp_path / "missing" / "dir" / "r.txt", model)
    assert bad.returncode == 2 and b"cannot write the report" in bad.stderr


def test_show_fixes_and_exit_non_zero_on_fix(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(TWO_RULES)
    text = run("check", "--no-cache", "--no-show-fixes", path).stdout
    assert b"= fix" not in text and b"GM101" in text
    assert b"= fix (safe)" in run("check", "--no-cache", path).stdout
    proc = run("check", "--no-cache", "--fix", "--show-fixes", "--select", "GM101", path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(rb"Applied 1 fix:\n- .*m\.py:\n    1 \xc3\x97 GM101 \(tensor-if\)", proc.stderr)
    path.write_text(TWO_RULES)
    proc = run("check", "--no-cache", "--fix", "--exit-non-zero-on-fix", "--select", "GM101", path)
    assert proc.returncode == 1 and b"Fixed 1 graph break" in proc.stdout
    # Nothing left to fix: 0 again.
    assert run("check", "--no-cache", "--fix", "--exit-non-zero-on-fix", "--select", "GM101", path).returncode == 0


def test_empty_folder_warns(tmp_path):
    proc = run("check", tmp_path)
    assert proc.returncode == 0
    assert b"No Python files found" in proc.stderr


def test_missing_path_is_an_error_not_a_pass(tmp_path):
    proc = run("check", tmp_path / "nope.py")
    assert proc.returncode == 2
    assert b"All checks passed" not in proc.stdout


def test_syntax_error_is_not_a_graph_break(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("def f(:\n")
    proc = run("check", "--no-cache", path)
    assert proc.returncode == 1
    assert b"1 syntax error" in proc.stdout and b"graph break" not in proc.stdout


def test_json_lines(model):
    proc = run("check", "--no-cache", "--output-format", "json-lines", model)
    lines = proc.stdout.decode().splitlines()
    assert [json.loads(line)["code"] for line in lines] == ["GM101", "GM201"]
    assert json.loads(lines[0]) == json.loads(run("check", "--no-cache", "--output-format", "json", model).stdout)[0]


def test_junit(model, tmp_path):
    root = ET.fromstring(run("check", "--no-cache", "--output-format", "junit", model).stdout)
    assert root.tag == "testsuites" and root.get("failures") == "2"
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["org.graphmend.GM101", "org.graphmend.GM201"]
    assert cases[0].get("line") == "8" and cases[0].find("failure").get("message").startswith("`if`")
    clean = tmp_path / "clean.py"
    clean.write_text("x = 1\n")
    ok = ET.fromstring(run("check", "--no-cache", "--output-format", "junit", clean).stdout)
    assert ok.get("failures") == "0" and ok.get("tests") == "1"
    errored = ET.fromstring(run("check", "--no-cache", "--output-format", "junit", tmp_path / "nope.py").stdout)
    assert errored.get("errors") == "1"


def test_gitlab_fingerprints_survive_unrelated_edits(model):
    first = json.loads(run("check", "--no-cache", "--output-format", "gitlab", model).stdout)
    assert [i["check_name"] for i in first] == ["GM101", "GM201"]
    assert {"description", "fingerprint", "severity", "location"} <= set(first[0])
    assert first[0]["location"]["positions"]["begin"] == {"line": 8, "column": 12}
    assert len({i["fingerprint"] for i in first}) == 2
    model.write_text("# a comment that moves every line\n" + TWO_RULES)
    second = json.loads(run("check", "--no-cache", "--output-format", "gitlab", model).stdout)
    assert [i["fingerprint"] for i in second] == [i["fingerprint"] for i in first]
    assert second[0]["location"]["positions"]["begin"]["line"] == 9


def test_pylint_and_grouped(model):
    pylint = run("check", "--no-cache", "--output-format", "pylint", model).stdout.decode().splitlines()
    assert re.fullmatch(r".*m\.py:8: \[GM101\] `if` on a tensor's value.*", pylint[0])
    assert re.fullmatch(r".*m\.py:10: \[GM201\] .*", pylint[1])
    grouped = run("check", "--no-cache", "--output-format", "grouped", model).stdout.decode()
    # GM201's fix is unsafe in a forward: no [*]
    assert re.search(r"m\.py:\n  8:12 GM101 \[\*\] .*\n  10:9 GM201 `print`", grouped), grouped
    assert "Found 2 graph breaks." in grouped


def test_output_format_from_environment(model):
    proc = run("check", "--no-cache", model, env={"GRAPHMEND_OUTPUT_FORMAT": "json"})
    assert codes(proc) == ["GM101", "GM201"]


def test_timings_say_where_the_time_went(model, tmp_path):
    # Two more files, one of them fixed: every phase is listed, files are read and parsed once each for the
    # report, and the fix loop parses the fixed text again.
    (tmp_path / "other.py").write_text(BREAKING)
    p = run("check", "--no-cache", "--timings", "--output-format", "json", tmp_path)
    assert p.returncode == 1
    json.loads(p.stdout)  # the report is untouched on stdout
    lines = p.stderr.decode().splitlines()
    head = re.fullmatch(r"graphmend check: ([0-9.]+) s wall, ([0-9.]+) s CPU in the phases below \(\d+ jobs\)", lines[0])
    assert head, lines
    phases = {}
    for line in lines[1:]:
        m = re.fullmatch(r"  (\w+) +([0-9.]+) s +([0-9.]+)% +(\d+) entries", line)
        assert m, line
        phases[m[1]] = (float(m[2]), int(m[4]))
    assert list(phases) == ["read", "parse", "semantic", "rules", "fixes", "cache", "output"]
    files = len(list(tmp_path.glob("*.py")))
    assert phases["read"][1] == files and phases["semantic"][1] >= files and phases["rules"][1] >= files
    assert phases["cache"][1] == 0 and phases["output"][1] == 1
    assert abs(sum(s for s, _ in phases.values()) - float(head[2])) < 0.01
    fixed = run("check", "--no-cache", "--timings", "--fix", tmp_path)
    parses = int(re.search(r"  parse +[0-9.]+ s +[0-9.]+% +(\d+) entries", fixed.stderr.decode())[1])
    assert parses > files  # the fix loop parses what it rewrote
    without = run("check", "--no-cache", tmp_path)
    assert "phases below" not in without.stderr.decode()
