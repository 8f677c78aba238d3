// GM604: `nn.Parameter(...)` built inside traced code.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM604",
    .name = "parameter-in-forward",
    .family = "unsupported Python",
    .summary = "`nn.Parameter` constructed inside compiled code",
    .explanation =
        "Creating a parameter while tracing makes a new leaf tensor the graph cannot own: Dynamo breaks the graph "
        "(and the parameter is recreated on every call, which is rarely intended).",
    .registry_id = "GB0264",
    .fix_summary = "No automatic fix: create the parameter in `__init__`.",
    .example_bad = "w = nn.Parameter(torch.ones(4))",
    .example_good = "# in __init__: self.w = nn.Parameter(torch.ones(4))",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  std::string q = callee_qualified(ctx, v.node);
  if (q != "torch.nn.Parameter" && q != "torch.nn.parameter.Parameter") return;
  ctx.report(kInfo, node_range(v.node),
             "Constructing nn.Parameter inside compiled code is not supported by Dynamo: it breaks the graph here.", v);
}

}  // namespace

const Rule& rule_GM604() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
