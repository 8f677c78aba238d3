"""`graphmend check` on Jupyter notebooks: the Python cells analysed as one text, findings numbered by
cell in every output format, fixes written back into the cells and nothing else in the file changed."""
import json
import pathlib
import shutil
import subprocess

from cli_support import BIN, ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "notebooks"


def run(*args, stdin=None, cwd=None):
    return subprocess.run([BIN, *map(str, args)], input=stdin, capture_output=True, cwd=cwd, timeout=120)


def copy(tmp_path, name):
    return pathlib.Path(shutil.copy(FIXTURES / name, tmp_path / name))


def nbformat_bytes(nb, indent=1, ensure_ascii=False):
    """What nbformat (and VS Code) write: json.dumps with the file's indent, then a newline."""
    return (json.dumps(nb, indent=indent, ensure_ascii=ensure_ascii) + "\n").encode("utf-8")


def notebook(*cells, language="python"):
    return {
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                   "source": source.splitlines(True)} for source in cells],
        "metadata": {"language_info": {"name": language}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def test_two_breaks_in_two_cells_are_numbered_by_cell(tmp_path):
    path = copy(tmp_path, "two_breaks.ipynb")
    proc = run("check", "--no-config", "--output-format", "concise", path.name, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr.decode()
    lines = proc.stdout.decode().splitlines()
    # Markdown cells count (cell 1 is one): the numbers are the ones Jupyter shows.
    assert lines[0].startswith("two_breaks.ipynb:cell 3:3:8: GM101 [*] ")
    assert lines[1].startswith("two_breaks.ipynb:cell 4:5:5: GM201 [*] ")
    assert "Found 2 graph breaks." in lines
    # The full format's snippet numbers the line within its cell.
    full = run("check", "--no-config", path.name, cwd=tmp_path).stdout.decode()
    assert "3 |     if y.sum() > 0:" in full and '5 |     print("head done")' in full


def test_a_function_compiled_in_another_cell_is_found(tmp_path):
    step = "import torch\n\n\ndef step(x):\n    if x.sum() > 0:\n        x = x + 1\n    return x"
    compiled = tmp_path / "compiled.ipynb"
    compiled.write_bytes(nbformat_bytes(notebook(step, "x = 1", "fast = torch.compile(step)")))
    proc = run("check", "--no-config", "--output-format", "concise", compiled)
    assert proc.returncode == 1 and b"compiled.ipynb:cell 1:5:8: GM101" in proc.stdout
    # Without the cell that compiles it, `step` is not traced: nothing to report.
    plain = tmp_path / "plain.ipynb"
    plain.write_bytes(nbformat_bytes(notebook(step, "x = 1")))
    proc = run("check", "--no-config", plain)
    assert proc.returncode == 0 and b"All checks passed!" in proc.stdout


def test_json_gives_the_cell_and_cell_relative_positions(tmp_path):
    path = copy(tmp_path, "two_breaks.ipynb")
    proc = run("check", "--no-config", "--output-format", "json", path)
    assert proc.returncode == 1
    found = {f["code"]: f for f in json.loads(proc.stdout)}
    assert set(found) == {"GM101", "GM201"}
    gm101, gm201 = found["GM101"], found["GM201"]
    # ruff's notebook shape: `cell` is the 1-based cell, rows count from the cell's first line.
    assert gm101["cell"] == 3 and gm101["location"] == {"row": 3, "column": 8} and gm101["noqa_row"] == 3
    assert gm201["cell"] == 4 and gm201["location"] == {"row": 5, "column": 5} and gm201["noqa_row"] == 5
    assert gm101["filename"] == str(path.resolve())
    edit = gm101["fix"]["edits"][0]
    assert edit["location"] == {"row": 3, "column": 5} and edit["end_location"] == {"row": 4, "column": 18}
    # A plain file keeps `"cell": null`.
    py = tmp_path / "m.py"
    py.write_text("import torch\n\n\n@torch.compile\ndef f(x):\n    print(x)\n    return x\n")
    assert all(f["cell"] is None for f in json.loads(run("check", "--no-config", "--output-format", "json", py).stdout))


def test_sarif_and_github_say_which_cell(tmp_path):
    path = copy(tmp_path, "two_breaks.ipynb")
    sarif = json.loads(run("check", "--no-config", "--output-format", "sarif", path).stdout)
    schema_path = ROOT / ".cache" / "sarif-schema-2.1.0.json"  # scripts/setup.sh fetches it
    if schema_path.exists():
        import jsonschema
        jsonschema.validate(sarif, json.loads(schema_path.read_text(encoding="utf-8")))
    regions = sorted((r["ruleId"], r["locations"][0]["physicalLocation"]["region"]) for r in sarif["runs"][0]["results"])
    assert regions[0] == ("GM101", {"startLine": 3, "startColumn": 8, "endLine": 3, "endColumn": 19,
                                    "properties": {"cell": 3}})
    assert regions[1][1]["properties"] == {"cell": 4} and regions[1][1]["startLine"] == 5
    github = run("check", "--no-config", "--output-format", "github", path.name, cwd=tmp_path).stdout.decode()
    # GitHub places annotations on lines of the JSON file: line 1, the cell's position in the message.
    assert "::error title=graphmend (GM101),file=two_breaks.ipynb,line=1,col=1,endLine=1,endColumn=1::cell 3:3:8: GM101 " in github


def test_fix_changes_only_the_fixed_cells_sources(tmp_path):
    path = copy(tmp_path, "two_breaks.ipynb")
    before = path.read_bytes()
    proc = run("check", "--no-config", "--fix", path)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"Fixed 2 graph breaks." in proc.stdout
    after = path.read_bytes()
    # Exactly the original with the two cells' source lines replaced: outputs, metadata, ids, key order,
    # indentation, the markdown, raw and %%bash cells and the magics are byte for byte what they were.
    expected = json.loads(before)
    cells = expected["cells"]
    cells[2]["source"] = ["def step(x):\n", "    y = x * 2\n", "    y = torch.where(y.sum() > 0, y + 1, y)\n", "    return y"]
    cells[3]["source"] = [line.replace('print("head done")', 'torch._higher_order_ops.print("head done")')
                          for line in cells[3]["source"]]
    assert after == nbformat_bytes(expected)
    assert after.count(b"\n") == before.count(b"\n") - 1  # the `if` and its body became one line
    # Fixed: nothing left, and a second run writes nothing.
    proc = run("check", "--no-config", path)
    assert proc.returncode == 0 and b"All checks passed!" in proc.stdout
    run("check", "--no-config", "--fix", path)
    assert path.read_bytes() == after


def test_diff_is_per_cell_and_writes_nothing(tmp_path):
    path = copy(tmp_path, "two_breaks.ipynb")
    before = path.read_bytes()
    proc = run("check", "--no-config", "--diff", path.name, cwd=tmp_path)
    assert proc.returncode == 1
    diff = proc.stdout.decode()
    assert "--- two_breaks.ipynb:cell 3\n+++ two_breaks.ipynb:cell 3\n" in diff
    assert "--- two_breaks.ipynb:cell 4\n+++ two_breaks.ipynb:cell 4\n" in diff
    assert "-    if y.sum() > 0:\n-        y = y + 1\n+    y = torch.where(y.sum() > 0, y + 1, y)\n" in diff
    assert path.read_bytes() == before


def test_indent_escapes_and_string_sources_are_kept(tmp_path):
    # Two-space indent, \\u escapes (ensure_ascii), sources as single strings, keys in no sorted order.
    path = copy(tmp_path, "indent2_strings.ipynb")
    before = path.read_bytes()
    assert b'  "nbformat": 4,' in before and b"\\u00e9" in before
    proc = run("check", "--no-config", "--fix", path)
    assert proc.returncode == 0, proc.stderr.decode()
    expected = json.loads(before)
    source = expected["cells"][0]["source"]
    expected["cells"][0]["source"] = source.replace("    if x.sum() > 0:  # \u00e9\n        x = x + x\n",
                                                    "    # \u00e9\n    x = torch.where(x.sum() > 0, x + x, x)\n")
    assert path.read_bytes() == nbformat_bytes(expected, indent=2, ensure_ascii=True)
    assert isinstance(json.loads(path.read_bytes())["cells"][0]["source"], str)


def test_a_notebook_whose_layout_would_change_is_not_written(tmp_path):
    path = copy(tmp_path, "unusual_layout.ipynb")
    before = path.read_bytes()
    # Checking works as for any notebook...
    proc = run("check", "--no-config", "--output-format", "concise", path)
    assert proc.returncode == 1 and b"unusual_layout.ipynb:cell 1:5:8: GM101" in proc.stdout
    # ...but writing it would reformat the file: refused, with the reason, and nothing changes.
    for mode in ("--fix", "--diff"):
        proc = run("check", "--no-config", mode, path)
        assert proc.returncode == 2
        assert b"unusual_layout.ipynb: not written: its JSON is not laid out the way Jupyter writes it" in proc.stderr
        assert path.read_bytes() == before


def test_invalid_json_is_an_error_with_its_position(tmp_path):
    path = copy(tmp_path, "invalid.ipynb")
    proc = run("check", "--no-config", path.name, cwd=tmp_path)
    assert proc.returncode == 2
    # The missing comma after line 6: the next member, on line 7, column 4.
    assert b"error: invalid.ipynb:7:4: invalid notebook JSON: syntax error while parsing object" in proc.stderr
    old = tmp_path / "v3.ipynb"
    old.write_text('{"nbformat": 3, "nbformat_minor": 0, "worksheets": []}\n')
    proc = run("check", "--no-config", old)
    assert proc.returncode == 2 and b"nbformat 3 notebooks are not supported" in proc.stderr
    not_notebook = tmp_path / "list.ipynb"
    not_notebook.write_text("[1, 2]\n")
    proc = run("check", "--no-config", not_notebook)
    assert proc.returncode == 2 and b"not a Jupyter notebook" in proc.stderr


def test_ipython_syntax_is_neither_a_syntax_error_nor_moved(tmp_path):
    cells = [
        "%matplotlib inline\n!pip install torch \\\n    --quiet\nimport torch\nfiles = !ls\ntorch.randn?",
        "%%bash\nif [ -n \"$X\" ]; then echo \"(\"; fi",
        "%%time\ndef step(x):\n    %time y = x * 2\n    if x.sum() > 0:\n        x = x + x\n    return x + 0",
        "%%writefile helper.py\ndef broken(:\n    pass",
        "fast = torch.compile(step)",
    ]
    path = tmp_path / "magics.ipynb"
    path.write_bytes(nbformat_bytes(notebook(*cells)))
    proc = run("check", "--no-config", "--output-format", "json", path)
    assert proc.returncode == 1, proc.stdout.decode() + proc.stderr.decode()
    found = json.loads(proc.stdout)
    assert [(f["code"], f["cell"], f["location"]) for f in found] == [("GM101", 3, {"row": 4, "column": 8})]
    # The fix leaves every magic as it was.
    assert run("check", "--no-config", "--fix", path).returncode == 0
    fixed = json.loads(path.read_bytes())
    assert "".join(fixed["cells"][0]["source"]) == cells[0]
    assert "".join(fixed["cells"][2]["source"]) == (
        "%%time\ndef step(x):\n    %time y = x * 2\n    x = torch.where(x.sum() > 0, x + x, x)\n    return x + 0")
    assert "".join(fixed["cells"][3]["source"]) == cells[3]


def test_stdin_with_a_notebook_name(tmp_path):
    data = (FIXTURES / "two_breaks.ipynb").read_bytes()
    proc = run("check", "--no-config", "--output-format", "concise", "--stdin-filename", "nb.ipynb", "-", stdin=data)
    assert proc.returncode == 1 and b"nb.ipynb:cell 3:3:8: GM101" in proc.stdout
    proc = run("check", "--no-config", "--fix", "--stdin-filename", "nb.ipynb", "-", stdin=data)
    assert proc.returncode == 0
    assert b"torch.where(y.sum() > 0, y + 1, y)" in proc.stdout and b'"image/png"' in proc.stdout
    json.loads(proc.stdout)


def test_other_languages_and_folders(tmp_path):
    julia = tmp_path / "julia.ipynb"
    julia.write_bytes(nbformat_bytes(notebook("if x > 0 print(x) end", language="julia")))
    proc = run("check", "--no-config", julia)
    assert proc.returncode == 0 and b"All checks passed!" in proc.stdout
    # A folder: its notebooks are checked with its Python files.
    shutil.copy(FIXTURES / "two_breaks.ipynb", tmp_path / "two_breaks.ipynb")
    proc = run("check", "--no-config", "--output-format", "concise", ".", cwd=tmp_path)
    assert proc.returncode == 1
    assert b"two_breaks.ipynb:cell 3:3:8: GM101" in proc.stdout
