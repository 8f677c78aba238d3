// GM301: `if <tensor test>: raise E(...)` runtime guards.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM301",
    .name = "tensor-guard-raise",
    .family = "runtime guards",
    .summary = "`raise` guarded by a test on a tensor's value",
    .explanation =
        "A validation guard such as `if torch.isnan(x).any(): raise ValueError(...)` needs the tensor's value to "
        "decide whether to raise, so Dynamo breaks the graph at the test.",
    .registry_id = "GB0170",
    .fix_summary =
        "The guard becomes `torch._assert_async` under compile (the check stays in the graph) while an eager "
        "run keeps raising the same exception with the same message.",
    .example_bad = "if torch.isinf(x).any():\n    raise ValueError('inf in activations')",
    .example_good =
        "if torch.compiler.is_compiling():\n    torch._assert_async(~torch.isinf(x).any(), 'inf in activations')\n"
        "elif torch.isinf(x).any():\n    raise ValueError('inf in activations')",
    .fixable = true,
};

void check(RuleContext& ctx, const Visit& v) {
  if (!body_is_raise(field(v.node, "consequence"))) return;
  TSNode condition = field(v.node, "condition");
  TSNode operand = breaking_operand(ctx, condition, v.function);
  if (ts_node_is_null(operand)) return;
  ctx.report(kInfo, node_range(operand),
             "This guard raises depending on a tensor's value: Dynamo breaks the graph at the test (Data-dependent "
             "branching).",
             v);
}

}  // namespace

const Rule& rule_GM301() {
  static const Rule rule{&kInfo, {"if_statement", "elif_clause"}, check};
  return rule;
}

}  // namespace graphmend
