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
        "breaks it in any case before torch 2.15 (GB0206). From 2.15 an assignment is not reported when the "
        "function is compiled as the root, reads the tensor only through `.detach()` and uses no `self.` state "
        "or other leaf: then no output requires grad (for inputs that do not).",
    .registry_id = "GB0206",
    .registry_id_since = "2.15=GB8985",
    .fix_summary = "No automatic fix: set requires_grad outside the compiled region (e.g. in `__init__`).",
    .example_bad = "x.requires_grad_(True)",
    .example_good = "# in __init__ or before calling the compiled model",
    .fixable = false,
};

// From 2.15 the assignment breaks only when an output of the compiled region requires grad. Silent when that
// is proven not to happen (inputs taken not to require grad): the frame is the root, the new leaf `name` is
// only ever read through `.detach()`, and nothing else can make an output require grad (no other leaf, no
// `self.` state such as a submodule's parameters).
bool no_output_requires_grad(const RuleContext& ctx, const Visit& v, TSNode target) {
  if (frame_inlined(ctx, v.function) || !is_type(target, "identifier")) return false;
  TSNode body = field(definition_of(ctx, v.function), "body");
  if (ts_node_is_null(body)) return false;
  const std::string name = ctx.text(target);
  bool proven = true;
  walk_preorder(body, [&](TSNode n) {
    auto t = type_of(n);
    if (t == "function_definition" || t == "lambda" || t == "class_definition") return Walk::Skip;
    if (ts_node_eq(n, v.node)) return Walk::Skip;  // the assignment itself
    if (t == "attribute") {
      const std::string attribute = ctx.text(field(n, "attribute"));
      TSNode object = field(n, "object");
      if (is_type(object, "identifier") && ctx.text(object) == "self" && attribute != "training") proven = false;
      if (attribute == "requires_grad_" || attribute == "requires_grad") proven = false;
      // `name.detach()`: the only read that cannot carry the new leaf's grad
      if (is_type(object, "identifier") && ctx.text(object) == name && attribute == "detach" &&
          is_type(ts_node_parent(n), "call"))
        return Walk::Skip;
    }
    // a read after the assignment (what came before is the value the leaf was made from)
    if (t == "identifier" && ctx.text(n) == name && ts_node_start_byte(n) > ts_node_end_byte(v.node)) proven = false;
    return proven ? Walk::Descend : Walk::Stop;
  });
  return proven;
}

void check(RuleContext& ctx, const Visit& v) {
  if (is_type(v.node, "assignment")) {
    TSNode left = field(v.node, "left");
    if (!is_type(left, "attribute") || ctx.text(field(left, "attribute")) != "requires_grad") return;
    TSNode object = field(left, "object");
    if (ctx.model.kind_of(object, v.function) != ValueKind::Tensor) return;
    if (ctx.torch >= TorchVersion{2, 15} && no_output_requires_grad(ctx, v, object)) return;
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
    TSNode arg = named_child(field(v.node, "arguments"), 0);
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
