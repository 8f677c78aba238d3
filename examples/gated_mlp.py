"""A gated MLP block with the graph breaks Hugging Face models are full of.

Run `graphmend check examples/` to see them, `graphmend check --diff examples/` for the fixes, and
`graphmend validate examples/gated_mlp.py::example` to prove the fixed block compiles as one graph.
"""
import logging
import warnings

import torch
from torch import nn

logger = logging.getLogger(__name__)


class GatedMLP(nn.Module):
    def __init__(self, hidden: int = 64, ratio: int = 4):
        super().__init__()
        self.up = nn.Linear(hidden, hidden * ratio)
        self.gate = nn.Linear(hidden, hidden * ratio)
        self.down = nn.Linear(hidden * ratio, hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        if torch.isnan(hidden_states).any():
            raise ValueError("NaN in the input of GatedMLP")
        logger.info("gated mlp on %s tokens", hidden_states.size(1))
        h = self.norm(hidden_states)
        up = self.up(h)
        gate = torch.sigmoid(self.gate(h))
        # Saturated gates: fall back to a plain activation (a data-dependent branch).
        if gate.mean() > 0.9:
            act = up * 0.5
        else:
            act = up * gate
        out = self.down(act)
        out = out if out.abs().max() < 10 else out * 0.1
        if out.abs().amax() > 1e4:
            warnings.warn("GatedMLP output is very large")
        print("gated mlp done")
        return hidden_states + out


def example():
    torch.manual_seed(0)
    return GatedMLP().eval(), (torch.randn(2, 8, 64),)
