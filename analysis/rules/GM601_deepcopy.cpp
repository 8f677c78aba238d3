// GM601: `copy.deepcopy` inside traced code.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM601",
    .name = "deepcopy",
    .family = "unsupported Python",
    .summary = "`copy.deepcopy` inside compiled code",
    .explanation = "Dynamo does not trace `copy.deepcopy`: it breaks the graph.",
    .registry_id = "GB0179",
    .fix_summary = "No automatic fix: use `tensor.clone()` for tensors, or copy outside the compiled region.",
    .example_bad = "state = copy.deepcopy(x)",
    .example_good = "state = x.clone()",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  if (callee_qualified(ctx, v.node) != "copy.deepcopy") return;
  ctx.report(kInfo, node_range(v.node), "`copy.deepcopy` is not traced by Dynamo: it breaks the graph here.", v);
}

}  // namespace

const Rule& rule_GM601() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
