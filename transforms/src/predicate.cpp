#include "predicate.h"

#include <algorithm>
#include <array>
#include <functional>

namespace graphmend::fixes {
namespace {

// torch.where needs a boolean condition; `if t:` means `t != 0` (NaN counts as true), which is `t.bool()`.
std::string as_bool(const Document& doc, TSNode test) {
  TSNode t = unparenthesize(test);
  if (is_type(t, "comparison_operator")) return text(doc, test);
  if (is_type(t, "call")) {
    std::string callee = text(doc, field(t, "function"));
    std::string last = callee.substr(callee.rfind('.') + 1);
    for (const char* b : {"any", "all", "isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not",
                          "logical_xor", "eq", "ne", "gt", "lt", "ge", "le", "bool", "isneginf", "isposinf"}) {
      if (last == b) return text(doc, test);
    }
  }
  bool simple = is_type(t, "identifier") || is_type(t, "call") || is_type(t, "attribute") || is_type(t, "subscript");
  return (simple ? text(doc, t) : "(" + text(doc, t) + ")") + ".bool()";
}

// The tensor tests under `and`/`or`/`not` of `condition` (which become logical_* calls) are total.
std::string why_tests_not_total(const Document& doc, const SemanticModel& model, TSNode condition,
                                const FunctionInfo& fn, const std::vector<RaiseCondition>& facts) {
  condition = unparenthesize(condition);
  if (is_type(condition, "not_operator"))
    return why_tests_not_total(doc, model, field(condition, "argument"), fn, facts);
  if (is_type(condition, "boolean_operator")) {
    if (auto w = why_tests_not_total(doc, model, field(condition, "left"), fn, facts); !w.empty()) return w;
    return why_tests_not_total(doc, model, field(condition, "right"), fn, facts);
  }
  return why_not_total(doc, model, condition, fn, facts);
}

// A value that is always a new tensor (or a Python value): arithmetic and comparisons allocate their result, and
// so do torch's operators and tensor methods but views and those that may return their input. Names,
// attributes, subscripts (views), `a or b`, modules of the user's or without weights (Identity returns its
// input), and every other call may be an existing tensor.
bool always_fresh(const Document& doc, const SemanticModel& model, const FunctionInfo& fn, TSNode value) {
  value = unparenthesize(value);
  const auto t = type_of(value);
  if (t == "binary_operator" || t == "unary_operator" || t == "comparison_operator" || t == "not_operator" ||
      t == "integer" || t == "float" || t == "true" || t == "false" || t == "none" || t == "string")
    return true;
  if (t == "conditional_expression") {
    for (TSNode part : named_children(value))
      if (!is_type(part, "comment") && !ts_node_eq(part, named_child(value, 1)) && !always_fresh(doc, model, fn, part))
        return false;
    return true;
  }
  if (t != "call") return false;
  std::string callee = text(doc, field(value, "function"));
  std::string last = callee.substr(callee.rfind('.') + 1);
  // `self.proj(x)` for a torch.nn layer that computes with weights: a new tensor. Not Identity, Dropout (its
  // input in eval), Flatten (a view), activations (`inplace=True`) or a class of the user's.
  static constexpr std::array<std::string_view, 16> kAllocatingModules{
      "Linear",          "Bilinear",        "Conv1d",      "Conv2d",       "Conv3d",    "ConvTranspose1d",
      "ConvTranspose2d", "ConvTranspose3d", "Embedding",   "EmbeddingBag", "LayerNorm", "GroupNorm",
      "RMSNorm",         "BatchNorm1d",     "BatchNorm2d", "BatchNorm3d"};
  TSNode fun = field(value, "function");
  if (is_type(fun, "attribute") && text(doc, field(fun, "object")) == "self") {
    const FunctionInfo* top = &fn;
    while (top->parent) top = top->parent;
    const std::string ctor = top->owner ? model.attribute_constructor(top->owner, last) : "";
    const std::string cls = ctor.substr(ctor.rfind('.') + 1);
    if (ctor.rfind("torch.nn.", 0) == 0 &&
        std::find(kAllocatingModules.begin(), kAllocatingModules.end(), cls) != kAllocatingModules.end())
      return true;
  }
  // Operators of torch and tensor methods make a new tensor, except the views and those that may return
  // their input itself (`x.to(dtype)` when it already has it, `torch.atleast_2d` of a matrix), and in-place
  // methods (`x.add_(1)` returns `x`).
  static constexpr std::array<std::string_view, 58> kViewOrSelf{"view",
                                                                "view_as",
                                                                "reshape",
                                                                "reshape_as",
                                                                "as_strided",
                                                                "detach",
                                                                "diagonal",
                                                                "expand",
                                                                "expand_as",
                                                                "movedim",
                                                                "moveaxis",
                                                                "narrow",
                                                                "permute",
                                                                "select",
                                                                "squeeze",
                                                                "unsqueeze",
                                                                "t",
                                                                "transpose",
                                                                "swapaxes",
                                                                "swapdims",
                                                                "unbind",
                                                                "split",
                                                                "tensor_split",
                                                                "chunk",
                                                                "unflatten",
                                                                "flatten",
                                                                "unfold",
                                                                "real",
                                                                "imag",
                                                                "view_as_real",
                                                                "view_as_complex",
                                                                "contiguous",
                                                                "to",
                                                                "type",
                                                                "type_as",
                                                                "float",
                                                                "double",
                                                                "half",
                                                                "bfloat16",
                                                                "int",
                                                                "long",
                                                                "short",
                                                                "bool",
                                                                "byte",
                                                                "char",
                                                                "cpu",
                                                                "cuda",
                                                                "atleast_1d",
                                                                "atleast_2d",
                                                                "atleast_3d",
                                                                "broadcast_to",
                                                                "broadcast_tensors",
                                                                "as_tensor",
                                                                "asarray",
                                                                "from_numpy",
                                                                "dropout",
                                                                "identity",
                                                                "alias"};
  if (last.empty() || last.back() == '_' ||
      std::find(kViewOrSelf.begin(), kViewOrSelf.end(), last) != kViewOrSelf.end())
    return false;
  if (is_type(fun, "attribute") && model.kind_of(field(fun, "object"), fn) == ValueKind::Tensor) return true;
  const auto qualified = model.qualified_name(fun);
  if (!qualified || qualified->rfind("torch.", 0) != 0) return false;
  if (qualified->rfind("torch.nn.functional.", 0) == 0) {
    // `F.relu(x, inplace=True)` returns `x`.
    for (TSNode a : named_children(field(value, "arguments")))
      if (is_type(a, "keyword_argument") && text(doc, field(a, "name")) == "inplace") return false;
    return true;
  }
  return qualified->rfind("torch.nn.", 0) != 0;  // not a module class (`torch.nn.Identity()(x)`)
}

// The variable's value before the statement is one the function made: not a parameter, and every binding a
// plain assignment of a fresh value (an augmented assignment writes that same fresh tensor).
bool old_value_fresh(const Document& doc, const SemanticModel& model, const FunctionInfo& fn, const std::string& name) {
  if (std::find(fn.params.begin(), fn.params.end(), name) != fn.params.end() || name == "self") return false;
  auto it = fn.binding_nodes.find(name);
  if (it == fn.binding_nodes.end() || it->second.empty()) return false;
  for (TSNode b : it->second) {
    if (is_type(b, "augmented_assignment")) continue;
    if (!is_type(b, "assignment") || !is_type(field(b, "left"), "identifier")) return false;
    TSNode right = field(b, "right");
    if (ts_node_is_null(right)) return false;
    // `y = y.float()`, `y = y[:, 0]`, `y = y.view(...)`: `y` itself or a view of it, fresh when `y` is.
    TSNode root = unparenthesize(right);
    while (is_type(root, "call") || is_type(root, "attribute") || is_type(root, "subscript")) {
      root = is_type(root, "call") ? field(root, "function")
                                   : field(root, is_type(root, "attribute") ? "object" : "value");
      root = unparenthesize(root);
    }
    if (is_type(root, "identifier") && text(doc, root) == name && !ts_node_eq(root, unparenthesize(right))) continue;
    if (!always_fresh(doc, model, fn, right)) return false;
  }
  return true;
}

// `name` is a local every assignment of which is arithmetic with a number (`x * 2`, `x + 0.5`, `x / 3`): never
// a bool tensor (a bool mixed with a number is int64 or floating).
bool local_not_bool(const Document& doc, const FunctionInfo& fn, const std::string& name) {
  if (std::find(fn.params.begin(), fn.params.end(), name) != fn.params.end()) return false;
  auto it = fn.binding_nodes.find(name);
  if (it == fn.binding_nodes.end() || it->second.empty()) return false;
  for (TSNode b : it->second) {
    if (is_type(b, "augmented_assignment")) continue;  // `y += 1` on a tensor keeps its dtype
    if (!is_type(b, "assignment") || !is_type(field(b, "left"), "identifier")) return false;
    TSNode right = unparenthesize(field(b, "right"));
    if (!is_type(right, "binary_operator")) return false;
    const std::string op = text(doc, field(right, "operator"));
    if (op != "+" && op != "-" && op != "*" && op != "/") return false;
    auto number = [&](TSNode n) {
      n = unparenthesize(n);
      if (is_type(n, "unary_operator")) n = unparenthesize(field(n, "argument"));
      return is_type(n, "integer") || is_type(n, "float");
    };
    if (!number(field(right, "left")) && !number(field(right, "right"))) return false;
  }
  return true;
}

// Where `expr`'s value goes once computed, climbing through parentheses, tuples, lists, dicts and conditional
// branches: a description of an escape the caller can see identity through, or empty.
std::string escape_of_expression(const Document& doc, const SemanticModel& model, const FunctionInfo& fn, TSNode expr) {
  TSNode at = expr;
  for (TSNode parent = ts_node_parent(at); !ts_node_is_null(parent); at = parent, parent = ts_node_parent(parent)) {
    const auto t = type_of(parent);
    if (t == "parenthesized_expression" || t == "tuple" || t == "list" || t == "set" || t == "expression_list" ||
        t == "pair" || t == "dictionary" || t == "conditional_expression" || t == "boolean_operator")
      continue;
    if (t == "attribute" && ts_node_eq(field(parent, "object"), at)) {
      // `y.view(...)`, `y.T`, `y.to(...)`: may be `y` or a view of it; `y.clone()`, `y.shape`: new values.
      TSNode call = ts_node_parent(parent);
      if (is_type(call, "call") && ts_node_eq(field(call, "function"), parent)) {
        if (always_fresh(doc, model, fn, call)) return "";
        parent = call;
      }
      continue;
    }
    if (t == "subscript" && ts_node_eq(field(parent, "value"), at)) continue;  // `y[:, :1]` may be a view of y
    if (t == "return_statement") return "returned";
    if (t == "yield") return "yielded";
    if (t == "assignment" || t == "augmented_assignment") {
      TSNode left = field(parent, "left");
      if (ts_node_eq(left, at)) return "";
      return "stored in `" + text(doc, left) + "`";
    }
    if (t == "comparison_operator") {
      for (uint32_t i = 0; i < ts_node_child_count(parent); ++i) {
        TSNode c = ts_node_child(parent, i);
        if (!ts_node_is_named(c) && (text(doc, c) == "is" || text(doc, c) == "is not")) return "compared by identity";
      }
      return "";
    }
    if (t == "argument_list") {
      TSNode call = ts_node_parent(parent);
      std::string callee = text(doc, field(call, "function"));
      std::string last = callee.substr(callee.rfind('.') + 1);
      if (last == "id") return "passed to `id()`";
      for (const char* m :
           {"append", "extend", "insert", "add", "update", "setdefault", "register_buffer", "__setitem__", "setattr"})
        if (last == m) return "stored by `" + callee + "(...)`";
      return "";
    }
    return "";
  }
  return "";
}

}  // namespace

std::string why_alias_observable(const Document& doc, const SemanticModel& model, const FunctionInfo& fn,
                                 const std::vector<TSNode>& values, const std::string& kept_name,
                                 const std::string& target, TSNode site) {
  std::string existing;
  for (TSNode v : values) {
    TSNode u = unparenthesize(v);
    const bool fresh =
        always_fresh(doc, model, fn, u) || (is_type(u, "identifier") && old_value_fresh(doc, model, fn, text(doc, u)));
    if (existing.empty() && !fresh) existing = text(doc, v);
  }
  if (existing.empty() && !kept_name.empty() && !old_value_fresh(doc, model, fn, kept_name)) existing = kept_name;
  if (existing.empty()) return "";
  std::string escape;
  std::string bound = target;
  if (bound.empty()) {
    // `y = a if t else b`: the select is bound to a local, whose reads decide.
    TSNode at = site;
    while (is_type(ts_node_parent(at), "parenthesized_expression")) at = ts_node_parent(at);
    TSNode parent = ts_node_parent(at);
    if (is_type(parent, "assignment") && ts_node_eq(field(parent, "right"), at) &&
        is_type(field(parent, "left"), "identifier"))
      bound = text(doc, field(parent, "left"));
  }
  if (bound.empty()) {
    escape = escape_of_expression(doc, model, fn, site);
  } else {
    // Every read of the target in the function (a loop may read it before the statement's text).
    std::function<void(TSNode)> visit = [&](TSNode node) {
      if (!escape.empty() || ts_node_is_null(node)) return;
      const auto t = type_of(node);
      if (t == "function_definition" || t == "lambda" || t == "class_definition") return;
      // The statement being rewritten: its reads compute the alternatives (and a long `a and b and ...` test
      // would make every read climb the whole chain).
      if (!ts_node_is_null(site) && ts_node_eq(node, site)) return;
      if (t == "identifier" && text(doc, node) == bound) {
        escape = escape_of_expression(doc, model, fn, node);
        return;
      }
      for (TSNode c : named_children(node)) visit(c);
    };
    visit(field(fn.node, "body"));
  }
  if (escape.empty()) return "";
  return "the select makes a new tensor where the original's `" + existing +
         "` may be an input, an attribute or a view of one, and the result is " + escape +
         ", where identity or later in-place writes can tell them apart (aliasing)";
}

std::string predicate_text(const Document& doc, const SemanticModel& model, TSNode condition, const FunctionInfo& fn,
                           const std::string& torch, std::string& why, bool* numel_unproven) {
  condition = unparenthesize(condition);
  if (is_type(condition, "not_operator")) {
    std::string inner = predicate_text(doc, model, field(condition, "argument"), fn, torch, why, numel_unproven);
    return inner.empty() ? "" : torch + ".logical_not(" + inner + ")";
  }
  if (is_type(condition, "boolean_operator")) {
    std::string op = text(doc, field(condition, "operator"));
    std::string l = predicate_text(doc, model, field(condition, "left"), fn, torch, why, numel_unproven);
    if (l.empty()) return "";
    std::string r = predicate_text(doc, model, field(condition, "right"), fn, torch, why, numel_unproven);
    if (r.empty()) return "";
    // `a and b` evaluates b only sometimes; logical_and always does: each test in b must not raise or
    // have effects (beyond what evaluating `a` already established).
    std::vector<RaiseCondition> facts = established_by(doc, model, field(condition, "left"), fn);
    if (auto w = why_tests_not_total(doc, model, field(condition, "right"), fn, facts); !w.empty()) {
      why = w + " (the original evaluates it only when `" + text(doc, field(condition, "left")) + "` allows)";
      return "";
    }
    return torch + ".logical_" + op + "(" + l + ", " + r + ")";
  }
  ValueKind kind = model.kind_of(condition, fn);
  if (kind != ValueKind::Tensor) {
    why = "the test `" + text(doc, condition) + "` is not a tensor, so it must stay a Python `if`";
    return "";
  }
  if (!is_one_element(doc, model, condition, fn)) {
    if (numel_unproven) {
      *numel_unproven = true;
      return as_bool(doc, condition);
    }
    why = "the test `" + text(doc, condition) +
          "` is not provably a single element (torch.where would select "
          "element-wise where the original raises)";
    return "";
  }
  return as_bool(doc, condition);
}

SelectCheck check_select(const Document& doc, const SemanticModel& model, const FunctionInfo& fn,
                         const std::vector<TSNode>& values, TSNode statement,
                         const std::vector<RaiseCondition>& established, bool keeps_old_value, const std::string& torch,
                         const std::string& kept_name) {
  SelectCheck out;
  Selectability sel = selectability(doc, model, fn, values, established, keeps_old_value);
  out.refusal = sel.refusal;
  if (!out.refusal.empty()) return out;
  for (const RaiseCondition& c : sel.checks) out.prechecks.push_back(check_text(doc, c, torch));
  std::string base;
  bool any_floating = false, any_unless_bool = false;
  for (TSNode v : values) {
    if (out.hazard.empty()) {
      if (std::string h = autograd_hazard(doc, model, v, fn); !h.empty())
        out.hazard = "`" + h + "` may have an inf/NaN derivative on the untaken side, which makes gradients NaN";
    }
    if (!out.shape_unproven.empty()) continue;
    ValueShape s = shape_of(doc, model, v, fn);
    if (s.likeness == Likeness::None) {
      out.shape_unproven = "cannot prove that `" + text(doc, v) + "` has the same shape as the other branch";
      continue;
    }
    if (!base.empty() && s.base != base) {
      out.shape_unproven = "cannot prove that `" + text(doc, v) + "` has the same shape as `" + base + "`";
      continue;
    }
    base = s.base;
    if (s.likeness != Likeness::Same) any_floating = true;
    if (s.unless_bool) any_unless_bool = true;
  }
  if (out.shape_unproven.empty() && any_floating) {
    // e.g. `x / 2` against `x`, `x * 2` against `x / 3`: equal dtypes only when x is floating (for a bool `x`,
    // `x * 2` is int64).
    const bool floating = local_is_floating(doc, model, base, fn);
    if (!floating) {
      out.shape_unproven = "`" + base +
                           "` may be a bool or integer tensor, whose dtype a branch changes (mixed with a number, "
                           "`b * 2` is int64 for a bool `b`; divided, an integer one becomes floating): torch.where "
                           "would change the other branch's dtype";
      const bool name = base.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
                        std::string::npos;
      if (name && !base.empty()) out.floating_check = base + ".is_floating_point()";
    }
  } else if (out.shape_unproven.empty() && any_unless_bool && !local_is_floating(doc, model, base, fn) &&
             !local_not_bool(doc, fn, base)) {
    out.shape_unproven = "`" + base +
                         "` may be a bool tensor, which an integer mixed in turns into int64 (`b + 1`): "
                         "torch.where would change the other branch's dtype";
    const bool name =
        base.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string::npos;
    if (name && !base.empty()) out.floating_check = base + ".dtype != " + torch + ".bool";
  }
  if (out.hazard.empty()) {
    // Every alternative must send gradients to the same names: the identity path (the variable keeps its old
    // value) reads the variable itself.
    std::vector<std::vector<std::string>> reads;
    for (TSNode v : values) reads.push_back(differentiable_reads(doc, model, v, fn));
    if (!kept_name.empty()) reads.push_back({kept_name});
    for (const auto& r : reads) {
      if (r == reads.front()) continue;
      std::string only;
      for (const auto& n : r)
        if (only.empty() && std::find(reads.front().begin(), reads.front().end(), n) == reads.front().end()) only = n;
      for (const auto& n : reads.front())
        if (only.empty() && std::find(r.begin(), r.end(), n) == r.end()) only = n;
      out.hazard = only.empty() ? "the alternatives send gradients to different tensors"
                                : "`" + only +
                                      "` would get a zero gradient on the path where the original does not "
                                      "use it (its .grad stays None there), and the result may require grad where the "
                                      "original's does not";
      break;
    }
  }
  if (under_no_grad(doc, statement)) {
    out.hazard.clear();
    // Under no_grad the select never requires grad; an original that passes a tensor through (`x` itself)
    // keeps its requires_grad.
    bool passes_through = keeps_old_value;
    for (TSNode v : values) {
      TSNode u = unparenthesize(v);
      passes_through |=
          (is_type(u, "identifier") || is_type(u, "attribute")) && model.kind_of(u, fn) != ValueKind::Static;
    }
    if (passes_through)
      out.hazard =
          "under torch.no_grad the selected tensor never requires grad, where the original returns an "
          "input tensor itself";
  }
  return out;
}

}  // namespace graphmend::fixes
