"""Loop amplification, helpers, train/eval/no_grad probes."""
import logging
import torch
from torch import nn
from harness import probe

logger = logging.getLogger("probe")


class LoopIf(nn.Module):
    def forward(self, x):
        y = x * 2
        for i in range(3):
            y = y + 1
            if y.sum() > 0:
                y = y - 1
        return y


class LoopPrint(nn.Module):
    def forward(self, x):
        y = x * 2
        for i in range(3):
            y = y + 1
            print("iter", i)
        return y


class LoopItem(nn.Module):
    def forward(self, x):
        y = x * 2
        for i in range(3):
            y = y + y.sum().item()
        return y


class WhileCount(nn.Module):
    def forward(self, x):
        y = x * 2
        i = 0
        while i < 3:
            y = y + 1
            print(i)
            i += 1
        return y


def helper_if(y):
    z = y + 1
    if z.sum() > 0:
        z = z * 3
    return z


def helper_print(y):
    z = y + 1
    print("helper")
    return z


def outer_helper(y):
    return helper_item(y) + 1


def helper_item(y):
    return y * y.sum().item()


class CallsHelperIf(nn.Module):
    def forward(self, x):
        y = x * 2
        y = helper_if(y)
        return y + 1


class CallsHelperPrint(nn.Module):
    def forward(self, x):
        y = x * 2
        y = helper_print(y)
        return y + 1


class CallsNested(nn.Module):
    def forward(self, x):
        y = x * 2
        y = outer_helper(y)
        return y + 1


class Sub(nn.Module):
    def forward(self, x):
        print("sub")
        return x + 1


class CallsSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = Sub()

    def forward(self, x):
        y = x * 2
        y = self.sub(y)
        return y + 1


class LoopHelper(nn.Module):
    def forward(self, x):
        y = x * 2
        for _ in range(2):
            y = helper_if(y)
        return y


class LayerList(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Sub(), Sub()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class TrainPath(nn.Module):
    def forward(self, x):
        y = x * 2
        if self.training and y.sum() > 0:
            y = y + 1
        return y


class LoopWithBreakAfter(nn.Module):
    def forward(self, x):
        y = x * 2
        for i in range(3):
            y = y + 1
        print("after loop")
        return y


x = torch.randn(4, 3).abs()
probe("loop if", LoopIf(), (x,))
probe("loop print", LoopPrint(), (x,))
probe("loop item", LoopItem(), (x,))
probe("while count print", WhileCount(), (x,))
probe("loop then print after", LoopWithBreakAfter(), (x,))
probe("helper if", CallsHelperIf(), (x,))
probe("helper print", CallsHelperPrint(), (x,))
probe("nested helper item", CallsNested(), (x,))
probe("submodule print", CallsSubmodule(), (x,))
probe("loop calling helper", LoopHelper(), (x,))
probe("modulelist loop, break in layer", LayerList(), (x,))
m = TrainPath()
probe("train path training=True", m, (x,))
m.eval()
probe("train path eval", m, (x,))
with torch.no_grad():
    probe("helper if under no_grad", CallsHelperIf(), (x,))
    probe("loop if under no_grad", LoopIf(), (x,))
