"""One graph under torch.compile, but not exportable: forward returns an object of a plain class,
which torch.export cannot flatten (export needs pytree outputs). The deploy proof must report it."""
import torch
from torch import nn


class Scores:
    def __init__(self, logits):
        self.logits = logits


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return Scores(self.fc(x))


def make():
    torch.manual_seed(0)
    return Scorer(), (torch.randn(4, 8),)
