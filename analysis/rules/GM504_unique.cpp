// GM504: `unique` / `unique_consecutive`: output size depends on data.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM504",
    .name = "unique",
    .family = "data-dependent shapes",
    .summary = "`unique` has a data-dependent output shape",
    .explanation = "How many distinct values a tensor holds depends on its data: Dynamo breaks the graph at `unique`.",
    .registry_id = "GB0036",
    .fix_summary =
        "No automatic fix: compute counts densely over a known number of values (`scatter_add_` into "
        "`zeros(num_classes)`, one-hot sums); `bincount` breaks too, even with `minlength`.",
    .example_bad = "labels = targets.unique()",
    .example_good =
        "counts = torch.zeros(num_classes, dtype=torch.long).scatter_add_(0, targets, torch.ones_like(targets))",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  std::string method = tensor_method(ctx, v.node, v.function);
  std::string q = callee_qualified(ctx, v.node);
  if (method != "unique" && method != "unique_consecutive" && q != "torch.unique" && q != "torch.unique_consecutive")
    return;
  ctx.report(kInfo, node_range(v.node),
             "`unique` returns as many values as the data holds: Dynamo breaks the graph here (Dynamic shape "
             "operator).",
             v);
}

}  // namespace

const Rule& rule_GM504() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
