"""Reorderable print inside an inlined helper: is it emitted?"""
import torch
from torch import nn

torch._dynamo.config.reorderable_logging_functions.add(print)


def report(t):
    print("in helper", t.mean())
    return t


def report_returns_none(t):
    print("in helper, value unused", t.mean())


class M(nn.Module):
    def forward(self, x):
        y = x * 2
        print("in forward", y.sum())
        y = report(y * 2)
        report_returns_none(y)
        return y + 1


class M2(nn.Module):
    def forward(self, x):
        y = report(x * 2)
        return y + 1


x = torch.ones(2)
print("--- eager"); M()(x)
for name, m in [("M", M()), ("M2 (helper only)", M2())]:
    torch._dynamo.reset()
    graphs = []
    def backend(gm, ex):
        graphs.append(gm); return gm.forward
    print(f"--- compiled {name}")
    torch.compile(m, backend=backend)(x)
    print("graphs:", len(graphs))


import logging, sys, warnings
logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="LOG %(funcName)s %(message)s")
logger = logging.getLogger("p")


def gm_info(*args):
    logger.info(*args, stacklevel=2)


torch._dynamo.config.reorderable_logging_functions.update({gm_info, warnings.warn})


class Sub(nn.Module):
    def forward(self, x):
        print("in submodule forward", x.sum())
        gm_info("wrapper in submodule %s", 1)
        warnings.warn("warn in submodule")
        return x * 2


class Parent(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = Sub()

    def forward(self, x):
        gm_info("wrapper in parent %s", 2)
        return self.sub(x) + 1


print("--- eager Parent")
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    Parent()(x)
    print("warnings:", [str(i.message) for i in w])
torch._dynamo.reset()
print("--- compiled Parent")
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    torch.compile(Parent(), backend="eager")(x)
    print("warnings:", [str(i.message) for i in w if "torch/_dynamo" not in i.filename])
