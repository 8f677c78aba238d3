// GM104: `and`/`or`/`not` used as a value on tensors (outside if/while tests, which GM101-103 cover).
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM104",
    .name = "tensor-bool-operator",
    .family = "data-dependent control flow",
    .summary = "`and`/`or`/`not` applied to a tensor",
    .explanation =
        "`a and b`, `a or b` and `not a` call `bool()` on `a` to decide what to return. For a tensor that needs "
        "its value, which Dynamo does not have while tracing, so it breaks the graph.",
    .registry_id = "GB0170",
    .fix_summary = "Use the element-wise logical ops: `torch.logical_and`, `torch.logical_or`, `torch.logical_not`.",
    .example_bad = "keep = not mask.any()",
    .example_good = "keep = torch.logical_not(mask.any())",
    .fixable = false,
    .export_fails = true,
};

void check(RuleContext& ctx, const Visit& v) {
  // Only the outermost operator of a chain is reported. First: in_condition walks up the whole chain,
  // which from every operator of a long one is quadratic in its length.
  size_t up = 0;
  TSNode parent = v.ancestor(up);
  while (is_type(parent, "parenthesized_expression")) parent = v.ancestor(++up);
  if (is_type(parent, "boolean_operator") || is_type(parent, "not_operator")) return;
  if (in_condition(v)) return;
  TSNode operand = is_type(v.node, "not_operator") ? field(v.node, "argument") : field(v.node, "left");
  if (ctx.model.kind_of(operand, v.function) != ValueKind::Tensor) return;
  std::string op = is_type(v.node, "not_operator") ? "not" : ctx.text(field(v.node, "operator"));
  ctx.report(kInfo, node_range(v.node),
             "`" + op +
                 "` on a tensor calls bool() on its value: Dynamo breaks the graph here (Data-dependent "
                 "branching). Use torch.logical_" +
                 (op == "not" ? std::string("not") : op) + " instead.",
             v);
}

}  // namespace

const Rule& rule_GM104() {
  static const Rule rule{&kInfo, {"boolean_operator", "not_operator"}, check};
  return rule;
}

}  // namespace graphmend
