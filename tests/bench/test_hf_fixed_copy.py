"""The fixed arm's package copy: symlinks to the original except the files graphmend may rewrite."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "hf"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))

import run  # noqa: E402


def test_fixed_copy_isolates_rewritten_files(tmp_path):
    orig = tmp_path / "site" / "transformers"
    (orig / "models" / "toy").mkdir(parents=True)
    (orig / "utils").mkdir()
    (orig / "__pycache__").mkdir()
    (orig / "__init__.py").write_text("from .models.toy.modeling_toy import VALUE\n")
    (orig / "models" / "__init__.py").write_text("")
    (orig / "models" / "toy" / "__init__.py").write_text("")
    (orig / "models" / "toy" / "modeling_toy.py").write_text("VALUE = 1\n")
    (orig / "utils" / "generic.py").write_text("X = 1\n")
    (orig / "__pycache__" / "junk.pyc").write_bytes(b"x")
    dest = tmp_path / "fixed"
    pkg = run.make_fixed_copy(str(orig), ["models/toy/modeling_toy.py"], str(dest))
    assert pkg == str(dest / "transformers")
    mod = dest / "transformers" / "models" / "toy" / "modeling_toy.py"
    assert not mod.is_symlink() and mod.read_text() == "VALUE = 1\n"
    assert (dest / "transformers" / "utils" / "generic.py").is_symlink()
    assert not (dest / "transformers" / "__pycache__").exists()
    # a rewrite of the copy (what `graphmend check --fix` does) leaves the original alone
    mod.write_text("VALUE = 2\n")
    assert (orig / "models" / "toy" / "modeling_toy.py").read_text() == "VALUE = 1\n"
    assert run.diff_stats(str(orig / "models" / "toy" / "modeling_toy.py"), str(mod)) == {"added": 1, "removed": 1}
    # and the copy, first on sys.path, is what `import transformers` finds
    out = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import transformers;"
                          "print(transformers.VALUE, transformers.__file__)", str(dest)],
                         capture_output=True, text=True, check=True, cwd=str(tmp_path))
    value, path = out.stdout.split()
    assert value == "2" and path.startswith(str(dest))
