"""Dense rewrites of mask reductions and torch.equal: eager equality on edge cases, and breaks."""
import torch
from harness import probe

cases = {
    "random": (torch.randn(5), torch.randn(5) > 0),
    "empty mask": (torch.randn(5), torch.zeros(5, dtype=torch.bool)),
    "full mask": (torch.randn(5), torch.ones(5, dtype=torch.bool)),
    "nan outside mask": (torch.tensor([1.0, float("nan"), 3.0]), torch.tensor([True, False, True])),
    "int tensor": (torch.arange(5), torch.arange(5) % 2 == 0),
}
forms = {
    "sum": (lambda x, m: x[m].sum(), lambda x, m: torch.where(m, x, 0).sum()),
    "mean": (lambda x, m: x[m].mean() if x.is_floating_point() else None,
             lambda x, m: torch.where(m, x, 0).sum() / m.sum() if x.is_floating_point() else None),
    "amax": (lambda x, m: x[m].amax(), lambda x, m: torch.where(m, x, torch.finfo(x.dtype).min
                                                                 if x.is_floating_point() else torch.iinfo(x.dtype).min).amax()),
    "count numel": (lambda x, m: x[m].numel(), lambda x, m: m.sum()),
    "count sum of mask": (lambda x, m: int(m.sum()), lambda x, m: m.sum()),
}


def run(f, x, m):
    try:
        return f(x, m)
    except Exception as e:  # noqa: BLE001
        return f"raises {type(e).__name__}: {str(e)[:60]}"


for fname, (orig, dense) in forms.items():
    for cname, (x, m) in cases.items():
        a, b = run(orig, x, m), run(dense, x, m)
        same = (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                and torch.allclose(a.float(), b.float(), equal_nan=True) and a.dtype == b.dtype)
        print(f"{fname:18s} {cname:17s} orig={a!r:42.42s} dense={b!r:42.42s} {'SAME' if same else 'DIFF'}")

print()
for label, a, b in [("equal same", torch.ones(3), torch.ones(3)), ("equal nan", torch.tensor([float('nan')]), torch.tensor([float('nan')])),
                    ("int vs float", torch.ones(3, dtype=torch.int64), torch.ones(3)), ("shape differs", torch.ones(3), torch.ones(1))]:
    try:
        dense = bool(a.shape == b.shape and (a == b).all())
    except Exception as e:  # noqa: BLE001
        dense = f"raises {type(e).__name__}"
    print(f"torch.equal {label:14s} eager={torch.equal(a, b)} dense={dense}")


def f_dense_equal(a, b):
    if a.shape != b.shape or not bool((a == b).all()):
        return a + 1
    return a


def f_where_equal(a, b):
    same = (a == b).all() if a.shape == b.shape else torch.tensor(False)
    return torch.where(same, a, a + 1)


probe("if a.shape != b.shape or not bool((a == b).all())", f_dense_equal, (torch.ones(3), torch.ones(3)), show_explain=False)
probe("torch.where on (a == b).all()", f_where_equal, (torch.ones(3), torch.ones(3)), show_explain=False)
