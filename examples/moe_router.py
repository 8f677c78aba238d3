"""A top-1 mixture-of-experts router: dynamic shapes graphmend explains but cannot fix safely,
next to a `.item()` and a mask reduction it can reason about."""
import torch
from torch import nn


class Top1Router(nn.Module):
    def __init__(self, hidden: int = 32, experts: int = 4):
        super().__init__()
        self.router = nn.Linear(hidden, experts)
        self.experts = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.router(x)
        choice = logits.argmax(dim=-1)
        out = torch.zeros_like(x)
        for index, expert in enumerate(self.experts):
            selected = torch.nonzero(choice == index, as_tuple=True)[0]
            out[selected] = expert(x[selected])
        load = (choice == 0).float().mean().item()
        if load > 0.5:
            out = out * 0.5
        return out


def example():
    torch.manual_seed(0)
    return Top1Router().eval(), (torch.randn(16, 32),)
