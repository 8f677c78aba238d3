// GM401: `.item()` whose number only feeds a test (`if x.sum().item() > 0:`) keeps the value a tensor:
// `if x.sum() > 0:`. The test then stays in the graph once GM101 predicates the branch (next pass).
//
// Exactness: the number is compared with a literal. Python compares in double precision, torch in the
// tensor's dtype (checked on 2.13), so the literal must be exact in every dtype the tensor may have:
//   - floating: exact in bfloat16 (8 significant bits) and in float16's range (|v| <= 65504, no bit
//     below 2^-24); bfloat16 2048.0 > 2047 is False in torch, True in Python;
//   - integers: a literal outside int8's or uint8's range wraps (int8 5 > 200 and uint8 5 > -1 are
//     True and False in torch), so an integer literal lies in [0, 127], or the tensor is floating.
// A float literal against an integer tensor is compared in float32, exact for these literals.
#include <cmath>
#include <string>

#include "support.h"
#include "transform.h"

namespace graphmend {
namespace {
using namespace fixes;

// `v` has at most 8 significant bits, none below 2^-24, and fits float16.
bool exact_in_bfloat16_and_half(double v) {
  if (v == 0) return true;
  if (!std::isfinite(v) || std::fabs(v) > 65504) return false;
  int exponent = 0;
  const double mantissa = std::frexp(std::fabs(v), &exponent);  // v = mantissa * 2^exponent, mantissa in [0.5, 1)
  const double scaled = std::ldexp(mantissa, 8);                // the 8 significant bits as an integer
  return scaled == std::floor(scaled) && exponent - 8 >= -24;
}

// Why `literal` may compare differently in Python and in torch for some dtype of the tensor (see above);
// empty when it cannot. `floating`: the tensor is known to be floating (no int8/uint8 wrap-around).
std::string inexact_literal(const Document& doc, TSNode literal, bool floating) {
  const std::string shown = "`" + text(doc, literal) + "`";
  const std::string rounding =
      "the number is compared with " + shown + ", and a tensor comparison could round differently than Python's";
  auto number = numeric_literal(doc, literal);
  // `1_000` is refused as before: the separator is rare here, and the exactness tables were checked without it.
  if (!number || text(doc, literal).find('_') != std::string::npos) return rounding;
  if (number->integer && !floating && (number->value < 0 || number->value > 127))
    return "the number is compared with " + shown +
           ", which an int8 or uint8 tensor would wrap around (nothing proves the tensor floating)";
  return exact_in_bfloat16_and_half(std::fabs(number->value)) ? "" : rounding;
}

TransformResult apply(const TransformContext& ctx) {
  const Document& doc = ctx.document;
  TSNode call = enclosing(doc, ctx.finding.range, {"call"});
  if (ts_node_is_null(call)) return Refusal{"no call"};
  const FunctionInfo* fn = ctx.model.function_containing(call);
  if (!fn) return Refusal{"the call is not inside a function"};
  TSNode callee = field(call, "function");
  TSNode object = field(callee, "object");
  if (ctx.model.kind_of(object, *fn) != ValueKind::Tensor) return Refusal{"`.item()` of a NumPy value"};

  // Where does the number go? Directly into a comparison with exact literals, or is the whole test.
  TSNode parent = ts_node_parent(call);
  TSNode test = call;
  if (is_type(parent, "comparison_operator")) {
    for (uint32_t i = 0; i < ts_node_named_child_count(parent); ++i) {
      TSNode operand = ts_node_named_child(parent, i);
      if (ts_node_eq(operand, call)) continue;
      // Not the last word: predicate-if compares in double precision where it can (#28 technique 4).
      if (std::string why = inexact_literal(doc, operand, is_floating(doc, ctx.model, object, *fn)); !why.empty())
        return Refusal{why, false};
    }
    for (uint32_t i = 0; i < ts_node_child_count(parent); ++i) {
      TSNode c = ts_node_child(parent, i);
      if (ts_node_is_named(c)) continue;
      std::string op = text(doc, c);
      if (op != "<" && op != ">" && op != "<=" && op != ">=" && op != "==" && op != "!=")
        return Refusal{"the comparison `" + op + "` has no element-wise tensor form"};
    }
    test = parent;
  }
  // The test must be what an if/elif/while/ternary decides on (possibly under not/and/or/parentheses).
  TSNode child = test;
  bool in_test = false;
  for (TSNode p = ts_node_parent(test); !ts_node_is_null(p); child = p, p = ts_node_parent(p)) {
    auto t = type_of(p);
    if (t == "boolean_operator" || t == "not_operator" || t == "parenthesized_expression") continue;
    if (t == "if_statement" || t == "elif_clause" || t == "while_statement")
      in_test = ts_node_eq(field(p, "condition"), child);
    else if (t == "conditional_expression")
      in_test = named_child_count(p) >= 2 && ts_node_eq(named_child(p, 1), child);
    break;
  }
  if (!in_test) return Refusal{"the number is used as a Python value, not only as a test"};
  Fix fix;
  fix.title = "Keep the value a tensor: drop `.item()` in the test (the branch can then be predicated)";
  if (!is_one_element(doc, ctx.model, object, *fn)) {
    fix.applicability = Applicability::Unsafe;
    fix.title += " (unsafe: `" + text(doc, object) +
                 "` is not provably one element; a larger tensor would raise a "
                 "different error)";
  }
  fix.edits.push_back({node_range(call), text(doc, object)});
  return fix;
}

}  // namespace

const Transform& transform_item_in_condition() {
  static const Transform t{"item-in-condition", {"GM401"}, apply};
  return t;
}

}  // namespace graphmend
