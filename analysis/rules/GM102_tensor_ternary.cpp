// GM102: conditional expression `a if t else b` whose test is a tensor.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM102",
    .name = "tensor-ternary",
    .family = "data-dependent control flow",
    .summary = "Conditional expression `a if t else b` on a tensor's value",
    .explanation =
        "A conditional expression calls `bool()` on its test. When the test is a tensor, its value is only known "
        "when the graph runs, so Dynamo breaks the graph to evaluate it in Python.",
    .registry_id = "GB0170",
    .fix_summary = "Pure, same-shaped alternatives become `torch.where(t, a, b)`.",
    .example_bad = "y = x * 2 if x.mean() > 0 else -x",
    .example_good = "y = torch.where(x.mean() > 0, x * 2, -x)",
    .fixable = true,
    .fix_safety =
        "As for GM101: both alternatives must be pure and total (or a trace-time check in front, "
        "`torch.where(...) if <checks> else (a if t else b)`, keeps the original expression for the other "
        "case), of proven equal shape and dtype (`x.is_floating_point()` is checked at trace time where only the "
        "dtype is unproven). Kept: every observation; unsafe under autograd when an alternative's derivative is "
        "not constant, and where an alternative may be an input, an attribute or a view of one and the result "
        "escapes (aliasing).",
    .export_fails = true,
};

void check(RuleContext& ctx, const Visit& v) {
  if (named_child_count(v.node) < 3) return;
  TSNode condition = named_child(v.node, 1);
  TSNode operand = breaking_operand(ctx, condition, v.function);
  if (ts_node_is_null(operand)) return;
  ctx.report(kInfo, node_range(operand),
             "Conditional expression on a tensor's value: Dynamo must call bool() on the tensor and breaks the "
             "graph here (Data-dependent branching).",
             v);
}

}  // namespace

const Rule& rule_GM102() {
  static const Rule rule{&kInfo, {"conditional_expression"}, check};
  return rule;
}

}  // namespace graphmend
