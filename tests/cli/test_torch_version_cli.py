"""Which torch's facts `check` applies: --torch-version, then `torch-version` in [tool.graphmend], then the
torch installed in an environment near the file (read from its site-packages, no interpreter started), then
the newest supported. The JSON names the release and the break id Dynamo gives on it."""
import json
import os
import subprocess

from cli_support import BIN

TIME_CALL = "import time\nimport torch\n\n\n@torch.compile\ndef f(x):\n    t = time.time()\n    return x + t\n"


def fake_venv(root, version):
    site = root / ".venv" / "lib" / "python3.11" / "site-packages" / "torch"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("")
    (site / "version.py").write_text(f"__version__ = '{version}'\ndebug = False\n")
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)


def check(path, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    proc = subprocess.run([str(BIN), "check", "--no-cache", "--output-format", "json", "--exit-zero", *args,
                           str(path)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    [finding] = json.loads(proc.stdout)
    return finding["graphmend"]["torch_version"], finding["graphmend"]["dynamo_registry_id"]


def test_installed_torch_near_the_file(tmp_path):
    fake_venv(tmp_path, "2.14.1+cu130")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text(TIME_CALL)
    assert check(tmp_path / "src" / "m.py") == ("2.14", "GB0007")


def test_newest_supported_without_torch_and_flag_wins(tmp_path):
    (tmp_path / "m.py").write_text(TIME_CALL)
    assert check(tmp_path / "m.py") == ("2.15", "GB9193")
    assert check(tmp_path / "m.py", "--torch-version", "2.13") == ("2.13", "GB0007")
    # Older and newer releases get the nearest supported one's facts.
    assert check(tmp_path / "m.py", "--torch-version", "2.9")[0] == "2.13"


def test_pyproject_wins_over_the_installed_torch(tmp_path):
    fake_venv(tmp_path, "2.15.0")
    (tmp_path / "pyproject.toml").write_text('[tool.graphmend]\ntorch-version = "2.13"\n')
    (tmp_path / "m.py").write_text(TIME_CALL)
    assert check(tmp_path / "m.py") == ("2.13", "GB0007")
    assert check(tmp_path / "m.py", "--torch-version", "2.15") == ("2.15", "GB9193")


def test_bad_version_is_an_error(tmp_path):
    (tmp_path / "m.py").write_text(TIME_CALL)
    proc = subprocess.run([str(BIN), "check", "--torch-version", "latest", str(tmp_path / "m.py")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "2.15" in proc.stderr, proc.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.graphmend]\ntorch-version = "new"\n')
    proc = subprocess.run([str(BIN), "check", str(tmp_path / "m.py")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "torch-version" in proc.stderr and "pyproject.toml:2" in proc.stderr, proc.stderr


LOGGER_REGISTERED = (
    "import logging\nimport torch\nfrom torch import nn\n\nlogger = logging.getLogger(__name__)\n"
    "torch._dynamo.config.reorderable_logging_functions.add(logger.info)\n\n\n"
    "class M(nn.Module):\n    def helper(self, x):\n        logger.info('helper')\n        return x\n\n"
    "    def forward(self, x):\n        return self.helper(x)\n")


def test_a_registered_logger_method_breaks_before_2_14_and_is_dropped_in_a_helper_from_it(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(LOGGER_REGISTERED)
    runs = {}
    for release in ("2.13", "2.14"):
        proc = subprocess.run([str(BIN), "check", "--no-cache", "--torch-version", release, str(path)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1, proc.stderr
        runs[release] = proc.stdout
    assert "GM202" in runs["2.13"] and "Found 1 graph break." in runs["2.13"]
    assert "GM205" in runs["2.14"] and "GM202" not in runs["2.14"]
    assert "Found 1 dropped deferred call." in runs["2.14"]
