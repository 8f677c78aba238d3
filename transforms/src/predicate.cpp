#include "predicate.h"

#include <algorithm>
#include <array>
#include <cmath>
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
    const FunctionInfo* top = &fn.outermost();
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

// How escape_of_expression says a value is assigned to `target` (old_value_fresh recognises a store back into the
// variable itself by it).
std::string stored_in(const std::string& target) { return "stored in `" + target + "`"; }

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
      return stored_in(text(doc, left));
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

// The reads of `name` in the function's own body (nested definitions left out, and `skip`, the statement being
// rewritten, whose reads compute the alternatives) that lie in `window` or in a loop that repeats `site`.
std::vector<TSNode> reads_of(const Document& doc, const FunctionInfo& fn, const std::string& name, TSNode skip,
                             ByteRange window) {
  ByteRange loop_around{};
  for (const ByteRange& loop : fn.loop_ranges)
    if (!ts_node_is_null(skip) && loop.contains(node_range(skip)) &&
        (loop_around.end == 0 || loop.contains(loop_around)))
      loop_around = loop;
  std::vector<TSNode> out;
  std::function<void(TSNode)> visit = [&](TSNode node) {
    if (ts_node_is_null(node)) return;
    const auto t = type_of(node);
    if (t == "function_definition" || t == "lambda" || t == "class_definition") return;
    if (!ts_node_is_null(skip) && ts_node_eq(node, skip)) return;
    const ByteRange at = node_range(node);
    if (!window.overlaps(at) && !(loop_around.end != 0 && loop_around.overlaps(at))) return;
    if (t == "identifier" && text(doc, node) == name) {
      out.push_back(node);
      return;
    }
    for (TSNode c : named_children(node)) visit(c);
  };
  visit(field(fn.node, "body"));
  return out;
}

// `name`'s value where `at` reads it is a tensor the function made and nothing else holds: no parameter's
// value reaches it, each binding that does (SemanticModel's reaching bindings) is a plain assignment of a fresh
// value (or `y = y.float()`, `y += 1`: the same tensor or a view of it, fresh when that is), and between those
// bindings and `at` (and around `at` in a loop) no read of the name stores it elsewhere (`z = y`,
// `self.saved = y`, `out.append(y)`), where identity would tell the original's tensor from a select's.
bool old_value_fresh(const Document& doc, const SemanticModel& model, const FunctionInfo& fn, const std::string& name,
                     TSNode at) {
  if (name == "self") return false;
  const auto it = fn.binding_nodes.find(name);
  if (it == fn.binding_nodes.end() || it->second.empty()) return false;
  uint32_t earliest = ts_node_start_byte(at);
  std::vector<uint32_t> seen;
  std::function<bool(TSNode, int)> fresh_at = [&](TSNode read, int depth) {
    if (depth > 8) return false;
    const ReachingBindings reaching = reaching_bindings(read, it->second, fn);
    if (reaching.entry || reaching.bindings.empty()) return false;
    for (TSNode b : reaching.bindings) {
      if (std::find(seen.begin(), seen.end(), ts_node_start_byte(b)) != seen.end()) continue;
      seen.push_back(ts_node_start_byte(b));
      earliest = std::min(earliest, ts_node_start_byte(b));
      if (is_type(b, "augmented_assignment") && is_type(field(b, "left"), "identifier")) {
        if (!fresh_at(b, depth + 1)) return false;  // `y += 1` writes into the tensor `y` already held
        continue;
      }
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
      if (is_type(root, "identifier") && text(doc, root) == name && !ts_node_eq(root, unparenthesize(right))) {
        if (!fresh_at(b, depth + 1)) return false;
        continue;
      }
      if (!always_fresh(doc, model, fn, right)) return false;
    }
    return true;
  };
  if (!fresh_at(at, 0)) return false;
  for (TSNode read : reads_of(doc, fn, name, at, {earliest, ts_node_start_byte(at)})) {
    // Stored back into the variable itself (`y = y.float()`): still the one reference.
    const std::string escape = escape_of_expression(doc, model, fn, read);
    if (!escape.empty() && escape != stored_in(name)) return false;
  }
  return true;
}

