"""`graphmend check` on hostile or unusual syntax: nesting deeper than any recursion could follow, long
chains, old Mac line ends, and indentation CPython rejects although tree-sitter accepts it. Each verdict
is checked against CPython's own compile() of the same file.
"""
import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("GRAPHMEND_BIN", str(ROOT / "build" / "graphmend"))

HEAD = "import torch\nfrom torch import nn\n\n\nclass Deep(nn.Module):\n    def forward(self, x):\n"
OTHER = "\n\nclass Other(nn.Module):\n    def forward(self, x):\n        print(x)\n        return x\n"
BREAKING = HEAD + "        y = x * 2\n        if y.sum() > 0:\n            y = y + 1\n        return y\n" + OTHER


def run(*args, timeout=60):
    return subprocess.run([BIN, *map(str, args)], capture_output=True, timeout=timeout)


def check_json(path, *extra, timeout=60):
    proc = run("check", "--no-config", "--output-format", "json", *extra, path, timeout=timeout)
    return proc.returncode, json.loads(proc.stdout)


def cpython_error(path):
    """CPython's verdict on the file: '' when it compiles, else 'IndentationError: unexpected indent'."""
    code = ("import sys\np = sys.argv[1]\ntry:\n    compile(open(p, encoding='utf-8').read(), p, 'exec')\n"
            "except SyntaxError as e:\n    print(type(e).__name__ + ': ' + e.msg)\n"
            "except (RecursionError, MemoryError) as e:\n    print(type(e).__name__)\n")
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                          timeout=120).stdout.strip()


