"""The check cache: a second run over an unchanged tree reads findings back; any change that could
change them (the file, the configuration, the options, the functions other files trace into it)
misses; a damaged cache is a miss, never a wrong answer."""
import json
import os
import subprocess

from cli_support import BIN, BREAKING


def run(*args, cwd, env=None):
    full = dict(os.environ)
    full.pop("GRAPHMEND_CACHE_DIR", None)
    full.update(env or {})
    return subprocess.run([BIN, *map(str, args)], capture_output=True, cwd=cwd, env=full, timeout=120)


def report(cwd, *args):
    proc = run("check", "--output-format", "json", "--exit-zero", *args, ".", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def entries(cache):
    return sorted(p for p in cache.rglob("*.json"))


def tamper(cache, text):
    """Rewrite every cached finding's message: a run that shows `text` read the cache."""
    for path in entries(cache):
        data = json.loads(path.read_text())
        for entry in data["entries"]:
            for finding in entry["result"]["findings"]:
                finding["message"] = text
        path.write_text(json.dumps(data))


def test_second_run_reads_the_cache(tmp_path):
    (tmp_path / "m.py").write_text(BREAKING)
    first = report(tmp_path)
    cache = tmp_path / ".graphmend_cache"
    assert (cache / "CACHEDIR.TAG").exists() and (cache / ".gitignore").read_text().strip().endswith("*")
    assert len(entries(cache)) == 1
    assert report(tmp_path) == first
    tamper(cache, "from the cache")
    assert {f["message"] for f in report(tmp_path)} == {"from the cache"}
    # --no-cache neither reads nor writes it.
    assert report(tmp_path, "--no-cache") == first


def test_changes_miss(tmp_path):
    (tmp_path / "m.py").write_text(BREAKING)
    report(tmp_path)
    cache = tmp_path / ".graphmend_cache"
    tamper(cache, "stale")
    # The file changed.
    (tmp_path / "m.py").write_text(BREAKING.replace("print(\"done\")", "pass"))
    assert [f["code"] for f in report(tmp_path)] == ["GM101"]
    # The configuration changed.
    tamper(cache, "stale")
    (tmp_path / "pyproject.toml").write_text('[tool.graphmend]\nignore = ["GM101"]\n')
    assert report(tmp_path) == []
    # The options changed.
    (tmp_path / "pyproject.toml").unlink()
    report(tmp_path)
    tamper(cache, "stale")
    assert [f["code"] for f in report(tmp_path, "--select", "GM2")] == []
    assert all(f["message"] != "stale" for f in report(tmp_path, "--scope", "all"))


def test_functions_traced_from_other_files_are_part_of_the_key(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("def helper(x):\n    print('hi')\n    return x\n")
    (pkg / "model.py").write_text(
        "import torch\nfrom .helpers import helper\n\n@torch.compile\ndef f(x):\n    return helper(x)\n"
    )
    first = report(tmp_path)
    assert any(f["code"] == "GM201" and f["filename"].endswith("helpers.py") for f in first)
    assert report(tmp_path) == first
    # Checked alone, helpers.py is not traced: no finding, from the cache or not.
    alone = run("check", "--output-format", "json", "--exit-zero", "pkg/helpers.py", cwd=tmp_path)
    assert json.loads(alone.stdout) == []


def test_damaged_cache_is_a_miss(tmp_path):
    (tmp_path / "m.py").write_text(BREAKING)
    first = report(tmp_path)
    for path in entries(tmp_path / ".graphmend_cache"):
        path.write_text("{not json")
    assert report(tmp_path) == first
    assert report(tmp_path) == first


def test_cache_dir_option_and_environment(tmp_path):
    (tmp_path / "m.py").write_text(BREAKING)
    report(tmp_path, "--cache-dir", tmp_path / "c1")
    assert entries(tmp_path / "c1") and not (tmp_path / ".graphmend_cache").exists()
    proc = run("check", "--exit-zero", ".", cwd=tmp_path, env={"GRAPHMEND_CACHE_DIR": str(tmp_path / "c2")})
    assert proc.returncode == 0 and entries(tmp_path / "c2")
