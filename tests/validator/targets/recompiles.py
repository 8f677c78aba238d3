"""A module whose Python-int state changes every call: Dynamo guards on it and recompiles."""
import torch
from torch import nn


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * self.calls


def make():
    return Counter(), (torch.ones(3),)
