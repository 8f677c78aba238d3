"""Rule links and rule pages (docs/check.md, "Rule links"): a copied or installed binary links to its
installed pages, a configured documentation site, or nothing; never to the checkout it was built from."""
import json
import os
import pathlib
import shutil
import subprocess

import pytest

from cli_support import BIN, BREAKING, ROOT
PAGES = ROOT / "docs" / "rules"


pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason=f"{BIN} is not built")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "GRAPHMEND_DOCS_DIR"}
    env.update(extra)
    return env


def run(binary, *args, cwd=None, env=None):
    proc = subprocess.run([str(binary), *map(str, args)], capture_output=True, cwd=cwd, timeout=120,
                          env=env if env is not None else clean_env())
    return proc


def copy_binary(prefix):
    """The binary alone in <prefix>/bin, as an installer or a user copying it would leave it."""
    (prefix / "bin").mkdir(parents=True)
    target = prefix / "bin" / "graphmend"
    shutil.copy2(BIN, target)
    return target


def project(tmp_path, pyproject=None):
    work = tmp_path / "work"
    work.mkdir()
    (work / "m.py").write_text(BREAKING)
    if pyproject is not None:
        (work / "pyproject.toml").write_text(pyproject)
    return work


def check_json(binary, work, env=None):
    proc = run(binary, "check", "--output-format", "json", "--exit-zero", "m.py", cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    return {f["code"]: f["url"] for f in json.loads(proc.stdout)}


def check_sarif(binary, work, env=None):
    proc = run(binary, "check", "--output-format", "sarif", "--exit-zero", "m.py", cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)


def rule_json(binary, *codes, cwd=None, env=None):
    proc = run(binary, "rule", "--output-format", "json", *codes, cwd=cwd, env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    result = json.loads(proc.stdout)
    return result if isinstance(result, list) else [result]


def test_a_copied_binary_prints_no_path_of_the_checkout(tmp_path):
    binary = copy_binary(tmp_path / "copy")
    work = project(tmp_path)
    outputs = [
        run(binary, "check", "--output-format", fmt, "--exit-zero", "m.py", cwd=work).stdout.decode()
        for fmt in ("json", "sarif", "text", "concise", "github")
    ]
    outputs.append(run(binary, "rule", "--all", "--output-format", "json", cwd=work).stdout.decode())
    outputs.append(run(binary, "rule", "--all", cwd=work).stdout.decode())
    for out in outputs:
        assert out
        assert str(ROOT) not in out
        assert "file://" + str(ROOT) not in out
    # No page anywhere: no link at all, rather than a dead one.
    assert set(check_json(binary, work).values()) == {None}
    sarif = check_sarif(binary, work)
    assert not any("helpUri" in r for r in sarif["runs"][0]["tool"]["driver"]["rules"])
    assert {r["url"] for r in rule_json(binary, "--all", cwd=work)} == {None}


def test_the_installed_layout_links_to_the_installed_pages(tmp_path):
    prefix = tmp_path / "prefix"
    binary = copy_binary(prefix)
    pages = prefix / "share" / "graphmend" / "docs" / "rules"
    pages.mkdir(parents=True)
    shutil.copy2(PAGES / "GM101.md", pages / "GM101.md")
    work = project(tmp_path)
    page_uri = (pages / "GM101.md").resolve().as_uri()
    urls = check_json(binary, work)
    assert urls["GM101"] == page_uri
    assert urls["GM201"] is None  # not installed: no dead link
    rules = {r["id"]: r for r in check_sarif(binary, work)["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["GM101"]["helpUri"] == page_uri and "helpUri" not in rules["GM201"]
    assert rule_json(binary, "GM101", cwd=work)[0]["url"] == page_uri


def test_graphmend_docs_dir_names_the_pages(tmp_path):
    binary = copy_binary(tmp_path / "copy")
    docs = tmp_path / "my docs"  # a space: the link is a URI
    (docs / "rules").mkdir(parents=True)
    shutil.copy2(PAGES / "GM201.md", docs / "rules" / "GM201.md")
    work = project(tmp_path)
    env = clean_env(GRAPHMEND_DOCS_DIR=str(docs))
    urls = check_json(binary, work, env=env)
    assert urls["GM201"] == (docs / "rules" / "GM201.md").resolve().as_uri()
    assert "%20" in urls["GM201"]
    assert urls["GM101"] is None
    # It wins over the build tree's fallback too, and a folder that is not there gives no links.
    assert check_json(BIN, work, env=env)["GM201"] == urls["GM201"]
    assert set(check_json(BIN, work, env=clean_env(GRAPHMEND_DOCS_DIR=str(tmp_path / "none"))).values()) == {None}


def test_docs_url_in_pyproject(tmp_path):
    binary = copy_binary(tmp_path / "copy")
    work = project(tmp_path, '[tool.graphmend]\ndocs-url = "https://example.org/graphmend/rules"\n')
    urls = check_json(binary, work)
    assert urls == {"GM101": "https://example.org/graphmend/rules/GM101.md",
                    "GM201": "https://example.org/graphmend/rules/GM201.md"}
    rules = {r["id"]: r for r in check_sarif(binary, work)["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["GM101"]["helpUri"] == "https://example.org/graphmend/rules/GM101.md"
    assert rule_json(binary, "GM101", cwd=work)[0]["url"] == "https://example.org/graphmend/rules/GM101.md"
    # It also wins over the build tree's pages, and a trailing slash is not doubled.
    (work / "pyproject.toml").write_text('[tool.graphmend]\ndocs-url = "https://example.org/r/"\n')
    assert check_json(BIN, work)["GM101"] == "https://example.org/r/GM101.md"


def test_a_docs_url_that_is_not_a_string_is_a_configuration_error(tmp_path):
    work = project(tmp_path, "[tool.graphmend]\ndocs-url = 3\n")
    proc = run(BIN, "check", "m.py", cwd=work)
    assert proc.returncode == 2
    assert b"docs-url must be a non-empty string" in proc.stderr


def test_rule_pages_ship_inside_the_binary(tmp_path):
    binary = copy_binary(tmp_path / "copy")
    for code in ("GM101", "GM201"):
        proc = run(binary, "rule", code, cwd=tmp_path)
        assert proc.returncode == 0
        assert proc.stdout.decode() == (PAGES / f"{code}.md").read_text()
    everything = run(binary, "rule", "--all", cwd=tmp_path).stdout.decode()
    for page in PAGES.glob("GM*.md"):
        assert page.read_text() in everything
    written = tmp_path / "written"
    assert run(binary, "rule", "--write-docs", written, cwd=tmp_path).returncode == 0
    assert sorted(p.name for p in written.iterdir()) == sorted(p.name for p in PAGES.iterdir())


def test_sarif_carries_each_rules_page(tmp_path):
    binary = copy_binary(tmp_path / "copy")
    work = project(tmp_path)
    rules = check_sarif(binary, work)["runs"][0]["tool"]["driver"]["rules"]
    summaries = {r["code"]: r["summary"] for r in rule_json(binary, "--all", cwd=work)}
    assert sorted(r["id"] for r in rules) == sorted(p.stem for p in PAGES.glob("GM*.md"))
    for r in rules:
        assert r["help"]["markdown"] == (PAGES / f"{r['id']}.md").read_text()
        assert r["help"]["text"] == summaries[r["id"]]


def test_the_build_tree_binary_links_to_the_checkout(tmp_path):
    build = pathlib.Path(BIN).resolve().parent
    if not ((build / "CMakeCache.txt").exists() and ROOT in build.parents):
        pytest.skip(f"{BIN} is not a build tree's binary of this checkout")
    work = project(tmp_path)
    cache = (build / "CMakeCache.txt").read_text()
    if "GRAPHMEND_DOCS_URL:STRING=\n" not in cache or "GRAPHMEND_PORTABLE:BOOL=ON" in cache:
        pytest.skip("built with a GRAPHMEND_DOCS_URL, or portable (no build-tree fallback)")
    assert check_json(BIN, work)["GM101"] == (PAGES / "GM101.md").resolve().as_uri()
