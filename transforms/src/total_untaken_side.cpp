// #28 technique 1: make a select's untaken side total under autograd.
//
// torch.where(c, f(x), y) sends a zero gradient into f on the path the original does not take; f's backward
// multiplies it by f's local derivative, and 0 * inf is NaN. The fix feeds that side ones instead of its
// tensor inputs on that path (`torch.where(c, x, torch.ones_like(x))`): taken, the side sees its real inputs
// bit for bit; untaken, it computes on ones, where every value and derivative is finite, and the guard's own
// backward sends exactly 0 to `x`. This file proves the "finite on ones" part by interval arithmetic over the
// side's expression, in the worst rounding of any floating dtype (bfloat16), far from every singularity.
#include <cmath>
#include <functional>
#include <optional>

#include "predicate.h"

namespace graphmend::fixes {
namespace {

// Every value and local derivative on the ones must stay within this: far inside float16's range (65504),
// so neither overflows in any floating dtype, and 0 * derivative stays 0.
constexpr double kLimit = 1e4;
// Relative rounding of one operation in the coarsest floating dtype (bfloat16: 8 bits), with room to spare,
// and an absolute term for values that underflow to zero in float16.
constexpr double kRelativeRounding = 1.0 / 128;
constexpr double kAbsoluteRounding = 1e-4;

struct Interval {
  double lo = 0, hi = 0;
  double magnitude() const { return std::max(std::fabs(lo), std::fabs(hi)); }
  double smallest_magnitude() const { return spans_zero() ? 0 : std::min(std::fabs(lo), std::fabs(hi)); }
  bool spans_zero() const { return lo <= 0 && hi >= 0; }
};

Interval widened(Interval v) {
  double w = v.magnitude() * kRelativeRounding + kAbsoluteRounding;
  return {v.lo - w, v.hi + w};
}

Interval hull(std::initializer_list<double> values) {
  Interval out{*values.begin(), *values.begin()};
  for (double v : values) {
    out.lo = std::min(out.lo, v);
    out.hi = std::max(out.hi, v);
  }
  return out;
}

// A finite number literal's value.
std::optional<double> literal_value(const Document& doc, TSNode node) {
  auto literal = numeric_literal(doc, node);
  if (!literal || !std::isfinite(literal->value)) return std::nullopt;
  return literal->value;
}

class OnesEvaluator {
 public:
  OnesEvaluator(const Document& doc, const SemanticModel& model, const FunctionInfo& fn,
                const std::vector<ByteRange>& precomputed)
      : doc_(doc), model_(model), fn_(fn), precomputed_(precomputed) {}

  std::string missing;
  std::vector<TSNode> leaves;

  std::optional<Interval> eval(TSNode node, int depth = 0) {
    node = unparenthesize(node);
    if (!missing.empty()) return std::nullopt;
    if (depth > 32) return fail("`" + text(doc_, node) + "` is too deeply nested to evaluate");
    if (auto v = literal_value(doc_, node)) return checked(widened({*v, *v}), node);
    auto t = type_of(node);
    bool precomputed = std::find(precomputed_.begin(), precomputed_.end(), node_range(node)) != precomputed_.end();
    if (precomputed) {
      // The test's value, reused (technique 2): a guarded leaf like any other, but its own backward runs on
      // the real inputs with the zero gradient, so it must have a constant derivative itself.
      if (std::string h = autograd_hazard(doc_, model_, node, fn_); !h.empty())
        return fail("`" + text(doc_, node) + "`, computed by the test and reused, has a derivative that is not " +
                    "constant" + (h == text(doc_, node) ? "" : " (`" + h + "`)") +
                    ", whose backward turns a zero gradient into NaN for NaN inputs");
      leaves.push_back(node);
      return Interval{1, 1};
    }
    if (t == "identifier" || t == "attribute") {
      ValueKind kind = model_.kind_of(node, fn_);
      if (kind == ValueKind::Tensor) {
        // torch.ones_like would raise for a Python number or None.
        if (!definitely_tensor(doc_, model_, node, fn_))
          return fail("`" + text(doc_, node) + "` may be None or a Python number on some path");
        leaves.push_back(node);
        return Interval{1, 1};
      }
      if (kind == ValueKind::Static || kind == ValueKind::None)
        return fail("`" + text(doc_, node) + "` is a Python value that is not known statically");
      return fail("`" + text(doc_, node) + "` is not known to be a tensor");
    }
    if (t == "unary_operator") {
      std::string op = text(doc_, field(node, "operator"));
      auto v = eval(field(node, "argument"), depth + 1);
      if (!v) return v;
      if (op == "-") return checked({-v->hi, -v->lo}, node);
      if (op == "+") return v;
      return fail("`" + text(doc_, node) + "` is not an arithmetic operation");
    }
    if (t == "binary_operator") {
      std::string op = text(doc_, field(node, "operator"));
      TSNode l = field(node, "left"), r = field(node, "right");
      if (op == "**") return power(node, l, r, depth);
      auto a = eval(l, depth + 1), b = eval(r, depth + 1);
      if (!a || !b) return std::nullopt;
      return arithmetic(node, op, *a, *b);
    }
    if (t == "call") return call(node, depth);
    return fail("`" + text(doc_, node) + "` is not an elementwise operation of the table");
  }