// #28 technique 4, exact comparisons of `.item()`: `X.item() OP b` compares a Python float (X's value, exact
// in double for every floating dtype) with `b` in double precision, as Python does for a float or an int up to
// 2^53; `X.double() OP b` compares the same doubles in the graph. Where that cannot be known before tracing
// (X's dtype, b's type and size), Dynamo decides it at trace time and the original comparison runs otherwise:
//     torch.as_tensor((X.double() OP b) if <X floating> and <b a float, or an int within 2^53> else (X.item() OP b))
// X is evaluated once either way, and `b` (a literal, a name or an attribute of one) is read twice. Empty and no
// `why` when `condition` is not such a comparison.
std::string item_comparison(const Document& doc, const SemanticModel& model, TSNode condition, const FunctionInfo& fn,
                            const std::string& torch, std::string& why) {
  if (!is_type(condition, "comparison_operator") || named_child_count(condition) != 2) return "";
  auto item_object = [&](TSNode operand) {
    operand = unparenthesize(operand);
    if (!is_type(operand, "call") || named_child_count(field(operand, "arguments")) != 0) return TSNode{};
    TSNode callee = field(operand, "function");
    if (!is_type(callee, "attribute") || text(doc, field(callee, "attribute")) != "item") return TSNode{};
    return field(callee, "object");
  };
  TSNode left = named_child(condition, 0), right = named_child(condition, 1);
  TSNode object = item_object(left);
  const bool item_on_left = !ts_node_is_null(object);
  if (!item_on_left) object = item_object(right);
  if (ts_node_is_null(object)) return "";
  TSNode bound = unparenthesize(item_on_left ? right : left);
  std::string op;
  for (uint32_t i = 0; i < ts_node_child_count(condition); ++i)
    if (!ts_node_is_named(ts_node_child(condition, i))) op += text(doc, ts_node_child(condition, i));
  if (op != "<" && op != ">" && op != "<=" && op != ">=" && op != "==" && op != "!=") {
    why = "the comparison `" + op + "` has no element-wise tensor form";
    return "";
  }
  const std::string shown = text(doc, object);
  if (!definitely_tensor(doc, model, object, fn)) {
    why = "`" + shown + "` is not proven a tensor on every path (exact .item() comparison)";
    return "";
  }
  if (!is_one_element(doc, model, object, fn)) {
    why = "`" + shown +
          "` is not provably one element: `.item()` raises for others, where a tensor comparison "
          "would not (exact .item() comparison)";
    return "";
  }
  for (const char* builtin : {"isinstance", "float", "int"}) {
    if (!why_torch_unusable(doc, model, &fn, TorchName{builtin, std::nullopt}).empty()) {
      why = "`" + std::string(builtin) + "` is rebound, and the trace-time check of the exact comparison needs it";
      return "";
    }
  }
  std::vector<std::string> checks;
  // X floating: proven, or checked on a name (X itself, or the tensor a full reduction of X reduces).
  if (!is_floating(doc, model, object, fn)) {
    TSNode root = unparenthesize(object);
    if (is_type(root, "call") && named_child_count(field(root, "arguments")) == 0 &&
        is_type(field(root, "function"), "attribute")) {
      static constexpr std::array<std::string_view, 11> kFloatingKeeping{
          "max", "min", "amax", "amin", "sum", "mean", "prod", "norm", "abs", "clone", "detach"};
      const std::string method = text(doc, field(field(root, "function"), "attribute"));
      if (std::find(kFloatingKeeping.begin(), kFloatingKeeping.end(), method) != kFloatingKeeping.end())
        root = unparenthesize(field(field(root, "function"), "object"));
    }
    if (!is_type(root, "identifier")) {
      why = "nothing proves `" + shown +
            "` floating, and checking it at trace time would evaluate it twice "
            "(exact .item() comparison)";
      return "";
    }
    checks.push_back(text(doc, root) + ".is_floating_point()");
  }
  // b: a number exact in double, or a plain read checked at trace time.
  TSNode number = bound;
  if (is_type(number, "unary_operator") && text(doc, field(number, "operator")) == "-")
    number = unparenthesize(field(number, "argument"));
  auto literal = numeric_literal(doc, bound);
  if (is_type(number, "integer")) {
    if (!literal || std::fabs(literal->value) > 9007199254740992.0) {
      why = "the integer `" + text(doc, bound) + "` is not exact in double precision (exact .item() comparison)";
      return "";
    }
  } else if (!is_type(number, "float")) {
    TSNode root = bound;
    while (is_type(root, "attribute")) root = unparenthesize(field(root, "object"));
    if (!is_type(root, "identifier") || model.kind_of(bound, fn) == ValueKind::Tensor) {
      why = "`" + text(doc, bound) +
            "` is not a number, a name or an attribute of one, which the trace-time check "
            "could read twice (exact .item() comparison)";
      return "";
    }
    const std::string b = text(doc, bound);
    checks.push_back("(isinstance(" + b + ", float) or isinstance(" + b + ", int) and -9007199254740992 <= " + b +
                     " <= 9007199254740992)");
  }
  const std::string object_text = is_type(unparenthesize(object), "identifier") || is_type(object, "call") ||
                                          is_type(object, "attribute") || is_type(object, "subscript")
                                      ? shown
                                      : "(" + shown + ")";
  const std::string exact = item_on_left ? object_text + ".double() " + op + " " + text(doc, bound)
                                         : text(doc, bound) + " " + op + " " + object_text + ".double()";
  if (checks.empty()) return exact;
  std::string test;
  for (const std::string& c : checks) test += (test.empty() ? "" : " and ") + c;
  if (checks.size() == 1 && test.front() == '(') test = test.substr(1, test.size() - 2);  // `A if B or C else D`
  return torch + ".as_tensor((" + exact + ") if " + test + " else (" + text(doc, condition) + "))";
}

}  // namespace

