// GM403: `int(t)`, `float(t)`, `bool(t)` on a tensor.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM403",
    .name = "tensor-scalar-cast",
    .family = "tensor to Python",
    .summary = "`int()`/`float()`/`bool()` of a tensor",
    .explanation =
        "Converting a tensor to a Python number or bool reads its value, which Dynamo does not have while "
        "tracing: it breaks the graph (like `.item()`).",
    .registry_id = "GB0124",
    .fix_summary =
        "When the value only feeds a comparison or tensor arithmetic, the cast is removed and the value stays a "
        "0-d tensor.",
    .example_bad = "if float(loss) > 10.0:",
    .example_good = "if loss > 10.0:   # then GM101 predicates the branch",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  TSNode callee = unparenthesize(field(v.node, "function"));
  if (!is_type(callee, "identifier")) return;
  std::string name = ctx.text(callee);
  if (name != "int" && name != "float" && name != "bool") return;
  if (argument_count(v.node) != 1) return;
  TSNode arg = named_child(field(v.node, "arguments"), 0);
  if (ctx.model.kind_of(arg, v.function) != ValueKind::Tensor) return;
  ctx.report(kInfo, node_range(v.node),
             "`" + name + "()` of a tensor reads its value into Python: Dynamo breaks the graph here.", v);
}

}  // namespace

const Rule& rule_GM403() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
