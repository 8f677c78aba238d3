"""Inputs that are not plain tensors: a namedtuple and an object. The arms must receive them as such."""
import collections

import torch

Batch = collections.namedtuple("Batch", "x scale")


class Opts:
    def __init__(self):
        self.shift = torch.tensor(0.5)


def step(batch, opts):
    assert isinstance(batch, Batch) and isinstance(opts, Opts), (type(batch), type(opts))
    return {"y": batch.x * batch.scale + opts.shift, "n": batch.x.numel()}


def make():
    return step, (Batch(torch.arange(4.0), 2.0), Opts())
