// GM302: `assert <tensor>, <message that is not a string literal>`.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM302",
    .name = "assert-dynamic-message",
    .family = "runtime guards",
    .summary = "`assert` on a tensor with a non-literal message",
    .explanation =
        "Dynamo lowers `assert tensor_test, \"literal\"` to `torch._assert_async` inside the graph, but only when "
        "the message is a plain string: an f-string or any other expression makes it break the graph.",
    .registry_id = "GB0170",
    .fix_summary = "Use a literal message (put the details in the literal, or move the formatting out).",
    .example_bad = "assert (x > 0).all(), f'negative values in {name}'",
    .example_good = "assert (x > 0).all(), 'negative values in input'",
    .fixable = false,
    .export_fails = true,
};

void check(RuleContext& ctx, const Visit& v) {
  if (named_child_count(v.node) < 2) return;
  TSNode test = named_child(v.node, 0);
  TSNode message = named_child(v.node, 1);
  if (ctx.model.kind_of(test, v.function) != ValueKind::Tensor) return;
  if (is_type(message, "string")) {
    bool interpolated = false;
    uint32_t n = ts_node_named_child_count(message);
    for (uint32_t i = 0; i < n; ++i) interpolated |= is_type(ts_node_named_child(message, i), "interpolation");
    if (!interpolated) return;
  }
  ctx.report(kInfo, node_range(test),
             "`assert` on a tensor with a non-literal message: Dynamo only lowers asserts with string-literal "
             "messages, so it breaks the graph here.",
             v);
}

}  // namespace

const Rule& rule_GM302() {
  static const Rule rule{&kInfo, {"assert_statement"}, check};
  return rule;
}

}  // namespace graphmend