 private:
  std::optional<Interval> fail(std::string why) {
    if (missing.empty()) missing = std::move(why);
    return std::nullopt;
  }
  // The value (widened by its rounding) and the largest local derivative must stay within kLimit.
  std::optional<Interval> checked(Interval v, TSNode node, double derivative = 0) {
    Interval w = widened(v);
    if (!std::isfinite(w.lo) || !std::isfinite(w.hi) || w.magnitude() > kLimit)
      return fail("`" + text(doc_, node) + "` may exceed " + std::to_string(int(kLimit)) + " on ones");
    if (!std::isfinite(derivative) || std::fabs(derivative) > kLimit)
      return fail("`" + text(doc_, node) + "` has a derivative beyond " + std::to_string(int(kLimit)) + " on ones");
    return w;
  }
  std::optional<Interval> arithmetic(TSNode node, const std::string& op, Interval a, Interval b) {
    if (op == "+") return checked({a.lo + b.lo, a.hi + b.hi}, node, 1);
    if (op == "-") return checked({a.lo - b.hi, a.hi - b.lo}, node, 1);
    if (op == "*") {
      return checked(hull({a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi}), node,
                     std::max(a.magnitude(), b.magnitude()));
    }
    if (op == "/") {
      if (b.spans_zero()) return fail("the divisor of `" + text(doc_, node) + "` may be 0 on ones");
      double m = b.smallest_magnitude();
      return checked(hull({a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi}), node,
                     std::max(1 / m, a.magnitude() / (m * m)));
    }
    return fail("`" + text(doc_, node) + "` is not an arithmetic operation of the table");
  }
  std::optional<Interval> power(TSNode node, TSNode base_node, TSNode exponent_node, int depth) {
    auto base = eval(base_node, depth + 1);
    if (!base) return base;
    if (auto p = literal_value(doc_, exponent_node)) {
      bool integral = std::floor(*p) == *p;
      if (integral && *p >= 0) {
        double m = base->magnitude();
        Interval v = hull({std::pow(base->lo, *p), std::pow(base->hi, *p)});
        if (base->spans_zero()) v = hull({v.lo, v.hi, 0});
        return checked(v, node, *p == 0 ? 0 : *p * std::pow(m, *p - 1));
      }
      if (integral ? base->spans_zero() : base->lo <= 0)
        return fail("the base of `" + text(doc_, node) + "` may be " + (integral ? "0" : "at most 0") + " on ones");
      double small = integral ? base->smallest_magnitude() : base->lo;
      double large = integral ? base->magnitude() : base->hi;
      Interval v = hull({std::pow(base->lo, *p), std::pow(base->hi, *p)});
      double d = std::fabs(*p) * std::max(std::pow(small, *p - 1), std::pow(large, *p - 1));
      return checked(v, node, d);
    }
    // A tensor exponent: x ** y = exp(y log x) for a positive base, monotone in each operand.
    auto exponent = eval(exponent_node, depth + 1);
    if (!exponent) return exponent;
    if (base->lo <= 0) return fail("the base of `" + text(doc_, node) + "` may be at most 0 on ones");
    double corners[4], dx = 0, dy = 0;
    int i = 0;
    for (double x : {base->lo, base->hi}) {
      for (double y : {exponent->lo, exponent->hi}) {
        corners[i++] = std::pow(x, y);
        dx = std::max(dx, std::fabs(y) * std::pow(x, y - 1));
        dy = std::max(dy, std::pow(x, y) * std::fabs(std::log(x)));
      }
    }
    return checked(hull({corners[0], corners[1], corners[2], corners[3]}), node, std::max(dx, dy));
  }
  std::optional<Interval> call(TSNode node, int depth) {
    TSNode callee = unparenthesize(field(node, "function"));
    std::vector<TSNode> args;
    std::string name;
    if (is_type(callee, "attribute") && model_.kind_of(field(callee, "object"), fn_) == ValueKind::Tensor) {
      name = text(doc_, field(callee, "attribute"));
      args.push_back(field(callee, "object"));
    } else if (auto q = model_.qualified_name(callee)) {
      std::string prefix = q->substr(0, q->rfind('.') + 1);
      if (prefix != "torch." && prefix != "torch.nn.functional." && prefix != "torch.special.")
        return fail("`" + text(doc_, node) + "` is not an operation of the table");
      name = q->substr(prefix.size());
    } else {
      return fail("`" + text(doc_, node) + "` is not an operation of the table");
    }
    std::vector<std::pair<std::string, TSNode>> keywords;
    for (TSNode a : named_children(field(node, "arguments"))) {
      if (is_type(a, "keyword_argument"))
        keywords.push_back({text(doc_, field(a, "name")), field(a, "value")});
      else if (is_type(a, "list_splat") || is_type(a, "dictionary_splat"))
        return fail("`" + text(doc_, node) + "` unpacks its arguments");
      else
        args.push_back(a);
    }
    // clamp(x, min, max) with literal bounds (None: unbounded).
    if (name == "clamp" || name == "clip" || name == "clamp_min" || name == "clamp_max") {
      TSNode lo_node{}, hi_node{};
      if (name == "clamp_max") {
        if (args.size() > 1) hi_node = args[1];
      } else {
        if (args.size() > 1) lo_node = args[1];
        if (args.size() > 2 && name != "clamp_min") hi_node = args[2];
      }
      for (auto& [k, v] : keywords) {
        if (k == "min" && name != "clamp_max")
          lo_node = v;
        else if (k == "max" && name != "clamp_min")
          hi_node = v;
        else
          return fail("`" + text(doc_, node) + "` has an argument outside the table (`" + k + "`)");
      }
      if (args.empty() || args.size() > 3) return fail("`" + text(doc_, node) + "` has unexpected arguments");
      auto x = eval(args[0], depth + 1);
      if (!x) return x;
      auto bound = [&](TSNode b) -> std::optional<std::optional<double>> {
        if (ts_node_is_null(b) || is_type(unparenthesize(b), "none")) return std::optional<double>{};
        if (auto v = literal_value(doc_, b)) return std::optional<double>{*v};
        return std::nullopt;
      };
      auto lo = bound(lo_node), hi = bound(hi_node);
      if (!lo || !hi) return fail("the bounds of `" + text(doc_, node) + "` are not literal numbers");
      Interval v = *x;
      if (*lo) v = {std::max(v.lo, **lo), std::max(v.hi, **lo)};
      if (*hi) v = {std::min(v.lo, **hi), std::min(v.hi, **hi)};
      return checked(v, node, 1);
    }
    if (!keywords.empty()) return fail("`" + text(doc_, node) + "` has keyword arguments outside the table");
    if (name == "pow" && args.size() == 2) return power(node, args[0], args[1], depth);
    if ((name == "mul" || name == "add" || name == "sub" || name == "div" || name == "true_divide") &&
        args.size() == 2) {
      auto a = eval(args[0], depth + 1), b = eval(args[1], depth + 1);
      if (!a || !b) return std::nullopt;
      std::string op = name == "mul" ? "*" : name == "add" ? "+" : name == "sub" ? "-" : "/";
      return arithmetic(node, op, *a, *b);
    }
    if ((name == "maximum" || name == "minimum") && args.size() == 2) {
      auto a = eval(args[0], depth + 1), b = eval(args[1], depth + 1);
      if (!a || !b) return std::nullopt;
      if (name == "maximum") return checked({std::max(a->lo, b->lo), std::max(a->hi, b->hi)}, node, 1);
      return checked({std::min(a->lo, b->lo), std::min(a->hi, b->hi)}, node, 1);
    }
    if (args.size() != 1) return fail("`" + text(doc_, node) + "` is not an operation of the table");
    auto x = eval(args[0], depth + 1);
    if (!x) return x;
    return unary(node, name, *x);
  }
  // Elementwise functions of one tensor: their image of `x` and a bound of their derivative on it.
  std::optional<Interval> unary(TSNode node, const std::string& name, Interval x) {
    auto positive = [&](double at_least) -> bool {
      if (x.lo > at_least) return true;
      fail("the argument of `" + text(doc_, node) + "` may reach its singularity on ones");
      return false;
    };
    auto monotone = [&](double (*f)(double), double derivative) {
      return checked(hull({f(x.lo), f(x.hi)}), node, derivative);
    };
    if (name == "float" || name == "double" || name == "half" || name == "bfloat16" || name == "clone" ||
        name == "contiguous")
      return checked(x, node, 1);
    if (name == "neg" || name == "negative") return checked({-x.hi, -x.lo}, node, 1);
    if (name == "relu") return checked({std::max(x.lo, 0.0), std::max(x.hi, 0.0)}, node, 1);
    if (name == "abs") return checked({x.spans_zero() ? 0 : x.smallest_magnitude(), x.magnitude()}, node, 1);
    if (name == "square") {
      double m = x.magnitude();
      return checked({x.spans_zero() ? 0 : x.smallest_magnitude() * x.smallest_magnitude(), m * m}, node, 2 * m);
    }
    if (name == "exp") return monotone([](double v) { return std::exp(v); }, std::exp(x.hi));
    if (name == "expm1") return monotone([](double v) { return std::expm1(v); }, std::exp(x.hi));
    if (name == "exp2") return monotone([](double v) { return std::exp2(v); }, std::log(2.0) * std::exp2(x.hi));
    if (name == "log" && positive(0)) return monotone([](double v) { return std::log(v); }, 1 / x.lo);
    if (name == "log2" && positive(0))
      return monotone([](double v) { return std::log2(v); }, 1 / (x.lo * std::log(2.0)));
    if (name == "log10" && positive(0))
      return monotone([](double v) { return std::log10(v); }, 1 / (x.lo * std::log(10.0)));
    if (name == "log1p" && positive(-1)) return monotone([](double v) { return std::log1p(v); }, 1 / (1 + x.lo));
    if (name == "sqrt" && positive(0)) return monotone([](double v) { return std::sqrt(v); }, 0.5 / std::sqrt(x.lo));
    if (name == "rsqrt" && positive(0))
      return checked(hull({1 / std::sqrt(x.lo), 1 / std::sqrt(x.hi)}), node, 0.5 * std::pow(x.lo, -1.5));
    if (name == "reciprocal") {
      if (x.spans_zero()) return fail("the argument of `" + text(doc_, node) + "` may be 0 on ones");
      double m = x.smallest_magnitude();
      return checked(hull({1 / x.lo, 1 / x.hi}), node, 1 / (m * m));
    }
    if (name == "sigmoid") return monotone([](double v) { return 1 / (1 + std::exp(-v)); }, 0.25);
    if (name == "tanh") return monotone([](double v) { return std::tanh(v); }, 1);
    if (name == "erf") return monotone([](double v) { return std::erf(v); }, 1.13);
    if (name == "softplus") return monotone([](double v) { return std::log1p(std::exp(v)); }, 1);
    if (name == "sin" || name == "cos") return checked({-1, 1}, node, 1);
    // Not monotone below 0, and never below -0.28 (silu) or -0.17 (gelu).
    if (name == "silu") return checked({std::min(-0.28, x.lo), std::max(x.hi, 0.0)}, node, 1.1);
    if (name == "gelu") return checked({std::min(-0.17, x.lo), std::max(x.hi, 0.0)}, node, 1.13);
    if (!missing.empty()) return std::nullopt;
    return fail("`" + text(doc_, node) + "` is not an elementwise operation of the table");
  }

