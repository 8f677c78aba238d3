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
        "When the number only feeds a comparison with a literal in a test, the `.item()` is removed and the "
        "value stays a 0-d tensor (then GM101 can predicate the branch). Compared with another number, a name or "
        "an attribute in an `if` that can be predicated, the branch is predicated on the exact double-precision "
        "comparison `x.double() OP b`, checked at trace time.",
    .example_bad = "if x.abs().max().item() > 1:\n    x = x / 2",
    .example_good = "if x.abs().max() > 1:\n    x = x / 2",
    .fixable = true,
    .fix_safety =
        "Kept: the outcome of the comparison. Python compares in double precision, torch in the tensor's "
        "dtype, so the literal must compare the same in every dtype the tensor may have: exact in bfloat16 and "
        "within float16's range (a bfloat16 2048.0 is not `> 2047` in torch), and, unless the tensor is "
        "provably floating, an integer in [0, 127] (int8 and uint8 wrap a literal out of their range: an int8 "
        "5 is `> 200` in torch). The tensor is provably one element (`.item()` of a larger tensor raises, and "
        "so does the `if` on it). The double-precision form is what Python computes: a float's value is exact in "
        "double for every floating dtype, and so is a float bound or an int one within 2^53; Dynamo checks at "
        "trace time that the tensor is floating and the bound such a number "
        "(`torch.as_tensor((x.double() > b) if <checks> else (x.item() > b))`), and the original comparison runs "
        "otherwise. The predication then keeps what GM101's does.",
};

void check(RuleContext& ctx, const Visit& v) {
  if (argument_count(v.node) != 0) return;
  bool numpy_receiver = false;
  if (TSNode callee = unparenthesize(field(v.node, "function"));
      is_type(callee, "attribute") && ctx.text(field(callee, "attribute")) == "item") {
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
