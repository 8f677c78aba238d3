// GM614: a value drawn by `random.randint`/`randrange`/`uniform` (and `random.random` from torch 2.14) used as
// a Python number inside traced code.
#include <string>
#include <string_view>

#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM614",
    .name = "random-draw-use",
    .family = "tensor to Python",
    .summary = "Value of `random.randint`/`uniform`/`random` used as a Python number in compiled code",
    .explanation =
        "Dynamo traces `random.randint`, `random.randrange` and `random.uniform` (from torch 2.14 also "
        "`random.random`) by drawing the value when the graph runs and passing it in as a graph input: inside "
        "the graph it is a 0-d tensor, not a Python number. Branching on it (`if random.uniform(0, 1) < p:`, "
        "a conditional expression, `while`) is data-dependent (GB0170); arithmetic with a Python number or "
        "another draw (`1 - p`, `-p`, `k * 2`) is an unimplemented builtin operation on tensor arguments "
        "(GB0213); `float()`, `int()`, `bool()` and `round()` of it fail to constant-fold (GB0178); "
        "`range()` of it breaks (GB4841 on 2.13, GB0124 from 2.14), and so does a tensor indexed with it "
        "(GB0033). Multiplying a tensor by it and comparing it are traced; so is `assert`, which Dynamo turns "
        "into a graph assertion. A value that is a draw on one arm of a conditional expression whose test Dynamo "
        "decides "
        "while tracing (`count = k if self.min_count == self.max_count else random.randint(...)`, timm's "
        "RandomErasing) is reported where `range()` reads it, naming the test: graphmend does not evaluate the test, "
        "so with the constant arm taken the finding names a path not traced. `torch.export` does not fail here: it "
        "draws the value once, when exporting, "
        "and bakes it into the program. Checked on torch 2.13, 2.14 and 2.15.",
    // Each finding names its own id (the branch GB0170, ...). Not GB0170 here: that id stands for branches
    // torch.export fails on, and export specializes a draw (bakes the value in) instead.
    .registry_id = "GB0213",
    .fix_summary =
        "No automatic fix: drawing from torch's generator instead (`torch.rand(())`) changes the random "
        "stream. Keep the draw a tensor (`keep = torch.rand(()) < p` then `torch.where`), draw the number "
        "outside the compiled region and pass it in, or compute with tensors (`x * (1 - p)` as `x - x * p`).",
    .example_bad = "if self.training and random.uniform(0, 1) < self.drop_prob:\n    return x",
    .example_good = "# drawn in the eager training loop and passed in\nif self.training and drop:\n    return x",
    .fixable = false,
};

constexpr int kMaxDepth = 8;

bool is_number_literal(TSNode node) {
  node = unparenthesize(node);
  if (is_type(node, "unary_operator")) node = unparenthesize(field(node, "argument"));
  return is_type(node, "integer") || is_type(node, "float");
}

// A local of `fn` (not a parameter) every simple assignment of which satisfies `holds`.
template <typename Pred>
bool local_always(const FunctionInfo& fn, const std::string& name, Pred holds) {
  for (const auto& p : fn.params)
    if (p == name) return false;
  auto it = fn.assignments.find(name);
  if (it == fn.assignments.end() || it->second.empty()) return false;
  for (TSNode value : it->second)
    if (ts_node_is_null(value) || !holds(value)) return false;
  return true;
}

// A drawn value: a draw call, or a local only ever assigned one.
bool is_draw(const RuleContext& ctx, TSNode expr, const FunctionInfo& fn, int depth = 0) {
  expr = unparenthesize(expr);
  if (depth > kMaxDepth) return false;
  if (is_type(expr, "call")) return random_call(ctx, expr, fn) == RandomCall::Draw;
  if (is_type(expr, "identifier"))
    return local_always(fn, ctx.text(expr), [&](TSNode v) { return is_draw(ctx, v, fn, depth + 1); });
  return false;
}

// A truth value read from a draw: the draw, a comparison with it, `not` of one, or a local only ever
// assigned one of these.
bool is_draw_test(const RuleContext& ctx, TSNode expr, const FunctionInfo& fn, int depth = 0) {
  expr = unparenthesize(expr);
  if (depth > kMaxDepth) return false;
  if (is_draw(ctx, expr, fn, depth)) return true;
  if (is_type(expr, "comparison_operator")) {
    for (TSNode operand : named_children(expr))
      if (is_draw(ctx, operand, fn, depth + 1)) return true;
    return false;
  }
  if (is_type(expr, "not_operator")) return is_draw_test(ctx, field(expr, "argument"), fn, depth + 1);
  if (is_type(expr, "identifier"))
    return local_always(fn, ctx.text(expr), [&](TSNode v) { return is_draw_test(ctx, v, fn, depth + 1); });
  return false;
}

// `a if test else draw`, or a local only ever assigned one such expression: a draw on the path where the test,
// which Dynamo decides while tracing (a tensor or a draw test is a branch of its own), picks the draw. Returns
// that test, or a null node.
TSNode draw_picked_by(const RuleContext& ctx, TSNode expr, const FunctionInfo& fn, int depth = 0) {
  expr = unparenthesize(expr);
  if (depth > kMaxDepth) return TSNode{};
  if (is_type(expr, "identifier")) {
    const std::string name = ctx.text(expr);
    for (const auto& p : fn.params)
      if (p == name) return TSNode{};
    auto it = fn.assignments.find(name);
    if (it == fn.assignments.end() || it->second.size() != 1 || ts_node_is_null(it->second.front())) return TSNode{};
    return draw_picked_by(ctx, it->second.front(), fn, depth + 1);
  }
  if (!is_type(expr, "conditional_expression") || named_child_count(expr) != 3) return TSNode{};
  TSNode test = named_child(expr, 1);
  if (ctx.model.kind_of(test, fn) == ValueKind::Tensor || is_draw_test(ctx, test, fn)) return TSNode{};
  if (is_draw(ctx, named_child(expr, 0), fn) || is_draw(ctx, named_child(expr, 2), fn)) return test;
  return TSNode{};
}

