// GM405: a tensor where Python needs an int: slice bounds, sizes, counts, `range()`.
#include <algorithm>
#include <array>
#include <optional>
#include <string_view>

#include "graphmend/analysis/annotations.h"
#include "rule.h"

namespace graphmend {
namespace {

template <typename Fn>
void each_named_child(TSNode node, Fn&& fn) {
  const uint32_t n = ts_node_named_child_count(node);
  for (uint32_t i = 0; i < n; ++i) fn(ts_node_named_child(node, i));
}

const RuleInfo kInfo{
    .code = "GM405",
    .name = "tensor-as-size",
    .family = "tensor to Python",
    .summary = "A tensor used as a slice bound, size, count, `range()` bound or integer index",
    .explanation =
        "Slice bounds, sizes (`view`, `reshape`, `expand`, `repeat`, `torch.zeros`, ...), counts (`torch.linspace` "
        "steps, `topk`'s k, `split` sizes, `narrow`'s start and length) and `range()` need a Python int. Given a "
        "tensor (a reduction such as `mask.sum()`, or a row of a shapes tensor in `for h, w in shapes:`), Dynamo must "
        "read its value, which it does not have while tracing: it breaks the graph (\"Data dependent operator\", or "
        "`Tensor.item()` for slice bounds). So does indexing with a 0-dim integer tensor the frame computed "
        "(`alphas[x.argmax()]`, `timesteps[index + 1]` with `index` an element of `nonzero`): Python reads such an "
        "index as an int. An index that is an input of the frame is specialised on instead (a recompile for each "
        "value), and a 1-dim index tensor is advanced indexing, which reads nothing.",
    .registry_id = "GB0033",
    .fix_summary =
        "No automatic fix: keep sizes as Python ints (shapes from `.shape`/`.size()`, lengths known in advance), or "
        "index densely with masks instead of slicing by a computed bound.",
    .example_bad = "for h, w in spatial_shapes:\n    grid = torch.linspace(0.5, h - 0.5, h)",
    .example_good =
        "for h, w in spatial_shapes_list:   # a list of Python ints\n    grid = torch.linspace(0.5, h - 0.5, h)",
    .fixable = false,
};

// Tensor methods whose listed positional arguments (all of them with kAll) are sizes or counts.
constexpr int kAll = -1;
struct SizedMethod {
  std::string_view name;
  std::array<int, 2> positions;  // kAll, or up to two argument indices (-2: unused)
};
constexpr SizedMethod kMethods[] = {
    {"view", {kAll, -2}},      {"reshape", {kAll, -2}},  {"expand", {kAll, -2}},    {"repeat", {kAll, -2}},
    {"new_zeros", {kAll, -2}}, {"new_ones", {kAll, -2}}, {"new_empty", {kAll, -2}}, {"new_full", {0, -2}},
    {"narrow", {1, 2}},        {"split", {0, -2}},       {"topk", {0, -2}},
};

// torch functions: the same, with the tensor itself as argument 0 where the function takes one.
struct SizedFunction {
  std::string_view name;
  std::array<int, 2> positions;
  std::string_view keyword;  // a keyword spelling of the size argument, or ""
};
constexpr SizedFunction kFunctions[] = {
    {"torch.zeros", {kAll, -2}, "size"},
    {"torch.ones", {kAll, -2}, "size"},
    {"torch.empty", {kAll, -2}, "size"},
    {"torch.rand", {kAll, -2}, "size"},
    {"torch.randn", {kAll, -2}, "size"},
    {"torch.full", {0, -2}, "size"},
    {"torch.arange", {kAll, -2}, "end"},
    {"torch.linspace", {2, -2}, "steps"},
    {"torch.logspace", {2, -2}, "steps"},
    {"torch.narrow", {2, 3}, "start"},
    {"torch.split", {1, -2}, "split_size_or_sections"},
    {"torch.topk", {1, -2}, "k"},
};

// Reductions and casts that give a tensor holding data: used as a size, Dynamo must read it.
constexpr std::string_view kValueMethods[] = {"sum",    "max",   "min",   "amax",         "amin", "argmax",
                                              "argmin", "prod",  "long",  "int",          "to",   "floor",
                                              "ceil",   "round", "clamp", "count_nonzero"};

bool is_value_method(std::string_view name) {
  return std::find(std::begin(kValueMethods), std::end(kValueMethods), name) != std::end(kValueMethods);
}

// `expr` holds a value computed from tensor data in this frame: a reduction of a tensor, an element of
// a tensor indexed in several dimensions, a row of a tensor being iterated (`for h, w in shapes`), or
// arithmetic and locals built from those. Only such values break: Dynamo specialises on a frame input
// used as a size as it is (checked on 2.13: `torch.zeros(n)` with an input `n` compiles, `n + 1`
// breaks), and parameters typed as tensors only by default (`past_key_values`) are often not tensors.
// A call between `from` and `to` in `fn`'s body that surely breaks the graph (`nonzero`, `.item()`,
// `.tolist()`, `unique`, `masked_select` on a tensor): a value computed before it reaches the code after
// it as an input of the resumed frame, which Dynamo specialises on when used as a size as it is (checked
// on 2.13: longformer's `torch.arange(max_n)` after `mask.nonzero(as_tuple=True)` compiles).
bool break_between(RuleContext& ctx, const FunctionInfo& fn, uint32_t from, uint32_t to) {
  const std::vector<uint32_t>& calls = ctx.surely_breaking_calls(fn);
  const auto first = std::lower_bound(calls.begin(), calls.end(), from);
  return first != calls.end() && *first < to;
}

// A parameter of `fn` that its annotation or PEP 484 type comment says is a tensor (not one by default): what
// the frame computes from it (`box[0]`) is data, not a frame input.
bool declared_tensor_parameter(RuleContext& ctx, const FunctionInfo& fn, TSNode expr) {
  if (!is_type(expr, "identifier")) return false;
  const std::string name = ctx.text(expr);
  const auto at = std::find(fn.params.begin(), fn.params.end(), name);
  if (at == fn.params.end()) return false;
  const size_t index = static_cast<size_t>(at - fn.params.begin());
  if (index < fn.comment_param_types.size() && read_annotation(fn.comment_param_types[index]).kind == ValueKind::Tensor)
    return true;
  bool declared = false;
  each_named_child(field(fn.node, "parameters"), [&](TSNode p) {
    if (!is_type(p, "typed_parameter") && !is_type(p, "typed_default_parameter")) return;
    TSNode id = is_type(p, "typed_parameter") ? named_child(p, 0) : field(p, "name");
    if (ctx.text(id) == name && read_annotation(ctx.document.node_text(field(p, "type"))).kind == ValueKind::Tensor)
      declared = true;
  });
  return declared;
}

// `arithmetic`: `expr` is an operand of arithmetic, which breaks on a frame input too (`size - n`), so a
// parameter that every caller passes a tensor counts there (longformer's `narrow(-1, n, size - n)`).
bool data_derived(RuleContext& ctx, TSNode expr, const FunctionInfo& fn, int depth = 0, bool arithmetic = false) {
  expr = unparenthesize(expr);
  if (ts_node_is_null(expr) || depth > 6) return false;
  const auto type = type_of(expr);
  if (type == "identifier") {
    if (ctx.model.kind_of(expr, fn) != ValueKind::Tensor) return false;
    const std::string name = ctx.text(expr);
    if (auto it = fn.assignments.find(name); it != fn.assignments.end()) {
      return std::any_of(it->second.begin(), it->second.end(), [&](TSNode rhs) {
        if (!arithmetic && break_between(ctx, fn, ts_node_end_byte(rhs), ts_node_start_byte(expr))) return false;
        return data_derived(ctx, rhs, fn, depth + 1);
      });
    }
    // Not assigned: a parameter (see above), or a loop target over a tensor.
    if (std::find(fn.params.begin(), fn.params.end(), name) == fn.params.end()) return true;
    return arithmetic && fn.tensor_params_from_callers.count(name) > 0;
  }
  if (type == "binary_operator") {
    return data_derived(ctx, field(expr, "left"), fn, depth + 1, true) ||
           data_derived(ctx, field(expr, "right"), fn, depth + 1, true);
  }
  if (type == "unary_operator") return data_derived(ctx, field(expr, "argument"), fn, depth + 1, true);
  if (type == "subscript") {
    TSNode object = field(expr, "value");
    if (ctx.model.kind_of(object, fn) != ValueKind::Tensor) return false;
    // `shapes[0, 1]`, `shapes[:, 0]`: several dimensions, so a tensor for sure; `box[0]` of a declared tensor.
    return data_derived(ctx, object, fn, depth + 1) || named_child_count(expr) > 2 ||
           declared_tensor_parameter(ctx, fn, unparenthesize(object));
  }
  if (type != "call") return false;
  TSNode callee = unparenthesize(field(expr, "function"));
  if (is_type(callee, "identifier")) {
    // `max(box[0], 0)`, `min(box[2] + 1, w)`: Dynamo computes them as tensors of data.
    const std::string builtin = ctx.text(callee);
    if (builtin != "max" && builtin != "min" && builtin != "abs" && builtin != "round") return false;
    if (ctx.model.kind_of(expr, fn) != ValueKind::Tensor) return false;
    bool derived = false;
    each_named_child(field(expr, "arguments"), [&](TSNode arg) {
      derived = derived || (!is_type(arg, "keyword_argument") && data_derived(ctx, arg, fn, depth + 1, true));
    });
    return derived;
  }
  if (is_type(callee, "attribute") && ctx.model.kind_of(field(callee, "object"), fn) == ValueKind::Tensor) {
    return is_value_method(ctx.text(field(callee, "attribute")));
  }
  const std::string qualified = callee_qualified(ctx, expr);
  if (!qualified.starts_with("torch.")) return false;
  // torch functions of tensors: `torch.sum(mask)`, `torch.div(mask.sum(), 2, ...)`; of Python ints
  // (`torch.div(seq_len, w, rounding_mode="trunc")`) Dynamo computes on SymInts, which is no break.
  const std::string_view function = std::string_view(qualified).substr(6);
  bool derived = false;
  each_named_child(field(expr, "arguments"), [&](TSNode arg) {
    if (derived || is_type(arg, "keyword_argument")) return;
    derived = data_derived(ctx, arg, fn, depth + 1) ||
              (is_value_method(function) && ctx.model.kind_of(arg, fn) == ValueKind::Tensor);
  });
  return derived;
}

bool breaking_size(RuleContext& ctx, TSNode arg, const FunctionInfo& fn) {
  return data_derived(ctx, unparenthesize(arg), fn);
}

// The first tensor-valued size in `arg`: itself, or an element of a tuple/list literal of sizes.
TSNode tensor_size(RuleContext& ctx, TSNode arg, const FunctionInfo& fn) {
  arg = unparenthesize(arg);
  if (is_type(arg, "tuple") || is_type(arg, "list")) {
    TSNode found{};
    each_named_child(arg, [&](TSNode element) {
      if (ts_node_is_null(found) && breaking_size(ctx, unparenthesize(element), fn)) found = element;
    });
    return found;
  }
  return breaking_size(ctx, arg, fn) ? arg : TSNode{};
}

// The first tensor among the call's size arguments (positional `positions`, or `keyword`).
TSNode tensor_argument(RuleContext& ctx, TSNode call, const FunctionInfo& fn, std::array<int, 2> positions,
                       std::string_view keyword) {
  TSNode found{};
  int index = 0;
  each_named_child(field(call, "arguments"), [&](TSNode arg) {
    if (!ts_node_is_null(found)) return;
    if (is_type(arg, "keyword_argument")) {
      if (!keyword.empty() && ctx.text(field(arg, "name")) == keyword)
        found = tensor_size(ctx, field(arg, "value"), fn);
      return;
    }
    if (is_type(arg, "list_splat") || is_type(arg, "dictionary_splat")) return;
    const bool wanted = positions[0] == kAll || positions[0] == index || positions[1] == index;
    ++index;
    if (wanted) found = tensor_size(ctx, arg, fn);
  });
  return found;
}

// An integer literal, possibly negated (`0`, `-1`).
bool integer_literal(RuleContext& ctx, TSNode node) {
  node = unparenthesize(node);
  if (is_type(node, "unary_operator") && ctx.text(field(node, "operator")) == "-") {
    node = unparenthesize(field(node, "argument"));
  }
  return is_type(node, "integer");
}

// A call of `recv.method()` with no arguments on a tensor receiver; returns the method name or "".
std::string argumentless_tensor_method(RuleContext& ctx, TSNode call, const FunctionInfo& fn) {
  if (!is_type(call, "call") || named_child_count(field(call, "arguments")) != 0) return "";
  return tensor_method(ctx, call, fn);
}

bool keyword_is(RuleContext& ctx, TSNode call, std::string_view name, std::string_view value) {
  bool found = false;
  each_named_child(field(call, "arguments"), [&](TSNode arg) {
    found = found || (is_type(arg, "keyword_argument") && ctx.text(field(arg, "name")) == name &&
                      ctx.text(field(arg, "value")) == value);
  });
  return found;
}

// `x.nonzero(as_tuple=True)` / `torch.nonzero(x, as_tuple=True)`: a tuple of 1-dim integer tensors.
bool nonzero_tuple(RuleContext& ctx, TSNode call, const FunctionInfo& fn) {
  call = unparenthesize(call);
  if (!is_type(call, "call") || !keyword_is(ctx, call, "as_tuple", "True")) return false;
  return tensor_method(ctx, call, fn) == "nonzero" || callee_qualified(ctx, call) == "torch.nonzero";
}

// The number of dimensions of `expr` where it is provably an integer tensor: `x.argmax()` and `x.argmin()`
// without a dim (0), `x.nonzero()` (2), an element of `x.nonzero(as_tuple=True)` (1), `a[k]` with integer
// literals (one dimension less per index), arithmetic with integer literals, `.long()`/`.int()` of those or
// of a full reduction (`mask.sum().long()`: 0), locals only assigned those. Nothing else is proven.
std::optional<int> integer_rank(RuleContext& ctx, TSNode expr, const FunctionInfo& fn, int depth = 0) {
  expr = unparenthesize(expr);
  if (ts_node_is_null(expr) || depth > 6) return std::nullopt;
  const auto type = type_of(expr);
  if (type == "identifier") {
    const std::string name = ctx.text(expr);
    const auto assigned = fn.assignments.find(name);
    const auto bound = fn.binding_nodes.find(name);
    // Only plain assignments bind it (no loop target, augmented assignment or unpacking).
    if (assigned == fn.assignments.end() || bound == fn.binding_nodes.end() ||
        bound->second.size() != assigned->second.size()) {
      return std::nullopt;
    }
    std::optional<int> rank;
    for (TSNode rhs : assigned->second) {
      const std::optional<int> r = integer_rank(ctx, rhs, fn, depth + 1);
      if (!r || (rank && *rank != *r)) return std::nullopt;
      rank = r;
    }
    return rank;
  }
  if (type == "binary_operator") {
    const std::string op = ctx.text(field(expr, "operator"));
    if (op != "+" && op != "-" && op != "*" && op != "//" && op != "%") return std::nullopt;
    TSNode left = field(expr, "left");
    TSNode right = field(expr, "right");
    if (integer_literal(ctx, right)) return integer_rank(ctx, left, fn, depth + 1);
    if (integer_literal(ctx, left)) return integer_rank(ctx, right, fn, depth + 1);
    return std::nullopt;
  }
  if (type == "subscript") {
    TSNode object = unparenthesize(field(expr, "value"));
    int indices = 0;
    bool literal = true;
    for (uint32_t i = 1; i < named_child_count(expr); ++i) {
      TSNode index = named_child(expr, i);
      if (is_type(index, "comment")) continue;
      literal = literal && integer_literal(ctx, index);
      ++indices;
    }
    if (!literal || indices == 0) return std::nullopt;
    if (nonzero_tuple(ctx, object, fn)) return indices == 1 ? std::optional<int>(1) : std::nullopt;
    const std::optional<int> rank = integer_rank(ctx, object, fn, depth + 1);
    if (!rank || *rank < indices) return std::nullopt;
    return *rank - indices;
  }
  if (type != "call") return std::nullopt;
  const std::string method = argumentless_tensor_method(ctx, expr, fn);
  if (method == "argmax" || method == "argmin") return 0;
  if (method == "nonzero") return 2;
  if (method == "long" || method == "int") {
    TSNode receiver = unparenthesize(field(unparenthesize(field(expr, "function")), "object"));
    const std::string reduction = argumentless_tensor_method(ctx, receiver, fn);
    if (reduction == "sum" || reduction == "max" || reduction == "min" || reduction == "amax" || reduction == "amin" ||
        reduction == "prod" || reduction == "mean") {
      return 0;
    }
    return integer_rank(ctx, receiver, fn, depth + 1);
  }
  const std::string qualified = callee_qualified(ctx, expr);
  TSNode arguments = field(expr, "arguments");
  if ((qualified == "torch.argmax" || qualified == "torch.argmin") && named_child_count(arguments) == 1 &&
      ctx.model.kind_of(named_child(arguments, 0), fn) == ValueKind::Tensor) {
    return 0;
  }
  return std::nullopt;
}

// `index` is a tensor the frame computes rather than one of its inputs: Dynamo specialises on the value of a
// 0-dim integer tensor that is a frame input used as an index (checked on 2.13 and 2.14: `alphas[t]`
// recompiles for each value of an input `t`, `alphas[t - 1]` breaks). A local computed before a surely
// breaking call is an input of the resumed frame.
// Whether `name` is read between byte offsets `from` and `to` under `node`.
bool read_between(RuleContext& ctx, TSNode node, const std::string& name, uint32_t from, uint32_t to) {
  if (ts_node_end_byte(node) <= from || ts_node_start_byte(node) >= to) return false;
  if (is_type(node, "identifier")) return ctx.text(node) == name;
  const uint32_t n = ts_node_child_count(node);
  for (uint32_t i = 0; i < n; ++i) {
    if (read_between(ctx, ts_node_child(node, i), name, from, to)) return true;
  }
  return false;
}

bool computed_in_frame(RuleContext& ctx, TSNode index, const FunctionInfo& fn) {
  index = unparenthesize(index);
  if (!is_type(index, "identifier")) return true;
  const std::string name = ctx.text(index);
  const auto assigned = fn.assignments.find(name);
  if (assigned == fn.assignments.end()) return false;
  return std::all_of(assigned->second.begin(), assigned->second.end(), [&](TSNode rhs) {
    const uint32_t from = ts_node_end_byte(rhs);
    const uint32_t to = ts_node_start_byte(index);
    // An earlier read may have broken the graph itself (`x[i + 1]`), making `i` an input of the resumed frame.
    return !break_between(ctx, fn, from, to) && !read_between(ctx, fn.node, name, from, to) &&
           computed_in_frame(ctx, rhs, fn);
  });
}

void report(RuleContext& ctx, const Visit& v, TSNode where, const std::string& what) {
  ctx.report(kInfo, node_range(where),
             "A tensor is used as " + what + ": Dynamo must read its value as a Python int, and breaks the graph here.",
             v);
}

void check_call(RuleContext& ctx, const Visit& v) {
  TSNode callee = unparenthesize(field(v.node, "function"));
  if (is_type(callee, "identifier") && ctx.text(callee) == "range") {
    TSNode found{};
    each_named_child(field(v.node, "arguments"), [&](TSNode arg) {
      if (ts_node_is_null(found) && data_derived(ctx, arg, v.function)) found = arg;
    });
    if (!ts_node_is_null(found)) report(ctx, v, found, "a `range()` bound");
    return;
  }
  if (const std::string method = tensor_method(ctx, v.node, v.function); !method.empty()) {
    for (const SizedMethod& m : kMethods) {
      if (m.name != method) continue;
      TSNode found = tensor_argument(ctx, v.node, v.function, m.positions, "");
      if (!ts_node_is_null(found)) report(ctx, v, found, "an argument of `." + method + "()` that must be an int");
      return;
    }
  }
  const std::string qualified = callee_qualified(ctx, v.node);
  for (const SizedFunction& f : kFunctions) {
    if (f.name != qualified) continue;
    TSNode found = tensor_argument(ctx, v.node, v.function, f.positions, f.keyword);
    if (!ts_node_is_null(found)) report(ctx, v, found, "an argument of `" + qualified + "()` that must be an int");
    return;
  }
}

// `x[a:b]` with a tensor bound: slicing calls the bound's __index__, which reads its value (a frame
// input too, but a parameter typed as a tensor by default is too often an int to report it).
void check_slice(RuleContext& ctx, const Visit& v) {
  TSNode found{};
  each_named_child(v.node, [&](TSNode bound) {
    if (ts_node_is_null(found) && !is_type(bound, "comment") && data_derived(ctx, bound, v.function)) found = bound;
  });
  if (!ts_node_is_null(found)) report(ctx, v, found, "a slice bound");
}

// `x[i]` with a 0-dim integer tensor `i`: Python indexing reads it as an int (`.item()`), in any position
// (`x[:, i]`) and in assignments (`x[i] = v`), and so does indexing a list of tensors or an `nn.ModuleList`
// (`self.layers[i]`). A 1-dim index tensor is advanced indexing of a tensor, with no read.
void check_index(RuleContext& ctx, const Visit& v) {
  TSNode found{};
  for (uint32_t i = 1; i < named_child_count(v.node) && ts_node_is_null(found); ++i) {
    TSNode index = named_child(v.node, i);
    if (is_type(index, "slice") || is_type(index, "comment") || integer_literal(ctx, index)) continue;
    const std::optional<int> rank = integer_rank(ctx, index, v.function);
    if (rank && *rank == 0 && computed_in_frame(ctx, index, v.function)) found = index;
  }
  if (ts_node_is_null(found)) return;
  // A list of tensors or a module list calls the index's __index__ too; a dict would hash the tensor instead.
  const ValueKind indexed = ctx.model.kind_of(field(v.node, "value"), v.function);
  if (indexed != ValueKind::Tensor && indexed != ValueKind::TensorSequence && indexed != ValueKind::Module) return;
  report(ctx, v, found, "an index (a 0-dim integer tensor, which Python reads as an int)");
}

void check(RuleContext& ctx, const Visit& v) {
  if (is_type(v.node, "subscript")) {
    check_index(ctx, v);
  } else if (is_type(v.node, "slice")) {
    check_slice(ctx, v);
  } else {
    check_call(ctx, v);
  }
}

}  // namespace

const Rule& rule_GM405() {
  static const Rule rule{&kInfo, {"call", "slice", "subscript"}, check};
  return rule;
}

}  // namespace graphmend
