// GM603: mutating `requires_grad` inside traced code.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM603",
    .name = "requires-grad-mutation",
    .family = "unsupported Python",
    .summary = "`requires_grad` changed inside compiled code",
    .explanation =
        "Setting `t.requires_grad = True` or calling `t.requires_grad_()` makes a traced intermediate a new "
        "autograd leaf. Dynamo breaks the graph when that tensor (or one computed from it) leaves the compiled "
        "region, or any output requires grad (a parameter's use is enough; GB8985); assigning the attribute "
        "breaks it in any case before torch 2.15 (GB0206).",
    .registry_id = "GB0206",
    .registry_id_since = "2.15=GB8985",
    .fix_summary = "No automatic fix: set requires_grad outside the compiled region (e.g. in `__init__`).",
    .example_bad = "x.requires_grad_(True)",
    .example_good = "# in __init__ or before calling the compiled model",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  if (is_type(v.node, "assignment")) {
    TSNode left = field(v.node, "left");
    if (!is_type(left, "attribute") || ctx.text(field(left, "attribute")) != "requires_grad") return;
    TSNode object = field(left, "object");
    if (ctx.model.kind_of(object, v.function) != ValueKind::Tensor) return;
    // Before 2.15 the assignment itself breaks (GB0206); from 2.15 the new leaf does when any output of the
    // region requires grad (GB8985), which a parameter's use is enough for: not proven absent here.
    ctx.report(kInfo, node_range(v.node),
               ctx.torch >= TorchVersion{2, 15}
                   ? "Assigning `requires_grad` on a traced tensor makes it a new autograd leaf: Dynamo breaks the "
                     "graph here when an output of the compiled region requires grad."
                   : "Assigning `requires_grad` on a traced tensor is not supported by Dynamo: it breaks the graph "
                     "here.",
               v);
    return;
  }
  if (tensor_method(ctx, v.node, v.function) != "requires_grad_") return;
  // requires_grad_(False) is traced; turning gradients on is not.
  if (argument_count(v.node) == 1) {
    TSNode arg = ts_node_named_child(field(v.node, "arguments"), 0);
    if (is_type(arg, "keyword_argument")) arg = field(arg, "value");
    if (!is_type(arg, "true")) return;
  } else if (argument_count(v.node) > 1) {
    return;
  }
  ctx.report(kInfo, node_range(v.node),
             "`requires_grad_()` on a traced tensor makes it a new autograd leaf: Dynamo breaks the graph here when "
             "an output of the compiled region requires grad.",
             v, "GB8985");
}

}  // namespace

const Rule& rule_GM603() {
  static const Rule rule{&kInfo, {"assignment", "call"}, check};
  return rule;
}

}  // namespace graphmend
