"""Deferral of print/logging/warnings: torch._dynamo.config.reorderable_logging_functions in 2.13."""
import io
import logging
import sys
import warnings
import contextlib
import torch
from torch import nn
from harness import probe

logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="LOG %(message)s")
logger = logging.getLogger("probe")
try:
    from transformers.utils import logging as hf_logging
    hf_logger = hf_logging.get_logger("probe_hf")
except Exception:
    hf_logger = None


class PrintT(nn.Module):
    def forward(self, x):
        y = x * 2
        print("A", y.sum())
        z = y + 1
        print("B", f"{3}", z.shape)
        z.add_(100)           # mutation after the print of z? (we printed shape only)
        print("C", z[0, 0])
        y.mul_(0)             # mutate y after printing it as "A": is A's value snapshotted?
        return z


class LoggerInfo(nn.Module):
    def forward(self, x):
        y = x * 2
        logger.info("info %s", 1)
        return y + 1


class LoggingWarning(nn.Module):
    def forward(self, x):
        y = x * 2
        logging.warning("root warn %s", 2)
        return y + 1


class WarnsWarn(nn.Module):
    def forward(self, x):
        y = x * 2
        warnings.warn("careful")
        return y + 1


class HfOnce(nn.Module):
    def forward(self, x):
        y = x * 2
        hf_logger.warning_once("once")
        return y + 1


class PrintObj(nn.Module):
    def forward(self, x):
        y = x * 2
        print("list", [1, 2])
        return y + 1


class PrintInLoop(nn.Module):
    def forward(self, x):
        y = x * 2
        for i in range(2):
            y = y + 1
            print("iter", i, y.sum())
        return y


x = torch.ones(2, 3)
print("--- eager PrintT"); print(PrintT()(x.clone()).sum())
torch._dynamo.config.reorderable_logging_functions = {print, logging.warning, warnings.warn, logger.info,
                                                     logging.Logger.info}
print("--- reorderable=print, logging.warning, warnings.warn, logger.info, Logger.info")
probe("print reordered", PrintT(), (x.clone(),), show_explain=False)
probe("logger.info (bound method) reordered?", LoggerInfo(), (x,), show_explain=False)
probe("logging.warning reordered?", LoggingWarning(), (x,), show_explain=False)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    probe("warnings.warn reordered?", WarnsWarn(), (x,), show_explain=False)
    print("  caught warnings:", [(str(i.message), i.filename.split('/')[-1], i.lineno) for i in w])
if hf_logger is not None:
    probe("hf warning_once reordered?", HfOnce(), (x,), show_explain=False)
probe("print non-tensor arg (list)", PrintObj(), (x,), show_explain=False)
probe("print in loop, reordered", PrintInLoop(), (x,), show_explain=False)
torch._dynamo.config.reorderable_logging_functions = set()
torch._dynamo.config.ignore_logging_functions = {logging.Logger.info}
probe("logger.info with ignore_logging_functions", LoggerInfo(), (x,), show_explain=False)
torch._dynamo.config.ignore_logging_functions = set()
