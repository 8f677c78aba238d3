"""GM2xx-GM6xx probes: side effects, guards, tensor->Python, dynamic shapes, unsupported Python."""
import copy
import logging
import time
import warnings

import torch
from torch import nn
from harness import probe

logger = logging.getLogger("probe")
try:
    from transformers.utils import logging as hf_logging
    hf_logger = hf_logging.get_logger("probe_hf")
except Exception:  # noqa: BLE001
    hf_logger = None


def mk(body):
    """Build a Module whose forward is `y = x * 2; <body>; return y + 1` from a lambda."""
    class M(nn.Module):
        def forward(self, x):
            y = x * 2
            body(self, x, y)
            return y + 1
    return M()


class Print(nn.Module):
    def forward(self, x):
        y = x * 2
        print("hello", y.shape)
        return y + 1


class Log(nn.Module):
    def forward(self, x):
        y = x * 2
        logger.info("info %s", 1)
        return y + 1


class LogWarning(nn.Module):
    def forward(self, x):
        y = x * 2
        logging.warning("root warning")
        return y + 1


class HfWarnOnce(nn.Module):
    def forward(self, x):
        y = x * 2
        hf_logger.warning_once("once!")
        return y + 1


class HfInfoOnce(nn.Module):
    def forward(self, x):
        y = x * 2
        hf_logger.info_once("info once!")
        return y + 1


class Warn(nn.Module):
    def forward(self, x):
        y = x * 2
        warnings.warn("careful")
        return y + 1


class Raise(nn.Module):
    def forward(self, x):
        y = x * 2
        if (y < -100).any():
            raise ValueError("too small")
        return y + 1


class AssertLiteral(nn.Module):
    def forward(self, x):
        y = x * 2
        assert (y > -100).all(), "literal message"
        return y + 1


class AssertNoMsg(nn.Module):
    def forward(self, x):
        y = x * 2
        assert (y > -100).all()
        return y + 1


class AssertFString(nn.Module):
    def forward(self, x):
        y = x * 2
        assert (y > -100).all(), f"bad shape {y.shape}"
        return y + 1


class AssertVarMsg(nn.Module):
    MSG = "constant attr message"

    def forward(self, x):
        y = x * 2
        assert (y > -100).all(), self.MSG
        return y + 1


class Item(nn.Module):
    def forward(self, x):
        y = x * 2
        s = y.sum().item()
        return y + s


class Tolist(nn.Module):
    def forward(self, x):
        y = x * 2
        s = y.tolist()
        return y + len(s)


class IntT(nn.Module):
    def forward(self, x):
        y = x * 2
        n = int(y.sum())
        return y + n


class FloatT(nn.Module):
    def forward(self, x):
        y = x * 2
        n = float(y.sum())
        return y + n


class BoolT(nn.Module):
    def forward(self, x):
        y = x * 2
        b = bool(y.sum() > 0)
        return y + b


class Numpy(nn.Module):
    def forward(self, x):
        y = x * 2
        a = y.numpy()
        return y + 1, a


class Mask(nn.Module):
    def forward(self, x):
        y = x * 2
        z = y[y > 0]
        return z + 1


class Nonzero(nn.Module):
    def forward(self, x):
        y = x * 2
        z = torch.nonzero(y > 0)
        return z + 1


class NonzeroM(nn.Module):
    def forward(self, x):
        y = x * 2
        z = (y > 0).nonzero()
        return z + 1


class Argwhere(nn.Module):
    def forward(self, x):
        y = x * 2
        z = torch.argwhere(y > 0)
        return z + 1


class Where1(nn.Module):
    def forward(self, x):
        y = x * 2
        z = torch.where(y > 0)
        return z[0] + 1


class Unique(nn.Module):
    def forward(self, x):
        y = x * 2
        z = torch.unique(y)
        return z + 1


class UniqueM(nn.Module):
    def forward(self, x):
        y = x * 2
        z = y.unique()
        return z + 1


class MaskedSelect(nn.Module):
    def forward(self, x):
        y = x * 2
        z = torch.masked_select(y, y > 0)
        return z + 1


class Deepcopy(nn.Module):
    def forward(self, x):
        y = x * 2
        z = copy.deepcopy(y)
        return z + 1


class DeepcopyList(nn.Module):
    def forward(self, x):
        y = x * 2
        z = copy.deepcopy([1, 2])
        return y + len(z)


class Time(nn.Module):
    def forward(self, x):
        y = x * 2
        t = time.time()
        return y + 1, t


class PerfCounter(nn.Module):
    def forward(self, x):
        y = x * 2
        t = time.perf_counter()
        return y + 1, t


class ReqGradSet(nn.Module):
    def forward(self, x):
        y = x * 2
        y.requires_grad = True
        return y + 1


class ReqGrad_(nn.Module):
    def forward(self, x):
        y = x * 2
        y.requires_grad_()
        return y + 1


class ReqGradFalse(nn.Module):
    def forward(self, x):
        y = x * 2
        y.requires_grad_(False)
        return y + 1


class ParamInFwd(nn.Module):
    def forward(self, x):
        y = x * 2
        p = nn.Parameter(torch.ones(3))
        return y + p


class ClassInFwd(nn.Module):
    def forward(self, x):
        y = x * 2

        class Box:
            pass
        b = Box()
        return y + 1


@torch.compiler.disable
def disabled(t):
    return t + 1


class CallDisabled(nn.Module):
    def forward(self, x):
        y = x * 2
        z = disabled(y)
        return z + 1


x = torch.randn(4, 3)
cases = [
    ("print", Print()), ("logger.info", Log()), ("logging.warning", LogWarning()),
    ("warnings.warn", Warn()),
    ("raise", Raise()), ("assert literal", AssertLiteral()), ("assert nomsg", AssertNoMsg()),
    ("assert fstring", AssertFString()), ("assert var msg", AssertVarMsg()),
    ("item", Item()), ("tolist", Tolist()), ("int(t)", IntT()), ("float(t)", FloatT()),
    ("bool(t)", BoolT()), ("numpy", Numpy()),
    ("mask index", Mask()), ("nonzero", Nonzero()), ("Tensor.nonzero", NonzeroM()),
    ("argwhere", Argwhere()), ("where1", Where1()), ("unique", Unique()),
    ("Tensor.unique", UniqueM()), ("masked_select", MaskedSelect()),
    ("deepcopy tensor", Deepcopy()), ("deepcopy list", DeepcopyList()), ("time.time", Time()),
    ("time.perf_counter", PerfCounter()), ("requires_grad=", ReqGradSet()),
    ("requires_grad_()", ReqGrad_()), ("requires_grad_(False)", ReqGradFalse()),
    ("nn.Parameter", ParamInFwd()), ("class in fwd", ClassInFwd()), ("disabled call", CallDisabled()),
]
if hf_logger is not None:
    cases[4:4] = [("hf warning_once", HfWarnOnce()), ("hf info_once", HfInfoOnce())]
import sys
only = sys.argv[1:]
for name, m in cases:
    if only and name not in only:
        continue
    probe(name, m, (x,))
