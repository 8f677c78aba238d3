"""Small models, one common graph-break pattern each (the shapes graphmend's rules are about), for
the example zoo: some graphmend fixes safely, some it only reports."""
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class ClampedScale(nn.Module):
    """A Python `if` on a tensor's value, with a clamp on one side (fixed by predication)."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        y = self.proj(x)
        if y.abs().max() > 4.0:
            y = y.clamp(-4.0, 4.0)
        return y


class ItemThreshold(nn.Module):
    """`.item()` read into Python control flow."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        y = self.proj(x)
        if y.mean().item() > 0:
            return torch.relu(y)
        return y


class GuardedNorm(nn.Module):
    """A runtime guard: raise after a tensor check, and a log line on the hot path."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)

    def forward(self, x):
        if torch.isnan(x).any():
            raise ValueError("NaN in the input")
        logger.debug("normalising a batch of %d", x.shape[0])
        return self.norm(x)


class NonzeroGather(nn.Module):
    """A data-dependent shape: nonzero, then a gather of the selected rows."""

    def forward(self, x):
        rows = torch.nonzero(x[:, 0] > 0).squeeze(-1)
        return x.index_select(0, rows).sum(0)


class PrintDebug(nn.Module):
    """A print left in forward."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 8)

    def forward(self, x):
        y = self.proj(x)
        print("proj out", tuple(y.shape))
        return torch.tanh(y)


class CleanMLP(nn.Module):
    """No break at all: the zoo's control (one graph in both arms)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))

    def forward(self, x):
        return self.net(x) + x


class NumpyRoundTrip(nn.Module):
    """A tensor taken to NumPy and back (a host copy in the middle of forward)."""

    def forward(self, x):
        scale = float(x.detach().numpy().std())
        return x / (scale + 1.0)


class TolistLoop(nn.Module):
    """`.tolist()` driving a Python loop over the batch."""

    def forward(self, x):
        out = []
        for n in (x[:, 0] > 0).long().tolist():
            out.append(torch.full((2,), float(n)))
        return torch.stack(out) + x[:, :2]


class MaskedUpdate(nn.Module):
    """`if mask.any():` around a masked update, the shape of attention-mask handling."""

    def forward(self, x):
        mask = x < -1.0
        if mask.any():
            x = x.masked_fill(mask, -1.0)
        return x * 2


def _batch():
    return (torch.randn(4, 16, generator=torch.Generator().manual_seed(1)),)


def clamped_scale():
    torch.manual_seed(0)
    return ClampedScale(), _batch()


def item_threshold():
    torch.manual_seed(0)
    return ItemThreshold(), _batch()


def guarded_norm():
    torch.manual_seed(0)
    return GuardedNorm(), _batch()


def nonzero_gather():
    torch.manual_seed(0)
    return NonzeroGather(), _batch()


def print_debug():
    torch.manual_seed(0)
    return PrintDebug(), _batch()


def clean_mlp():
    torch.manual_seed(0)
    return CleanMLP(), _batch()


def numpy_round_trip():
    torch.manual_seed(0)
    return NumpyRoundTrip(), _batch()


def tolist_loop():
    torch.manual_seed(0)
    return TolistLoop(), _batch()


def masked_update():
    torch.manual_seed(0)
    return MaskedUpdate(), _batch()
