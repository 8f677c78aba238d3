"""Loop breaks inside helpers: which frames get skipped."""
import torch
from torch import nn
from harness import probe


def helper_loop_print(y):
    for i in range(2):
        y = y + 1
        print("h", i)
    return y


def helper_loop_item(y):
    for i in range(2):
        y = y + y.sum().item()
    return y


class CallsLoopHelpers(nn.Module):
    def forward(self, x):
        y = x * 2
        y = helper_loop_print(y)
        y = y * 3
        y = helper_loop_item(y)
        return y - 1


class TwoBreaksInLoop(nn.Module):
    def forward(self, x):
        y = x * 2
        for i in range(2):
            print("a")
            y = y + y.sum().item()
        return y


probe("forward calls two helpers each with a loop break", CallsLoopHelpers(), (torch.ones(2),))
probe("two breaks in one loop (only the first is seen?)", TwoBreaksInLoop(), (torch.ones(2),))
