// #28 technique 2: a value that repeats what the test computed (`if h.sum() > 1.0: h = h / h.sum()`) reads
// it from a name bound once before the test, so the fixed code evaluates it as often as the original did.
#include "predicate.h"

namespace graphmend::fixes {
namespace {

// Worth sharing: a computation (not a plain read), of a tensor.
bool computed_tensor(const SemanticModel& model, const FunctionInfo& fn, TSNode node) {
  auto t = type_of(node);
  bool computation = t == "call" || t == "binary_operator" || t == "unary_operator" || t == "subscript";
  return computation && model.kind_of(node, fn) == ValueKind::Tensor;
}

// The nodes of `values` whose text is `wanted` and that compute the same kind of thing.
std::vector<ByteRange> repeats_of(const Document& doc, const std::vector<TSNode>& values, TSNode wanted) {
  std::vector<ByteRange> out;
  const std::string_view want = doc.node_text(wanted);
  for (TSNode v : values) {
    walk_preorder(v, [&](TSNode n) {
      if (type_of(n) == type_of(wanted) && doc.node_text(n) == want) {
        out.push_back(node_range(n));
        return Walk::Skip;
      }
      return Walk::Descend;
    });
  }
  return out;
}

// Read again without running anything: a number, a name, `self.<attr>`.
bool plain_operand(const Document& doc, TSNode node) {
  node = unparenthesize(node);
  if (is_closed_literal(doc, node) || is_type(node, "identifier")) return true;
  return is_type(node, "attribute") && is_type(unparenthesize(field(node, "object")), "identifier");
}

}  // namespace

SharedTestValue shared_test_value(const Document& doc, const SemanticModel& model, const FunctionInfo& fn, TSNode test,
                                  const std::vector<TSNode>& values) {
  SharedTestValue out;
  // The outermost computation of the test that a value repeats.
  TSNode repeated{};
  walk_preorder(test, [&](TSNode n) {
    if (!ts_node_is_named(n) || !computed_tensor(model, fn, n)) return Walk::Descend;
    if (!repeats_of(doc, values, n).empty()) {
      repeated = n;
      return Walk::Stop;
    }
    return Walk::Descend;
  });
  if (ts_node_is_null(repeated)) return out;
  const std::string shown = "`" + text(doc, repeated) + "`";
  TSNode comparison = unparenthesize(test);
  bool leading = is_type(comparison, "comparison_operator") && named_child_count(comparison) == 2 &&
                 ts_node_eq(unparenthesize(named_child(comparison, 0)), repeated) &&
                 plain_operand(doc, named_child(comparison, 1));
  if (!leading) {
    out.missing = "a value repeats the test's " + shown +
                  ", which is shared only as the first operand of a single comparison with a number or a name "
                  "(binding it first would change the order in which the test runs)";
    return out;
  }
  if (std::string effect = why_effectful(doc, model, repeated, fn); !effect.empty()) {
    out.missing = "a value repeats the test's " + shown + ", which cannot be shared: " + effect;
    return out;
  }
  out.in_test = repeated;
  out.in_values = repeats_of(doc, values, repeated);
  return out;
}

}  // namespace graphmend::fixes
