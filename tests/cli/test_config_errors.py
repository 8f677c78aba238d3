"""[tool.graphmend] is checked strictly (docs/configuration.md): an unknown key or a value of the wrong
type is an error naming file:line:col (exit 2), and the JSON Schema published in
docs/schema/graphmend.schema.json lists exactly the keys the loader accepts."""
import json
import subprocess

import jsonschema
import pytest

from cli_support import BIN, BREAKING, ROOT

SCHEMA_PATH = ROOT / "docs" / "schema" / "graphmend.schema.json"


def run(*args, cwd=None):
    return subprocess.run([BIN, *map(str, args)], capture_output=True, cwd=cwd, timeout=120)


def project(tmp_path, table):
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend]\n" + table, encoding="utf-8")
    (tmp_path / "m.py").write_text(BREAKING, encoding="utf-8")
    return tmp_path


def toml_value(value):
    """A JSON value (strings, booleans, lists, tables of them) as TOML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


@pytest.mark.parametrize("table, key, line, col, suggestion", [
    ('select = ["GM"]\nignroe = ["GM101"]\n', "ignroe", 3, 1, "ignore"),
    ('per_file_ignores = { "t/*" = ["GM2"] }\n', "per_file_ignores", 2, 1, "per-file-ignores"),
    ('  extend-exlude = ["x"]\n', "extend-exlude", 2, 3, "extend-exclude"),
    ('respect_gitignore = false\n', "respect_gitignore", 2, 1, "respect-gitignore"),
    ('fix = true\n', "fix", 2, 1, None),
    ('[tool.graphmend.lint]\nselect = ["GM1"]\n', "lint", 2, 17, None),
])
def test_unknown_keys_are_errors_with_a_position_and_a_suggestion(tmp_path, table, key, line, col, suggestion):
    work = project(tmp_path, table)
    proc = run("check", "m.py", cwd=work)
    assert proc.returncode == 2, proc.stdout
    message = f"pyproject.toml:{line}:{col}: unknown key `{key}` in [tool.graphmend]"
    if suggestion:
        message += f"; did you mean `{suggestion}`?"
    err = proc.stderr.decode()
    assert message in err
    if not suggestion:
        assert "did you mean" not in err
    assert b"All checks passed!" not in proc.stdout


def test_an_unknown_key_in_the_config_given_with_dash_dash_config_exits_2_before_checking(tmp_path):
    work = project(tmp_path, 'ignroe = ["GM101"]\n')
    proc = run("check", "--config", work / "pyproject.toml", work / "m.py")
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith("error: ") and "unknown key `ignroe`" in proc.stderr.decode()
    assert proc.stdout == b""


@pytest.mark.parametrize("table, message", [
    ('exclude = "build"\n', "2:11: [tool.graphmend] exclude must be a list of strings"),
    ('extend-exclude = ["a", 3]\n', "2:24: [tool.graphmend] extend-exclude must contain only strings"),
    ('respect-gitignore = "no"\n', "2:21: [tool.graphmend] respect-gitignore must be true or false"),
    ('force-exclude = 1\n', "2:17: [tool.graphmend] force-exclude must be true or false"),
    ('scope = "some"\n', '2:9: [tool.graphmend] scope must be "compiled" or "all"'),
    ('per-file-ignores = ["x"]\n', "2:20: [tool.graphmend] per-file-ignores must be a table"),
    ('per-file-ignores = { "x" = "GM1" }\n', "2:28: [tool.graphmend] per-file-ignores must be a list of strings"),
])
def test_wrong_value_types_name_file_line_and_column(tmp_path, table, message):
    work = project(tmp_path, table)
    proc = run("check", "m.py", cwd=work)
    assert proc.returncode == 2
    assert f"pyproject.toml:{message}" in proc.stderr.decode()


def test_a_tool_graphmend_that_is_not_a_table_is_an_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool]\ngraphmend = 3\n")
    (tmp_path / "m.py").write_text(BREAKING)
    proc = run("check", "--config", tmp_path / "pyproject.toml", tmp_path / "m.py")
    assert proc.returncode == 2 and b"pyproject.toml:2:13: [tool.graphmend] must be a table" in proc.stderr


def schema():
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def test_the_published_schema_is_what_graphmend_config_prints():
    proc = run("config", "--schema")
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == schema()
    assert proc.stdout.decode() == SCHEMA_PATH.read_text(encoding="utf-8"), "regenerate with `graphmend config --schema`"


def test_the_schema_is_draft_07_and_closed():
    s = schema()
    jsonschema.Draft7Validator.check_schema(s)
    assert s["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert s["additionalProperties"] is False
    for name, prop in s["properties"].items():
        assert prop["description"], name
        for example in prop["examples"]:
            jsonschema.validate({name: example}, s)
        if "default" in prop:
            jsonschema.validate({name: prop["default"]}, s)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"ignroe": []}, s)


def test_every_schema_key_is_accepted_and_nothing_else(tmp_path):
    properties = schema()["properties"]
    assert set(properties) >= {"select", "ignore", "extend-select", "per-file-ignores", "scope", "exclude",
                               "extend-exclude", "respect-gitignore", "force-exclude"}
    # Every key at once, each with its example, and each alone with its default: all accepted.
    table = "".join(f"{json.dumps(k)} = {toml_value(p['examples'][0])}\n" for k, p in properties.items())
    (tmp_path / "all").mkdir()
    work = project(tmp_path / "all", table)
    proc = run("check", "m.py", cwd=work)
    assert proc.returncode in (0, 1), proc.stderr.decode()
    for name, prop in properties.items():
        if "default" not in prop:
            continue
        work = tmp_path / name
        work.mkdir()
        project(work, f"{json.dumps(name)} = {toml_value(prop['default'])}\n")
        proc = run("check", "m.py", cwd=work)
        assert proc.returncode == 1, (name, proc.stderr.decode())  # defaults: both findings of BREAKING
    # `graphmend config` lists the same keys, and explains each.
    listed = run("config").stdout.decode().split()
    assert listed == list(properties)
    shown = run("config", "exclude")
    assert shown.returncode == 0 and b"default:" in shown.stdout and b"node_modules" in shown.stdout
    assert run("config", "no-such-key").returncode == 2
    # A key the schema does not list is rejected.
    work = tmp_path / "unknown"
    work.mkdir()
    project(work, 'extend-ignore = ["GM1"]\n')
    assert run("check", "m.py", cwd=work).returncode == 2


def test_the_default_exclude_list_is_ruffs():
    assert schema()["properties"]["exclude"]["default"] == [
        ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache", ".nox",
        ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".vscode",
        "__pypackages__", "_build", "buck-out", "dist", "node_modules", "site-packages", "venv"]
