// GM101: `if`/`elif` whose test reads a tensor's value.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM101",
    .name = "tensor-if",
    .family = "data-dependent control flow",
    .summary = "`if`/`elif` on a tensor's value",
    .explanation =
        "Dynamo traces one path through the code. An `if` whose test is a tensor (a comparison of tensors, a "
        "reduction, a boolean mask) needs the tensor's value to pick the branch, and that value exists only when "
        "the graph runs. Dynamo stops the graph before the test, runs the test in Python, and starts a new graph "
        "after it: a CPU-GPU sync and two graphs where there could be one.",
    .registry_id = "GB0170",
    .fix_summary =
        "When both branches only compute values (no side effects, same shapes), the branch is predicated: both "
        "values are computed and `torch.where(cond, a, b)` selects one, inside the graph. A LayerDrop test "
        "(`torch.rand([]) < p`) gets a precondition that decides it without the tensor when `p <= 0`.",
    .example_bad = "if x.sum() > 0:\n    y = x * 2\nelse:\n    y = x - 1",
    .example_good = "y = torch.where(x.sum() > 0, x * 2, x - 1)",
    .fixable = true,
    .fix_safety =
        "The branch is predicated only when every value is pure and cannot raise on the path the original did "
        "not take (or a trace-time check in front of the select, such as `x.dtype != torch.bool` or `x.dim() "
        ">= 2`, falls back to the original branch), and the values have equal shapes and dtypes (proven, or "
        "checked at trace time). Kept: values, shapes, dtypes, devices, exceptions, output, state, the RNG "
        "stream, and gradients when every value has a constant derivative (up to the rounding of the order in "
        "which autograd sums a tensor's several uses, which the select's node changes). Unsafe (applied only with "
        "`--unsafe-fixes`): a value whose derivative is not constant (`x * y`, `x / y`, `log`, `exp`, "
        "`max`...) outside `torch.no_grad()`, because torch.where's zero gradient times an inf/NaN derivative "
        "is NaN, unless its untaken side is made total: in a single if/else with a one-element test, each "
        "tensor the value reads becomes `torch.where(cond, x, torch.ones_like(x))` there, where every value and "
        "derivative is proven finite (elementwise operations, literals; no reductions, no Python values not "
        "known statically); under `no_grad`, a branch that passes an input through, whose `requires_grad` the "
        "select drops. A part of the test that a value repeats (`if h.sum() > 1: h = h / h.sum()`) is computed "
        "once, before the test, and reused. Refused: effects, randomness, module calls that may raise or write, a name "
        "written in place "
        "after the select, a shadowed `torch`. The select is a new tensor: where an alternative may be an input, an "
        "attribute, a view of one or a tensor another name also holds (the variable's old value as it reaches the "
        "statement counts) and the result escapes after it (returned, stored, compared with `is`), the fix is "
        "unsafe (aliasing). A number mixed into a bool or "
        "integer tensor changes its dtype (`b * 2` is int64), so such values select behind a trace-time dtype "
        "check unless the tensor is proven floating. LayerDrop (`r = torch.rand([])`, then `if r < p:`): `(not "
        "isinstance(p, (int, float)) or p "
        "> 0 or torch._assert_async(r >= 0, ...) is not None) and r < p` is exact, since a draw in [0, 1) is never "
        "below a number <= 0 (NaN included); Dynamo decides it at trace time, and every other `p` runs the "
        "original test. The assertion, which cannot fail, keeps the draw in the graph: unused, aot_eager and "
        "inductor would remove it as dead code and the RNG state after the call would differ. `r <= p` and draws "
        "of more than one element are refused.",
    .export_fails = true,
};

void check(RuleContext& ctx, const Visit& v) {
  TSNode condition = field(v.node, "condition");
  TSNode operand = breaking_operand(ctx, condition, v.function);
  if (ts_node_is_null(operand)) return;
  // A test whose body only raises is a runtime guard: GM301 reports it.
  if (body_is_raise(field(v.node, "consequence"))) return;
  std::string keyword = is_type(v.node, "elif_clause") ? "elif" : "if";
  ctx.report(kInfo, node_range(operand),
             "`" + keyword +
                 "` on a tensor's value: Dynamo cannot know which branch to trace, so it breaks the "
                 "graph here (Data-dependent branching).",
             v);
}

}  // namespace

const Rule& rule_GM101() {
  static const Rule rule{&kInfo, {"if_statement", "elif_clause"}, check};
  return rule;
}

}  // namespace graphmend
