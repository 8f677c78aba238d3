"""A "fix" of branchy.py that removes the breaks but changes the result: the else branch is lost."""
import torch
from torch import nn


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 16)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.where(h.mean() > 0.1, h * 0.5, h)  # wrong: the original adds 1.0 otherwise
        scale = h.abs().max()
        h = torch.where(scale > 4.0, h / scale, h)
        return self.fc2(h)


def make_low():
    torch.manual_seed(0)
    # Inputs whose hidden mean stays below 0.1, so the original takes the `else` branch.
    return Branchy(), (torch.randn(8, 16) * 0.01,)
