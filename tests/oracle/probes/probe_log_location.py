"""Deferred logging through a reorderable wrapper: does the LogRecord keep the caller's location?"""
import logging
import sys
import warnings
import torch
from torch import nn

logging.basicConfig(stream=sys.stdout, level=logging.INFO,
                    format="%(levelname)s %(funcName)s:%(lineno)d %(message)s")
logger = logging.getLogger("probe")


def gm_info(*args, **kwargs):
    logger.info(*args, stacklevel=2, **kwargs)


def gm_warn(message, category=None):
    warnings.warn(message, category, stacklevel=3)


class M(nn.Module):
    def forward(self, x):
        y = x * 2
        gm_info("deferred %s", 1)
        logging.warning("module-level warning")
        warnings.warn("direct warn")
        gm_warn("wrapped warn")
        return y + 1


x = torch.ones(2)
print("--- eager"); M()(x)
torch._dynamo.config.reorderable_logging_functions = {gm_info, logging.warning, warnings.warn, gm_warn}
print("--- compiled (backend=eager), reorderable wrappers")
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    torch.compile(M(), backend="eager", fullgraph=True)(x)
    print([(str(i.message), i.filename.split('/')[-1], i.lineno) for i in w])
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    M()(x)
    print("eager warnings:", [(str(i.message), i.filename.split('/')[-1], i.lineno) for i in w])
