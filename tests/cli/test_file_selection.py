"""Which files `graphmend check` looks at (docs/configuration.md, "File selection"), as ruff selects
them: ruff's default `exclude` list (a package folder named `build` is checked), `exclude` replacing it,
`extend-exclude` adding to it, globs relative to the configuration's folder (`*` never crosses `/`,
`**` spans folders), .gitignore / .git/info/exclude / .ignore files (`respect-gitignore`), and
`force-exclude` for paths given on the command line. `per-file-ignores` globs match the same way."""
import json
import os
import subprocess

import pytest

from cli_support import BIN, BREAKING


def run(*args, cwd=None):
    return subprocess.run([BIN, *map(str, args)], capture_output=True, cwd=cwd, timeout=120)


def tree(root, *files, text=BREAKING):
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def config(root, table):
    (root / "pyproject.toml").write_text("[tool.graphmend]\n" + table, encoding="utf-8")


def checked(cwd, *args, base=None):
    """The files checked (each holds BREAKING, so each reports), relative to `base` (default `cwd`)."""
    proc = run("check", "--output-format", "json", "--exit-zero", *args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr.decode()
    names = {os.path.relpath(f["filename"], base or cwd) for f in json.loads(proc.stdout)}
    return sorted(n.replace(os.sep, "/") for n in names)


def git_init(root):
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)


RUFF_DEFAULT_EXCLUDED = [".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
                         ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache",
                         ".svn", ".tox", ".venv", ".vscode", "__pypackages__", "_build", "buck-out", "dist",
                         "node_modules", "site-packages", "venv"]


def test_default_exclude_is_ruffs_and_a_build_package_is_checked(tmp_path):
    tree(tmp_path, "build/model.py", "pkg/build/model.py", "build-tools/x.py", ".cache/x.py", "top.py",
         *(f"{d}/x.py" for d in RUFF_DEFAULT_EXCLUDED), "pkg/node_modules/x.py", "lib/site-packages/x.py")
    assert checked(tmp_path, ".") == [".cache/x.py", "build-tools/x.py", "build/model.py", "pkg/build/model.py",
                                      "top.py"]


def test_exclude_replaces_the_defaults_and_extend_exclude_adds(tmp_path):
    tree(tmp_path, "gen/a.py", ".venv/b.py", "src/c.py", "src/gen/d.py")
    config(tmp_path, 'exclude = ["gen"]\n')
    assert checked(tmp_path, ".") == [".venv/b.py", "src/c.py"]
    config(tmp_path, 'extend-exclude = ["gen"]\n')
    assert checked(tmp_path, ".") == ["src/c.py"]
    config(tmp_path, 'exclude = []\n')
    assert checked(tmp_path, ".") == [".venv/b.py", "gen/a.py", "src/c.py", "src/gen/d.py"]


def test_globs_star_stays_in_a_folder_and_double_star_spans_folders(tmp_path):
    tree(tmp_path, "tests/x.py", "tests/deep/y.py", "a/tests/z.py", "a/b/tests/w.py", "keep.py")
    config(tmp_path, 'extend-exclude = ["tests/*.py"]\n')
    assert checked(tmp_path, ".") == ["a/b/tests/w.py", "a/tests/z.py", "keep.py", "tests/deep/y.py"]
    config(tmp_path, 'extend-exclude = ["**/tests/*.py"]\n')
    assert checked(tmp_path, ".") == ["keep.py", "tests/deep/y.py"]
    config(tmp_path, 'extend-exclude = ["a/**"]\n')
    assert checked(tmp_path, ".") == ["keep.py", "tests/deep/y.py", "tests/x.py"]
    config(tmp_path, 'extend-exclude = ["t?sts", "[k]eep.py"]\n')
    assert checked(tmp_path, ".") == []
    # A name glob (no `/`) matches at any depth; a path glob is anchored to the configuration's folder.
    config(tmp_path, 'extend-exclude = ["tests"]\n')
    assert checked(tmp_path, ".") == ["keep.py"]
    config(tmp_path, 'extend-exclude = ["a/tests"]\n')
    assert checked(tmp_path, ".") == ["a/b/tests/w.py", "keep.py", "tests/deep/y.py", "tests/x.py"]


