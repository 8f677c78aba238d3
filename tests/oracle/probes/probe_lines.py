"""Line attribution for multi-line constructs (Python 3.11 bytecode positions)."""
import torch
from torch import nn
from harness import probe


class MultiAnd(nn.Module):
    def forward(self, x):
        y = x * 2
        if (
            x.sum() > 0
            and x.max() < 10
        ):
            y = y + 1
        return y


class MultiCall(nn.Module):
    def forward(self, x):
        y = x * 2
        print(
            "multi",
            1,
        )
        s = (y
             .sum()
             .item())
        return y + s


class ElifChain(nn.Module):
    def forward(self, x):
        if x.sum() > 1000:
            return x + 1
        elif x.sum() > 500:
            return x + 2
        elif (
            x.mean() > -10
        ):
            return x + 3
        return x


class TernaryMulti(nn.Module):
    def forward(self, x):
        z = (x + 1
             if x.sum() > 0
             else x - 1)
        return z


class AssertMulti(nn.Module):
    def forward(self, x):
        msg = "m"
        assert (
            x.sum() > -1000
        ), msg
        return x + 1


x = torch.randn(4, 3).abs()
probe("multi-line and, both evaluated (expect lines 11 and 12)", MultiAnd(), (x,), show_explain=False)
probe("multi-line print (21) and .item() (27)", MultiCall(), (x,), show_explain=False)
probe("elif chain (32, 34, 37)", ElifChain(), (x,), show_explain=False)
probe("ternary multiline (46)", TernaryMulti(), (x,), show_explain=False)
probe("assert multi (54)", AssertMulti(), (x,), show_explain=False)
