#include "support.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

namespace graphmend::fixes {
namespace {

template <size_t N>
bool one_of(std::string_view s, const std::array<std::string_view, N>& set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

// Reductions that give one element when called without a dim.
constexpr std::array<std::string_view, 14> kFullReductions{"sum", "mean", "max", "min", "amax", "amin", "any",
                                                          "all", "norm", "prod", "std", "var", "median",
                                                          "count_nonzero"};
// Element-wise ops that keep shape and dtype.
constexpr std::array<std::string_view, 12> kSameOps{"abs", "neg", "relu", "clamp", "clip", "clone", "contiguous",
                                                   "negative", "square", "roll", "flip", "clamp_min"};
// Element-wise ops that keep shape and give a floating result.
constexpr std::array<std::string_view, 18> kFloatOps{"tanh", "sigmoid", "exp", "log", "sqrt", "rsqrt", "sin",
                                                    "cos", "gelu", "silu", "softmax", "log_softmax", "erf",
                                                    "reciprocal", "softplus", "elu", "leaky_relu", "mish"};
// Ops whose untaken side can be inf/NaN for some inputs (NaN gradients through torch.where).
constexpr std::array<std::string_view, 16> kHazardOps{"log", "log2", "log10", "log1p", "sqrt", "rsqrt",
                                                     "reciprocal", "exp", "pow", "acos", "asin", "atanh",
                                                     "div", "true_divide", "logit", "float_power"};
// torch functions with randomness or uninitialised memory: results differ when run twice.
constexpr std::array<std::string_view, 14> kRandomFunctions{"rand", "randn", "randint", "randperm", "rand_like",
                                                           "randn_like", "randint_like", "bernoulli",
                                                           "multinomial", "normal", "poisson", "empty",
                                                           "empty_like", "dropout"};
// Stateless module classes: calling them twice computes the same thing and changes nothing.
constexpr std::array<std::string_view, 20> kStatelessModules{
    "Linear", "Conv1d", "Conv2d", "Conv3d", "LayerNorm", "RMSNorm", "Embedding", "GELU", "ReLU", "SiLU",
    "Tanh", "Sigmoid", "Identity", "Softmax", "GroupNorm", "Bilinear", "Flatten", "Unflatten", "LeakyReLU", "Mish"};

TSNode callee_of(TSNode call) { return unparenthesize(field(call, "function")); }

}  // namespace

std::string text(const Document& doc, TSNode node) { return std::string(doc.node_text(node)); }

uint32_t line_start_of(const Document& doc, TSNode node) {
  return doc.lines().line_start(doc.lines().line_of(ts_node_start_byte(node)));
}

uint32_t start_of_next_line(const Document& doc, uint32_t offset) {
  uint32_t line = doc.lines().line_of(offset);
  return line + 1 >= doc.lines().line_count() ? static_cast<uint32_t>(doc.text().size())
                                              : doc.lines().line_start(line + 1);
}

std::string indent_step(const std::string& indent) {
  return indent + (indent.find('\t') != std::string::npos ? "\t" : "    ");
}

TSNode enclosing(const Document& doc, ByteRange range, std::initializer_list<std::string_view> types) {
  for (TSNode n = ts_node_descendant_for_byte_range(doc.root(), range.start, range.end); !ts_node_is_null(n);
       n = ts_node_parent(n)) {
    for (std::string_view t : types) {
      if (is_type(n, t)) return n;
    }
  }
  return TSNode{};
}

std::string indentation_of(const Document& doc, TSNode node) {
  uint32_t start = line_start_of(doc, node);
  std::string out;
  for (uint32_t i = start; i < doc.text().size() && (doc.text()[i] == ' ' || doc.text()[i] == '\t'); ++i)
    out += doc.text()[i];
  return out;
}

uint32_t after_imports_offset(const Document& doc) {
  TSNode root = doc.root();
  uint32_t n = ts_node_named_child_count(root);
  uint32_t offset = 0;
  for (uint32_t i = 0; i < n; ++i) {
    TSNode stmt = ts_node_named_child(root, i);
    auto t = type_of(stmt);
    bool docstring = i == 0 && t == "expression_statement" && is_type(ts_node_named_child(stmt, 0), "string");
    if (t == "import_statement" || t == "import_from_statement" || t == "future_import_statement" || docstring ||
        t == "comment") {
      if (t == "comment" && offset == 0 && i > 0) continue;
      offset = start_of_next_line(doc, ts_node_end_byte(stmt));
      continue;
    }
    if (t == "comment") continue;
    // Conditional imports (try/except ImportError, if TYPE_CHECKING) are part of the import block too.
    if ((t == "try_statement" || t == "if_statement") && doc.node_text(stmt).find("import") != std::string_view::npos) {
      offset = start_of_next_line(doc, ts_node_end_byte(stmt));
      continue;
    }
    break;
  }
  return offset;
}

TorchName torch_name(const Document& doc, const SemanticModel& model) {
  if (!model.torch_alias().empty()) return {model.torch_alias(), std::nullopt};
  // Insert after the docstring and __future__ imports (those must stay first).
  TSNode root = doc.root();
  uint32_t offset = 0;
  uint32_t n = ts_node_named_child_count(root);
  for (uint32_t i = 0; i < n; ++i) {
    TSNode stmt = ts_node_named_child(root, i);
    bool docstring = is_type(stmt, "expression_statement") && is_type(ts_node_named_child(stmt, 0), "string") &&
                     (i == 0 || offset > 0 || is_type(ts_node_named_child(root, 0), "comment"));
    bool future = is_type(stmt, "future_import_statement");
    if (!docstring && !future && !is_type(stmt, "comment")) break;
    if (is_type(stmt, "comment")) {
      // A shebang and an encoding declaration must stay on the first lines.
      std::string_view c = doc.node_text(stmt);
      bool header = c.starts_with("#!") || c.find("coding") != std::string_view::npos;
      if (!header) continue;
    }
    offset = start_of_next_line(doc, ts_node_end_byte(stmt));
  }
  std::string eol(detect_line_ending(doc.text()));
  std::string insert = "import torch" + eol;
  if (offset == doc.text().size() && !doc.text().empty() && doc.text().back() != '\n') insert = eol + insert;
  return {"torch", TextEdit{{offset, offset}, insert}};
}

std::string why_impure(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn) {
  expr = unparenthesize(expr);
  if (ts_node_is_null(expr)) return "";
  auto t = type_of(expr);
  if (t == "identifier" || t == "integer" || t == "float" || t == "true" || t == "false" || t == "none" ||
      t == "string" || t == "concatenated_string" || t == "comment")
    return "";
  if (t == "attribute") return why_impure(doc, model, field(expr, "object"), fn);
  if (t == "binary_operator" || t == "comparison_operator" || t == "unary_operator" || t == "not_operator" ||
      t == "boolean_operator") {
    uint32_t n = ts_node_named_child_count(expr);
    for (uint32_t i = 0; i < n; ++i) {
      if (auto why = why_impure(doc, model, ts_node_named_child(expr, i), fn); !why.empty()) return why;
    }
    if (t == "binary_operator" || t == "comparison_operator") {
      // Two tensors of unrelated shapes may not broadcast: the op would raise on a path the original never
      // took. One-element tensors broadcast with anything.
      std::string base;
      int tensors = 0;
      bool related = true;
      for (TSNode c : named_children(expr)) {
        if (model.kind_of(c, fn) != ValueKind::Tensor || is_one_element(doc, model, c, fn)) continue;
        ++tensors;
        ValueShape s = shape_of(doc, model, c, fn);
        if (s.likeness == Likeness::None || (!base.empty() && s.base != base)) related = false;
        if (s.likeness != Likeness::None) base = s.base;
      }
      if (tensors >= 2 && !related)
        return "`" + text(doc, expr) + "` combines tensors whose shapes may not broadcast, so it could raise on the "
               "untaken path";
    }
    return "";
  }
  if (t == "subscript") {
    // Slices never raise; integer indices can be out of range on a path the original never took.
    TSNode value = field(expr, "value");
    if (auto why = why_impure(doc, model, value, fn); !why.empty()) return why;
    if (model.kind_of(value, fn) == ValueKind::Static) return "";  // shapes and config tuples: static
    uint32_t n = ts_node_named_child_count(expr);
    for (uint32_t i = 1; i < n; ++i) {
      TSNode index = ts_node_named_child(expr, i);
      if (is_type(index, "slice") || is_type(index, "ellipsis") || is_type(index, "none")) continue;
      return "`" + text(doc, expr) + "` indexes with a position that may be out of range on the untaken path";
    }
    return "";
  }
  if (t == "call") {
    TSNode callee = callee_of(expr);
    std::string callee_text = text(doc, callee);
    TSNode args = field(expr, "arguments");
    uint32_t n = ts_node_named_child_count(args);
    for (uint32_t i = 0; i < n; ++i) {
      TSNode a = ts_node_named_child(args, i);
      if (is_type(a, "keyword_argument")) {
        if (text(doc, field(a, "name")) == "inplace" && !is_type(field(a, "value"), "false"))
          return "`" + callee_text + "` runs in place";
        a = field(a, "value");
      }
      if (auto why = why_impure(doc, model, a, fn); !why.empty()) return why;
    }
    std::string last = callee_text.substr(callee_text.rfind('.') + 1);
    if (last.ends_with("_") && !last.ends_with("__")) return "`" + callee_text + "` changes a tensor in place";
    if (auto q = model.qualified_name(callee)) {
      std::string_view name = *q;
      std::string_view lname = name.substr(name.rfind('.') + 1);
      if (one_of(lname, kRandomFunctions) || lname.find("dropout") != std::string_view::npos)
        return "`" + callee_text + "` is random, and predication would run it on both paths";
      if (name.starts_with("torch.nn.functional.") || name.starts_with("torch.") || name.starts_with("math."))
        return "";
      return "`" + callee_text + "` is not known to be free of side effects";
    }
    if (is_type(callee, "attribute")) {
      TSNode object = field(callee, "object");
      ValueKind ok = model.kind_of(object, fn);
      if (ok == ValueKind::Tensor) {
        if (last == "item" || last == "tolist" || last == "numpy" || last == "backward" || last == "register_hook")
          return "`" + callee_text + "` leaves the graph";
        if (one_of(std::string_view(last), kRandomFunctions) || last == "bernoulli" || last == "uniform")
          return "`" + callee_text + "` is random, and predication would run it on both paths";
        return why_impure(doc, model, object, fn);
      }
      // self.proj(x): only module classes known to be stateless.
      if (text(doc, object) == "self") {
        const FunctionInfo* top = &fn;
        while (top->parent) top = top->parent;
        std::string ctor = model.attribute_constructor(top->owner, last);
        std::string_view cls = std::string_view(ctor).substr(ctor.rfind('.') + 1);
        if (!ctor.empty() && ctor.starts_with("torch.nn.") && one_of(cls, kStatelessModules)) return "";
        return "`" + callee_text + "` calls a module whose forward may have side effects (statistics, dropout, "
               "caches), and predication would run it on both paths";
      }
    }
    return "`" + callee_text + "(...)` is not known to be free of side effects";
  }
  if (t == "tuple" || t == "list") {
    uint32_t n = ts_node_named_child_count(expr);
    for (uint32_t i = 0; i < n; ++i) {
      if (auto why = why_impure(doc, model, ts_node_named_child(expr, i), fn); !why.empty()) return why;
    }
    return "";
  }
  return "`" + text(doc, expr) + "` is not known to be free of side effects";
}

bool is_one_element(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn, int depth) {
  expr = unparenthesize(expr);
  if (ts_node_is_null(expr) || depth > 6) return false;
  auto t = type_of(expr);
  ValueKind kind = model.kind_of(expr, fn);
  if (kind == ValueKind::Static) return true;  // Python numbers broadcast as scalars
  if (t == "comparison_operator" || t == "binary_operator") {
    uint32_t n = ts_node_named_child_count(expr);
    for (uint32_t i = 0; i < n; ++i) {
      if (!is_one_element(doc, model, ts_node_named_child(expr, i), fn, depth + 1)) return false;
    }
    return true;
  }
  if (t == "unary_operator") return is_one_element(doc, model, field(expr, "argument"), fn, depth + 1);
  if (t == "call") {
    TSNode callee = callee_of(expr);
    TSNode args = field(expr, "arguments");
    uint32_t n = ts_node_named_child_count(args);
    if (is_type(callee, "attribute") && model.kind_of(field(callee, "object"), fn) == ValueKind::Tensor) {
      std::string method = text(doc, field(callee, "attribute"));
      if (one_of(std::string_view(method), kFullReductions)) return n == 0;
      if (method == "float" || method == "double" || method == "abs" || method == "neg" || method == "sqrt" ||
          method == "exp" || method == "log" || method == "detach" || method == "logical_not")
        return n == 0 && is_one_element(doc, model, field(callee, "object"), fn, depth + 1);
      return false;
    }
    if (auto q = model.qualified_name(callee)) {
      std::string_view lname = std::string_view(*q).substr(q->rfind('.') + 1);
      if (one_of(lname, kFullReductions) && n == 1) return true;
      // 0-d and one-element factories: torch.rand([]), torch.zeros(()), torch.tensor(1.0), torch.randn(1).
      if ((lname == "rand" || lname == "randn" || lname == "zeros" || lname == "ones" || lname == "empty") && n == 1) {
        std::string size = text(doc, ts_node_named_child(args, 0));
        if (size == "[]" || size == "()" || size == "1" || size == "[1]" || size == "(1,)") return true;
      }
      if (lname == "tensor" && n >= 1) {
        auto arg_type = type_of(ts_node_named_child(args, 0));
        if (arg_type == "integer" || arg_type == "float" || arg_type == "true" || arg_type == "false") return true;
      }
      if ((lname == "logical_and" || lname == "logical_or") && n == 2)
        return is_one_element(doc, model, ts_node_named_child(args, 0), fn, depth + 1) &&
               is_one_element(doc, model, ts_node_named_child(args, 1), fn, depth + 1);
      if ((lname == "logical_not" || lname == "isnan" || lname == "isinf" || lname == "isfinite") && n == 1)
        return is_one_element(doc, model, ts_node_named_child(args, 0), fn, depth + 1);
    }
    return false;
  }
  if (t == "identifier") {
    // A parameter may hold anything; otherwise every assignment before this use must be one element.
    std::string name = text(doc, expr);
    if (std::find(fn.params.begin(), fn.params.end(), name) != fn.params.end()) return false;
    auto it = fn.assignments.find(name);
    if (it == fn.assignments.end() || it->second.empty()) return false;
    bool any = false;
    for (TSNode rhs : it->second) {
      if (ts_node_start_byte(rhs) >= ts_node_start_byte(expr)) continue;
      any = true;
      if (!is_one_element(doc, model, rhs, fn, depth + 1)) return false;
    }
    return any;
  }
  return false;
}

bool local_is_floating(const Document& doc, const SemanticModel& model, const std::string& name, const FunctionInfo& fn,
                       int depth, std::vector<std::string>* assumed) {
  if (std::find(fn.params.begin(), fn.params.end(), name) != fn.params.end()) return false;
  auto it = fn.assignments.find(name);
  if (it == fn.assignments.end() || it->second.empty()) return false;
  std::vector<std::string> own;
  if (!assumed) assumed = &own;
  if (std::find(assumed->begin(), assumed->end(), name) != assumed->end()) return true;
  assumed->push_back(name);
  const bool all = std::all_of(it->second.begin(), it->second.end(),
                               [&](TSNode rhs) { return is_floating(doc, model, rhs, fn, depth + 1, assumed); });
  assumed->pop_back();
  return all;
}

bool is_floating(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn, int depth,
                 std::vector<std::string>* assumed) {
  expr = unparenthesize(expr);
  if (ts_node_is_null(expr) || depth > 6) return false;
  auto t = type_of(expr);
  if (t == "float") return true;
  if (t == "binary_operator") {
    std::string op = text(doc, field(expr, "operator"));
    if (op == "/") return true;
    return is_floating(doc, model, field(expr, "left"), fn, depth + 1, assumed) ||
           is_floating(doc, model, field(expr, "right"), fn, depth + 1, assumed);
  }
  if (t == "unary_operator") return is_floating(doc, model, field(expr, "argument"), fn, depth + 1, assumed);
  if (t == "conditional_expression" && ts_node_named_child_count(expr) >= 3) {
    // Either alternative may be the value.
    return is_floating(doc, model, ts_node_named_child(expr, 0), fn, depth + 1, assumed) &&
           is_floating(doc, model, ts_node_named_child(expr, 2), fn, depth + 1, assumed);
  }
  if (t == "call") {
    TSNode callee = callee_of(expr);
    std::string callee_text = text(doc, callee);
    std::string last = callee_text.substr(callee_text.rfind('.') + 1);
    if (model.kind_of(callee, fn) == ValueKind::Module) return true;  // module outputs: activations
    if (is_type(callee, "attribute") && text(doc, field(callee, "object")) == "self" &&
        model.kind_of(expr, fn) == ValueKind::Tensor) {
      const FunctionInfo* top = &fn;
      while (top->parent) top = top->parent;
      std::string ctor = model.attribute_constructor(top->owner, last);
      if (!ctor.empty()) return true;  // self.proj(x) for a torch.nn module
    }
    if (last == "float" || last == "half" || last == "double" || last == "bfloat16") return true;
    if (one_of(std::string_view(last), kFloatOps) || last == "randn" || last == "rand" || last == "mean" ||
        last == "norm" || last == "linear" || last == "layer_norm")
      return true;
    if (is_type(callee, "attribute") && one_of(std::string_view(last), kSameOps))
      return is_floating(doc, model, field(callee, "object"), fn, depth + 1, assumed);
    return false;
  }
  if (t == "identifier") return local_is_floating(doc, model, text(doc, expr), fn, depth, assumed);
  if (t == "attribute" && text(doc, field(expr, "object")) == "self") {
    // nn.Parameter attributes are weights; buffers may be integer (counts, ids, masks).
    const FunctionInfo* top = &fn;
    while (top->parent) top = top->parent;
    std::string ctor = model.attribute_constructor(top->owner, text(doc, field(expr, "attribute")));
    return ctor == "torch.nn.Parameter" || ctor == "torch.nn.parameter.Parameter";
  }
  return false;
}

ValueShape shape_of(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn) {
  expr = unparenthesize(expr);
  auto t = type_of(expr);
  if (t == "identifier") {
    if (model.kind_of(expr, fn) == ValueKind::Tensor) return {text(doc, expr), Likeness::Same};
    return {};
  }
  if (t == "unary_operator") return shape_of(doc, model, field(expr, "argument"), fn);
  if (t == "binary_operator") {
    std::string op = text(doc, field(expr, "operator"));
    if (op != "+" && op != "-" && op != "*" && op != "/") return {};
    TSNode l = unparenthesize(field(expr, "left")), r = unparenthesize(field(expr, "right"));
    ValueShape ls = shape_of(doc, model, l, fn), rs = shape_of(doc, model, r, fn);
    // Python numbers and one-element tensors broadcast without changing the other operand's shape.
    auto scalar = [&](TSNode n) {
      return is_type(n, "integer") || is_type(n, "float") ||
             (model.kind_of(n, fn) == ValueKind::Tensor && is_one_element(doc, model, n, fn));
    };
    ValueShape out;
    if (ls.likeness != Likeness::None && (scalar(r) || (rs.base == ls.base && rs.likeness != Likeness::None))) out = ls;
    else if (rs.likeness != Likeness::None && scalar(l)) out = rs;
    else return {};
    bool floaty = op == "/" || is_type(l, "float") || is_type(r, "float") || ls.likeness == Likeness::Floating ||
                  rs.likeness == Likeness::Floating;
    out.likeness = floaty ? Likeness::Floating : Likeness::Same;
    return out;
  }
  if (t == "call") {
    TSNode callee = callee_of(expr);
    std::string callee_text = text(doc, callee);
    std::string last = callee_text.substr(callee_text.rfind('.') + 1);
    TSNode args = field(expr, "arguments");
    TSNode subject{};
    if (is_type(callee, "attribute") && model.kind_of(field(callee, "object"), fn) == ValueKind::Tensor) {
      subject = field(callee, "object");
    } else if (auto q = model.qualified_name(callee); q && ts_node_named_child_count(args) >= 1) {
      subject = ts_node_named_child(args, 0);
    } else {
      return {};
    }
    // Extra positional args must be scalars (clamp(x, 0, 1)); softmax-like dims keep shape too.
    ValueShape s = shape_of(doc, model, subject, fn);
    if (s.likeness == Likeness::None) return {};
    if (one_of(std::string_view(last), kSameOps)) return s;
    if (one_of(std::string_view(last), kFloatOps)) return {s.base, Likeness::Floating};
    return {};
  }
  return {};
}

std::string autograd_hazard(const Document& doc, TSNode expr) {
  std::string found;
  std::function<void(TSNode)> visit = [&](TSNode node) {
    if (!found.empty()) return;
    auto t = type_of(node);
    if (t == "binary_operator") {
      std::string op = text(doc, field(node, "operator"));
      TSNode r = unparenthesize(field(node, "right"));
      bool scalar = is_type(r, "integer") || is_type(r, "float");
      if ((op == "/" || op == "//" || op == "%") && !scalar) found = text(doc, node);
      if (op == "**" && !(is_type(r, "integer") && text(doc, r)[0] != '-')) found = text(doc, node);
    } else if (t == "call") {
      std::string callee = text(doc, field(node, "function"));
      std::string last = callee.substr(callee.rfind('.') + 1);
      if (one_of(std::string_view(last), kHazardOps)) found = text(doc, node);
    }
    uint32_t n = ts_node_named_child_count(node);
    for (uint32_t i = 0; i < n; ++i) visit(ts_node_named_child(node, i));
  };
  visit(expr);
  return found;
}

bool under_no_grad(const Document& doc, TSNode node) {
  for (TSNode p = ts_node_parent(node); !ts_node_is_null(p); p = ts_node_parent(p)) {
    if (is_type(p, "function_definition")) {
      // @torch.no_grad() / @torch.inference_mode() on the function itself.
      TSNode deco = ts_node_parent(p);
      if (is_type(deco, "decorated_definition")) {
        std::string_view d = doc.node_text(deco);
        d = d.substr(0, ts_node_start_byte(p) - ts_node_start_byte(deco));
        if (d.find("no_grad") != std::string_view::npos || d.find("inference_mode") != std::string_view::npos)
          return true;
      }
      return false;
    }
    if (is_type(p, "with_statement")) {
      std::string_view head = doc.node_text(p);
      head = head.substr(0, head.find(':'));
      if (head.find("enable_grad") != std::string_view::npos || head.find("set_grad_enabled") != std::string_view::npos)
        return false;  // the innermost grad mode wins
      if (head.find("no_grad") != std::string_view::npos || head.find("inference_mode") != std::string_view::npos)
        return true;
    }
  }
  return false;
}

std::vector<std::string> names_read(const Document& doc, TSNode expr) {
  std::vector<std::string> out;
  std::function<void(TSNode)> visit = [&](TSNode node) {
    if (is_type(node, "identifier")) {
      TSNode parent = ts_node_parent(node);
      // `a.b`: only `a` is a name read; keyword names are not reads either.
      if (is_type(parent, "attribute") && ts_node_eq(field(parent, "attribute"), node)) return;
      if (is_type(parent, "keyword_argument") && ts_node_eq(field(parent, "name"), node)) return;
      out.push_back(text(doc, node));
      return;
    }
    uint32_t n = ts_node_named_child_count(node);
    for (uint32_t i = 0; i < n; ++i) visit(ts_node_named_child(node, i));
  };
  visit(expr);
  return out;
}

bool defined_before(const Document& doc, const FunctionInfo& fn, const std::string& name, TSNode stmt) {
  if (std::find(fn.params.begin(), fn.params.end(), name) != fn.params.end()) return true;
  auto it = fn.assignments.find(name);
  if (it == fn.assignments.end()) return false;
  // Blocks that enclose `stmt`: an assignment directly in one of them, before `stmt`, always ran.
  std::vector<TSNode> blocks;
  for (TSNode p = ts_node_parent(stmt); !ts_node_is_null(p); p = ts_node_parent(p)) {
    if (is_type(p, "block")) blocks.push_back(p);
    if (is_type(p, "function_definition")) break;
  }
  for (TSNode rhs : it->second) {
    if (ts_node_start_byte(rhs) >= ts_node_start_byte(stmt)) continue;
    TSNode assignment = ts_node_parent(rhs);
    TSNode statement = ts_node_parent(assignment);
    if (!is_type(statement, "expression_statement")) continue;
    TSNode block = ts_node_parent(statement);
    for (TSNode b : blocks) {
      if (ts_node_eq(b, block)) return true;
    }
  }
  (void)doc;
  return false;
}

std::vector<std::string> comments_in(const Document& doc, TSNode node) {
  std::vector<std::string> out;
  std::function<void(TSNode)> visit = [&](TSNode n) {
    if (is_type(n, "comment")) {
      out.push_back(text(doc, n));
      return;
    }
    uint32_t c = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < c; ++i) visit(ts_node_named_child(n, i));
  };
  visit(node);
  return out;
}

}  // namespace graphmend::fixes
