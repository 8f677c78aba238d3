"""A small model with three graph breaks: a tensor-valued `if`, a `print`, and `.item()` in a predicate."""
import torch
from torch import nn


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 16)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        if h.mean() > 0.1:
            h = h * 0.5
        else:
            h = h + 1.0
        print("hidden norm computed")
        scale = h.abs().max().item()
        if scale > 4.0:
            h = h / scale
        return self.fc2(h)


def make():
    torch.manual_seed(0)
    return Branchy(), (torch.randn(8, 16),)


def make_low():
    """Inputs whose hidden mean stays below 0.1: the `else` branch runs."""
    torch.manual_seed(0)
    return Branchy(), (torch.randn(8, 16) * 0.01,)
