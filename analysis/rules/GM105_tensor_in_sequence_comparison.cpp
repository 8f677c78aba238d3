// GM105: `==`/`!=` between sequences where one holds a tensor (`list(x.size()) == [b, n, d]`, n a tensor).
#include <algorithm>
#include <string>

#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM105",
    .name = "tensor-in-sequence-comparison",
    .family = "data-dependent control flow",
    .summary = "a list or tuple holding a tensor compared with `==`/`!=`",
    .explanation =
        "Python compares lists and tuples element by element and needs each answer as a bool. An element that "
        "is a tensor compares to a tensor, whose truth Dynamo does not know while tracing: it breaks the graph "
        "(list_richcompare_nonconst). This is common in shape checks (`assert list(x.size()) == [b, n, d]`) "
        "where one of the sizes is a 0-d tensor (`n = mask.sum(-1).max()`); checked on torch 2.13 for tensors "
        "computed in the graph and for tensors a resumed frame receives.",
    .registry_id = "GB6622",
    .fix_summary =
        "No automatic fix: compare Python ints (keep the size as an int, or `n.item()` outside the "
        "compiled region), or drop the check under `torch.compiler.is_compiling()`.",
    .example_bad = "n = mask.sum(-1).max()\nassert list(scores.size()) == [b, n, s]",
    .example_good = "assert scores.size(0) == b and scores.size(2) == s",
    .fixable = false,
};

// A tensor for sure: computed in this frame, or a parameter every caller passes a tensor (a parameter
// typed only by its name or default, such as `past_key_values=None`, is often no tensor at all).
bool proven_tensor(const RuleContext& ctx, TSNode expr, const FunctionInfo& fn) {
  expr = unparenthesize(expr);
  if (ctx.model.kind_of(expr, fn) != ValueKind::Tensor) return false;
  if (!is_type(expr, "identifier")) return true;
  const std::string name = ctx.text(expr);
  const bool param = std::find(fn.params.begin(), fn.params.end(), name) != fn.params.end();
  return !param || fn.tensor_params_from_callers.count(name) > 0 || fn.assignments.count(name) > 0;
}

// `[a, n, b]` / `(a, n)`: the first element that is a proven tensor.
TSNode tensor_element(const RuleContext& ctx, TSNode side, const FunctionInfo& fn) {
  side = unparenthesize(side);
  if (!is_type(side, "list") && !is_type(side, "tuple")) return TSNode{};
  for (TSNode element : named_children(side)) {
    if (!is_type(element, "comment") && proven_tensor(ctx, element, fn)) return element;
  }
  return TSNode{};
}

// A sequence of sizes or other values: a list/tuple literal, `list(...)`, `tuple(...)`, `x.shape`,
// `x.size()` of a tensor.
bool is_sequence(const RuleContext& ctx, TSNode side, const FunctionInfo& fn) {
  side = unparenthesize(side);
  if (is_type(side, "list") || is_type(side, "tuple")) return true;
  if (is_type(side, "call")) {
    TSNode callee = unparenthesize(field(side, "function"));
    if (is_type(callee, "identifier")) return ctx.text(callee) == "list" || ctx.text(callee) == "tuple";
    return tensor_method(ctx, side, fn) == "size" && argument_count(side) == 0;
  }
  if (is_type(side, "attribute")) {
    return ctx.text(field(side, "attribute")) == "shape" &&
           ctx.model.kind_of(field(side, "object"), fn) == ValueKind::Tensor;
  }
  return false;
}

void check(RuleContext& ctx, const Visit& v) {
  if (named_child_count(v.node) != 2) return;  // `a == b`, not chains
  TSNode op = ts_node_child(v.node, 1);
  const std::string_view spelled = ctx.document.node_text(op);
  if (spelled != "==" && spelled != "!=") return;
  TSNode left = named_child(v.node, 0), right = named_child(v.node, 1);
  TSNode element = tensor_element(ctx, right, v.function);
  if (ts_node_is_null(element) || !is_sequence(ctx, left, v.function)) {
    element = tensor_element(ctx, left, v.function);
    if (ts_node_is_null(element) || !is_sequence(ctx, right, v.function)) return;
  }
  ctx.report(kInfo, node_range(v.node),
             "This compares sequences element by element, and `" + ctx.text(element) +
                 "` is a tensor: its comparison gives a tensor whose truth Dynamo does not know, so it breaks the "
                 "graph here (list_richcompare_nonconst).",
             v);
}

}  // namespace

const Rule& rule_GM105() {
  static const Rule rule{&kInfo, {"comparison_operator"}, check};
  return rule;
}

}  // namespace graphmend
