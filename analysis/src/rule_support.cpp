#include <algorithm>
#include <array>
#include <string_view>

#include "graphmend/analysis/tensor_facts.h"
#include "rule.h"

namespace graphmend {

void RuleContext::report(const RuleInfo& rule, ByteRange range, std::string message, const Visit& visit,
                         std::string_view registry_id) {
  Finding f;
  f.rule = &rule;
  f.registry_id = registry_id;
  f.range = range;
  f.message = std::move(message);
  const FunctionInfo* top = &visit.function;
  if (!top->entry_description.empty())
    f.related.push_back({top->entry_range, "traced by torch.compile as part of " + top->entry_description});
  if (model.calls_export() && rule.export_fails)
    f.message +=
        " torch.export.export, called in this file, fails here with an error (it cannot guard on "
        "data-dependent values) instead of breaking the graph.";
  if (top->assumed_entry)
    f.message +=
        " (No torch.compile entry reaches this code in the checked files: this applies if it is compiled "
        "elsewhere, as a function of tensors may be.)";
  if (!ts_node_is_null(visit.loop)) {
    f.in_loop = true;
    f.message +=
        " It sits inside a loop: Dynamo then gives up on the whole frame and runs it eagerly "
        "(graph break in loop, GB7000).";
    ByteRange head = node_range(visit.loop);
    head.end = std::min(head.end, ts_node_start_byte(field(visit.loop, "body")));
    f.related.push_back({head, "this loop makes Dynamo skip the whole frame on a graph break"});
  }
  findings_.push_back(std::move(f));
}

const std::vector<uint32_t>& RuleContext::surely_breaking_calls(const FunctionInfo& fn) {
  auto [it, added] = surely_breaking_calls_.try_emplace(&fn);
  if (added) it->second = graphmend::surely_breaking_calls(document, model, fn);
  return it->second;
}

std::string tensor_method(const RuleContext& ctx, TSNode call, const FunctionInfo& fn) {
  TSNode callee = unparenthesize(field(call, "function"));
  if (!is_type(callee, "attribute")) return "";
  if (ctx.model.kind_of(field(callee, "object"), fn) != ValueKind::Tensor) return "";
  return ctx.text(field(callee, "attribute"));
}

TSNode Visit::ancestor(size_t up) const {
  if (up < ancestors.size()) return ancestors[ancestors.size() - 1 - up];
  TSNode n = ancestors.empty() ? node : ancestors.front();
  for (size_t i = ancestors.size(); i <= up && !ts_node_is_null(n); ++i) n = ts_node_parent(n);
  return n;
}

bool in_condition(const Visit& visit) {
  TSNode child = visit.node;
  size_t up = 0;
  for (TSNode p = visit.ancestor(up); !ts_node_is_null(p); child = p, p = visit.ancestor(++up)) {
    auto t = type_of(p);
    if (t == "boolean_operator" || t == "not_operator" || t == "parenthesized_expression") continue;
    if (t == "if_statement" || t == "elif_clause" || t == "while_statement")
      return ts_node_eq(field(p, "condition"), child);
    if (t == "conditional_expression") return named_child_count(p) >= 2 && ts_node_eq(named_child(p, 1), child);
    if (t == "assert_statement") return named_child_count(p) >= 1 && ts_node_eq(named_child(p, 0), child);
    return false;
  }
  return false;
}

std::string callee_qualified(const RuleContext& ctx, TSNode call) {
  auto q = ctx.model.qualified_name(field(call, "function"));
  return q ? *q : "";
}

bool is_logger_expression(const RuleContext& ctx, TSNode expr) {
  expr = unparenthesize(expr);
  std::string text = ctx.text(expr);
  if (auto q = ctx.model.qualified_name(expr); q && (*q == "logging" || q->ends_with(".logging"))) return true;
  if (text == "logger" || text == "log" || text == "LOGGER" || text == "_logger" || text == "_LOGGER" ||
      text == "self.logger" || text == "self._logger")
    return true;
  // x = logging.getLogger(...) at module level.
  return ctx.model.is_module_logger(text);
}

bool is_bool_tensor(const RuleContext& ctx, TSNode expr, const FunctionInfo& fn, int depth) {
  expr = unparenthesize(expr);
  if (depth > 6 || ts_node_is_null(expr)) return false;
  auto t = type_of(expr);
  if (t == "comparison_operator") return ctx.model.kind_of(expr, fn) == ValueKind::Tensor;
  if (t == "unary_operator") {
    return ctx.text(field(expr, "operator")) == "~" && is_bool_tensor(ctx, field(expr, "argument"), fn, depth + 1);
  }
  if (t == "binary_operator") {
    std::string op = ctx.text(field(expr, "operator"));
    if (op != "&" && op != "|" && op != "^") return false;
    return is_bool_tensor(ctx, field(expr, "left"), fn, depth + 1) ||
           is_bool_tensor(ctx, field(expr, "right"), fn, depth + 1);
  }
  if (t == "call") {
    static constexpr std::array<std::string_view, 18> kBoolOps{
        "bool",        "isnan", "isinf", "isfinite", "isneginf", "isposinf", "logical_and", "logical_or", "logical_not",
        "logical_xor", "eq",    "ne",    "gt",       "lt",       "ge",       "le",          "any",        "all"};
    // Methods that move, copy or reshape elements and keep the dtype: a mask stays a mask.
    static constexpr std::array<std::string_view, 26> kDtypeKeeping{"unsqueeze",    "squeeze",
                                                                    "repeat",       "expand",
                                                                    "expand_as",    "view",
                                                                    "view_as",      "reshape",
                                                                    "reshape_as",   "permute",
                                                                    "transpose",    "flatten",
                                                                    "unflatten",    "movedim",
                                                                    "contiguous",   "clone",
                                                                    "detach",       "flip",
                                                                    "roll",         "t",
                                                                    "narrow",       "select",
                                                                    "index_select", "cpu",
                                                                    "cuda",         "repeat_interleave"};
    // `dtype=torch.bool` among the arguments (`torch.zeros(n, dtype=torch.bool)`, `.to(torch.bool)`).
    auto asks_bool = [&] {
      for (TSNode a : named_children(field(expr, "arguments"))) {
        TSNode value = is_type(a, "keyword_argument") ? field(a, "value") : a;
        if (is_type(a, "keyword_argument") && ctx.text(field(a, "name")) != "dtype") continue;
        if (const auto q = ctx.model.qualified_name(value); q && *q == "torch.bool") return true;
      }
      return false;
    };
    std::string method = tensor_method(ctx, expr, fn);
    if (!method.empty()) {
      if (std::find(kBoolOps.begin(), kBoolOps.end(), method) != kBoolOps.end()) return true;
      if (method == "to" || method == "type") return asks_bool();
      if (std::find(kDtypeKeeping.begin(), kDtypeKeeping.end(), method) != kDtypeKeeping.end())
        return is_bool_tensor(ctx, field(unparenthesize(field(expr, "function")), "object"), fn, depth + 1);
      return false;
    }
    std::string q = callee_qualified(ctx, expr);
    if (q.starts_with("torch.")) {
      std::string_view last = std::string_view(q).substr(q.rfind('.') + 1);
      if (std::find(kBoolOps.begin(), kBoolOps.end(), last) != kBoolOps.end()) return true;
      static constexpr std::array<std::string_view, 8> kFactories{"zeros",      "ones",      "empty",      "full",
                                                                  "zeros_like", "ones_like", "empty_like", "full_like"};
      if (q.rfind('.') == 5 && std::find(kFactories.begin(), kFactories.end(), last) != kFactories.end())
        return asks_bool();
    }
    return false;
  }
  // Any element or slice of a boolean tensor is boolean (`router_mask[:, :, idx]`).
  if (t == "subscript") return is_bool_tensor(ctx, field(expr, "value"), fn, depth + 1);
  if (t == "identifier") {
    std::string name = ctx.text(expr);
    // A tensor input named like a mask (`mask`, `keep_mask`, `is_valid`) is taken to be boolean.
    bool param = std::find(fn.params.begin(), fn.params.end(), name) != fn.params.end();
    if (param && ctx.model.kind_of(expr, fn) == ValueKind::Tensor &&
        (name == "mask" || name.ends_with("_mask") || name.starts_with("is_") || name.starts_with("has_")) &&
        name != "attention_mask" && !name.ends_with("_idx") && !name.ends_with("_index") &&
        !name.ends_with("_indices") && !name.ends_with("_nonzero"))
      return true;
    auto it = fn.assignments.find(name);
    if (it == fn.assignments.end() || it->second.empty()) return false;
    // The assignment that reaches this use: the last one before it (`m = arange(n); m = m < lengths`).
    TSNode reaching{};
    for (TSNode rhs : it->second) {
      if (ts_node_end_byte(rhs) <= ts_node_start_byte(expr)) reaching = rhs;
    }
    if (ts_node_is_null(reaching)) return false;
    return is_bool_tensor(ctx, reaching, fn, depth + 1);
  }
  return false;
}

TSNode breaking_operand(const RuleContext& ctx, TSNode condition, const FunctionInfo& fn) {
  condition = unparenthesize(condition);
  if (ts_node_is_null(condition)) return TSNode{};
  if (is_type(condition, "not_operator")) return breaking_operand(ctx, field(condition, "argument"), fn);
  if (is_type(condition, "boolean_operator")) {
    TSNode left = field(condition, "left");
    if (TSNode hit = breaking_operand(ctx, left, fn); !ts_node_is_null(hit)) return hit;
    ValueKind left_kind = ctx.model.kind_of(left, fn);
    if (left_kind != ValueKind::Static && left_kind != ValueKind::None) return TSNode{};
    // The right operand runs only for some values of the left one. A static test that Dynamo decides (a flag, `is not
    // None`, a shape, a dtype or device test) lets the tensor test run for some values: the break is real on those
    // paths (the fp16 clamp breaks every fp16 run), so only a test known to be constant hides it.
    auto truth = ctx.model.static_truth(left, &fn);  // the whole operand, `not` included
    std::string op = ctx.text(field(condition, "operator"));
    if (truth && ((op == "and" && !*truth) || (op == "or" && *truth))) return TSNode{};
    return breaking_operand(ctx, field(condition, "right"), fn);
  }
  return ctx.model.kind_of(condition, fn) == ValueKind::Tensor ? condition : TSNode{};
}

bool callee_shadowed(const RuleContext& ctx, TSNode call, const FunctionInfo& fn) {
  return callee_root_bound(ctx.document, call, fn);
}

bool deferred_by_dynamo(const RuleContext& ctx, TSNode callee) {
  callee = unparenthesize(callee);
  if (!ctx.model.is_deferred(ctx.text(callee))) return false;
  const bool bound_logger_method = is_type(callee, "attribute") && is_logger_expression(ctx, field(callee, "object")) &&
                                   ctx.text(field(callee, "object")) != "logging";
  return !bound_logger_method || ctx.torch >= TorchVersion{2, 14};
}

TSNode first_tested_operand(TSNode test, const std::function<bool(TSNode)>& holds) {
  test = unparenthesize(test);
  if (is_type(test, "boolean_operator")) {
    TSNode left = first_tested_operand(field(test, "left"), holds);
    return ts_node_is_null(left) ? first_tested_operand(field(test, "right"), holds) : left;
  }
  if (is_type(test, "not_operator")) return first_tested_operand(field(test, "argument"), holds);
  return holds(test) ? test : TSNode{};
}

RandomCall random_call(const RuleContext& ctx, TSNode call, const FunctionInfo& fn) {
  const std::string q = callee_qualified(ctx, call);
  if (!q.starts_with("random.") || callee_shadowed(ctx, call, fn)) return RandomCall::None;
  const std::string_view function = std::string_view(q).substr(std::string_view("random.").size());
  const bool from_2_14 = ctx.torch >= TorchVersion{2, 14};
  if (function == "randint" || function == "randrange" || function == "uniform" || (from_2_14 && function == "random"))
    return RandomCall::Draw;
  if (from_2_14 && (function == "shuffle" || function == "sample" || function == "seed")) return RandomCall::Traced;
  // Each checked: the module's other functions are skipped.
  static constexpr std::array<std::string_view, 20> kSkipped{
      "random",       "choice",        "choices",        "shuffle",        "sample",
      "gauss",        "normalvariate", "lognormvariate", "expovariate",    "vonmisesvariate",
      "gammavariate", "betavariate",   "paretovariate",  "weibullvariate", "triangular",
      "getrandbits",  "randbytes",     "seed",           "getstate",       "setstate",
  };
  return std::find(kSkipped.begin(), kSkipped.end(), function) != kSkipped.end() ? RandomCall::Skipped
                                                                                 : RandomCall::None;
}

// One flag a function (by index): traced code of this file calls it (`helper(x)`, `self.shift(x)`,
// `self.block(x)` for a submodule's forward), so its frame is inlined into the caller's.
namespace {
const std::string& called_from_traced_code(const RuleContext& ctx) {
  auto& memo = ctx.model.memo();
  auto [it, added] = memo.try_emplace("called-from-traced");
  if (!added) return it->second;
  const auto& functions = ctx.model.functions();
  std::string flags(functions.size(), '\0');
  auto mark = [&](const FunctionInfo* callee, const FunctionInfo& caller) {
    if (callee && callee != &caller && callee->index < flags.size()) flags[callee->index] = 1;
  };
  for (const auto& f : functions) {
    if (!f->compiled) continue;
    for (TSNode node : f->body_nodes) {
      if (!is_type(node, "call")) continue;
      mark(ctx.model.resolve_callee(node, *f), *f);
      // `self.block(x)`: the forward of the submodule's class.
      TSNode callee = field(node, "function");
      if (f->owner && is_type(callee, "attribute") && ctx.text(field(callee, "object")) == "self") {
        auto cls = f->owner->attribute_module_classes.find(ctx.text(field(callee, "attribute")));
        const ClassInfo* sub =
            cls == f->owner->attribute_module_classes.end() ? nullptr : ctx.model.find_class(cls->second);
        if (sub) {
          if (auto forward = sub->methods.find("forward"); forward != sub->methods.end()) mark(forward->second, *f);
        }
      }
    }
    for (uint32_t callee : f->attribute_method_callees)
      if (callee < functions.size()) mark(functions[callee].get(), *f);
  }
  it->second = std::move(flags);
  return it->second;
}

}  // namespace

// Dynamo compiles this frame as a root when it is a compile entry or a module's forward that nothing in the
// file calls; any other traced function runs inlined.
bool frame_inlined(const RuleContext& ctx, const FunctionInfo& fn) {
  const bool root_candidate = fn.is_entry || (fn.owner && fn.owner->is_module && fn.name == "forward");
  const std::string& called = called_from_traced_code(ctx);
  return !root_candidate || fn.parent || (fn.index < called.size() && called[fn.index]);
}

bool exclusive_branches(TSNode a, TSNode b) {
  std::vector<TSNode> chain;  // a and its ancestors
  for (TSNode n = a; !ts_node_is_null(n); n = ts_node_parent(n)) {
    chain.push_back(n);
    if (is_type(n, "function_definition")) break;
  }
  TSNode child_b = b;
  for (TSNode n = ts_node_parent(b); !ts_node_is_null(n); child_b = n, n = ts_node_parent(n)) {
    auto found = std::find_if(chain.begin(), chain.end(), [&](TSNode c) { return ts_node_eq(c, n); });
    if (found == chain.end()) continue;
    if (found == chain.begin()) return false;  // a holds b
    TSNode child_a = *(found - 1);
    if (ts_node_eq(child_a, child_b)) return false;
    auto ta = type_of(child_a), tb = type_of(child_b);
    if (is_type(n, "if_statement")) {
      auto arm = [&](TSNode c, std::string_view t) {
        return t == "elif_clause" || t == "else_clause" || ts_node_eq(c, field(n, "consequence"));
      };
      if (!arm(child_a, ta) || !arm(child_b, tb)) return false;
      // a in an elif's test: the arms after it may still run.
      if (ta == "elif_clause") {
        TSNode test = field(child_a, "condition");
        if (ts_node_start_byte(test) <= ts_node_start_byte(a) && ts_node_end_byte(a) <= ts_node_end_byte(test))
          return false;
      }
      return true;
    }
    if (is_type(n, "conditional_expression")) {
      return named_child_count(n) >= 3 && ts_node_eq(child_a, named_child(n, 0)) &&
             ts_node_eq(child_b, named_child(n, 2));
    }
    if (is_type(n, "try_statement")) return ta == "except_clause" && (tb == "except_clause" || tb == "else_clause");
    return ta == "case_clause" && tb == "case_clause";
  }
  return false;
}

bool first_site_in_function(const FunctionInfo& fn, TSNode node, const std::function<bool(TSNode)>& is_site) {
  if (ts_node_is_null(fn.node)) return true;
  const uint32_t start = ts_node_start_byte(node);
  bool first = true;
  walk_preorder(field(fn.node, "body"), [&](TSNode n) {
    if (ts_node_start_byte(n) >= start) return Walk::Stop;
    auto t = type_of(n);
    if (t == "function_definition" || t == "class_definition" || t == "lambda" || t == "decorated_definition")
      return Walk::Skip;
    if (!ts_node_eq(n, node) && is_site(n) && !exclusive_branches(n, node)) {
      first = false;
      return Walk::Stop;
    }
    return Walk::Descend;
  });
  return first;
}

TSNode definition_of(const RuleContext& ctx, const FunctionInfo& fn) {
  if (!ts_node_is_null(fn.node)) return fn.node;
  TSNode n = ts_node_descendant_for_byte_range(ctx.document.root(), fn.range.start, fn.range.end);
  for (; !ts_node_is_null(n); n = ts_node_parent(n)) {
    if (ts_node_start_byte(n) < fn.range.start) break;
    if (is_type(n, "function_definition") && ts_node_start_byte(n) == fn.range.start &&
        ts_node_end_byte(n) == fn.range.end)
      return n;
  }
  return TSNode{};
}

uint32_t argument_count(TSNode call) {
  TSNode args = field(call, "arguments");
  return ts_node_is_null(args) ? 0 : ts_node_named_child_count(args);
}

bool body_is_raise(TSNode block) {
  if (ts_node_is_null(block) || named_child_count(block) == 0) return false;
  // Leading comments are named nodes too: the first real statement must be the raise.
  uint32_t n = ts_node_named_child_count(block);
  for (uint32_t i = 0; i < n; ++i) {
    TSNode stmt = ts_node_named_child(block, i);
    if (is_type(stmt, "comment")) continue;
    return is_type(stmt, "raise_statement");
  }
  return false;
}

}  // namespace graphmend
