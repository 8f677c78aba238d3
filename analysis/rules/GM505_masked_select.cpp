// GM505: `masked_select`: output size depends on the mask.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM505",
    .name = "masked-select",
    .family = "data-dependent shapes",
    .summary = "`masked_select` has a data-dependent output shape",
    .explanation = "`masked_select` returns one element per true mask entry: Dynamo breaks the graph.",
    .registry_id = "GB0036",
    .fix_summary = "No automatic fix: use `torch.where(mask, x, 0)` and reduce, or keep the mask.",
    .example_bad = "vals = torch.masked_select(x, m)",
    .example_good = "vals = torch.where(m, x, 0)",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  std::string method = tensor_method(ctx, v.node, v.function);
  if (method != "masked_select" && callee_qualified(ctx, v.node) != "torch.masked_select") return;
  ctx.report(kInfo, node_range(v.node),
             "`masked_select` returns one value per true mask entry: Dynamo breaks the graph here (Dynamic shape "
             "operator).",
             v);
}

}  // namespace

const Rule& rule_GM505() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
