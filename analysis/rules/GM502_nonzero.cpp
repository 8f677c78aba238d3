// GM502: `nonzero` / `argwhere`: output size depends on data.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM502",
    .name = "nonzero",
    .family = "data-dependent shapes",
    .summary = "`nonzero`/`argwhere` has a data-dependent output shape",
    .explanation =
        "The number of indices `nonzero` returns depends on the tensor's values. With "
        "`capture_dynamic_output_shape_ops=False` (the default) Dynamo breaks the graph.",
    .registry_id = "GB0036",
    .fix_summary =
        "No automatic fix. Keep a dense mask and use `torch.where`, or pass a static `size=` where the op offers "
        "one (e.g. `torch.nonzero_static`).",
    .example_bad = "idx = mask.nonzero()",
    .example_good = "idx = torch.nonzero_static(mask, size=max_items)",
    .fixable = false,
};

// `x.nonzero(as_tuple=...)` is torch's signature alone (numpy's `nonzero()` takes no argument), so the
// receiver is a tensor unless it is proven to be something else.
bool torch_nonzero_signature(const RuleContext& ctx, TSNode call, const FunctionInfo& fn) {
  TSNode callee = unparenthesize(field(call, "function"));
  if (!is_type(callee, "attribute") || ctx.text(field(callee, "attribute")) != "nonzero") return false;
  if (ctx.model.kind_of(field(callee, "object"), fn) != ValueKind::Unknown) return false;
  TSNode args = field(call, "arguments");
  for (uint32_t i = 0; !ts_node_is_null(args) && i < ts_node_named_child_count(args); ++i) {
    TSNode arg = ts_node_named_child(args, i);
    if (is_type(arg, "keyword_argument") && ctx.text(field(arg, "name")) == "as_tuple") return true;
  }
  return false;
}

void check(RuleContext& ctx, const Visit& v) {
  std::string method = tensor_method(ctx, v.node, v.function);
  if (method.empty() && torch_nonzero_signature(ctx, v.node, v.function)) method = "nonzero";
  std::string q = callee_qualified(ctx, v.node);
  bool hit = method == "nonzero" || method == "argwhere" || q == "torch.nonzero" || q == "torch.argwhere";
  if (!hit) return;
  // as_tuple / static variants: `nonzero_static` is a different name and never matches.
  ctx.report(kInfo, node_range(v.node),
             "`nonzero` returns as many indices as there are non-zero values: Dynamo breaks the graph here "
             "(Dynamic shape operator).",
             v);
}

}  // namespace

const Rule& rule_GM502() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
