"""`# noqa` as ruff has it (docs/check.md, "Suppressing findings"): real comments only, any case, file level
with and without codes; GM001 unused-noqa (opt-in) and its fix; `--add-noqa`."""
import json
import subprocess

from cli_support import BIN, BREAKING

PRINT = 'print("done")'


def run(*args, cwd, stdin=None):
    return subprocess.run([BIN, *map(str, args)], input=stdin, capture_output=True, cwd=cwd, timeout=120)


def write(path, text):
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def codes(path, *extra):
    proc = run("check", "--output-format", "json", "--exit-zero", *extra, path.name, cwd=path.parent)
    assert proc.returncode == 0, proc.stderr.decode()
    return [(f["location"]["row"], f["code"]) for f in json.loads(proc.stdout)]


def test_upper_case_and_spacing_variants_suppress(tmp_path):
    for i, comment in enumerate(["# NOQA", "#noqa", "# NoQA: GM201", "#noqa:GM201", "# type: ignore # noqa: GM201",
                                 "# noqa: GM201 the message is wanted"]):
        path = write(tmp_path / f"m{i}.py", BREAKING.replace(PRINT, f"{PRINT}  {comment}"))
        assert codes(path) == [(8, "GM101")], comment
    # Whole codes only (as ruff): a prefix or a lower-case code suppresses nothing.
    for i, comment in enumerate(["# noqa: GM2", "# noqa: gm201", "# noqa:"]):
        path = write(tmp_path / f"p{i}.py", BREAKING.replace(PRINT, f"{PRINT}  {comment}"))
        assert codes(path) == [(8, "GM101"), (10, "GM201")], comment


def test_noqa_inside_a_string_literal_does_not_suppress(tmp_path):
    src = BREAKING.replace(PRINT, 'print("done  # noqa")')
    assert codes(write(tmp_path / "m.py", src)) == [(8, "GM101"), (10, "GM201")]
    doc = BREAKING.replace("        y = x * 2\n", '        """\n        # graphmend: noqa\n        """\n        y = x * 2\n')
    assert [c for _, c in codes(write(tmp_path / "d.py", doc))] == ["GM101", "GM201"]


def test_file_level_directive_with_and_without_codes(tmp_path):
    assert codes(write(tmp_path / "a.py", "# graphmend: noqa\n" + BREAKING)) == []
    assert codes(write(tmp_path / "b.py", "# GRAPHMEND: NOQA\n" + BREAKING)) == []
    # With codes: only those rules (it used to exempt the whole file).
    assert codes(write(tmp_path / "c.py", "# graphmend: noqa: GM201\n" + BREAKING)) == [(9, "GM101")]
    indented = BREAKING.replace("        y = x * 2\n", "        # graphmend: noqa: GM101, GM201\n        y = x * 2\n")
    assert codes(write(tmp_path / "d.py", indented)) == []
    # After code on the same line it is no file directive (and no line directive either).
    assert codes(write(tmp_path / "e.py", "import os  # graphmend: noqa\n" + BREAKING)) == [(9, "GM101"), (11, "GM201")]


def test_unused_noqa_is_opt_in(tmp_path):
    src = BREAKING.replace(PRINT, f"{PRINT}  # noqa: GM201, GM401, F401").replace("y = x * 2", "y = x * 2  # noqa: GM999")
    path = write(tmp_path / "m.py", src)
    assert codes(path) == [(8, "GM101")]
    assert codes(path, "--select", "GM") == [(8, "GM101")]
    assert codes(path, "--extend-select", "GM001") == [(7, "GM001"), (8, "GM101"), (10, "GM001")]
    assert codes(path, "--select", "GM0") == [(7, "GM001"), (10, "GM001")]
    proc = run("check", "--output-format", "json", "--exit-zero", "--extend-select", "GM001", path.name, cwd=tmp_path)
    result = [f for f in json.loads(proc.stdout) if f["code"] == "GM001"]
    assert [f["message"] for f in result] == ["Unused `noqa` directive (unknown: `GM999`)",
                                              "Unused `noqa` directive (unused: `GM401`)"]
    assert result[1]["location"] == {"row": 10, "column": 24}  # the directive's `#`
    assert result[1]["fix"]["applicability"] == "safe"
    assert result[1]["fix"]["edits"][0]["content"] == "GM201, F401"
    assert result[1]["graphmend"]["dynamo_url"] is None
    # Not a graph break: the summary counts it apart. A rule not selected makes its code "non-enabled".
    proc = run("check", "--select", "GM001,GM1", path.name, cwd=tmp_path)
    assert proc.returncode == 1
    assert b"non-enabled: `GM201`" in proc.stdout
    assert b"Found 1 graph break, 2 unused noqa directives." in proc.stdout
    # A pyproject's extend-select enables it too.
    write(tmp_path / "pyproject.toml", '[tool.graphmend]\nextend-select = ["GM001"]\n')
    assert [c for _, c in codes(path)] == ["GM001", "GM101", "GM001"]


