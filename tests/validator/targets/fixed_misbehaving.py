"""A "fixed" branchy.py whose forward misbehaves, so the failure happens in the measured fixed arm
(after the prepare step and the original arm succeeded). Which way is chosen by GRAPHMEND_TEST_MODE."""
import os
import signal

import torch
from torch import nn


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 16)

    def forward(self, x):
        mode = os.environ.get("GRAPHMEND_TEST_MODE", "raise")
        if mode == "raise":
            raise RuntimeError("the fixed forward is broken")
        if mode == "exit":
            os._exit(7)
        if mode == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        return self.fc2(torch.relu(self.fc1(x)))


def make():
    torch.manual_seed(0)
    return Branchy(), (torch.randn(8, 16),)
