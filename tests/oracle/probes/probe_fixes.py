"""Candidate fixes: torch.where predication, torch._assert_async, torch._check, torch.cond."""
import torch
from torch import nn
from harness import probe


class Pred(nn.Module):
    def forward(self, x):
        y = x * 2
        y = torch.where(x.sum() > 0, y + 1, y - 1)
        return y


class PredAndOr(nn.Module):
    def forward(self, a, b):
        c = (a.sum() > 0) & (b.sum() > 0) | ~(a.max() < 10)
        return torch.where(c, a + 1, a)


class AssertAsync(nn.Module):
    def forward(self, x):
        torch._assert_async(~(x < -100).any(), "too small")
        return x + 1


class Check(nn.Module):
    def forward(self, x):
        torch._check(bool((x > -100).all()), lambda: "too small")
        return x + 1


class Cond(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x,))


x = torch.randn(4, 3)
probe("where predication", Pred(), (x,), show_explain=False)
probe("where and/or/not as &|~", PredAndOr(), (x, x), show_explain=False)
probe("_assert_async", AssertAsync(), (x,), show_explain=False)
probe("torch._check(bool(...))", Check(), (x,), show_explain=False)
probe("torch.cond", Cond(), (x,), show_explain=False)

bad = torch.full((2, 2), -1000.0)
for label, fn in [("eager", AssertAsync()), ("compiled eager-backend", torch.compile(AssertAsync(), backend="eager")),
                  ("compiled fullgraph aot_eager", torch.compile(AssertAsync(), backend="aot_eager", fullgraph=True)),
                  ("compiled inductor", torch.compile(AssertAsync()))]:
    torch._dynamo.reset()
    try:
        fn(bad)
        print(f"_assert_async {label}: no exception")
    except Exception as e:
        print(f"_assert_async {label}: {type(e).__name__}: {str(e).splitlines()[0][:100]}")
torch._dynamo.reset()
m = torch.compile(Pred(), fullgraph=True, backend="eager")
print("where fullgraph ok:", torch.equal(m(x), Pred()(x)))
# gradient hazard: where on an untaken NaN branch
t = torch.tensor([0.0], requires_grad=True)
out = torch.where(t > 1, torch.sqrt(t - 1), t)  # untaken branch sqrt(-1)=nan
out.sum().backward()
print("grad through where with NaN in untaken branch:", t.grad)
t2 = torch.tensor([0.0], requires_grad=True)
out = torch.where(t2 > 0, 1 / t2, t2)  # untaken branch inf
out.sum().backward()
print("grad through where with inf in untaken branch:", t2.grad)
