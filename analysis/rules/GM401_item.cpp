// GM401: `.item()` on a tensor.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM401",
    .name = "tensor-item",
    .family = "tensor to Python",
    .summary = "`.item()` turns a tensor into a Python number",
    .explanation =
        "`.item()` copies a value out of the graph into Python. With `capture_scalar_outputs=False` (the default) "
        "Dynamo breaks the graph to run it.",
    .registry_id = "GB0124",
    .fix_summary =
        "When the number only feeds a comparison or tensor arithmetic, the `.item()` is removed and the value "
        "stays a 0-d tensor.",
    .example_bad = "scale = x.abs().max().item()\ny = x / scale",
    .example_good = "scale = x.abs().max()\ny = x / scale",
    .fixable = true,
};

void check(RuleContext& ctx, const Visit& v) {
  if (argument_count(v.node) != 0) return;
  bool numpy_receiver = false;
  if (TSNode callee = unparenthesize(field(v.node, "function")); is_type(callee, "attribute") &&
                                                                  ctx.text(field(callee, "attribute")) == "item") {
    // NumPy values inside compiled code are traced as tensors: `np.random.rand(1).item()` breaks too.
    TSNode object = unparenthesize(field(callee, "object"));
    if (is_type(object, "call")) numpy_receiver = callee_qualified(ctx, object).starts_with("numpy.");
  }
  if (tensor_method(ctx, v.node, v.function) != "item" && !numpy_receiver) return;
  ctx.report(kInfo, node_range(v.node),
             "`.item()` copies a tensor's value into Python: Dynamo breaks the graph here (Unsupported Tensor.item() "
             "call with capture_scalar_outputs=False).",
             v);
}

}  // namespace

const Rule& rule_GM401() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