  const Document& doc_;
  const SemanticModel& model_;
  const FunctionInfo& fn_;
  const std::vector<ByteRange>& precomputed_;
};

}  // namespace

UntakenSide total_untaken_side(const Document& doc, const SemanticModel& model, const FunctionInfo& fn, TSNode value,
                               const std::vector<ByteRange>& precomputed) {
  OnesEvaluator e(doc, model, fn, precomputed);
  e.eval(value);
  UntakenSide out;
  out.missing = e.missing;
  if (out.missing.empty()) out.leaves = std::move(e.leaves);
  return out;
}

std::string rewritten_value(const Document& doc, TSNode value, const std::vector<TSNode>& leaves,
                            const std::vector<std::pair<ByteRange, std::string>>& renamed,
                            const std::function<std::string(const std::string&)>& guard_name) {
  // Replacements, in source order: a guarded leaf by its guard's name, a reused test value by its name.
  std::vector<std::pair<ByteRange, std::string>> edits;
  auto source_of = [&](TSNode leaf) {
    for (const auto& [range, name] : renamed) {
      if (range == node_range(leaf)) return name;
    }
    return text(doc, leaf);
  };
  for (TSNode leaf : leaves) edits.push_back({node_range(leaf), guard_name(source_of(leaf))});
  for (const auto& r : renamed) {
    if (node_range(value).contains(r.first) &&
        std::none_of(edits.begin(), edits.end(), [&](const auto& e) { return e.first == r.first; }))
      edits.push_back(r);
  }
  std::sort(edits.begin(), edits.end(), [](const auto& a, const auto& b) { return a.first.start < b.first.start; });
  std::string out;
  uint32_t at = ts_node_start_byte(value);
  for (const auto& [range, replacement] : edits) {
    out += doc.text().substr(at, range.start - at);
    out += replacement;
    at = range.end;
  }
  out += doc.text().substr(at, ts_node_end_byte(value) - at);
  return out;
}

}  // namespace graphmend::fixes
