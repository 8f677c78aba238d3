"""A residual block whose graph breaks graphmend's safe fixes remove completely: after `--fix` it
compiles with fullgraph=True, exports, packages with AOTInductor and runs from C++.

    graphmend validate examples/deployable_block.py::example --deploy

The original stops at the first tensor-valued `if`: torch.export fails there (strict: "Data-dependent
branching"; non-strict: a guard on a data-dependent value), so it cannot be deployed without Python.
"""
import torch
from torch import nn


class DampedResidual(nn.Module):
    def __init__(self, hidden: int = 32):
        super().__init__()
        self.ff = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.ff(self.norm(x)))
        # Saturated activations are damped: a branch on a tensor's value.
        if h.abs().max() > 4.0:
            h = h * 0.5
        # The fp16 overflow clamp of Hugging Face encoder layers (BART, T5, Marian).
        if x.dtype == torch.float16 and (torch.isinf(h).any() or torch.isnan(h).any()):
            clamp_value = torch.finfo(h.dtype).max - 1000
            h = torch.clamp(h, min=-clamp_value, max=clamp_value)
        return x + h


def example():
    torch.manual_seed(0)
    return DampedResidual().eval(), (torch.randn(2, 6, 32),)


def example_saturated():
    """Inputs that take the damping branch (h.abs().max() > 4)."""
    torch.manual_seed(0)
    return DampedResidual().eval(), (torch.randn(2, 6, 32) * 50.0,)
