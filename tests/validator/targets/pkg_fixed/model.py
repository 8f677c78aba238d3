# The fixed pkg/model.py, kept outside the package: its relative import must still resolve to pkg.
import torch
from torch import nn

from .layers import Gate


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate(8)
        self.out = nn.Linear(8, 4)

    def forward(self, x, bias=None):
        h = self.gate(x)
        h = torch.where(h.sum() < 0, -h, h)
        if bias is not None:
            h = h + bias
        return {"logits": self.out(h), "hidden": h}


def make():
    return Net(), (torch.randn(3, 8),), {"bias": torch.full((8,), 0.25)}
