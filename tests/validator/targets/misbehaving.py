"""Targets whose user code misbehaves. GRAPHMEND_TEST_PIDFILE, when set, receives the pid of the
process running forward() just before it misbehaves."""
import os
import signal
import time

import torch
from torch import nn


def _note_pid():
    path = os.environ.get("GRAPHMEND_TEST_PIDFILE")
    if path:
        with open(path, "w") as handle:
            handle.write(str(os.getpid()))


class Raises(nn.Module):
    def forward(self, x):
        if x.shape[0] == 2:
            raise ValueError("shape two is not supported")
        return x


class Hangs(nn.Module):
    def forward(self, x):
        _note_pid()
        while True:
            time.sleep(0.1)


class Exits(nn.Module):
    def forward(self, x):
        _note_pid()
        os._exit(7)


class Segfaults(nn.Module):
    def forward(self, x):
        _note_pid()
        os.kill(os.getpid(), signal.SIGSEGV)
        return x


class Hungry(nn.Module):
    def forward(self, x):
        big = torch.empty(16 * 1024**3, dtype=torch.uint8)  # 16 GiB of address space
        return x + big[:1].float()


def raises():
    return Raises(), (torch.ones(2, 3),)


def hangs():
    return Hangs(), (torch.ones(2, 3),)


def exits():
    return Exits(), (torch.ones(2, 3),)


def segfaults():
    return Segfaults(), (torch.ones(2, 3),)


def hungry():
    return Hungry(), (torch.ones(2, 3),)


def not_a_pair():
    return Raises()
