"""Edge variants: which near-misses break and which do not."""
import copy
import logging
import warnings
import torch
from torch import nn
from harness import probe

logger = logging.getLogger("probe")
logger.setLevel(logging.WARNING)


def case(fn):
    class M(nn.Module):
        def forward(self, x):
            return fn(self, x)
    M.__name__ = fn.__name__
    return M()


def bare_if(self, x):
    y = x.sum()
    if y:
        return x + 1
    return x - 1


def if_item(self, x):
    if x.sum().item() > 0:
        return x + 1
    return x - 1


def static_and_dyn(self, x):
    y = x * 2
    if x.dtype == torch.float16 and y.sum() > 0:
        y = y + 1
    return y


def tolist_int(self, x):
    idx = (x > 0).long().sum(0)
    return x + len(idx.tolist())


def deepcopy_module(self, x):
    m = copy.deepcopy(nn.Linear(3, 3))
    return m(x)


def debug_disabled(self, x):
    y = x * 2
    logger.debug("not emitted %s", 1)
    return y + 1


def numpy_detach(self, x):
    y = x * 2
    a = y.detach().cpu().numpy()
    return y + float(a.sum())


def numpy_roundtrip(self, x):
    y = x * 2
    a = y.numpy()
    return torch.from_numpy(a * 2) + y


def where3(self, x):
    return torch.where(x > 0, x, torch.zeros_like(x))


def any_all_if(self, x):
    if torch.isnan(x).any():
        return x.nan_to_num()
    return x


def equal_if(self, x):
    if torch.equal(x, x):
        return x + 1
    return x


def is_compiling_guard(self, x):
    if not torch.compiler.is_compiling():
        print("eager only")
        warnings.warn("eager only")
    return x + 1


def is_compiling_pos(self, x):
    if torch.compiler.is_compiling():
        return x + 1
    print("eager")
    return x


def shape_item(self, x):
    n = x.shape[0]
    if n > 2 and x.size(-1) == 3:
        x = x + 1
    return x


def mask_assign(self, x):
    y = x.clone()
    y[y < 0] = 0
    return y


def mask_sum(self, x):
    return x[x > 0].sum()


def where_dense(self, x):
    return torch.where(x > 0, x, 0).sum()


def assert_async(self, x):
    torch._assert_async((x > -100).all(), "too small")
    return x + 1


def raise_no_tensor(self, x):
    if x.dim() != 2:
        raise ValueError("need 2d")
    return x + 1


def requires_grad_set_false(self, x):
    y = x * 2
    y.requires_grad = False
    return y + 1


def requires_grad_not_leaked(self, x):
    y = x * 2
    y.requires_grad_()
    z = y + 1
    return z


def warn_with_category(self, x):
    warnings.warn("dep", DeprecationWarning)
    return x + 1


def print_tensor(self, x):
    y = x * 2
    print(y)
    return y + 1


def time_sleep(self, x):
    import time
    time.sleep(0)
    return x + 1


def unique_consecutive(self, x):
    return torch.unique_consecutive(x)


def count_nonzero(self, x):
    return torch.count_nonzero(x > 0)


def int_shape(self, x):
    return x + int(x.shape[0])


def float_python(self, x):
    return x + float(3)


x = torch.randn(4, 3)
for fn in [bare_if, if_item, static_and_dyn, tolist_int, deepcopy_module, debug_disabled, numpy_detach,
           numpy_roundtrip, where3, any_all_if, equal_if, is_compiling_guard, is_compiling_pos, shape_item,
           mask_assign, mask_sum, where_dense, assert_async, raise_no_tensor, requires_grad_set_false,
           requires_grad_not_leaked, warn_with_category, print_tensor, time_sleep, unique_consecutive,
           count_nonzero, int_shape, float_python]:
    probe(fn.__name__, case(fn), (x,), show_explain=False)
