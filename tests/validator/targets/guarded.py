"""A block whose input guard breaks the graph: `if <tensor test>: raise ValueError(...)`. GM301's fix
(`--unsafe-fixes`) moves the raise into a Python custom operator: one graph, but a C++ deployment cannot
run the operator (tests/validator/test_deploy.py)."""
import torch
from torch import nn


class Guarded(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        if not torch.isfinite(h).all():
            raise ValueError("non-finite activations")
        return h.relu()


def make():
    torch.manual_seed(0)
    return Guarded(), (torch.randn(4, 8),)
