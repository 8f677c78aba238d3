// GM503: one-argument `torch.where(cond)`, an alias of nonzero(as_tuple=True).
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM503",
    .name = "where-one-argument",
    .family = "data-dependent shapes",
    .summary = "One-argument `torch.where(cond)`",
    .explanation =
        "`torch.where(cond)` with a single argument is `cond.nonzero(as_tuple=True)`: its output size depends on "
        "the data, and Dynamo breaks the graph.",
    .registry_id = "GB0036",
    .fix_summary = "No automatic fix: use the three-argument form on dense tensors where possible.",
    .example_bad = "rows, cols = torch.where(scores > 0.5)",
    .example_good = "kept = torch.where(scores > 0.5, scores, 0.0)",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  if (callee_qualified(ctx, v.node) != "torch.where" || argument_count(v.node) != 1) return;
  ctx.report(kInfo, node_range(v.node),
             "One-argument torch.where is nonzero(as_tuple=True): its output size depends on data, so Dynamo "
             "breaks the graph here (Dynamic shape operator).",
             v);
}

}  // namespace

const Rule& rule_GM503() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
