// Tensor facts shared by rules and transforms: what a value is (one element, floating, bool), how it is
// shaped relative to other values, and what evaluating it on a path the original never took could do
// (side effects, exceptions, inf/NaN under autograd). docs/fix-safety.md says what each fact proves.
#include "graphmend/analysis/tensor_facts.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <string>

namespace graphmend {
namespace {

template <size_t N>
bool one_of(std::string_view s, const std::array<std::string_view, N>& set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

// Reductions that give one element when called without a dim.
constexpr std::array<std::string_view, 14> kFullReductions{
    "sum", "mean", "max", "min", "amax", "amin", "any", "all", "norm", "prod", "std", "var", "median", "count_nonzero"};
// Element-wise ops that keep shape and dtype.
constexpr std::array<std::string_view, 12> kSameOps{"abs",        "neg",      "relu",   "clamp", "clip", "clone",
                                                    "contiguous", "negative", "square", "roll",  "flip", "clamp_min"};
// Element-wise ops that keep shape and give a floating result.
constexpr std::array<std::string_view, 18> kFloatOps{
    "tanh", "sigmoid", "exp",         "log", "sqrt",       "rsqrt",    "sin", "cos",        "gelu",
    "silu", "softmax", "log_softmax", "erf", "reciprocal", "softplus", "elu", "leaky_relu", "mish"};
// torch functions with randomness or uninitialised memory: results differ when run twice.
constexpr std::array<std::string_view, 14> kRandomFunctions{
    "rand",      "randn",       "randint", "randperm", "rand_like", "randn_like", "randint_like",
    "bernoulli", "multinomial", "normal",  "poisson",  "empty",     "empty_like", "dropout"};
// Module classes without state or an `inplace` option: calling them twice computes the same thing and
// changes nothing (but their shapes must fit).
constexpr std::array<std::string_view, 14> kStatelessModules{
    "Linear", "Conv1d", "Conv2d",  "Conv3d",   "LayerNorm", "RMSNorm",   "Embedding",
    "GELU",   "Tanh",   "Sigmoid", "Identity", "Softmax",   "GroupNorm", "Bilinear"};

TSNode callee_of(TSNode call) { return unparenthesize(field(call, "function")); }
std::string text(const Document& doc, TSNode node) { return std::string(doc.node_text(node)); }

}  // namespace

// ---------------------------------------------------------------- speculation: running code the original skipped

namespace {

enum class ArgForm { None, Dim, NeedDim, Scalars, Bounds, Full };
enum class DtypeNeed { Any, NotBool, Floating };
struct SpeculationOp {
  std::string_view name;
  std::string_view forms;  // M, T, F
  ArgForm args;
  DtypeNeed dtype;
};
struct SpeculationModule {
  std::string_view name;
  DtypeNeed dtype;
};
#define SPECULATION_OP(name, forms, args, dtype) SpeculationOp{#name, forms, ArgForm::args, DtypeNeed::dtype},
#define SPECULATION_MODULE(name, dtype)
constexpr SpeculationOp kSpeculationOps[] = {
#include "speculation_ops.def"
};
#undef SPECULATION_OP
#undef SPECULATION_MODULE
#define SPECULATION_OP(name, forms, args, dtype)
#define SPECULATION_MODULE(name, dtype) SpeculationModule{#name, DtypeNeed::dtype},
constexpr SpeculationModule kSpeculationModules[] = {
#include "speculation_ops.def"
};
#undef SPECULATION_OP
#undef SPECULATION_MODULE

const SpeculationOp* find_op(std::string_view name, char form) {
  for (const SpeculationOp& op : kSpeculationOps) {
    if (op.name == name && op.forms.find(form) != std::string_view::npos) return &op;
  }
  return nullptr;
}

// Modules with an `inplace` option: the engine does not read constructor arguments, so a call may write
// its input.
constexpr std::array<std::string_view, 10> kInplaceOptionModules{"ReLU", "ReLU6", "SiLU", "LeakyReLU", "Mish",
                                                                 "ELU",  "SELU",  "CELU", "Hardtanh",  "Hardswish"};
// Tensor attributes that are metadata (never raise on a real tensor).
constexpr std::array<std::string_view, 9> kMetadataAttributes{"shape",         "dtype", "device", "ndim",   "is_cuda",
                                                              "requires_grad", "data",  "layout", "is_leaf"};
// Tensor methods that read metadata.
constexpr std::array<std::string_view, 7> kMetadataMethods{
    "size", "dim", "numel", "is_floating_point", "is_complex", "element_size", "is_contiguous"};
// Tensor methods that leave the graph or touch autograd state.
constexpr std::array<std::string_view, 7> kGraphExitMethods{"item",          "tolist",      "numpy",         "backward",
                                                            "register_hook", "retain_grad", "requires_grad_"};
// Python builtins that cannot raise on static numbers.
constexpr std::array<std::string_view, 7> kStaticBuiltins{"int", "float", "bool", "abs", "min", "max", "round"};

// Evaluation-order walk that fills a Speculation; stops at the first effect or raise.
class Speculator {
 public:
  Speculator(const Document& doc, const SemanticModel& model, const FunctionInfo& fn)
      : doc_(doc), model_(model), fn_(fn) {}

  Speculation result;
  bool establishing = false;  // collecting what an evaluation establishes: skip conditionally run parts
  // Subexpressions already evaluated by the original (a test's value the fix binds once and reuses, #28
  // technique 2): reading them again runs nothing.
  std::vector<ByteRange> precomputed;

  void visit(TSNode expr, int depth = 0) {
    expr = unparenthesize(expr);
    if (ts_node_is_null(expr) || stopped()) return;
    if (depth > 64) return raise("`" + short_text(expr) + "` is too deeply nested to analyse");
    if (std::find(precomputed.begin(), precomputed.end(), node_range(expr)) != precomputed.end()) return;
    auto t = type_of(expr);
    if (t == "identifier" || t == "integer" || t == "float" || t == "true" || t == "false" || t == "none" ||
        t == "string" || t == "concatenated_string" || t == "comment" || t == "ellipsis")
      return;
    if (t == "attribute") return attribute(expr, depth);
    if (t == "binary_operator") return binary(expr, depth);
    if (t == "unary_operator") return unary(expr, depth);
    if (t == "comparison_operator") return comparison(expr, depth);
    if (t == "not_operator" || t == "boolean_operator" || t == "conditional_expression") {
      std::vector<TSNode> parts = named_children(expr);
      if (t == "conditional_expression" && parts.size() >= 2) std::swap(parts[0], parts[1]);  // the test runs first
      if (establishing && !parts.empty()) {
        // Only the first operand always runs: what the others need is not established.
        visit(parts[0], depth + 1);
        return raise("`" + short_text(expr) + "` evaluates its other operands only sometimes");
      }
      for (TSNode c : parts) visit(c, depth + 1);
      for (TSNode c : named_children(expr)) {
        if (!is_static(c))
          return raise("`" + short_text(expr) +
                       "` calls bool() on a tensor, which raises for more "
                       "than one element");
      }
      return;
    }
    if (t == "subscript") return subscript(expr, depth);
    if (t == "call") return call(expr, depth);
    if (t == "tuple" || t == "list" || t == "slice") {
      for (TSNode c : named_children(expr)) visit(c, depth + 1);
      return;
    }
    effect("`" + short_text(expr) + "` is not known to be free of side effects");
  }

