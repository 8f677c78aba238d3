"""Graph-native guard that keeps the eager exception: is_compiling() split + torch._assert_async."""
import torch
from torch import nn
from harness import probe


class Guard(nn.Module):
    def forward(self, x):
        y = x * 2
        if torch.compiler.is_compiling():
            torch._assert_async(~(y < -100).any(), "too small")
        elif (y < -100).any():
            raise ValueError("too small")
        return y + 1


x = torch.randn(4, 3)
probe("is_compiling split guard", Guard(), (x,), show_explain=False)
bad = torch.full((2, 2), -1000.0)
for label, fn in [("eager", Guard()), ("compiled", torch.compile(Guard(), backend="eager", fullgraph=True))]:
    torch._dynamo.reset()
    try:
        fn(bad)
        print(label, "no exception")
    except Exception as e:
        print(label, type(e).__name__, str(e).splitlines()[0])
