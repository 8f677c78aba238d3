import torch


def step(x, *, scale):
    y = torch.tanh(x) * scale
    return y.cumsum(0)


def make():
    return step, [torch.linspace(-2.0, 2.0, 32)], {"scale": 3.0}
