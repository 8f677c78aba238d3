// GM404: a tensor round-tripped through NumPy into a Python number or list.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM404",
    .name = "numpy-to-python",
    .family = "tensor to Python",
    .summary = "`.numpy()` value turned into a Python number or list",
    .explanation =
        "Dynamo traces `.numpy()` and NumPy calls on the result as tensor ops, so `.numpy()` alone stays in the "
        "graph. Turning that array into Python data (`float(...)`, `int(...)`, `.item()`, `.tolist()`) reads its "
        "values, which Dynamo does not have while tracing: it breaks the graph there (Data dependent operator).",
    .registry_id = "GB0033",
    .fix_summary = "No automatic fix: keep the value a tensor (drop `.numpy()` and the conversion).",
    .example_bad = "peak = float(x.detach().cpu().numpy().max())",
    .example_good = "peak = x.detach().amax()",
    .fixable = false,
};

// The outermost expression of a chain `x.numpy().sum()...` that starts at `numpy_call`.
TSNode chain_top(TSNode node) {
  for (;;) {
    TSNode parent = ts_node_parent(node);
    if (is_type(parent, "attribute") && ts_node_eq(field(parent, "object"), node)) {
      TSNode call = ts_node_parent(parent);
      if (!is_type(call, "call")) return node;
      node = call;
    } else if (is_type(parent, "subscript") && ts_node_eq(field(parent, "value"), node)) {
      node = parent;
    } else {
      return node;
    }
  }
}

void check(RuleContext& ctx, const Visit& v) {
  if (tensor_method(ctx, v.node, v.function) != "numpy") return;
  TSNode top = chain_top(v.node);
  // `.item()` / `.tolist()` ending the chain, or float/int/bool() around it.
  TSNode report{};
  if (is_type(top, "call")) {
    TSNode callee = field(top, "function");
    std::string last = is_type(callee, "attribute") ? ctx.text(field(callee, "attribute")) : "";
    if (last == "item" || last == "tolist") report = top;
  }
  TSNode args = ts_node_parent(top);
  TSNode call = ts_node_is_null(args) ? TSNode{} : ts_node_parent(args);
  if (ts_node_is_null(report) && is_type(args, "argument_list") && is_type(call, "call")) {
    std::string callee = ctx.text(field(call, "function"));
    if ((callee == "float" || callee == "int" || callee == "bool") && named_child_count(args) == 1) report = call;
  }
  if (ts_node_is_null(report)) return;
  ctx.report(kInfo, node_range(report),
             "This turns a NumPy view of a tensor into Python data: Dynamo breaks the graph here (Data dependent "
             "operator).",
             v);
}

}  // namespace

const Rule& rule_GM404() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
