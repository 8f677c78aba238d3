"""torch.ops.aten._print (an effectful op) as an in-graph print: breaks? printed? in helpers?"""
import torch
from torch import nn
from harness import probe


def helper(t):
    torch.ops.aten._print("helper says hi")
    return t * 2


class M(nn.Module):
    def forward(self, x):
        torch.ops.aten._print("forward says hi")
        y = helper(x)
        return y + 1


probe("aten._print eager backend", M(), (torch.ones(2),), show_explain=False)
torch._dynamo.reset()
print("--- fullgraph aot_eager")
try:
    torch.compile(M(), backend="aot_eager", fullgraph=True)(torch.ones(2))
except Exception as e:
    print("raised", type(e).__name__, str(e)[:200])
print("--- fullgraph inductor")
torch._dynamo.reset()
try:
    torch.compile(M(), fullgraph=True)(torch.ones(2))
except Exception as e:
    print("raised", type(e).__name__, str(e)[:200])
