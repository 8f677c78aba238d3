"""GM1xx probes: data-dependent control flow."""
import torch
from torch import nn
from harness import probe


class If(nn.Module):
    def forward(self, x):
        y = x * 2
        if x.sum() > 0:  # L11
            y = y + 1
        return y


class IfMultiLine(nn.Module):
    def forward(self, x):
        y = x * 2
        if (
            x.sum() > 0  # L20
            and x.max() < 10  # L21
        ):
            y = y + 1
        return y


class Elif(nn.Module):
    def forward(self, x):
        y = x * 2
        if x.shape[0] > 100:
            y = y - 1
        elif x.mean() > 0:  # L32
            y = y + 1
        return y


class Ternary(nn.Module):
    def forward(self, x):
        y = x * 2
        z = y + 1 if x.sum() > 0 else y - 1  # L40
        return z


class While(nn.Module):
    def forward(self, x):
        y = x * 2
        while y.sum() > 1:  # L47
            y = y / 2
        return y


class OrValue(nn.Module):
    def forward(self, a, b):
        y = a * 2
        z = y or b  # L55
        return z


class NotValue(nn.Module):
    def forward(self, a):
        y = a * 2
        flag = not y.any()  # L62
        return a + 1, flag


class AndTensors(nn.Module):
    def forward(self, a, b):
        y = a * 2
        if a.sum() > 0 and b.sum() > 0:  # L69
            y = y + 1
        return y


class Negatives(nn.Module):
    def __init__(self):
        super().__init__()
        self.flag = True

    def forward(self, x, mask=None):
        y = x * 2
        if x.shape[0] > 1:
            y = y + 1
        if mask is None:
            y = y + 2
        if self.training:
            y = y + 3
        if x.dtype == torch.float16:
            y = y.float()
        if self.flag:
            y = y + 4
        if not torch.compiler.is_compiling():
            if y.sum() > 0:
                print("never traced")
        if x.numel() and x.dim() == 2:
            y = y + 5
        z = y if x.size(0) else x
        return z


class OrScalarTensor(nn.Module):
    def forward(self, x):
        y = x.sum()  # 0-d
        z = (y > 0) or (y < -5)  # L102
        return x + 1, z


x = torch.randn(4, 3)
probe("if", If(), (x,))
probe("if multiline", IfMultiLine(), (x,))
probe("elif", Elif(), (x,))
probe("ternary", Ternary(), (x,))
probe("while", While(), (x.abs() + 1,))
probe("or value 1-elem", OrValue(), (torch.tensor([0.0]), torch.tensor([2.0])))
probe("not value", NotValue(), (x,))
probe("and tensors", AndTensors(), (x, x))
probe("negatives", Negatives(), (x,))
probe("or scalar tensors", OrScalarTensor(), (x,))
