"""An encoder stack with LayerDrop and a finiteness guard on the training path, as in Wav2Vec2/BART."""
import torch
from torch import nn


class EncoderLayer(nn.Module):
    def __init__(self, hidden: int = 32):
        super().__init__()
        self.ff = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm(x + torch.relu(self.ff(x)))
        if not torch.isfinite(y).all():
            raise RuntimeError("non-finite activations in EncoderLayer")
        return y


class Encoder(nn.Module):
    def __init__(self, layers: int = 3, hidden: int = 32, layerdrop: float = 0.1):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(hidden) for _ in range(layers))
        self.layerdrop = layerdrop

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            # LayerDrop: a coin flip on the training path. Random, so predication must not run it twice.
            if self.training and torch.rand([]) < self.layerdrop:
                continue
            x = layer(x)
        return x


def example():
    torch.manual_seed(0)
    return Encoder().eval(), (torch.randn(4, 10, 32),)
