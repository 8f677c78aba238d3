"""Does dropping `.item()` / `float(t)` (keeping a 0-d tensor) change values or dtypes? (eager)"""
import torch

torch.manual_seed(0)
y32 = torch.randn(4)
yint = torch.arange(4)
t32 = torch.randn(()) * 3
t64 = torch.randn((), dtype=torch.float64)
tint = torch.tensor(3)

rows = [
    ("y32 * t32.item()", y32 * t32.item(), y32 * t32),
    ("y32 + t32.item() * 0.1", y32 + t32.item() * 0.1, y32 + t32 * 0.1),
    ("y32 / (1 + t32.abs().item())", y32 / (1 + t32.abs().item()), y32 / (1 + t32.abs())),
    ("yint * float(t32)", yint * float(t32), yint * t32),
    ("yint * t64.item()", yint * t64.item(), yint * t64),
    ("y32 * int(tint)", y32 * int(tint), y32 * tint),
    ("yint + int(tint)", yint + int(tint), yint + tint),
    ("yint // int(tint)", yint // int(tint), yint // tint),
    ("y32 > t32.item()", y32 > t32.item(), y32 > t32),
]
for label, a, b in rows:
    same_dtype = a.dtype == b.dtype
    exact = same_dtype and torch.equal(a, b)
    close = torch.allclose(a.double(), b.double())
    print(f"{label:30s} item:{str(a.dtype):14s} tensor:{str(b.dtype):14s} "
          f"{'EXACT' if exact else ('CLOSE' if close else 'DIFF')}")

# many samples: Python-double intermediate arithmetic vs float32 tensor arithmetic
torch.manual_seed(1)
diff = {"y + s*0.1": 0, "y / (1 + |s|)": 0, "y * s": 0, "y * (s*s)": 0}
n = 2000
for _ in range(n):
    y = torch.randn(8)
    t = torch.randn(()) * 3
    s = t.item()
    diff["y + s*0.1"] += not torch.equal(y + s * 0.1, y + t * 0.1)
    diff["y / (1 + |s|)"] += not torch.equal(y / (1 + abs(s)), y / (1 + t.abs()))
    diff["y * s"] += not torch.equal(y * s, y * t)
    diff["y * (s*s)"] += not torch.equal(y * (s * s), y * (t * t))
print(f"samples with any element different (out of {n}):", diff)
