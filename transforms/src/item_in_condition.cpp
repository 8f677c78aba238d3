// GM401: `.item()` whose number only feeds a test (`if x.sum().item() > 0:`) keeps the value a tensor:
// `if x.sum() > 0:`. The test then stays in the graph once GM101 predicates the branch (next pass).
//
// Exactness: the number is compared with a literal. Python compares in double precision, torch in the
// tensor's dtype, so the literal must be exact in every float dtype down to float16 (integers up to
// 2048, multiples of 1/8 up to 256); otherwise the two tests could disagree near the boundary.
#include <cmath>
#include <string>

#include "support.h"
#include "transform.h"

namespace graphmend {
namespace {
using namespace fixes;

bool exact_in_half(const Document& doc, TSNode literal) {
  TSNode n = unparenthesize(literal);
  // The sign does not change exactness.
  if (is_type(n, "unary_operator") && text(doc, field(n, "operator")) == "-") n = field(n, "argument");
  if (!is_type(n, "integer") && !is_type(n, "float")) return false;
  std::string t = text(doc, n);
  if (t.find_first_of("xXoObBjJ_") != std::string::npos) return false;
  double v = std::strtod(t.c_str(), nullptr);
  if (is_type(n, "integer")) return std::fabs(v) <= 2048;
  return std::fabs(v) <= 256 && std::floor(v * 8) == v * 8;
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
      if (!exact_in_half(doc, operand))
        return Refusal{"the number is compared with `" + text(doc, operand) +
                       "`, and a tensor comparison could round differently than Python's"};
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
      in_test = ts_node_named_child_count(p) >= 2 && ts_node_eq(ts_node_named_child(p, 1), child);
    break;
  }
  if (!in_test) return Refusal{"the number is used as a Python value, not only as a test"};
  Fix fix;
  fix.title = "Keep the value a tensor: drop `.item()` in the test (the branch can then be predicated)";
  if (!is_one_element(doc, ctx.model, object, *fn)) {
    fix.applicability = Applicability::Unsafe;
    fix.title += " (unsafe: `" + text(doc, object) + "` is not provably one element; a larger tensor would raise a "
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
