"""Shared by the CLI tests: the binary under test and a model file with two graph breaks."""
import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.path.abspath(os.environ.get("GRAPHMEND_BIN", str(ROOT / "build" / "graphmend")))

# A tensor-valued `if` (GM101, safe fix) and a `print` (GM201) in a forward: the in-graph print is an unsafe fix
# there (a forward may be inlined into a caller), so tests that expect every finding fixed pass --unsafe-fixes.
BREAKING = """import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        y = x * 2
        if y.sum() > 0:
            y = y + 1
        print("done")
        return y
"""