def syntax_error_exit_code(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text(BREAKING + "\n\ndef broken(:\n    pass\n")
    return run("check", "--no-config", path).returncode


DEEP = {
    "and": lambda n: " and ".join(["x"] * n),
    "plus": lambda n: " + ".join(["x"] * n),
    "attribute": lambda n: "x" + ".a" * n,
    "call": lambda n: "x" + "()" * n,
    "subscript": lambda n: "x" + "[0]" * n,
    "times": lambda n: " * ".join(["x"] * n),
    "power": lambda n: " ** ".join(["x"] * n),
    "not": lambda n: "not " * n + "x",
}


@pytest.mark.parametrize("shape,n", [("and", 20000), ("plus", 18000)] +
                         [(s, 30000) for s in ("attribute", "call", "subscript", "times", "power", "not")])
def test_deep_nesting_is_skipped_with_a_diagnostic_and_the_rest_checked(tmp_path, shape, n):
    path = tmp_path / "deep.py"
    path.write_text(HEAD + "        return " + DEEP[shape](n) + "\n" + OTHER)
    start = time.monotonic()
    code, result = check_json(path, timeout=30)
    assert time.monotonic() - start < 5
    assert code == syntax_error_exit_code(tmp_path)
    skipped = [f for f in result if f["code"] is None]
    assert len(skipped) == 1
    assert skipped[0]["message"].startswith("too deeply nested to analyse: ")
    assert skipped[0]["message"].endswith("levels (the limit is 1000); graphmend skips this function")
    assert skipped[0]["location"] == {"row": 6, "column": 5}
    assert [(f["code"], f["location"]["row"]) for f in result if f["code"]] == [("GM201", 12)]
    # Not fully read: never fixed.
    before = path.read_bytes()
    proc = run("check", "--no-config", "--fix", "--unsafe-fixes", path, timeout=30)
    assert proc.returncode == code and path.read_bytes() == before
    text = run("check", "--no-config", path, timeout=30).stdout.decode()
    assert f"{path}:6:5: too deeply nested to analyse: " in text


@pytest.mark.parametrize("terms", [990, 1200, 20000])
def test_long_chains_take_well_under_a_second(tmp_path, terms):
    # Left-deep: a chain's depth is its length. 990 terms stay under the limit and are analysed.
    path = tmp_path / "chain.py"
    path.write_text(HEAD + "        if " + " and ".join(["x"] * terms) + ":\n            x = x + 1\n        return x\n"
                    + OTHER)
    start = time.monotonic()
    code, result = check_json(path, timeout=60)
    elapsed = time.monotonic() - start
    assert elapsed < 5, elapsed
    assert code == 1
    codes = [f["code"] for f in result]
    assert codes == (["GM101", "GM201"] if terms < 1000 else [None, "GM201"])


def test_many_statements_with_findings_in_one_function(tmp_path):
    # Each fix tried used to walk the whole function (and module) again: quadratic in its length.
    path = tmp_path / "long.py"
    body = "".join(f"        y{i} = x and not x\n        if x.sum() > {i}:\n            pass\n" for i in range(2500))
    path.write_text(HEAD + body + "        return x\n" + OTHER)
    start = time.monotonic()
    code, result = check_json(path)
    assert time.monotonic() - start < 5
    codes = [f["code"] for f in result]
    assert code == 1 and len(codes) == 5001
    assert codes.count("GM104") == codes.count("GM101") == 2500 and codes[-1] == "GM201"


def test_old_mac_line_ends_read_as_cpython_reads_them(tmp_path):
    lf = tmp_path / "lf.py"
    lf.write_bytes(BREAKING.encode())
    cr = tmp_path / "cr.py"
    cr.write_bytes(BREAKING.replace("\n", "\r").encode())
    assert cpython_error(cr) == ""
    _, expected = check_json(lf)
    code, result = check_json(cr)
    assert code == 1
    assert [(f["code"], f["location"], f["end_location"]) for f in result] == [
        (f["code"], f["location"], f["end_location"]) for f in expected]
    assert [f["code"] for f in result] == ["GM101", "GM201"]
    # The fix keeps the file's line ends, and CPython reads the result.
    proc = run("check", "--no-config", "--fix", "--unsafe-fixes", cr)
    assert proc.returncode == 0, proc.stdout
    fixed = cr.read_bytes()
    assert b"\n" not in fixed and fixed.count(b"\r") > 10
    assert b"torch.where(y.sum() > 0, y + 1, y)" in fixed
    assert cpython_error(cr) == ""
    assert check_json(cr)[1] == []
    # --diff splits lines at a lone CR too.
    cr.write_bytes(BREAKING.replace("\n", "\r").encode())
    diff = run("check", "--no-config", "--diff", cr).stdout.decode()
    assert "-        if y.sum() > 0:\n" in diff


REJECTED = {
    "unexpected_indent": HEAD + "        y = x * 2\n            z = y\n        return y\n",
    "unexpected_indent_after_simple_body": HEAD + "        if x: y = x\n            z = 1\n        return x\n",
    "dedent_to_no_outer_level": HEAD + "        if x.sum() > 0:\n            y = x\n          z = 1\n        return x\n",
    "expected_an_indented_block": HEAD + "        if x.sum() > 0:\n        y = x\n        return x\n",
    "tab_error": HEAD + "        if x.sum() > 0:\n\ty = x + 1\n        return x\n",
    "tab_error_equal_columns": "import torch\n\n\ndef f(x):\n        if x:\n\t    y = 1\n        return x\n",
    "too_many_parentheses": HEAD + "        return " + "(" * 201 + "x" + ")" * 201 + "\n",
}

ACCEPTED = {
    "tabs_after_spaces_consistently": "def f(x):\n\tif x:\n        \ty = 1\n\treturn x\n",
    "tabs_only": "def f(x):\n\tif x:\n\t\ty = 1\n\treturn x\n",
    "continuation_lines_and_comments": "def f(x):\n    z = 1 + \\\n 2\n        # c\n  # c\n    return '''\n  a\n'''\n",
    "form_feed": "def f(x):\n    y = 1\n\f    return y\n",
    "brackets_and_f_strings": "d = {1: 2,\n  3: 4}\nx = f'{d[1]:{2}}' + f'''{\n1}'''\nif x:\n    pass\n",
    "two_hundred_parentheses": "x = " + "(" * 200 + "1" + ")" * 200 + "\n",
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_files_cpython_rejects_are_syntax_errors_and_never_fixed(tmp_path, name):
    path = tmp_path / f"{name}.py"
    path.write_text(REJECTED[name] + OTHER)
    rejected = cpython_error(path)
    assert rejected.split(":")[0] in ("IndentationError", "TabError", "SyntaxError"), rejected
    code, result = check_json(path)
    assert code == syntax_error_exit_code(tmp_path) == 1
    messages = [f["message"] for f in result if f["code"] is None]
    assert rejected in messages, (rejected, messages)
    before = path.read_bytes()
    run("check", "--no-config", "--fix", "--unsafe-fixes", path)
    assert path.read_bytes() == before


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_files_cpython_accepts_have_no_syntax_error(tmp_path, name):
    path = tmp_path / f"{name}.py"
    path.write_text(ACCEPTED[name])
    assert cpython_error(path) == ""
    code, result = check_json(path)
    assert result == [] and code == 0
