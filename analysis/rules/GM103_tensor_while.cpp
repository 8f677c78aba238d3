// GM103: `while` whose test is a tensor.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM103",
    .name = "tensor-while",
    .family = "data-dependent control flow",
    .summary = "`while` loop on a tensor's value",
    .explanation =
        "The number of iterations depends on tensor data that exists only when the graph runs. Dynamo breaks the "
        "graph at the test, once per iteration.",
    .registry_id = "GB0170",
    .fix_summary =
        "No automatic fix: a data-dependent loop has no source-level equivalent in one graph. Rewrite it with "
        "`torch._higher_order_ops.while_loop` or bound the iterations and mask the extra steps.",
    .example_bad = "while (x.abs() > 1).any():\n    x = x / 2",
    .example_good = "for _ in range(max_steps):\n    x = torch.where((x.abs() > 1).any(), x / 2, x)",
    .fixable = false,
    .export_fails = true,
};

void check(RuleContext& ctx, const Visit& v) {
  TSNode condition = field(v.node, "condition");
  TSNode operand = breaking_operand(ctx, condition, v.function);
  if (ts_node_is_null(operand)) return;
  ctx.report(kInfo, node_range(operand),
             "`while` on a tensor's value: the trip count depends on tensor data, so Dynamo breaks the graph here "
             "(Data-dependent branching).",
             v);
}

}  // namespace

const Rule& rule_GM103() {
  static const Rule rule{&kInfo, {"while_statement"}, check};
  return rule;
}

}  // namespace graphmend
