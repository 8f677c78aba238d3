"""Fixtures of the editor clients' tests."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from clients_env import require_graphmend  # noqa: E402


@pytest.fixture(scope="session")
def graphmend() -> Path:
    return require_graphmend()
