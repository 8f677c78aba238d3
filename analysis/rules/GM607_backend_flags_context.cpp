// GM607: `with torch.backends.<...>.flags(...)` inside traced code.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM607",
    .name = "backend-flags-context",
    .family = "unsupported Python",
    .summary = "`torch.backends.*.flags(...)` context manager inside compiled code",
    .explanation =
        "Backend flag context managers such as `torch.backends.cudnn.flags(enabled=False)` are torch functions "
        "that return Python objects, not tensors: Dynamo cannot put them in the graph and breaks it.",
    .registry_id = "GB0208",
    .fix_summary =
        "No automatic fix: set the flag outside the compiled region, or move the code that needs it into a "
        "function that is not compiled.",
    .example_bad = "with torch.backends.cudnn.flags(enabled=False):\n    loss = F.ctc_loss(...)",
    .example_good = "# set torch.backends.cudnn.enabled around the compiled call instead",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  // with_statement > with_clause > with_item > call
  TSNode clause = named_child(v.node, 0);
  if (!is_type(clause, "with_clause")) return;
  for (uint32_t i = 0; i < ts_node_named_child_count(clause); ++i) {
    TSNode item = ts_node_named_child(clause, i);
    TSNode value = is_type(item, "with_item") ? field(item, "value") : item;
    if (is_type(value, "as_pattern")) value = named_child(value, 0);
    if (!is_type(value, "call")) continue;
    std::string q = callee_qualified(ctx, value);
    if (!q.starts_with("torch.backends.")) continue;
    ctx.report(kInfo, node_range(value),
               "`" + q +
                   "` returns a Python context manager, not a tensor: Dynamo breaks the graph here (torch.* op "
                   "returned non-Tensor).",
               v);
  }
}

}  // namespace

const Rule& rule_GM607() {
  static const Rule rule{&kInfo, {"with_statement"}, check};
  return rule;
}

}  // namespace graphmend