def test_patterns_are_relative_to_the_configuration_folder_not_the_current_one(tmp_path):
    tree(tmp_path, "sub/gen/a.py", "sub/b.py", "sub/sub/gen/c.py")
    config(tmp_path, 'extend-exclude = ["sub/gen"]\n')
    sub = tmp_path / "sub"
    assert checked(sub, ".") == ["b.py", "sub/gen/c.py"]
    assert checked(sub, "gen") == ["gen/a.py"]  # an explicit folder is walked (force-exclude is off)


def test_command_line_patterns_are_relative_to_the_current_folder(tmp_path):
    tree(tmp_path, "sub/gen/a.py", "sub/b.py", "gen/c.py", ".venv/d.py")
    sub = tmp_path / "sub"
    # From sub/, `gen/*.py` is sub/gen/*.py: the top-level gen/c.py stays.
    assert checked(sub, "--extend-exclude", "gen/*.py", "..", base=tmp_path) == ["gen/c.py", "sub/b.py"]
    assert checked(tmp_path, "--exclude", "gen", ".") == [".venv/d.py", "sub/b.py"]
    assert checked(tmp_path, "--exclude", "gen,sub", ".") == [".venv/d.py"]
    config(tmp_path, 'extend-exclude = ["sub"]\n')
    assert checked(tmp_path, "--exclude", "gen", ".") == [".venv/d.py"]  # --exclude keeps extend-exclude


def test_force_exclude_applies_excludes_to_explicit_paths(tmp_path):
    tree(tmp_path, ".venv/lib/x.py", "gen/sub/y.py", "z.py")
    config(tmp_path, 'extend-exclude = ["gen"]\n')
    explicit = [".venv/lib/x.py", "gen/sub/y.py", "z.py"]
    assert checked(tmp_path, *explicit) == explicit
    assert checked(tmp_path, ".venv", "gen") == [".venv/lib/x.py", "gen/sub/y.py"]
    assert checked(tmp_path, "--force-exclude", *explicit) == ["z.py"]
    assert checked(tmp_path, "--force-exclude", ".venv", "gen/sub") == []
    config(tmp_path, 'extend-exclude = ["gen"]\nforce-exclude = true\n')
    assert checked(tmp_path, *explicit) == ["z.py"]
    assert checked(tmp_path, "--no-force-exclude", *explicit) == explicit
    proc = run("check", "gen/sub/y.py", cwd=tmp_path)
    assert proc.returncode == 0 and b"All checks passed!" in proc.stdout


