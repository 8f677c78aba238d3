// GM601: `copy.deepcopy` inside traced code.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM601",
    .name = "deepcopy",
    .family = "unsupported Python",
    .summary = "`copy.deepcopy` inside compiled code",
    .explanation =
        "Dynamo does not trace `copy.deepcopy` of tensors and modules: it breaks the graph (deep copies of plain "
        "Python data are fine).",
    .registry_id = "GB4198",
    .fix_summary = "No automatic fix: use `tensor.clone()` for tensors, or copy outside the compiled region.",
    .example_bad = "state = copy.deepcopy(x)",
    .example_good = "state = x.clone()",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  if (callee_qualified(ctx, v.node) != "copy.deepcopy" || argument_count(v.node) < 1) return;
  // Deep copies of plain Python data are traced; tensors and modules are not.
  ValueKind kind = ctx.model.kind_of(named_child(field(v.node, "arguments"), 0), v.function);
  if (kind != ValueKind::Tensor && kind != ValueKind::Module) return;
  ctx.report(kInfo, node_range(v.node), "`copy.deepcopy` is not traced by Dynamo: it breaks the graph here.", v);
}

}  // namespace

const Rule& rule_GM601() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