TSNode test_of(TSNode node) {
  if (is_type(node, "conditional_expression")) return named_child(node, 1);
  return field(node, "condition");
}

void check_branch(RuleContext& ctx, const Visit& v) {
  TSNode operand = first_tested_operand(test_of(v.node), [&](TSNode n) { return is_draw_test(ctx, n, v.function); });
  if (ts_node_is_null(operand)) return;
  ctx.report(kInfo, node_range(operand),
             "`" + ctx.text(operand) +
                 "` is read from a value Dynamo draws when the graph runs (a graph input, a tensor in the graph): "
                 "branching on it is data-dependent and breaks the graph here.",
             v, "GB0170");
}

void check_arithmetic(RuleContext& ctx, const Visit& v) {
  if (is_type(v.node, "unary_operator")) {
    if (ctx.text(field(v.node, "operator")) != "-" || !is_draw(ctx, field(v.node, "argument"), v.function)) return;
  } else {
    TSNode left = field(v.node, "left"), right = field(v.node, "right");
    const std::string op = ctx.text(field(v.node, "operator"));
    if (op != "+" && op != "-" && op != "*" && op != "/" && op != "//" && op != "%" && op != "**") return;
    const bool l = is_draw(ctx, left, v.function), r = is_draw(ctx, right, v.function);
    // The other operand a Python number: a literal, or a value Dynamo knows while tracing (`area` from sizes).
    auto number = [&](TSNode n) {
      return is_number_literal(n) || ctx.model.kind_of(n, v.function) == ValueKind::Static;
    };
    if (!((l && (r || number(right))) || (r && number(left)))) return;
  }
  ctx.report(kInfo, node_range(v.node),
             "`" + ctx.text(v.node) +
                 "` computes with a value Dynamo draws when the graph runs (a 0-d tensor in the graph) as a Python "
                 "number: an unimplemented builtin operation on tensor arguments, the graph breaks here.",
             v, "GB0213");
}

void check_call(RuleContext& ctx, const Visit& v) {
  TSNode callee = field(v.node, "function");
  if (!is_type(callee, "identifier") || bound_in_function(v.function, ctx.text(callee))) return;
  const std::string name = ctx.text(callee);
  const bool conversion = name == "float" || name == "int" || name == "bool" || name == "round";
  if (!conversion && name != "range") return;
  TSNode args = field(v.node, "arguments");
  bool drawn = false;
  for (TSNode arg : named_children(args))
    drawn = drawn || (!is_type(arg, "keyword_argument") && is_draw(ctx, arg, v.function));
  if (!drawn && !conversion) {
    // `range(count)` with `count = k if self.min_count == self.max_count else random.randint(...)`.
    for (TSNode arg : named_children(args)) {
      if (is_type(arg, "keyword_argument")) continue;
      TSNode test = draw_picked_by(ctx, arg, v.function);
      if (ts_node_is_null(test)) continue;
      ctx.report(kInfo, node_range(v.node),
                 "`range()` over `" + ctx.text(arg) +
                     "`, a value Dynamo draws when the graph runs (a 0-d tensor in "
                     "the graph) wherever `" +
                     ctx.text(test) +
                     "` picks the draw, needs its number: the graph breaks "
                     "here on that path.",
                 v, ctx.torch >= TorchVersion{2, 14} ? "GB0124" : "GB4841");
      return;
    }
  }
  if (!drawn || (conversion && argument_count(v.node) == 0)) return;
  if (conversion) {
    ctx.report(kInfo, node_range(v.node),
               "`" + name +
                   "()` of a value Dynamo draws when the graph runs (a 0-d tensor in the graph) cannot be "
                   "constant-folded: the graph breaks here.",
               v, "GB0178");
    return;
  }
  ctx.report(kInfo, node_range(v.node),
             "`range()` over a value Dynamo draws when the graph runs (a 0-d tensor in the graph) needs its "
             "number: the graph breaks here.",
             v, ctx.torch >= TorchVersion{2, 14} ? "GB0124" : "GB4841");
}

void check_subscript(RuleContext& ctx, const Visit& v) {
  TSNode index = field(v.node, "subscript");
  if (ts_node_is_null(index) || named_child_count(v.node) != 2) return;
  if (ctx.model.kind_of(field(v.node, "value"), v.function) != ValueKind::Tensor) return;
  if (!is_draw(ctx, index, v.function)) return;
  ctx.report(kInfo, node_range(v.node),
             "Indexing a tensor with a value Dynamo draws when the graph runs (a 0-d tensor in the graph) is a "
             "data-dependent operation: the graph breaks here.",
             v, "GB0033");
}

void check(RuleContext& ctx, const Visit& v) {
  auto t = type_of(v.node);
  if (t == "if_statement" || t == "elif_clause" || t == "while_statement" || t == "conditional_expression")
    check_branch(ctx, v);
  else if (t == "binary_operator" || t == "unary_operator")
    check_arithmetic(ctx, v);
  else if (t == "call")
    check_call(ctx, v);
  else if (t == "subscript")
    check_subscript(ctx, v);
}

}  // namespace

const Rule& rule_GM614() {
  static const Rule rule{&kInfo,
                         {"if_statement", "elif_clause", "while_statement", "conditional_expression", "binary_operator",
                          "unary_operator", "call", "subscript"},
                         check};
  return rule;
}

}  // namespace graphmend