def test_gitignore_semantics(tmp_path):
    git_init(tmp_path)
    tree(tmp_path, "a.py", "skip.py", "x.gen.py", "keep.gen.py", "top_only.py", "sub/top_only.py",
         "sub/anchored.py", "other/sub/anchored.py", "generated/inner.py", "out.py", "cache/c.py",
         "sub/local.py", "sub/x.gen.py", "info_excluded.py", "dot_ignored.py", "spaced.py", "hash.py", "#hash.py")
    (tmp_path / ".gitignore").write_text(
        "# comment.py\n"
        "skip.py\n"
        "*.gen.py\n"
        "!keep.gen.py\n"
        "/top_only.py\n"
        "sub/anchored.py\n"
        "generated/\n"
        "!generated/inner.py\n"  # a file inside an ignored folder stays ignored
        "out.py/\n"              # folders only: the file out.py is checked
        "cache\n"
        "spaced.py   \n"         # trailing spaces do not count
        "\\#hash.py\n"
    )
    (tmp_path / "sub" / ".gitignore").write_text("local.py\n!x.gen.py\n")  # deeper files win
    (tmp_path / ".git" / "info").mkdir(exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("info_excluded.py\n")
    (tmp_path / ".ignore").write_text("dot_ignored.py\n")
    expected = ["a.py", "hash.py", "keep.gen.py", "other/sub/anchored.py", "out.py", "sub/top_only.py", "sub/x.gen.py"]
    assert checked(tmp_path, ".") == expected
    # Walking a folder inside the repository still reads the .gitignore files above it.
    assert checked(tmp_path / "sub", ".") == ["top_only.py", "x.gen.py"]
    # Explicit files are checked whatever the ignore files say.
    assert checked(tmp_path, "skip.py", "generated/inner.py") == ["generated/inner.py", "skip.py"]
    everything = checked(tmp_path, "--no-respect-gitignore", ".")
    assert "skip.py" in everything and "generated/inner.py" in everything and len(everything) == 18
    config(tmp_path, "respect-gitignore = false\n")
    assert checked(tmp_path, ".") == everything
    assert checked(tmp_path, "--respect-gitignore", ".") == expected


def test_gitignore_files_count_only_inside_a_git_repository(tmp_path):
    tree(tmp_path, "a.py", "skip.py", "dot_ignored.py")
    (tmp_path / ".gitignore").write_text("skip.py\n")
    (tmp_path / ".ignore").write_text("dot_ignored.py\n")  # .ignore files need no repository (as in ruff)
    assert checked(tmp_path, ".") == ["a.py", "skip.py"]
    git_init(tmp_path)
    assert checked(tmp_path, ".") == ["a.py"]


def test_a_nested_repository_starts_its_own_gitignore_chain(tmp_path):
    git_init(tmp_path)
    tree(tmp_path, "vendored/lib.py", "vendored/skip.py", "skip.py", "a.py")
    (tmp_path / ".gitignore").write_text("skip.py\n")
    git_init(tmp_path / "vendored")
    (tmp_path / "vendored" / ".gitignore").write_text("lib.py\n")
    assert checked(tmp_path, ".") == ["a.py", "vendored/skip.py"]


def test_per_file_ignores_globs_match_like_exclude(tmp_path):
    tree(tmp_path, "tests/x.py", "a/tests/y.py", "tests/deep/z.py", "src/m.py")
    config(tmp_path, 'per-file-ignores = { "**/tests/*.py" = ["GM"] }\n')
    assert checked(tmp_path, ".") == ["src/m.py", "tests/deep/z.py"]
    config(tmp_path, 'per-file-ignores = { "tests/*.py" = ["GM"] }\n')
    assert checked(tmp_path, ".") == ["a/tests/y.py", "src/m.py", "tests/deep/z.py"]
    config(tmp_path, 'per-file-ignores = { "m.py" = ["GM"], "tests/**" = ["GM"] }\n')
    assert checked(tmp_path, ".") == ["a/tests/y.py"]
    # Relative to the configuration's folder, whatever the current folder.
    config(tmp_path, 'per-file-ignores = { "tests/*.py" = ["GM"] }\n')
    assert checked(tmp_path / "tests", ".") == ["deep/z.py"]


def test_an_unreadable_nested_configuration_is_reported_for_its_files(tmp_path):
    tree(tmp_path, "a.py", "sub/b.py")
    (tmp_path / "sub" / "pyproject.toml").write_text('[tool.graphmend]\nexlcude = ["x"]\n')
    proc = run("check", ".", cwd=tmp_path)
    assert proc.returncode == 2
    assert "unknown key `exlcude` in [tool.graphmend]; did you mean `exclude`?" in proc.stderr.decode()


@pytest.mark.parametrize("name", ["build", "dist"])
def test_a_named_folder_given_explicitly_is_walked(tmp_path, name):
    tree(tmp_path, f"{name}/m.py")
    assert checked(tmp_path, name) == [f"{name}/m.py"]