 private:
  bool stopped() const { return !result.effect.empty() || !result.raises.empty(); }
  void effect(std::string why) {
    if (!stopped()) result.effect = std::move(why);
  }
  void raise(std::string why) {
    if (!stopped()) result.raises = std::move(why);
  }
  std::string short_text(TSNode n) const {
    std::string s = text(doc_, n);
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
  }
  bool is_static(TSNode n) const {
    ValueKind k = model_.kind_of(n, fn_);
    return k == ValueKind::Static || k == ValueKind::None;
  }
  // Tensors, and anything not proven to be a Python value.
  bool maybe_tensor(TSNode n) const {
    ValueKind k = model_.kind_of(n, fn_);
    return k != ValueKind::Static && k != ValueKind::None && k != ValueKind::Module;
  }
  static bool is_number_literal(TSNode n) {
    n = unparenthesize(n);
    if (is_type(n, "unary_operator")) n = field(n, "argument");
    return is_type(n, "integer") || is_type(n, "float");
  }
  bool nonzero_literal(TSNode n) const {
    n = unparenthesize(n);
    if (is_type(n, "unary_operator")) n = field(n, "argument");
    if (!is_type(n, "integer") && !is_type(n, "float")) return false;
    std::string s = text(doc_, n);
    return s.find_first_of("123456789") != std::string::npos && s.find_first_of("xXoObBeEjJ") == std::string::npos;
  }
  // An integer literal, possibly negative; nullopt otherwise.
  std::optional<long> int_literal(TSNode n) const {
    n = unparenthesize(n);
    bool negative = false;
    if (is_type(n, "unary_operator") && text(doc_, field(n, "operator")) == "-") {
      negative = true;
      n = field(n, "argument");
    }
    if (!is_type(n, "integer")) return std::nullopt;
    std::string s = text(doc_, n);
    if (s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    long v = std::stol(s);
    return negative ? -v : v;
  }

  void need(RaiseCondition::Kind kind, TSNode subject, std::string key, std::string why) {
    RaiseCondition c;
    c.kind = kind;
    c.subject = unparenthesize(subject);
    c.key = std::move(key);
    c.why = std::move(why);
    result.needs.push_back(std::move(c));
  }
  void need_dtype(DtypeNeed d, TSNode subject, const std::string& op) {
    if (d == DtypeNeed::Any || !maybe_tensor(subject)) return;
    std::string s = text(doc_, unparenthesize(subject));
    if (d == DtypeNeed::NotBool)
      need(RaiseCondition::Kind::NotBool, subject, "notbool:" + s,
           "`" + op + "` raises when `" + s + "` is a bool tensor");
    else
      need(RaiseCondition::Kind::Floating, subject, "floating:" + s,
           "`" + op + "` raises when `" + s + "` is an integer or bool tensor");
  }
  void need_dims(TSNode subject, long dims, const std::string& family, const std::string& op) {
    if (dims <= 0) return;
    std::string s = text(doc_, unparenthesize(subject));
    need(RaiseCondition::Kind::Dims, subject, family + ":" + s + ":" + std::to_string(dims),
         "`" + op + "` raises when `" + s + "` has fewer than " + std::to_string(dims) + " dimensions");
  }
  // Dimensions a literal dim argument needs: -1 and 0 are valid on every tensor (0-d ones too).
  static long dims_for(long dim) { return dim >= 0 ? dim + 1 : -dim; }

  void broadcast(TSNode expr, TSNode l, TSNode r) {
    if (!maybe_tensor(l) || !maybe_tensor(r)) return;
    if (is_one_element(doc_, model_, l, fn_) || is_one_element(doc_, model_, r, fn_)) return;
    ValueShape ls = shape_of(doc_, model_, l, fn_), rs = shape_of(doc_, model_, r, fn_);
    if (ls.likeness != Likeness::None && rs.likeness != Likeness::None && ls.base == rs.base) return;
    std::string a = text(doc_, unparenthesize(l)), b = text(doc_, unparenthesize(r));
    need(RaiseCondition::Kind::Broadcast, l, "broadcast:" + a + "|" + b,
         "`" + short_text(expr) + "` raises when the shapes of `" + a + "` and `" + b + "` do not broadcast");
    result.needs.back().other = unparenthesize(r);
  }

  // `x.masked_fill(mask, v)` raises unless the shapes broadcast, and gives x's shape only when the mask
  // broadcasts to it: one trace-time condition for both. A comparison of a tensor with a number has that
  // tensor's shape, so `mask == 0` is checked through `mask`.
  void broadcast_to(TSNode expr, TSNode mask, TSNode target) {
    TSNode m = unparenthesize(mask);
    if (is_type(m, "comparison_operator") && named_child_count(m) == 2) {
      TSNode l = unparenthesize(named_child(m, 0)), r = unparenthesize(named_child(m, 1));
      if (number_literal(r))
        m = l;
      else if (number_literal(l))
        m = r;
    }
    ValueShape ms = shape_of(doc_, model_, m, fn_), ts = shape_of(doc_, model_, target, fn_);
    if (ms.likeness != Likeness::None && ts.likeness != Likeness::None && ms.base == ts.base) return;
    std::string a = text(doc_, m), b = text(doc_, unparenthesize(target));
    need(RaiseCondition::Kind::BroadcastTo, m, "broadcast_to:" + a + "|" + b,
         "`" + short_text(expr) + "` raises, or changes the shape of `" + b + "`, when `" + a +
             "` does not broadcast to it");
    result.needs.back().other = unparenthesize(target);
  }

  void attribute(TSNode expr, int depth) {
    TSNode object = field(expr, "object");
    visit(object, depth + 1);
    std::string name = text(doc_, field(expr, "attribute"));
    if (model_.kind_of(object, fn_) == ValueKind::Tensor) {
      if (!one_of(std::string_view(name), kMetadataAttributes))
        raise("`" + short_text(expr) + "` is not a metadata attribute known to be safe on every tensor");
      return;
    }
    if (text(doc_, unparenthesize(object)) == "self") {
      const FunctionInfo* top = &fn_.outermost();
      if (top->owner && top->owner->is_module && name == "training") return;  // every nn.Module has it
      if (top->owner && (top->owner->attributes.count(name) || top->owner->methods.count(name) ||
                         !model_.attribute_constructor(top->owner, name).empty()))
        return;
      raise("`self." + name + "` is not set in the class, so reading it may raise");
    }
  }

  void binary(TSNode expr, int depth) {
    TSNode l = field(expr, "left"), r = field(expr, "right");
    visit(l, depth + 1);
    visit(r, depth + 1);
    if (stopped()) return;
    std::string op = text(doc_, field(expr, "operator"));
    std::string e = short_text(expr);
    const bool tensors = maybe_tensor(l) || maybe_tensor(r);
    if (!tensors) {
      // Python numbers: division by a value that may be zero raises ZeroDivisionError.
      if ((op == "/" || op == "//" || op == "%") && !nonzero_literal(r))
        raise("`" + e + "` divides by a value that may be zero");
      if (op == "**" && !is_number_literal(r)) raise("`" + e + "` may raise for a zero base and a negative power");
      if (op == "@") raise("`" + e + "` is a matrix product");
      return;
    }
    if (op == "+" || op == "*" || op == "/") {
    } else if (op == "-") {
      need_dtype(DtypeNeed::NotBool, l, e);
      need_dtype(DtypeNeed::NotBool, r, e);
    } else if (op == "//" || op == "%") {
      if (!nonzero_literal(r)) {
        need_dtype(DtypeNeed::Floating, l, e);
        need_dtype(DtypeNeed::Floating, r, e);
      }
    } else if (op == "**") {
      auto exponent = int_literal(r);
      bool safe_exponent = (exponent && *exponent >= 0) || is_type(unparenthesize(r), "float");
      if (!safe_exponent) need_dtype(DtypeNeed::Floating, l, e);
    } else if (op == "&" || op == "|" || op == "^") {
      for (TSNode o : {l, r}) {
        if (maybe_tensor(o) && !is_bool_valued(doc_, model_, o, fn_))
          return raise("`" + e + "` raises when `" + text(doc_, o) + "` is a floating tensor");
      }
    } else {
      return raise("`" + e + "` may raise for some shapes or dtypes (`" + op + "`)");
    }
    broadcast(expr, l, r);
  }

  void unary(TSNode expr, int depth) {
    TSNode a = field(expr, "argument");
    visit(a, depth + 1);
    if (stopped() || !maybe_tensor(a)) return;
    std::string op = text(doc_, field(expr, "operator"));
    if (op == "-" || op == "+") return need_dtype(DtypeNeed::NotBool, a, short_text(expr));
    if (!is_bool_valued(doc_, model_, a, fn_))
      raise("`" + short_text(expr) + "` raises when `" + text(doc_, a) + "` is a floating tensor");
  }

  void comparison(TSNode expr, int depth) {
    std::vector<TSNode> operands = named_children(expr);
    for (TSNode o : operands) visit(o, depth + 1);
    if (stopped()) return;
    uint32_t count = ts_node_child_count(expr);
    int operators = 0;
    for (uint32_t i = 0; i < count; ++i) {
      TSNode c = ts_node_child(expr, i);
      if (ts_node_is_named(c)) continue;
      std::string op = text(doc_, c);
      if (op == "in" || op == "not") return raise("`" + short_text(expr) + "` tests membership");
      if (op != "is") ++operators;
    }
    bool any_tensor = std::any_of(operands.begin(), operands.end(), [&](TSNode o) { return maybe_tensor(o); });
    if (!any_tensor) return;
    if (operators > 1 || operands.size() != 2)
      return raise("`" + short_text(expr) + "` is a chained comparison, which calls bool() on a tensor");
    broadcast(expr, operands[0], operands[1]);
  }

  void subscript(TSNode expr, int depth) {
    TSNode value = field(expr, "value");
    visit(value, depth + 1);
    std::vector<TSNode> indices = named_children(expr);
    for (size_t i = 1; i < indices.size(); ++i) visit(indices[i], depth + 1);
    if (stopped()) return;
    TSNode v = unparenthesize(value);
    if (is_static(value)) {
      // `x.shape[i]` with a literal i: x needs enough dimensions; other static subscripts may be out of range.
      if (indices.size() == 2 && is_type(v, "attribute") && text(doc_, field(v, "attribute")) == "shape") {
        if (auto i = int_literal(indices[1]))
          return need_dims(field(v, "object"), dims_for(*i), "len", text(doc_, expr));
      }
      for (size_t i = 1; i < indices.size(); ++i) {
        if (!is_type(indices[i], "slice"))
          return raise("`" + short_text(expr) + "` may be out of range on the untaken path");
      }
      return;
    }
    long dims = 0;
    for (size_t i = 1; i < indices.size(); ++i) {
      TSNode index = indices[i];
      if (is_type(index, "ellipsis") || is_type(index, "none")) continue;
      if (!is_type(index, "slice"))
        return raise("`" + short_text(expr) + "` indexes with a position that may be out of range on the untaken path");
      // a[lo:hi:step]: bounds are clamped; a step must be a positive literal.
      std::string slice = text(doc_, index);
      size_t first = slice.find(':');
      size_t second = slice.find(':', first + 1);
      if (second != std::string::npos) {
        TSNode step = ts_node_named_child(index, ts_node_named_child_count(index) - 1);
        auto s = int_literal(step);
        if (second + 1 < slice.size() && (!s || *s <= 0))
          return raise("`" + short_text(expr) + "` slices with a step that may not be positive");
      }
      for (TSNode bound : named_children(index)) {
        if (!is_static(bound)) return raise("`" + short_text(expr) + "` slices with tensor bounds");
      }
      ++dims;
    }
    need_dims(value, dims, "index", text(doc_, expr));
  }

  // A number converted to the subject's dtype (a clamp bound, a fill value) must be representable in it:
  // `x.clamp(0, 300)` raises for int8 and uint8 tensors, `x.clamp(max=-1)` for uint8 ones from torch 2.15,
  // `x.clamp(max=1e5)` for float16 ones. A literal in [0, 127] fits every dtype; one within float16's range
  // fits every floating dtype; `torch.finfo(x.dtype).max - c` (a name bound to it too) fits x's own dtype.
  bool check_representable(TSNode subject, TSNode value, const std::string& e) {
    if (is_type(unparenthesize(value), "none")) return true;
    std::string s = text(doc_, unparenthesize(subject));
    auto floating = [&] {
      if (maybe_tensor(subject))
        need(RaiseCondition::Kind::Floating, subject, "floating:" + s,
             "`" + e + "` raises when `" + s + "` has an integer dtype that cannot represent `" + short_text(value) +
                 "`");
      return true;
    };
    if (auto v = number_literal(value)) {
      if (*v >= 0 && *v <= 127) return true;
      if (std::abs(*v) <= 65504) return floating();
    } else if (finfo_bound_of(value, s, 0)) {
      return floating();
    }
    raise("`" + e + "` passes `" + short_text(value) + "`, which may not be representable in the dtype of `" + s + "`");
    return false;
  }
  // A number literal's value (possibly negative); nullopt otherwise.
  std::optional<double> number_literal(TSNode n) const {
    n = unparenthesize(n);
    double sign = 1;
    if (is_type(n, "unary_operator")) {
      std::string op = text(doc_, field(n, "operator"));
      if (op != "-" && op != "+") return std::nullopt;
      sign = op == "-" ? -1 : 1;
      n = unparenthesize(field(n, "argument"));
    }
    if (!is_type(n, "integer") && !is_type(n, "float")) return std::nullopt;
    std::string t = text(doc_, n);
    t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
    if (t.find_first_of("xXoObBjJ") != std::string::npos) return std::nullopt;
    try {
      return sign * std::stod(t);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  // `torch.finfo(S.dtype).max` or `.min`, moved toward zero by a non-negative literal or negated, where S
  // is `subject`; a local name whose every assignment is one.
  bool finfo_bound_of(TSNode n, const std::string& subject, int depth) const {
    n = unparenthesize(n);
    if (depth > 4) return false;
    if (is_type(n, "unary_operator") && text(doc_, field(n, "operator")) == "-")
      return finfo_bound_of(field(n, "argument"), subject, depth + 1);
    if (is_type(n, "binary_operator")) {
      std::string op = text(doc_, field(n, "operator"));
      auto c = number_literal(field(n, "right"));
      TSNode left = unparenthesize(field(n, "left"));
      if (!c || *c < 0 || *c > 1e4 || !is_type(left, "attribute") || text(doc_, field(left, "attribute")) != "max")
        return false;
      return op == "-" && finfo_bound_of(left, subject, depth + 1);
    }
    if (is_type(n, "identifier")) {
      auto it = fn_.assignments.find(text(doc_, n));
      if (it == fn_.assignments.end() || it->second.empty()) return false;
      return std::all_of(it->second.begin(), it->second.end(),
                         [&](TSNode rhs) { return finfo_bound_of(rhs, subject, depth + 1); });
    }
    if (!is_type(n, "attribute")) return false;
    std::string end = text(doc_, field(n, "attribute"));
    TSNode call = unparenthesize(field(n, "object"));
    if ((end != "max" && end != "min") || !is_type(call, "call")) return false;
    auto q = model_.qualified_name(field(call, "function"));
    std::vector<TSNode> args = named_children(field(call, "arguments"));
    if (!q || *q != "torch.finfo" || args.size() != 1) return false;
    TSNode a = unparenthesize(args[0]);
    return is_type(a, "attribute") && text(doc_, field(a, "attribute")) == "dtype" &&
           text(doc_, unparenthesize(field(a, "object"))) == subject;
  }

  // The extra arguments of a table operation, after the subject.
  bool check_args(const SpeculationOp& op, TSNode subject, const std::vector<TSNode>& positional,
                  const std::vector<std::pair<std::string, TSNode>>& keywords, const std::string& e) {
    std::optional<TSNode> dim;
    for (auto& [name, value] : keywords) {
      if (op.args == ArgForm::Scalars && is_static(value)) continue;
      if (op.args == ArgForm::Bounds && is_static(value)) {
        if (!check_representable(subject, value, e)) return false;
        continue;
      }
      if ((op.args == ArgForm::Dim || op.args == ArgForm::NeedDim) && name == "dim") {
        dim = value;
        continue;
      }
      if (op.args == ArgForm::Dim && name == "keepdim" && (is_type(value, "true") || is_type(value, "false"))) continue;
      raise("`" + e + "` passes `" + name + "=`, which the engine cannot prove safe");
      return false;
    }
    if (op.args == ArgForm::Full) {
      if (!positional.empty()) {
        raise("`" + e + "` passes arguments the engine cannot prove safe");
        return false;
      }
      if (maybe_tensor(subject)) {
        std::string s = text(doc_, unparenthesize(subject));
        need(RaiseCondition::Kind::NonEmpty, subject, "nonempty:" + s, "`" + e + "` raises when `" + s + "` is empty");
      }
      return true;
    }
    if (op.args == ArgForm::None && !positional.empty()) {
      raise("`" + e + "` passes arguments the engine cannot prove safe");
      return false;
    }
    if (op.args == ArgForm::Scalars || op.args == ArgForm::Bounds) {
      for (TSNode p : positional) {
        if (!is_static(p)) {
          raise("`" + e + "` passes `" + text(doc_, p) + "`, which is not a static number");
          return false;
        }
        if (op.args == ArgForm::Bounds && !check_representable(subject, p, e)) return false;
      }
    }
    if (op.args == ArgForm::Dim || op.args == ArgForm::NeedDim) {
      if (positional.size() > 1) {
        raise("`" + e + "` passes arguments the engine cannot prove safe");
        return false;
      }
      if (positional.size() == 1) dim = positional[0];
      if (!dim) {
        if (op.args == ArgForm::NeedDim) {
          raise("`" + e + "` needs a dim");
          return false;
        }
        return true;
      }
      auto d = int_literal(*dim);
      if (!d) {
        raise("`" + e + "` reduces over a dim that is not a literal");
        return false;
      }
      need_dims(subject, dims_for(*d), "dim", e);
    }
    return true;
  }

  void call(TSNode expr, int depth) {
    TSNode callee = unparenthesize(field(expr, "function"));
    std::string callee_text = text(doc_, callee);
    std::string last = callee_text.substr(callee_text.rfind('.') + 1);
    std::string e = short_text(expr);
    if (is_type(callee, "attribute")) visit(field(callee, "object"), depth + 1);
    std::vector<TSNode> positional;
    std::vector<std::pair<std::string, TSNode>> keywords;
    for (TSNode a : named_children(field(expr, "arguments"))) {
      if (is_type(a, "comment")) continue;
      if (is_type(a, "keyword_argument")) {
        std::string name = text(doc_, field(a, "name"));
        TSNode value = field(a, "value");
        if (name == "inplace" && !is_type(value, "false")) return effect("`" + callee_text + "` runs in place");
        if (name == "out") return effect("`" + callee_text + "` writes into `out=`");
        visit(value, depth + 1);
        keywords.emplace_back(name, value);
        continue;
      }
      if (is_type(a, "list_splat") || is_type(a, "dictionary_splat"))
        return raise("`" + e + "` unpacks arguments the engine cannot see");
      visit(a, depth + 1);
      positional.push_back(a);
    }
    if (stopped()) return;
    if (last.ends_with("_") && !last.ends_with("__")) return effect("`" + callee_text + "` changes a tensor in place");

    // Tensor methods.
    if (is_type(callee, "attribute") && model_.kind_of(field(callee, "object"), fn_) == ValueKind::Tensor) {
      TSNode object = field(callee, "object");
      if (one_of(std::string_view(last), kGraphExitMethods)) return effect("`" + callee_text + "` leaves the graph");
      if (last == "bernoulli" || last == "multinomial" || last == "uniform" || last == "normal" ||
          last.find("dropout") != std::string::npos)
        return effect("`" + callee_text + "` is random, and predication would run it on both paths");
      if (one_of(std::string_view(last), kMetadataMethods)) {
        if (last == "size" && positional.size() == 1) {
          if (auto d = int_literal(positional[0])) return need_dims(object, dims_for(*d), "dim", e);
          return raise("`" + e + "` reads a dimension that may not exist");
        }
        if (!positional.empty() || !keywords.empty()) return raise("`" + e + "` passes arguments");
        return;
      }
      if (last == "to" && positional.size() == 1 && keywords.empty()) {
        // A dtype conversion never raises; a device move can (no CUDA, another device's tensor).
        auto q = model_.qualified_name(positional[0]);
        if (q && q->starts_with("torch.") && is_dtype_name(q->substr(6))) return;
        return raise("`" + e + "` may move the tensor to another device, which can raise on the untaken path");
      }
      if (last == "type_as" && positional.size() == 1 && keywords.empty()) return;
      if (last == "unsqueeze" && positional.size() == 1 && keywords.empty()) {
        auto d = int_literal(positional[0]);
        if (d && (*d == 0 || *d == -1)) return;
        return raise("`" + e + "` may raise for some numbers of dimensions");
      }
      if (last == "reshape" && positional.size() == 1 && keywords.empty()) {
        auto d = int_literal(positional[0]);
        if (d && *d == -1) return;
      }
      if (last == "masked_fill" && positional.size() == 2 && keywords.empty()) {
        if (!is_bool_valued(doc_, model_, positional[0], fn_))
          return raise("`" + e + "` raises when its mask is not a bool tensor");
        if (!check_representable(object, positional[1], e)) return;
        return broadcast_to(expr, positional[0], object);
      }
      if (const SpeculationOp* op = find_op(last, 'M')) {
        if (!check_args(*op, object, positional, keywords, e)) return;
        return need_dtype(op->dtype, object, e);
      }
      return raise("`" + e + "` may raise for some shapes, dtypes or devices on the path the original does not take");
    }

    // Functions reached through imports: torch, torch.nn.functional, math.
    if (auto q = model_.qualified_name(callee)) {
      std::string_view name = *q;
      std::string_view lname = name.substr(name.rfind('.') + 1);
      if (one_of(lname, kRandomFunctions) || lname.find("dropout") != std::string_view::npos)
        return effect("`" + callee_text + "` is random, and predication would run it on both paths");
      char form = 0;
      if (name == "torch." + std::string(lname)) form = 'T';
      if (name == "torch.nn.functional." + std::string(lname)) form = 'F';
      if (form && lname == "where" && positional.size() == 3 && keywords.empty()) {
        if (!is_bool_valued(doc_, model_, positional[0], fn_))
          return raise("`" + e + "` raises when its condition is not a bool tensor");
        size_t before = result.needs.size();
        broadcast(expr, positional[1], positional[2]);
        if (result.needs.size() != before) return raise("`" + e + "` may raise for shapes that do not broadcast");
        return;
      }
      if (form == 'T' &&
          (lname == "logical_and" || lname == "logical_or" || lname == "logical_xor" || lname == "maximum" ||
           lname == "minimum") &&
          positional.size() == 2 && keywords.empty())
        return broadcast(expr, positional[0], positional[1]);
      if (form == 'T' && lname == "finfo" && positional.size() == 1 && keywords.empty()) {
        // torch.finfo(h.dtype): static metadata, but only defined for floating dtypes.
        TSNode a = unparenthesize(positional[0]);
        if (is_type(a, "attribute") && text(doc_, field(a, "attribute")) == "dtype")
          return need_dtype(DtypeNeed::Floating, field(a, "object"), e);
        auto dq = model_.qualified_name(a);
        if (dq && dq->starts_with("torch.") && is_floating_dtype_name(dq->substr(6))) return;
        return raise("`" + e + "` raises for a dtype that is not floating");
      }
      if (form == 'T' && lname == "tensor" && positional.size() == 1 && is_number_literal(positional[0])) return;
      if (form && !positional.empty()) {
        if (const SpeculationOp* op = find_op(lname, form)) {
          std::vector<TSNode> rest(positional.begin() + 1, positional.end());
          if (!check_args(*op, positional[0], rest, keywords, e)) return;
          return need_dtype(op->dtype, positional[0], e);
        }
      }
      if (name.starts_with("torch.") || name.starts_with("math."))
        return raise("`" + e + "` is not known to be free of exceptions on the path the original does not take");
      return effect("`" + callee_text + "` is not known to be free of side effects");
    }

    // self.m(x): submodules.
    if (is_type(callee, "attribute") && text(doc_, unparenthesize(field(callee, "object"))) == "self") {
      const FunctionInfo* top = &fn_.outermost();
      std::string ctor = model_.attribute_constructor(top->owner, last);
      std::string_view cls = std::string_view(ctor).substr(ctor.rfind('.') + 1);
      if (!ctor.starts_with("torch.nn."))
        return effect("`" + callee_text +
                      "` calls a module whose forward may have side effects (statistics, "
                      "dropout, caches), and predication would run it on both paths");
      for (const SpeculationModule& m : kSpeculationModules) {
        if (m.name == cls && positional.size() == 1 && keywords.empty()) return need_dtype(m.dtype, positional[0], e);
      }
      if (one_of(cls, kInplaceOptionModules))
        return effect("`" + callee_text + "` is a torch.nn." + std::string(cls) +
                      ", which may be built with inplace=True and write its input");
      if (one_of(cls, kStatelessModules))
        return raise("`" + e + "` may raise for some input shapes on the path the original does not take");
      return effect("`" + callee_text +
                    "` calls a module whose forward may have side effects (statistics, "
                    "dropout, caches), and predication would run it on both paths");
    }

    // Python builtins on static numbers.
    if (is_type(callee, "identifier") && one_of(std::string_view(callee_text), kStaticBuiltins)) {
      bool all_static =
          keywords.empty() && std::all_of(positional.begin(), positional.end(), [&](TSNode p) { return is_static(p); });
      if (all_static && (positional.size() == 1 || ((last == "min" || last == "max") && positional.size() >= 2) ||
                         (last == "round" && positional.size() == 2)))
        return;
    }
    effect("`" + callee_text + "(...)` is not known to be free of side effects");
  }

  static bool is_dtype_name(std::string_view n) {
    return is_floating_dtype_name(n) || n == "bool" || n == "int8" || n == "uint8" || n == "int16" || n == "int32" ||
           n == "int64" || n == "int" || n == "long" || n == "short";
  }
  static bool is_floating_dtype_name(std::string_view n) {
    return n == "float16" || n == "float32" || n == "float64" || n == "bfloat16" || n == "half" || n == "float" ||
           n == "double";
  }

  const Document& doc_;
  const SemanticModel& model_;
  const FunctionInfo& fn_;
};

bool established(const RaiseCondition& c, const std::vector<RaiseCondition>& facts) {
  return std::any_of(facts.begin(), facts.end(), [&](const RaiseCondition& f) { return f.key == c.key; });
}

}  // namespace

Speculation speculate(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn,
                      const std::vector<ByteRange>& precomputed) {
  Speculator s(doc, model, fn);
  s.precomputed = precomputed;
  s.visit(expr);
  return std::move(s.result);
}

std::vector<RaiseCondition> established_by(const Document& doc, const SemanticModel& model, TSNode test,
                                           const FunctionInfo& fn) {
  test = unparenthesize(test);
  if (is_type(test, "boolean_operator")) return established_by(doc, model, field(test, "left"), fn);
  if (is_type(test, "not_operator")) return established_by(doc, model, field(test, "argument"), fn);
  Speculator s(doc, model, fn);
  s.establishing = true;
  s.visit(test);
  // Conditions are collected in evaluation order up to the first effect or possible raise: those before
  // it were met whenever the original got past the test.
  return std::move(s.result.needs);
}

bool proven(const Document& doc, const SemanticModel& model, const RaiseCondition& c, const FunctionInfo& fn) {
  switch (c.kind) {
    case RaiseCondition::Kind::NotBool:
    case RaiseCondition::Kind::Floating:
      return is_floating(doc, model, c.subject, fn);
    case RaiseCondition::Kind::Integral:
      return is_bool_valued(doc, model, c.subject, fn);
    case RaiseCondition::Kind::Broadcast:
    case RaiseCondition::Kind::BroadcastTo:
    case RaiseCondition::Kind::Dims:
    case RaiseCondition::Kind::NonEmpty:
      return false;  // only emitted when the shapes are not related statically
  }
  return false;
}

std::string why_not_total(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn,
                          const std::vector<RaiseCondition>& facts) {
  Speculation s = speculate(doc, model, expr, fn);
  if (!s.effect.empty()) return s.effect;
  if (!s.raises.empty()) return s.raises;
  for (const RaiseCondition& c : s.needs) {
    if (!established(c, facts) && !proven(doc, model, c, fn))
      return c.why + ", on a path where the original did not run it";
  }
  return "";
}

namespace {
// A plain name or `self.<attr>`: cheap and pure to read again in a trace-time check.
bool checkable(TSNode n) {
  n = unparenthesize(n);
  if (is_type(n, "identifier")) return true;
  return is_type(n, "attribute") && is_type(field(n, "object"), "identifier");
}
}  // namespace

Selectability selectability(const Document& doc, const SemanticModel& model, const FunctionInfo& fn,
                            const std::vector<TSNode>& alternatives, const std::vector<RaiseCondition>& facts,
                            bool keeps_old_value, const std::vector<ByteRange>& precomputed) {
  Selectability out;
  std::vector<std::vector<RaiseCondition>> shapes;  // per alternative: shape conditions left, in order
  auto add_check = [&](const RaiseCondition& c) {
    // The check reads `.dtype`/`.shape`: the subject must be known to be a tensor, or the check could raise.
    auto tensor = [&](TSNode n) { return checkable(n) && model.kind_of(n, fn) == ValueKind::Tensor; };
    bool pair = c.kind == RaiseCondition::Kind::Broadcast || c.kind == RaiseCondition::Kind::BroadcastTo;
    bool simple = tensor(c.subject) && (!pair || tensor(c.other));
    if (!simple || c.kind == RaiseCondition::Kind::Integral) {
      out.refusal = c.why + ", on a path where the original did not run it";
      // #28 technique 5 decides broadcasting at trace time, from the names' static shapes.
      if (pair && !simple) out.refusal += " (trace-time broadcast check: only between plain names or `self.<attr>`)";
      return;
    }
    if (!established(c, out.checks)) out.checks.push_back(c);
  };
  for (TSNode v : alternatives) {
    Speculation s = speculate(doc, model, v, fn, precomputed);
    if (!s.effect.empty()) return {s.effect, {}};
    if (!s.raises.empty()) return {s.raises, {}};
    std::vector<RaiseCondition> left;
    for (RaiseCondition& c : s.needs) {
      if (established(c, facts) || proven(doc, model, c, fn)) continue;
      if (c.kind == RaiseCondition::Kind::Broadcast || c.kind == RaiseCondition::Kind::BroadcastTo ||
          c.kind == RaiseCondition::Kind::Dims)
        left.push_back(std::move(c));
      else
        add_check(c);
      if (!out.refusal.empty()) return {out.refusal, {}};
    }
    shapes.push_back(std::move(left));
  }
  // Shape conditions every alternative needs in the same order need no check; others do.
  bool shared = !keeps_old_value && std::all_of(shapes.begin(), shapes.end(), [&](const auto& r) {
    return r.size() == shapes.front().size() &&
           std::equal(r.begin(), r.end(), shapes.front().begin(),
                      [](const RaiseCondition& a, const RaiseCondition& b) { return a.key == b.key; });
  });
  if (!shared) {
    for (const auto& r : shapes) {
      for (const RaiseCondition& c : r) {
        add_check(c);
        if (!out.refusal.empty()) return {out.refusal, {}};
      }
    }
  }
  return out;
}

std::string check_text(const Document& doc, const RaiseCondition& c, const std::string& torch) {
  std::string s = text(doc, unparenthesize(c.subject));
  switch (c.kind) {
    case RaiseCondition::Kind::NotBool:
      return s + ".dtype != " + torch + ".bool";
    case RaiseCondition::Kind::Floating:
      return s + ".is_floating_point()";
    case RaiseCondition::Kind::Dims:
      return s + ".dim() >= " + c.key.substr(c.key.rfind(':') + 1);
    case RaiseCondition::Kind::Broadcast:
      return s + ".shape == " + text(doc, unparenthesize(c.other)) + ".shape";
    case RaiseCondition::Kind::BroadcastTo: {
      // Exactly "s broadcasts to o's shape": no more dimensions, and each trailing one is 1 or equal.
      std::string o = text(doc, unparenthesize(c.other));
      return "len(" + s + ".shape) <= len(" + o + ".shape) and all([graphmend_a == 1 or graphmend_a == graphmend_b " +
             "for graphmend_a, graphmend_b in zip(" + s + ".shape[::-1], " + o + ".shape[::-1])])";
    }
    case RaiseCondition::Kind::NonEmpty:
      return s + ".numel() > 0";
    case RaiseCondition::Kind::Integral:
      break;
  }
  return "not " + s + ".is_floating_point()";
}

std::string why_effectful(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn) {
  return speculate(doc, model, expr, fn).effect;
}

bool is_bool_valued(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn, int depth) {
  expr = unparenthesize(expr);
  if (ts_node_is_null(expr) || depth > 6) return false;
  auto t = type_of(expr);
  if (t == "comparison_operator") {
    for (uint32_t i = 0; i < ts_node_child_count(expr); ++i) {
      TSNode c = ts_node_child(expr, i);
      if (!ts_node_is_named(c) && (text(doc, c) == "in" || text(doc, c) == "is" || text(doc, c) == "not")) return false;
    }
    return model.kind_of(expr, fn) == ValueKind::Tensor;
  }
  if (t == "unary_operator")
    return text(doc, field(expr, "operator")) == "~" &&
           is_bool_valued(doc, model, field(expr, "argument"), fn, depth + 1);
  if (t == "binary_operator") {
    std::string op = text(doc, field(expr, "operator"));
    return (op == "&" || op == "|" || op == "^") && is_bool_valued(doc, model, field(expr, "left"), fn, depth + 1) &&
           is_bool_valued(doc, model, field(expr, "right"), fn, depth + 1);
  }
  if (t == "call") {
    std::string callee = text(doc, field(expr, "function"));
    std::string last = callee.substr(callee.rfind('.') + 1);
    for (const char* b : {"isnan", "isinf", "isfinite", "isneginf", "isposinf", "signbit", "logical_and", "logical_or",
                          "logical_not", "logical_xor", "eq", "ne", "gt", "lt", "ge", "le", "any", "all", "bool"}) {
      if (last == b) return model.kind_of(expr, fn) == ValueKind::Tensor;
    }
    return false;
  }
  if (t == "identifier") {
    std::string name = text(doc, expr);
    if (std::find(fn.params.begin(), fn.params.end(), name) != fn.params.end()) return false;
    auto it = fn.assignments.find(name);
    if (it == fn.assignments.end() || it->second.empty()) return false;
    return std::all_of(it->second.begin(), it->second.end(),
                       [&](TSNode rhs) { return is_bool_valued(doc, model, rhs, fn, depth + 1); });
  }
  return false;
}

bool is_zero_dim(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn, int depth) {
  expr = unparenthesize(expr);
  if (ts_node_is_null(expr) || depth > 6) return false;
  auto t = type_of(expr);
  ValueKind kind = model.kind_of(expr, fn);
  if (kind == ValueKind::Static) return true;  // a Python number broadcasts as a 0-dim tensor
  if (t == "comparison_operator" || t == "binary_operator" || t == "boolean_operator") {
    for (TSNode c : named_children(expr)) {
      if (!is_zero_dim(doc, model, c, fn, depth + 1)) return false;
    }
    return true;
  }
  if (t == "unary_operator" || t == "not_operator")
    return is_zero_dim(doc, model, field(expr, "argument"), fn, depth + 1);
  if (t == "identifier") {
    // A local whose every binding that reaches this read is a plain assignment of a 0-dim value (a parameter
    // may hold anything).
    const std::string name = text(doc, expr);
    const auto found = fn.binding_nodes.find(name);
    if (found == fn.binding_nodes.end() || found->second.empty()) return false;
    const ReachingBindings reaching = reaching_bindings(expr, found->second, fn);
    if (reaching.entry || reaching.bindings.empty()) return false;
    return std::all_of(reaching.bindings.begin(), reaching.bindings.end(), [&](TSNode b) {
      return is_type(b, "assignment") && is_type(field(b, "left"), "identifier") &&
             is_zero_dim(doc, model, field(b, "right"), fn, depth + 1);
    });
  }
  if (t != "call") return false;
  TSNode callee = callee_of(expr);
  uint32_t n = named_child_count(field(expr, "arguments"));
  if (is_type(callee, "attribute") && model.kind_of(field(callee, "object"), fn) == ValueKind::Tensor) {
    std::string method = text(doc, field(callee, "attribute"));
    if (one_of(std::string_view(method), kFullReductions)) return n == 0;
    // `.item()` counts as its receiver: a fix that compares in the graph compares the receiver itself.
    if (method == "float" || method == "double" || method == "bool" || method == "logical_not" || method == "abs" ||
        method == "detach" || method == "item")
      return n == 0 && is_zero_dim(doc, model, field(callee, "object"), fn, depth + 1);
    return false;
  }
  if (auto q = model.qualified_name(callee)) {
    std::string_view lname = std::string_view(*q).substr(q->rfind('.') + 1);
    if (one_of(lname, kFullReductions)) return n == 1;
    if (lname == "logical_and" || lname == "logical_or" || lname == "logical_not" || lname == "isnan" ||
        lname == "isinf" || lname == "isfinite") {
      for (TSNode a : named_children(field(expr, "arguments")))
        if (!is_zero_dim(doc, model, a, fn, depth + 1)) return false;
      return true;
    }
  }
  return false;
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
        std::string size = text(doc, named_child(args, 0));
        if (size == "[]" || size == "()" || size == "1" || size == "[1]" || size == "(1,)") return true;
      }
      if (lname == "tensor" && n >= 1) {
        auto arg_type = type_of(named_child(args, 0));
        if (arg_type == "integer" || arg_type == "float" || arg_type == "true" || arg_type == "false") return true;
      }
      if ((lname == "logical_and" || lname == "logical_or") && n == 2)
        return is_one_element(doc, model, named_child(args, 0), fn, depth + 1) &&
               is_one_element(doc, model, named_child(args, 1), fn, depth + 1);
      if ((lname == "logical_not" || lname == "isnan" || lname == "isinf" || lname == "isfinite") && n == 1)
        return is_one_element(doc, model, named_child(args, 0), fn, depth + 1);
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

namespace {

// The parameter `name` of `fn` may receive None: it defaults to None, or its annotation admits it
// (`Optional[Tensor]`, `Tensor | None`, `Any`).
bool param_may_be_none(const Document& doc, const FunctionInfo& fn, const std::string& name) {
  TSNode params = field(fn.node, "parameters");
  for (TSNode p : named_children(params)) {
    const auto t = type_of(p);
    TSNode id = t == "identifier" ? p : field(p, "name");
    if (t == "typed_parameter") id = named_child(p, 0);
    if (ts_node_is_null(id) || text(doc, id) != name) continue;
    if (t == "default_parameter" || t == "typed_default_parameter") {
      if (is_type(unparenthesize(field(p, "value")), "none")) return true;
    }
    TSNode type = field(p, "type");
    if (ts_node_is_null(type)) return false;  // unannotated: what the kind model inferred from callers and uses
    const std::string annotation = text(doc, type);
    return annotation.find("Optional") != std::string::npos || annotation.find("None") != std::string::npos ||
           annotation.find("Any") != std::string::npos;
  }
  return true;
}

}  // namespace

bool definitely_tensor(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn,
                       int depth) {
  expr = unparenthesize(expr);
  if (ts_node_is_null(expr) || depth > 6 || model.kind_of(expr, fn) != ValueKind::Tensor) return false;
  const auto t = type_of(expr);
  if (t == "conditional_expression") {
    return named_child_count(expr) >= 3 && definitely_tensor(doc, model, named_child(expr, 0), fn, depth + 1) &&
           definitely_tensor(doc, model, named_child(expr, 2), fn, depth + 1);
  }
  if (t == "boolean_operator") {  // `a or b`, `a and b`: either operand may be the value
    return definitely_tensor(doc, model, field(expr, "left"), fn, depth + 1) &&
           definitely_tensor(doc, model, field(expr, "right"), fn, depth + 1);
  }
  if (t != "identifier") return true;
  const std::string name = text(doc, expr);
  const bool is_param = std::find(fn.params.begin(), fn.params.end(), name) != fn.params.end();
  const auto found = fn.binding_nodes.find(name);
  if (found == fn.binding_nodes.end() || found->second.empty()) return is_param && !param_may_be_none(doc, fn, name);
  const ReachingBindings reaching = reaching_bindings(expr, found->second, fn);
  if (reaching.entry && !(is_param && !param_may_be_none(doc, fn, name))) return false;
  for (TSNode b : reaching.bindings) {
    // A plain assignment gives its right side's value; other bindings (unpacking, loops, `y += 1`) the kind
    // the model inferred for them.
    if (!is_type(b, "assignment") || !is_type(field(b, "left"), "identifier")) continue;
    TSNode right = field(b, "right");
    if (ts_node_is_null(right) || !definitely_tensor(doc, model, right, fn, depth + 1)) return false;
  }
  return true;
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
  if (t == "conditional_expression" && named_child_count(expr) >= 3) {
    // Either alternative may be the value.
    return is_floating(doc, model, named_child(expr, 0), fn, depth + 1, assumed) &&
           is_floating(doc, model, named_child(expr, 2), fn, depth + 1, assumed);
  }
  if (t == "call") {
    TSNode callee = callee_of(expr);
    std::string callee_text = text(doc, callee);
    std::string last = callee_text.substr(callee_text.rfind('.') + 1);
    if (model.kind_of(callee, fn) == ValueKind::Module) return true;  // module outputs: activations
    if (is_type(callee, "attribute") && text(doc, field(callee, "object")) == "self" &&
        model.kind_of(expr, fn) == ValueKind::Tensor) {
      const FunctionInfo* top = &fn.outermost();
      std::string ctor = model.attribute_constructor(top->owner, last);
      if (!ctor.empty()) return true;  // self.proj(x) for a torch.nn module
    }
    if (last == "float" || last == "half" || last == "double" || last == "bfloat16") return true;
    if (one_of(std::string_view(last), kFloatOps) || last == "randn" || last == "rand" || last == "mean" ||
        last == "norm" || last == "linear" || last == "layer_norm")
      return true;
    if (is_type(callee, "attribute") && one_of(std::string_view(last), kSameOps))
      return is_floating(doc, model, field(callee, "object"), fn, depth + 1, assumed);
    // Reductions of a floating tensor stay floating (`x.float().sum()`).
    static constexpr std::array<std::string_view, 7> kFloatKeepingReductions{"sum",    "prod",    "amax",     "amin",
                                                                             "cumsum", "cumprod", "logsumexp"};
    if (is_type(callee, "attribute") && one_of(std::string_view(last), kFloatKeepingReductions))
      return is_floating(doc, model, field(callee, "object"), fn, depth + 1, assumed);
    // A full `x.max()` / `x.min()` (with a dim they return a (values, indices) pair).
    if (is_type(callee, "attribute") && (last == "max" || last == "min") &&
        named_child_count(field(expr, "arguments")) == 0)
      return is_floating(doc, model, field(callee, "object"), fn, depth + 1, assumed);
    return false;
  }
  if (t == "identifier") return local_is_floating(doc, model, text(doc, expr), fn, depth, assumed);
  if (t == "attribute" && text(doc, field(expr, "object")) == "self") {
    // nn.Parameter attributes are weights; buffers may be integer (counts, ids, masks).
    const FunctionInfo* top = &fn.outermost();
    std::string ctor = model.attribute_constructor(top->owner, text(doc, field(expr, "attribute")));
    return ctor == "torch.nn.Parameter" || ctor == "torch.nn.parameter.Parameter";
  }
  return false;
}

namespace {

// A parameter of `fn` that holds a Python number: annotated `int` or `float`, or defaulting to a numeric literal
// without an annotation, and never bound again in the body.
bool number_parameter(const Document& doc, const FunctionInfo& fn, const std::string& name) {
  if (ts_node_is_null(fn.node) || fn.assignments.count(name)) return false;
  for (TSNode p : named_children(field(fn.node, "parameters"))) {
    const auto t = type_of(p);
    TSNode id = t == "typed_parameter" ? named_child(p, 0) : field(p, "name");
    if (ts_node_is_null(id) || text(doc, id) != name) continue;
    if (t == "typed_parameter" || t == "typed_default_parameter") {
      const std::string annotation = text(doc, field(p, "type"));
      return annotation == "int" || annotation == "float";
    }
    if (t != "default_parameter") return false;
    TSNode value = unparenthesize(field(p, "value"));
    if (is_type(value, "unary_operator")) value = unparenthesize(field(value, "argument"));
    return is_type(value, "integer") || is_type(value, "float");
  }
  return false;
}

// A Python number that cannot raise while it is computed: numeric literals, `+`/`-` of one, and `+`, `-`, `*` of
// numbers (not `/`, `//`, `%` or `**`: they raise on zero or overflow, and a select computes the untaken side too),
// or a parameter that holds one. `integral` is cleared when it may be a float.
bool python_number(const Document& doc, TSNode n, const FunctionInfo& fn, bool& integral, int depth = 0) {
  n = unparenthesize(n);
  if (depth > 6 || ts_node_is_null(n)) return false;
  const auto t = type_of(n);
  if (t == "integer") return true;
  if (t == "float") {
    integral = false;
    return true;
  }
  if (t == "unary_operator") {
    const std::string op = text(doc, field(n, "operator"));
    return (op == "-" || op == "+") && python_number(doc, field(n, "argument"), fn, integral, depth + 1);
  }
  if (t == "binary_operator") {
    const std::string op = text(doc, field(n, "operator"));
    return (op == "+" || op == "-" || op == "*") && python_number(doc, field(n, "left"), fn, integral, depth + 1) &&
           python_number(doc, field(n, "right"), fn, integral, depth + 1);
  }
  if (t == "identifier" && number_parameter(doc, fn, text(doc, n))) {
    integral = false;  // an `int` parameter may be given a float: Python does not check
    return true;
  }
  return false;
}

}  // namespace

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
    if (op != "+" && op != "-" && op != "*" && op != "/" && op != "**") return {};
    TSNode l = unparenthesize(field(expr, "left")), r = unparenthesize(field(expr, "right"));
    ValueShape ls = shape_of(doc, model, l, fn), rs = shape_of(doc, model, r, fn);
    // Python numbers (`-2`, `1 - p`) and one-element tensors broadcast without changing the other operand's
    // shape. `integral` stays true while every Python number met is an int literal.
    bool integral = true;
    auto scalar = [&](TSNode n) {
      if (python_number(doc, n, fn, integral)) return true;
      if (model.kind_of(n, fn) != ValueKind::Tensor || !is_one_element(doc, model, n, fn)) return false;
      integral = false;  // a one-element floating tensor makes an integer tensor floating
      return true;
    };
    ValueShape out;
    // A Python number or a one-element tensor mixed in keeps a floating tensor's dtype, but not always a bool or
    // integer one's: `i * 0.5` is floating for an int64 `i` (Floating), `b * 2` int64 for a bool `b`
    // (unless_bool). Only an operation between two tensors of the same base (`x + x`) keeps every dtype.
    bool mixed = true;
    if (op == "**") {
      // `x ** 2`, `x ** 0.5`: a tensor raised to a literal keeps its shape.
      // Not a negative or computed exponent: an integer tensor to a negative integer power raises.
      if (ls.likeness == Likeness::None || !(is_type(r, "integer") || is_type(r, "float"))) return {};
      integral = is_type(r, "integer");
      out = ls;
    } else if (ls.likeness != Likeness::None && rs.base == ls.base && rs.likeness != Likeness::None) {
      out = ls;
      mixed = false;
    } else if (ls.likeness != Likeness::None && scalar(r))
      out = ls;
    else if (rs.likeness != Likeness::None && scalar(l))
      out = rs;
    else
      return {};
    bool floaty = op == "/" || !integral || ls.likeness == Likeness::Floating || rs.likeness == Likeness::Floating;
    out.likeness = floaty ? Likeness::Floating : Likeness::Same;
    // Integer literals keep every dtype but bool's.
    out.unless_bool = !floaty && (mixed || ls.unless_bool || rs.unless_bool);
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
    } else if (auto q = model.qualified_name(callee); q && named_child_count(args) >= 1) {
      subject = named_child(args, 0);
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

std::string autograd_hazard(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn) {
  // torch.where sends a zero gradient into the untaken side; each op there multiplies it by its local
  // derivative, and 0 * inf and 0 * NaN are NaN. Only ops whose derivative is a constant (or a 0/1 mask)
  // keep it zero for every input, NaN and inf included.
  std::string found;
  auto is_static = [&](TSNode n) {
    ValueKind k = model.kind_of(n, fn);
    return k == ValueKind::Static || k == ValueKind::None;
  };
  std::function<void(TSNode)> visit = [&](TSNode node) {
    node = unparenthesize(node);
    if (!found.empty() || ts_node_is_null(node)) return;
    auto t = type_of(node);
    if (is_static(node) || t == "comparison_operator") return;  // no gradient flows through them
    if (t == "identifier" || t == "attribute" || t == "integer" || t == "float") return;
    if (t == "binary_operator") {
      std::string op = text(doc, field(node, "operator"));
      TSNode l = field(node, "left"), r = field(node, "right");
      bool linear =
          op == "+" || op == "-" || ((op == "*") && (is_static(l) || is_static(r))) || (op == "/" && is_static(r));
      if (!linear) {
        found = text(doc, node);
        return;
      }
      visit(l);
      visit(r);
      return;
    }
    if (t == "unary_operator") return visit(field(node, "argument"));
    if (t == "subscript") return visit(field(node, "value"));
    if (t == "call") {
      TSNode callee = unparenthesize(field(node, "function"));
      std::string c = text(doc, callee);
      std::string last = c.substr(c.rfind('.') + 1);
      for (const char* linear :
           {"clone", "contiguous", "float", "double", "half",    "bfloat16", "reshape",    "flatten",
            "ravel", "unsqueeze",  "sum",   "mean",   "clamp",   "clip",     "clamp_min",  "clamp_max",
            "relu",  "type_as",    "to",    "where",  "maximum", "minimum",  "masked_fill"}) {
        if (last == linear) {
          if (is_type(callee, "attribute")) visit(field(callee, "object"));
          for (TSNode a : named_children(field(node, "arguments")))
            visit(is_type(a, "keyword_argument") ? field(a, "value") : a);
          return;
        }
      }
      for (const char* no_grad : {"detach", "zeros_like", "ones_like", "full_like", "isnan", "isinf", "isfinite",
                                  "isneginf", "isposinf", "signbit", "logical_not", "logical_and", "logical_or",
                                  "logical_xor", "bool", "long", "int", "any", "all"}) {
        if (last == no_grad) return;
      }
      found = text(doc, node);
      return;
    }
    found = text(doc, node);
  };
  visit(expr);
  return found;
}

std::vector<std::string> differentiable_reads(const Document& doc, const SemanticModel& model, TSNode expr,
                                              const FunctionInfo& fn) {
  std::vector<std::string> reads;
  auto add = [&](TSNode n) {
    std::string t = text(doc, unparenthesize(n));
    if (std::find(reads.begin(), reads.end(), t) == reads.end()) reads.push_back(t);
  };
  std::function<void(TSNode)> visit = [&](TSNode node) {
    node = unparenthesize(node);
    if (ts_node_is_null(node)) return;
    ValueKind k = model.kind_of(node, fn);
    if (k == ValueKind::Static || k == ValueKind::None || k == ValueKind::DataScalar) return;
    auto t = type_of(node);
    if (t == "comparison_operator" || t == "integer" || t == "float" || t == "string") return;  // no gradient
    if (t == "identifier") return add(node);
    if (t == "attribute") {
      TSNode object = unparenthesize(field(node, "object"));
      if (is_type(object, "identifier") && text(doc, object) == "self") return add(node);  // parameters, buffers
      return visit(object);
    }
    if (t == "call") {
      TSNode callee = unparenthesize(field(node, "function"));
      std::string c = text(doc, callee);
      std::string last = c.substr(c.rfind('.') + 1);
      for (const char* none : {"detach",      "zeros_like", "ones_like",   "full_like", "empty_like", "isnan",
                               "isinf",       "isfinite",   "isneginf",    "isposinf",  "signbit",    "logical_not",
                               "logical_and", "logical_or", "logical_xor", "bool",      "long",       "int",
                               "any",         "all",        "size",        "dim",       "numel",      "eq",
                               "ne",          "gt",         "lt",          "ge",        "le"}) {
        if (last == none) return;
      }
      if (model.qualified_name(callee)) {
        // torch.maximum(...), F.gelu(...): a function of an imported module, not a tensor read
      } else if (is_type(callee, "attribute")) {
        TSNode object = unparenthesize(field(callee, "object"));
        if (is_type(object, "identifier") && text(doc, object) == "self")
          add(callee);  // a submodule's weights
        else
          visit(object);
      }
      for (TSNode a : named_children(field(node, "arguments")))
        visit(is_type(a, "keyword_argument") ? field(a, "value") : a);
      return;
    }
    for (TSNode c : named_children(node)) visit(c);
  };
  visit(expr);
  std::sort(reads.begin(), reads.end());
  return reads;
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

std::vector<uint32_t> surely_breaking_calls(const Document& doc, const SemanticModel& model, const FunctionInfo& fn) {
  std::vector<uint32_t> calls;
  for (TSNode node : fn.body_nodes) {
    if (!is_type(node, "call")) continue;
    TSNode callee = unparenthesize(field(node, "function"));
    if (!is_type(callee, "attribute")) continue;
    const std::string_view method = doc.node_text(field(callee, "attribute"));
    if (method != "nonzero" && method != "item" && method != "tolist" && method != "unique" &&
        method != "masked_select")
      continue;
    if (model.kind_of(field(callee, "object"), fn) == ValueKind::Tensor) calls.push_back(ts_node_start_byte(node));
  }
  std::sort(calls.begin(), calls.end());
  return calls;
}

}  // namespace graphmend
