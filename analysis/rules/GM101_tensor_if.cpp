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
        "values are computed and `torch.where(cond, a, b)` selects one, inside the graph.",
    .example_bad = "if x.sum() > 0:\n    y = x * 2\nelse:\n    y = x - 1",
    .example_good = "y = torch.where(x.sum() > 0, x * 2, x - 1)",
    .fixable = true,
};

void check(RuleContext& ctx, const Visit& v) {
  TSNode condition = field(v.node, "condition");
  TSNode operand = breaking_operand(ctx, condition, v.function);
  if (ts_node_is_null(operand)) return;
  // A test whose body only raises is a runtime guard: GM301 reports it.
  if (body_is_raise(field(v.node, "consequence"))) return;
  std::string keyword = is_type(v.node, "elif_clause") ? "elif" : "if";
  ctx.report(kInfo, node_range(operand),
             "`" + keyword + "` on a tensor's value: Dynamo cannot know which branch to trace, so it breaks the "
             "graph here (Data-dependent branching).",
             v);
}

}  // namespace

const Rule& rule_GM101() {
  static const Rule rule{&kInfo, {"if_statement", "elif_clause"}, check};
  return rule;
}

}  // namespace graphmend
