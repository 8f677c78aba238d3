// GM404: `.numpy()` on a tensor.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM404",
    .name = "tensor-numpy",
    .family = "tensor to Python",
    .summary = "`.numpy()` leaves the graph for NumPy",
    .explanation =
        "`.numpy()` hands the tensor's memory to NumPy. Dynamo can only trace it with `trace_numpy` enabled and a "
        "NumPy it can model; code that then uses the array as Python data breaks the graph.",
    .registry_id = "GB0105",
    .fix_summary = "No automatic fix: keep the computation in torch.",
    .example_bad = "arr = x.detach().cpu().numpy()",
    .example_good = "arr = x.detach()",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  if (tensor_method(ctx, v.node, v.function) != "numpy") return;
  ctx.report(kInfo, node_range(v.node), "`.numpy()` moves tensor data to NumPy: Dynamo breaks the graph here.", v);
}

}  // namespace

const Rule& rule_GM404() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
