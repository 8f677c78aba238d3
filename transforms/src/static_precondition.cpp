// GM101: a test on a uniform random draw whose outcome is fixed by a static operand (LayerDrop).
//
//   dropout_probability = torch.rand([])
//   if dropout_probability < self.layerdrop:
//   -> if (not isinstance(self.layerdrop, (int, float)) or self.layerdrop > 0
//          or torch._assert_async(dropout_probability >= 0, "...") is not None) and dropout_probability <
//          self.layerdrop:
//
// `torch.rand` draws from [0, 1) in every dtype, so `r < p` is False for every number `p <= 0` (NaN included:
// `r < nan` is False too). The added precondition decides exactly those cases without reading the tensor, and
// Dynamo decides it at trace time (a float or int attribute is a guarded constant): with the configs' default
// `layerdrop = 0.0` the branch is pruned and the graph does not break. For any other `p` (positive, a tensor,
// None, a string...) the original comparison runs as before, with its own result or exception.
//
// The draw must stay alive: where the original read it (the comparison fed the break), a graph that no longer
// reads it loses it to dead-code elimination under aot_eager and inductor, and the RNG state after the call
// (every later dropout mask) differs. `torch._assert_async(r >= 0, msg)` reads the draw exactly where the
// original compared it; it is side-effectful to FX and AOTAutograd (never removed), it cannot fail (a draw is
// >= 0), and it returns None, so `... is not None` is a Python False Dynamo folds away. Pinned on eager,
// aot_eager and inductor by tests/oracle/test_static_precondition.py and the differential oracle.
//
// The same goes into a flag that only truth tests read (wav2vec2: `skip_the_layer = self.training and r < p`,
// then `if not skip_the_layer or synced_gpus:`): there a Python False stands for a tensor False.
//
// Sound only when: the drawn name is bound once in the function, to `torch.rand(...)` of one element (`[]`,
// `1`, `(1, 1)`: a larger draw makes the original's `if` raise, which the pruned test would not), without
// `out=`, before the test, and never written in place; `p` is a number literal, a name or an attribute chain
// (reading it again has no effect: not a method or property of the class; a tensor bound fails the isinstance
// test and runs the original comparison); `isinstance`, `int` and `float` are the builtins. `r <= p` is left
// alone: `r` can be exactly 0, so it is not fixed for `p == 0`.
#include <algorithm>
#include <functional>

#include "support.h"
#include "transform.h"

