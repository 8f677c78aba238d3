import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from validator_support import BIN, PY  # noqa: E402


@pytest.fixture(scope="session")
def graphmend_bin():
    assert os.access(BIN, os.X_OK), f"graphmend binary not found at {BIN} (build it, or set GRAPHMEND_BIN)"
    return BIN


@pytest.fixture(scope="session")
def torchless_python(tmp_path_factory):
    """An interpreter without torch: a fresh venv made --without-pip from a torch-less base python."""
    base = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    folder = tmp_path_factory.mktemp("torchless") / "venv"
    subprocess.run([base, "-m", "venv", "--without-pip", str(folder)], check=True, capture_output=True)
    python = str(folder / "bin" / "python")
    probe = subprocess.run([python, "-c", "import torch"], capture_output=True)
    assert probe.returncode != 0, "the bare venv unexpectedly imports torch"
    return python