def test_unused_noqa_fix_removes_codes_and_directives(tmp_path):
    src = ("# graphmend: noqa: GM602\n" + BREAKING
           .replace(PRINT, f"{PRINT}  # noqa: GM201, GM401, F401")
           .replace("y = x * 2", "y = x * 2  # type: ignore # noqa: GM999")
           .replace("return y", "return y  # noqa: GM101  # keep this"))
    path = write(tmp_path / "m.py", src)
    # GM201 stays selected (its directive is used); the codes of rules not selected are "non-enabled".
    proc = run("check", "--fix", "--select", "GM001,GM201", path.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    assert b"Fixed 4 unused noqa directives." in proc.stdout
    assert path.read_text() == (BREAKING.replace(PRINT, f"{PRINT}  # noqa: GM201, F401")
                                .replace("y = x * 2", "y = x * 2  # type: ignore")
                                .replace("return y", "return y  # keep this"))
    assert run("check", "--select", "GM001,GM201", path.name, cwd=tmp_path).returncode == 0


def test_add_noqa_then_a_clean_run(tmp_path):
    src = BREAKING.replace(PRINT, f"{PRINT}  # noqa: F401").replace("if y.sum() > 0:", "if y.sum() > 0:  # why")
    path = write(tmp_path / "m.py", src)
    other = write(tmp_path / "clean.py", "x = 1\n")
    proc = run("check", "--add-noqa", ".", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr.decode().strip() == "Added 2 noqa directives."
    assert path.read_text() == (BREAKING.replace(PRINT, f"{PRINT}  # noqa: F401, GM201")
                                .replace("if y.sum() > 0:", "if y.sum() > 0:  # why  # noqa: GM101"))
    assert other.read_text() == "x = 1\n"
    proc = run("check", ".", cwd=tmp_path)
    assert proc.returncode == 0 and b"All checks passed!" in proc.stdout
    # Nothing left to add: nothing printed, nothing written.
    before = path.read_bytes()
    proc = run("check", "--add-noqa", ".", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == b"" and path.read_bytes() == before
    # The directives it added are used ones: GM001 has nothing to say about them.
    assert codes(path, "--extend-select", "GM001") == []


def test_add_noqa_keeps_line_endings_and_encoding(tmp_path):
    src = ("# -*- coding: latin-1 -*-\n" + BREAKING.replace(PRINT, 'print("café")')).replace("\n", "\r\n")
    path = write(tmp_path / "m.py", src.encode("latin-1"))
    proc = run("check", "--add-noqa", path.name, cwd=tmp_path)
    assert proc.returncode == 0 and b"Added 2 noqa directives." in proc.stderr
    expected = src.replace('print("café")', 'print("café")  # noqa: GM201').replace(
        "if y.sum() > 0:", "if y.sum() > 0:  # noqa: GM101")
    assert path.read_bytes() == expected.encode("latin-1")
    assert run("check", path.name, cwd=tmp_path).returncode == 0


def test_add_noqa_with_one_finding_and_on_standard_input(tmp_path):
    path = write(tmp_path / "m.py", BREAKING.replace(PRINT, "pass"))
    proc = run("check", "--add-noqa", path.name, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr.decode().strip() == "Added 1 noqa directive."
    proc = run("check", "--add-noqa", "-", "--stdin-filename", "m.py", cwd=tmp_path, stdin=BREAKING.encode())
    assert proc.returncode == 2 and b"standard input" in proc.stderr
