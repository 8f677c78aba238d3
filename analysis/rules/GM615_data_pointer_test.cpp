// GM615: a tensor's `data_ptr()` compared or tested for truth inside traced code.
#include <string>

#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM615",
    .name = "data-pointer-test",
    .family = "tensor to Python",
    .summary = "`tensor.data_ptr()` compared or tested in compiled code",
    .explanation =
        "Inside the graph a tensor has no address yet: Dynamo traces `x.data_ptr()` as an opaque value. "
        "Comparing it (`q.data_ptr() == k.data_ptr()`, `x.data_ptr() != 0`) breaks the graph (Data pointer "
        "comparison, GB5976); from torch 2.15 so does testing its truth (`if x.data_ptr():`, "
        "`not x.data_ptr()`, `bool(x.data_ptr())`: Data pointer truth value, GB9118), which earlier releases "
        "traced. `is` and a pointer compared with itself are traced. Checked on torch 2.13, 2.14 and 2.15.",
    .registry_id = "GB5976",
    .fix_summary =
        "No automatic fix: decide outside the compiled region (the caller knows whether two tensors share "
        "storage) and pass the answer in, or compare what the test stands for (`q is k`, shapes, strides).",
    .example_bad = "if q.data_ptr() == k.data_ptr():\n    qkv = self.qkv(q)",
    .example_good = "if q is k:  # the same tensor object: traced\n    qkv = self.qkv(q)",
    .fixable = false,
};

bool is_data_ptr_call(const RuleContext& ctx, TSNode expr, const FunctionInfo& fn) {
  expr = unparenthesize(expr);
  return is_type(expr, "call") && argument_count(expr) == 0 && tensor_method(ctx, expr, fn) == "data_ptr";
}

// A local of `fn` (not a parameter) only ever assigned a data_ptr() call.
bool holds_data_ptr(const RuleContext& ctx, TSNode expr, const FunctionInfo& fn) {
  expr = unparenthesize(expr);
  if (is_data_ptr_call(ctx, expr, fn)) return true;
  if (!is_type(expr, "identifier")) return false;
  const std::string name = ctx.text(expr);
  for (const auto& p : fn.params)
    if (p == name) return false;
  auto it = fn.assignments.find(name);
  if (it == fn.assignments.end() || it->second.empty()) return false;
  for (TSNode value : it->second)
    if (ts_node_is_null(value) || !is_data_ptr_call(ctx, value, fn)) return false;
  return true;
}

// `a == b`-style comparison (not `is`/`in`) with a data pointer among its operands.
bool is_pointer_comparison(const RuleContext& ctx, TSNode expr, const FunctionInfo& fn) {
  expr = unparenthesize(expr);
  if (!is_type(expr, "comparison_operator")) return false;
  for (uint32_t i = 0; i < ts_node_child_count(expr); ++i) {
    TSNode child = ts_node_child(expr, i);
    if (ts_node_is_named(child)) continue;
    const std::string op = ctx.text(child);
    if (op == "is" || op == "in" || op == "not") return false;  // `is not`, `not in`
  }
  for (TSNode operand : named_children(expr))
    if (holds_data_ptr(ctx, operand, fn)) return true;
  return false;
}

void check(RuleContext& ctx, const Visit& v) {
  if (is_type(v.node, "comparison_operator")) {
    if (!is_pointer_comparison(ctx, v.node, v.function)) return;
    // `x.data_ptr() == x.data_ptr()`: the same pointer twice, which Dynamo folds.
    auto operands = named_children(v.node);
    if (operands.size() == 2 && ctx.text(operands[0]) == ctx.text(operands[1])) return;
    ctx.report(kInfo, node_range(v.node),
               "`" + ctx.text(v.node) +
                   "` compares a data pointer, which Dynamo cannot know while tracing: the graph breaks here (Data "
                   "pointer comparison).",
               v, "GB5976");
    return;
  }
  if (ctx.torch < TorchVersion{2, 15}) return;
  TSNode test{};
  if (is_type(v.node, "call")) {  // bool(x.data_ptr())
    TSNode callee = field(v.node, "function");
    if (!is_type(callee, "identifier") || ctx.text(callee) != "bool" || argument_count(v.node) != 1 ||
        bound_in_function(v.function, "bool"))
      return;
    test = named_child(field(v.node, "arguments"), 0);
  } else {
    test = is_type(v.node, "conditional_expression") ? named_child(v.node, 1) : field(v.node, "condition");
  }
  // the first operand Dynamo needs the truth of that is a data pointer (comparisons are sites of their own)
  TSNode site = first_tested_operand(test, [&](TSNode n) { return holds_data_ptr(ctx, n, v.function); });
  if (ts_node_is_null(site)) return;
  ctx.report(kInfo, node_range(site),
             "`" + ctx.text(site) +
                 "` tests a data pointer's truth, which Dynamo cannot know while tracing: the graph breaks here "
                 "(Data pointer truth value; traced before torch 2.15).",
             v, "GB9118");
}

}  // namespace

const Rule& rule_GM615() {
  static const Rule rule{
      &kInfo,
      {"comparison_operator", "if_statement", "elif_clause", "while_statement", "conditional_expression", "call"},
      check};
  return rule;
}

}  // namespace graphmend
