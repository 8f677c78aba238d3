"""Deferral details: ordering against breaks, argument snapshots, kwargs, f-strings, wrappers."""
import logging
import sys
import warnings
import torch
from torch import nn
from harness import probe

logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="LOG %(message)s")
logger = logging.getLogger("probe")
from transformers.utils import logging as hf_logging
hf_logger = hf_logging.get_logger("probe_hf")


def gm_logger_info(*args):
    logger.info(*args)


def gm_warning_once(*args):
    hf_logger.warning_once(*args)


class Order(nn.Module):
    def forward(self, x):
        y = x * 2
        print("A", y.sum())
        logger.info("B")   # graph break (bound method not reorderable)
        print("C")
        return y + 1


class Snapshot(nn.Module):
    def forward(self, x):
        y = x * 2
        print("before mutation", y[0, 0])
        y.add_(5)
        return y


class SnapshotWhole(nn.Module):
    def forward(self, x):
        y = x * 2
        print("whole", y)
        y.add_(5)
        return y


class Kwargs(nn.Module):
    def forward(self, x):
        y = x * 2
        print("to stderr", file=sys.stderr)
        print("sep", 1, sep="-")
        return y + 1


class FStr(nn.Module):
    def forward(self, x):
        y = x * 2
        print(f"value {y.sum()}")
        return y + 1


class Percent(nn.Module):
    def forward(self, x):
        y = x * 2
        print("value %d" % 3, "fmt {}".format(4))
        return y + 1


class Wrapper(nn.Module):
    def forward(self, x):
        y = x * 2
        gm_logger_info("wrapped %s", 1)
        gm_warning_once("wrapped once")
        gm_warning_once("wrapped once")
        return y + 1


class WarnLoop(nn.Module):
    def forward(self, x):
        y = x * 2
        warnings.warn("careful")
        return y + 1


x = torch.ones(2, 3)
torch._dynamo.config.reorderable_logging_functions = {print, warnings.warn, gm_logger_info, gm_warning_once}
print("--- eager Order"); Order()(x)
probe("order", Order(), (x,), show_explain=False)
print("--- eager Snapshot"); Snapshot()(x)
probe("snapshot element", Snapshot(), (x,), show_explain=False)
print("--- eager SnapshotWhole"); SnapshotWhole()(x)
probe("snapshot whole tensor", SnapshotWhole(), (x,), show_explain=False)
probe("print kwargs file=/sep=", Kwargs(), (x,), show_explain=False)
probe("f-string with tensor", FStr(), (x,), show_explain=False)
probe("percent/format constants", Percent(), (x,), show_explain=False)
probe("wrapper functions", Wrapper(), (x,), show_explain=False)
print("--- compiled twice: warnings.warn default filter (once per location)")
torch._dynamo.reset()
m = torch.compile(WarnLoop(), backend="eager")
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("default")
    m(x); m(x)
    print("  caught", [(str(i.message), i.filename.split('/')[-1], i.lineno) for i in w])


class SnapshotClone(nn.Module):
    def forward(self, x):
        y = x * 2
        print("cloned", y[0, 0].clone())
        y.add_(5)
        return y


print("--- eager SnapshotClone (expect 2.)"); SnapshotClone()(x)
probe("snapshot with clone", SnapshotClone(), (x,), show_explain=False)