std::string why_alias_observable(const Document& doc, const SemanticModel& model, const FunctionInfo& fn,
                                 const std::vector<TSNode>& values, const std::string& kept_name,
                                 const std::string& target, TSNode site) {
  std::string existing;
  for (TSNode v : values) {
    TSNode u = unparenthesize(v);
    const bool fresh = always_fresh(doc, model, fn, u) ||
                       (is_type(u, "identifier") && old_value_fresh(doc, model, fn, text(doc, u), site));
    if (existing.empty() && !fresh) existing = text(doc, v);
  }
  if (existing.empty() && !kept_name.empty() && !old_value_fresh(doc, model, fn, kept_name, site)) existing = kept_name;
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
    // The reads of the target that may see the select's value: after the statement, or anywhere in a loop
    // around it.
    for (TSNode read : reads_of(doc, fn, bound, site, {ts_node_end_byte(site), ts_node_end_byte(fn.node)})) {
      escape = escape_of_expression(doc, model, fn, read);
      if (!escape.empty()) break;
    }
  }
  if (escape.empty()) return "";
  return "the select makes a new tensor where the original's `" + existing +
         "` may be an input, an attribute, a view of one or a tensor held elsewhere too, and the result is " + escape +
         ", where identity or later in-place writes can tell them apart (aliasing)";
}