namespace graphmend {
namespace {
using namespace fixes;

// A number literal, a name, or `a.b.c` over names: reading it twice reads the same value, with no effect.
bool is_plain_operand(TSNode node) {
  std::string_view t = ts_node_type(node);
  if (t == "integer" || t == "float" || t == "identifier") return true;
  if (t == "unary_operator") return is_plain_operand(field(node, "argument"));
  if (t == "attribute") return is_plain_operand(field(node, "object"));
  return false;
}

// A size argument of `torch.rand` that gives one element: `1`, `[]`, `()`, `(1,)`, `[1, 1]`.
bool size_is_one(const Document& doc, TSNode size) {
  size = unparenthesize(size);
  if (is_type(size, "integer")) return text(doc, size) == "1";
  if (!is_type(size, "list") && !is_type(size, "tuple")) return false;
  for (TSNode e : named_children(size))
    if (!is_type(e, "comment") && !(is_type(e, "integer") && text(doc, e) == "1")) return false;
  return true;
}

// Why `name` is not a fresh uniform draw in [0, 1) when `stmt` runs.
std::string why_not_uniform_draw(const Document& doc, const SemanticModel& model, const FunctionInfo& fn,
                                 const std::string& name, TSNode stmt) {
  if (std::find(fn.params.begin(), fn.params.end(), name) != fn.params.end()) return "`" + name + "` is a parameter";
  auto it = fn.assignments.find(name);
  if (it == fn.assignments.end() || it->second.size() != 1) return "`" + name + "` is not bound once in the function";
  TSNode value = it->second.front();
  if (!is_type(value, "call")) return "`" + name + "` is not bound to a `torch.rand(...)` draw";
  auto callee = model.qualified_name(field(value, "function"));
  if (!callee || *callee != "torch.rand") return "`" + name + "` is not bound to a `torch.rand(...)` draw";
  TSNode args = field(value, "arguments");
  bool one_element = true;
  for (uint32_t i = 0; i < ts_node_named_child_count(args); ++i) {
    TSNode a = ts_node_named_child(args, i);
    if (is_type(a, "keyword_argument") && text(doc, field(a, "name")) == "out")
      return "the draw writes into `out=`, a tensor that may be changed elsewhere";
    if (is_type(a, "list_splat") || is_type(a, "dictionary_splat")) return "the draw's arguments are unpacked";
    if (is_type(a, "keyword_argument")) {
      if (text(doc, field(a, "name")) == "size") one_element = one_element && size_is_one(doc, field(a, "value"));
    } else if (!is_type(a, "comment")) {
      one_element = one_element && size_is_one(doc, a);
    }
  }
  if (!one_element)
    return "the draw `" + text(doc, value) +
           "` is not provably one element: for a larger one the original's test raises, and the pruned test "
           "would not";
  if (!defined_before(doc, fn, name, stmt)) return "`" + name + "` may be unbound when the test runs";
  if (auto why = why_written_in_place_after(doc, fn, name, statement_of(value)); !why.empty()) return why;
  return "";
}

// Why reading `operand` again may differ from reading it once: a method or property of the class.
std::string why_operand_unplain(const Document& doc, const FunctionInfo& fn, TSNode operand) {
  if (!is_plain_operand(operand)) return "`" + text(doc, operand) + "` is not a number, a name or an attribute";
  if (is_type(operand, "attribute") && text(doc, field(operand, "object")) == "self" && fn.owner) {
    std::string attr = text(doc, field(operand, "attribute"));
    if (fn.owner->methods.count(attr)) return "`self." + attr + "` is a method or property of the class";
  }
  return "";
}

std::string why_builtins_shadowed(const FunctionInfo& fn) {
  for (const char* name : {"isinstance", "int", "float"})
    if (bound_locally(&fn, name)) return std::string("`") + name + "` is a local name here, not the builtin";
  return "";
}

// The comparison inside `test` (the test itself or an operand of its top-level `and`) between a draw and a
// static operand: `r < p` or `p > r`. Null when there is none.
struct DrawTest {
  TSNode comparison{};
  TSNode draw{};
  TSNode bound{};
  bool strict = true;  // `<`; false for `<=`, which a draw of exactly 0.0 satisfies against 0
};

DrawTest find_draw_test(const Document& doc, TSNode test) {
  test = unparenthesize(test);
  if (is_type(test, "boolean_operator") && text(doc, field(test, "operator")) == "and") {
    DrawTest left = find_draw_test(doc, field(test, "left"));
    if (!ts_node_is_null(left.comparison)) return left;
    return find_draw_test(doc, field(test, "right"));
  }
  if (!is_type(test, "comparison_operator") || named_child_count(test) != 2) return {};
  TSNode a = named_child(test, 0), b = named_child(test, 1);
  std::string op;
  for (uint32_t i = 0; i < ts_node_child_count(test); ++i) {
    TSNode c = ts_node_child(test, i);
    if (!ts_node_is_named(c)) op = text(doc, c);
  }
  if ((op == "<" || op == "<=") && is_type(a, "identifier")) return {test, a, b, op == "<"};
  if ((op == ">" || op == ">=") && is_type(b, "identifier")) return {test, b, a, op == ">"};
  return {};
}

// The names a test reads as truth values: the test itself, or operands of its not/and/or.
void truth_operands(const Document& doc, TSNode test, std::vector<TSNode>& out) {
  test = unparenthesize(test);
  if (is_type(test, "not_operator")) return truth_operands(doc, field(test, "argument"), out);
  if (is_type(test, "boolean_operator")) {
    truth_operands(doc, field(test, "left"), out);
    truth_operands(doc, field(test, "right"), out);
    return;
  }
  if (is_type(test, "identifier")) out.push_back(test);
}

// Every read of `name` in `fn` is a truth test (an if/elif/while condition, or a not/and/or operand of one),
// outside nested functions and lambdas: a value of the same truthiness is then indistinguishable.
bool only_truth_tested(const Document& doc, const FunctionInfo& fn, const std::string& name, TSNode assignment) {
  bool ok = true;
  std::function<void(TSNode, bool)> visit = [&](TSNode node, bool nested) {
    if (!ok) return;
    if (is_type(node, "identifier") && text(doc, node) == name && !ts_node_eq(node, assignment)) {
      TSNode at = node, parent = ts_node_parent(node);
      while (is_type(parent, "not_operator") || is_type(parent, "boolean_operator") ||
             is_type(parent, "parenthesized_expression")) {
        at = parent;
        parent = ts_node_parent(parent);
      }
      bool test =
          (is_type(parent, "if_statement") || is_type(parent, "elif_clause") || is_type(parent, "while_statement")) &&
          ts_node_eq(field(parent, "condition"), at);
      if (nested || !test) ok = false;
      return;
    }
    const bool inner = nested || is_type(node, "function_definition") || is_type(node, "lambda");
    for (uint32_t i = 0; i < ts_node_named_child_count(node); ++i) visit(ts_node_named_child(node, i), inner);
  };
  visit(field(fn.node, "body"), false);
  return ok;
}

TransformResult apply(const TransformContext& ctx) {
  const Document& doc = ctx.document;
  const SemanticModel& model = ctx.model;
  TSNode stmt = enclosing(doc, ctx.finding.range, {"if_statement", "elif_clause"});
  if (ts_node_is_null(stmt)) return Refusal{"no if statement", false};
  const FunctionInfo* fn = model.function_containing(stmt);
  if (!fn) return Refusal{"the test is not inside a function", false};
  TSNode test = field(stmt, "condition");
  TSNode anchor = is_type(stmt, "elif_clause") ? ts_node_parent(stmt) : stmt;  // where the draw must be bound
  DrawTest found = find_draw_test(doc, test);
  if (ts_node_is_null(found.comparison)) {
    // A flag computed from the draw and only truth-tested (`skip = self.training and r < p`, `if not skip:`):
    // the precondition goes into the flag's expression, where a False of the same truthiness is as good.
    std::vector<TSNode> names;
    truth_operands(doc, test, names);
    for (TSNode n : names) {
      auto it = fn->assignments.find(text(doc, n));
      if (it == fn->assignments.end() || it->second.size() != 1) continue;
      DrawTest inner = find_draw_test(doc, it->second.front());
      if (ts_node_is_null(inner.comparison)) continue;
      TSNode assignment = ts_node_parent(it->second.front());
      if (!is_type(assignment, "assignment") || !only_truth_tested(doc, *fn, text(doc, n), field(assignment, "left")))
        return Refusal{"`" + text(doc, n) + "` holds a random draw's test and is used as a value, not only tested"};
      found = inner;
      test = it->second.front();
      anchor = ts_node_parent(assignment);
      break;
    }
  }
  if (ts_node_is_null(found.comparison))
    return Refusal{"the test is not a comparison of a random draw with a bound", false};
  // Only a name bound to a draw is this transform's: anything else is predication's business.
  auto bound_to = fn->assignments.find(text(doc, found.draw));
  if (bound_to == fn->assignments.end() ||
      std::none_of(bound_to->second.begin(), bound_to->second.end(),
                   [&](TSNode v) { return text(doc, v).find("rand(") != std::string::npos; }))
    return Refusal{"the test does not compare a random draw", false};
  if (!found.strict)
    return Refusal{"`" + text(doc, found.comparison) +
                   "` is not decided by the bound alone: torch.rand can draw exactly 0.0, which is <= 0"};
  const std::string bound = text(doc, found.bound);
  if (text(doc, test).find("isinstance(" + bound + ", (int, float))") != std::string::npos)
    return Refusal{"already guarded: Dynamo breaks here only when `" + bound + "` is positive or not a number"};
  if (auto why = why_not_uniform_draw(doc, model, *fn, text(doc, found.draw), anchor); !why.empty())
    return Refusal{why};
  if (auto why = why_operand_unplain(doc, *fn, found.bound); !why.empty()) return Refusal{why};
  if (auto why = why_builtins_shadowed(*fn); !why.empty()) return Refusal{why};

  TorchName torch = torch_name(doc, model);
  if (auto why = why_torch_unusable(doc, model, fn, torch); !why.empty()) return Refusal{why};
  const std::string draw = text(doc, found.draw);
  // Reads the draw where the original compared it, so the compiled graph keeps it (see the header).
  const std::string keep_draw = torch.name + "._assert_async(" + draw + " >= 0, \"torch.rand draws from [0, 1)\")";
  const std::string guarded = "(not isinstance(" + bound + ", (int, float)) or " + bound + " > 0 or " + keep_draw +
                              " is not None) and " + text(doc, found.comparison);
  // An operand of and/or/not needs parentheses around the new `and`; the whole test does not.
  const bool whole = ts_node_eq(found.comparison, unparenthesize(test)) && !is_type(test, "parenthesized_expression");
  Fix fix;
  fix.edits.push_back({node_range(found.comparison), whole ? guarded : "(" + guarded + ")"});
  if (torch.import_edit) fix.edits.push_back(*torch.import_edit);
  fix.title = "Decide `" + text(doc, found.comparison) + "` without the tensor when `" + bound +
              "` is a number <= 0 (a draw from torch.rand is never below it): Dynamo prunes the branch at trace "
              "time, the draw stays in the graph (read by an assertion that cannot fail), and every other value "
              "runs the original test";
  fix.applicability = Applicability::Safe;
  return fix;
}

}  // namespace

const Transform& transform_static_precondition() {
  static const Transform t{"static-precondition", {"GM101"}, apply};
  return t;
}

}  // namespace graphmend
