// GM402: `.tolist()` on a tensor.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM402",
    .name = "tensor-tolist",
    .family = "tensor to Python",
    .summary = "`.tolist()` turns a tensor into Python numbers",
    .explanation =
        "`.tolist()` reads every element of a tensor into Python, data Dynamo does not have while tracing: it "
        "breaks the graph.",
    .registry_id = "GB0109",
    .fix_summary = "No automatic fix: keep the values as a tensor and index it instead of a list.",
    .example_bad = "lengths = mask.sum(-1).tolist()",
    .example_good = "lengths = mask.sum(-1)",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  if (tensor_method(ctx, v.node, v.function) != "tolist") return;
  ctx.report(kInfo, node_range(v.node), "`.tolist()` reads tensor data into Python: Dynamo breaks the graph here.", v);
}

}  // namespace

const Rule& rule_GM402() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