// A one-element test of more dimensions than the values would broadcast them in torch.where (a `(1, 1, 1)` test
// makes a 2-d select 3-d): a test not provably 0-dim is reshaped to 0-dim, exact for one element. `predicate` is
// a call (`x.any()`, `m.bool()`, `torch.as_tensor(...)`) that takes `.reshape(())` as is, or, for a comparison
// (`comparison`), the comparison's text, which needs parentheses.
std::string zero_dim(const Document& doc, const SemanticModel& model, TSNode condition, const FunctionInfo& fn,
                     const std::string& predicate, bool comparison) {
  if (is_zero_dim(doc, model, condition, fn)) return predicate;
  return (comparison ? "(" + predicate + ")" : predicate) + ".reshape(())";
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
  if (std::string exact = item_comparison(doc, model, condition, fn, torch, why); !exact.empty() || !why.empty())
    return exact.empty() ? exact : zero_dim(doc, model, condition, fn, exact, false);
  ValueKind kind = model.kind_of(condition, fn);
  if (kind != ValueKind::Tensor) {
    why = "the test `" + text(doc, condition) + "` is not a tensor, so it must stay a Python `if`";
    return "";
  }
  if (!definitely_tensor(doc, model, condition, fn)) {
    why = "the test `" + text(doc, condition) +
          "` may be None or a Python value on some path (an alternative, a binding or a parameter that may "
          "be None), where a tensor operation on it would raise";
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
  return zero_dim(doc, model, condition, fn, as_bool(doc, condition), is_type(condition, "comparison_operator"));
}

// Named in shape refusals (#28 technique 3): what the shape proof knows.
constexpr const char* kShapeProof =
    " (shape proof: arithmetic with Python numbers, casts, elementwise and masked operations keep a tensor's shape; "
    "anything else needs its shape checked at trace time)";

SelectCheck check_select(const Document& doc, const SemanticModel& model, const FunctionInfo& fn,
                         const std::vector<TSNode>& values, TSNode statement,
                         const std::vector<RaiseCondition>& established, bool keeps_old_value, const std::string& torch,
                         const std::string& kept_name, const std::vector<ByteRange>& precomputed,
                         const std::string& no_untaken_guards) {
  SelectCheck out;
  Selectability sel = selectability(doc, model, fn, values, established, keeps_old_value, precomputed);
  out.refusal = sel.refusal;
  if (!out.refusal.empty()) return out;
  for (const RaiseCondition& c : sel.checks) out.prechecks.push_back(check_text(doc, c, torch));
  std::string base;
  bool any_floating = false, any_unless_bool = false;
  out.untaken_guards.resize(values.size());
  const bool no_grad = under_no_grad(doc, statement);
  for (size_t i = 0; i < values.size(); ++i) {
    TSNode v = values[i];
    if (std::string h = autograd_hazard(doc, model, v, fn); !h.empty() && !no_grad) {
      // Technique 1: feed the untaken side ones, where its derivative is finite.
      std::string missing = no_untaken_guards;
      if (missing.empty()) {
        UntakenSide side = total_untaken_side(doc, model, fn, v, precomputed);
        missing = side.missing;
        out.untaken_guards[i] = std::move(side.leaves);
      }
      if (!missing.empty() && out.hazard.empty())
        out.hazard = "`" + h +
                     "` may have an inf/NaN derivative on the untaken side, which makes gradients NaN (total untaken "
                     "side: " +
                     missing + ")";
    }
    if (!out.shape_unproven.empty()) continue;
    ValueShape s = shape_of(doc, model, v, fn);
    if (s.likeness == Likeness::None) {
      out.shape_unproven =
          "cannot prove that `" + text(doc, v) + "` has the same shape as the other branch" + kShapeProof;
      continue;
    }
    if (!base.empty() && s.base != base) {
      out.shape_unproven =
          "cannot prove that `" + text(doc, v) + "` has the same shape as `" + base + "`" + kShapeProof;
      continue;
    }
    base = s.base;
    if (s.likeness != Likeness::Same) any_floating = true;
    if (s.unless_bool) any_unless_bool = true;
  }
  // A value left with its hazard makes the fix unsafe as it was: no guards for the others either.
  if (!out.hazard.empty())
    for (auto& g : out.untaken_guards) g.clear();
  // A trace-time dtype check can name the base only when it is a plain variable.
  const bool base_is_name =
      !base.empty() &&
      base.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string::npos;
  if (out.shape_unproven.empty() && any_floating) {
    // e.g. `x / 2` against `x`, `x * 2` against `x / 3`: equal dtypes only when x is floating (for a bool `x`,
    // `x * 2` is int64).
    const bool floating = local_is_floating(doc, model, base, fn);
    if (!floating) {
      out.shape_unproven = "`" + base +
                           "` may be a bool or integer tensor, whose dtype a branch changes (mixed with a number, "
                           "`b * 2` is int64 for a bool `b`; divided, an integer one becomes floating): torch.where "
                           "would change the other branch's dtype";
      if (base_is_name) out.floating_check = base + ".is_floating_point()";
    }
  } else if (out.shape_unproven.empty() && any_unless_bool && !local_is_floating(doc, model, base, fn) &&
             !local_not_bool(doc, fn, base)) {
    out.shape_unproven = "`" + base +
                         "` may be a bool tensor, which an integer mixed in turns into int64 (`b + 1`): "
                         "torch.where would change the other branch's dtype";
    if (base_is_name) out.floating_check = base + ".dtype != " + torch + ".bool";
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
  if (no_grad) {
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
