// GM301: `if <tensor test>: raise E("msg")` becomes a call of a custom operator that runs inside the
// compiled graph and raises the same exception there, at run time, with the real values:
//
//     @_graphmend_runtime_op("raise_if_<h>", "(Tensor test) -> ()")
//     def _graphmend_raise_if_<h>(test):
//         if test:
//             raise E("msg")
//     ...
//         _graphmend_raise_if_<h>(<tensor test>)
//
// A torch.library custom operator is opaque to Dynamo (no break), and its Python body runs when the graph
// runs, in eager runs too. The helper `_graphmend_runtime_op` (added once per file) defines the operator once
// per process, under a namespace made of the module's name, and registers it as an ordered effect before it
// can be traced: an operator with no output is otherwise dead code to AOTAutograd and silently dropped. The
// name carries a hash of the body, so a compiled graph cached on disk never calls an operator that behaves
// differently from the one it was compiled with.
//
// Class, message and `from None` are kept (the body raises the very same expression, which may only use
// literals and names that resolve at module level). The original broke the graph before its test, so state
// the graph wrote in place earlier (BatchNorm running statistics in training, in-place updates of inputs or
// buffers, Python attributes and lists) was written back before the raise; in one graph AOTAutograd writes
// it back after the graph returns, which a raise skips. `@_graphmend_keep_state` (support.cpp) keeps it:
// where Dynamo traces the call, it looks at the graph traced so far and breaks it there, as the original
// did, when anything was written; otherwise the guard stays inside the graph (an eval-mode model: one graph).
#include <algorithm>

#include "support.h"
#include "transform.h"

namespace graphmend {
namespace {
using namespace fixes;

// `self.config.vocab_size`, `n`: a name or a chain of attributes of one.
bool is_attribute_chain(TSNode n) {
  if (is_type(n, "identifier")) return true;
  return is_type(n, "attribute") && is_attribute_chain(field(n, "object"));
}

void collect_chains(const Document& doc, TSNode n, std::vector<std::string>& out) {
  if (is_attribute_chain(n)) out.emplace_back(doc.node_text(n));
  for (TSNode c : named_children(n)) collect_chains(doc, c, out);
}

void collect_interpolations(TSNode n, std::vector<TSNode>& out) {
  if (is_type(n, "interpolation")) out.push_back(n);
  for (TSNode c : named_children(n)) collect_interpolations(c, out);
}

// The raise expression the operator's body re-evaluates, at module level: literals stay; one f-string
// message may be formatted at the call instead, when every value it interpolates is a Python value Dynamo
// knows (a name or attribute chain) that the tensor test itself has just read (`labels.max() >=
// self.config.vocab_size` then `f"... {self.config.vocab_size}"`): formatting it on every call adds only
// reads that have just succeeded, and the text is the one the original would have raised. `why` says what
// is missing; `message` is the f-string, passed to the operator as its `message` argument.
struct RaisedExpression {
  std::string body_text;  // the expression, with the f-string replaced by `message`
  std::string message;
  std::string why;
};

RaisedExpression closed_raise(const Document& doc, const SemanticModel& model, const FunctionInfo* fn, TSNode exc,
                              TSNode tensor_test) {
  RaisedExpression out;
  TSNode cls = is_type(exc, "call") ? field(exc, "function") : exc;
  if (!is_module_level_name(doc, fn, cls)) {
    out.why = "the exception class `" + text(doc, cls) + "` is not a name the module resolves the same way";
    return out;
  }
  out.body_text = text(doc, exc);
  if (!is_type(exc, "call")) return out;
  std::vector<std::string> read_by_test;
  collect_chains(doc, tensor_test, read_by_test);
  for (TSNode a : named_children(field(exc, "arguments"))) {
    if (is_type(a, "comment")) continue;
    TSNode value = is_type(a, "keyword_argument") ? field(a, "value") : a;
    if (is_closed_literal(doc, value)) continue;
    std::vector<TSNode> parts;
    if (is_type(value, "string") && out.message.empty()) collect_interpolations(value, parts);
    bool formatted_at_call = !parts.empty();
    for (TSNode part : parts) {
      TSNode e = named_child(part, 0);
      if (ts_node_is_null(e)) {
        formatted_at_call = false;
        break;
      }
      std::string e_text(doc.node_text(e));
      formatted_at_call = formatted_at_call && is_attribute_chain(e) && model.kind_of(e, *fn) == ValueKind::Static &&
                          std::find(read_by_test.begin(), read_by_test.end(), e_text) != read_by_test.end();
    }
    if (!formatted_at_call) {
      out.why = "the exception's argument `" + text(doc, a) +
                "` reads values of the function that the guard's test does not read (only literals, and f-strings "
                "over Python values the test reads, are re-created inside the operator)";
      return out;
    }
    out.message = text(doc, value);
    uint32_t from = ts_node_start_byte(value) - ts_node_start_byte(exc);
    out.body_text.replace(from, ts_node_end_byte(value) - ts_node_start_byte(value), "message");
  }
  return out;
}

// Why `expr` would still need a Python truth test when evaluated as the operator's argument: `and`, `or`,
// `not`, `a if t else b` and chained comparisons test their tensor operands with bool().
std::string why_truth_tested(const Document& doc, TSNode expr) {
  std::string_view t = type_of(expr);
  if (t == "lambda") return "";
  if (t == "boolean_operator" || t == "not_operator" || t == "conditional_expression" ||
      (t == "comparison_operator" && named_child_count(expr) > 2))
    return "`" + text(doc, expr) + "` tests a tensor's truth in Python, which would break the graph at the call";
  for (TSNode c : named_children(expr))
    if (std::string why = why_truth_tested(doc, c); !why.empty()) return why;
  return "";
}

TransformResult apply(const TransformContext& ctx) {
  const Document& doc = ctx.document;
  GuardStatement guard = guard_statement(doc, ctx.model, ctx.finding.range);
  if (!guard.refusal.empty()) return Refusal{guard.refusal};
  TSNode node = guard.node;
  const FunctionInfo* fn = guard.fn;
  if (std::string why = why_under_handler(node, "the guard"); !why.empty()) return Refusal{why};
  // The block must only raise: anything before the raise would run inside the operator, out of order.
  TSNode block = field(node, "consequence");
  TSNode raise{};
  for (TSNode s : named_children(block)) {
    if (is_type(s, "comment")) continue;
    if (!ts_node_is_null(raise) || !is_type(s, "raise_statement"))
      return Refusal{"the guard's block does more than raise"};
    raise = s;
  }
  if (ts_node_is_null(raise)) return Refusal{"no raise in the guard"};
  if (named_child_count(raise) == 0)
    return Refusal{"a bare `raise` re-raises the exception being handled, which an operator cannot"};
  TSNode exc = named_child(raise, 0);
  TSNode cause = field(raise, "cause");
  if (!ts_node_is_null(cause) && !is_type(cause, "none"))
    return Refusal{"the `from` cause reads a value of the function"};

  // `if flag and <tensor>:` keeps the Python part as a Python test; `not <tensor>` is negated in the body.
  TSNode condition = unparenthesize(field(node, "condition"));
  std::string static_guard;
  if (is_type(condition, "boolean_operator") && text(doc, field(condition, "operator")) == "and" &&
      ctx.model.kind_of(field(condition, "left"), *fn) == ValueKind::Static) {
    static_guard = text(doc, field(condition, "left"));
    condition = unparenthesize(field(condition, "right"));
  }
  bool negated = false;
  if (is_type(condition, "not_operator")) {
    negated = true;
    condition = unparenthesize(field(condition, "argument"));
  }
  if (ctx.model.kind_of(condition, *fn) != ValueKind::Tensor) return Refusal{"the guard's test is not a tensor"};
  if (std::string why = why_truth_tested(doc, condition); !why.empty()) return Refusal{why};
  RaisedExpression raised = closed_raise(doc, ctx.model, fn, exc, condition);
  if (!raised.why.empty()) return Refusal{raised.why};
  const bool with_message = !raised.message.empty();

  TorchName torch = torch_name(doc, ctx.model);
  if (auto why = why_torch_unusable(doc, ctx.model, nullptr, torch); !why.empty()) return Refusal{why};
  if (auto why = why_torch_not_module_level(doc, torch); !why.empty()) return Refusal{why};
  // The operator is defined after the imports, after the helpers.
  std::optional<OperatorPlacement> placement = operator_placement(doc, node);
  if (!placement) return Refusal{"the guard's function is defined before the file's imports end"};
  const uint32_t helper_at = placement->helper_at;

  std::string eol(detect_line_ending(doc.text()));
  std::string body = std::string("    if ") + (negated ? "not " : "") + "test:" + eol + "        raise " +
                     raised.body_text + (ts_node_is_null(cause) ? "" : " from None") + eol;
  std::string op = "raise_if_" + behaviour_hash(body);
  std::string py = "_graphmend_" + op;
  // The same body elsewhere in the file: the operator exists, with the same behaviour. Its text names no site,
  // so that fixes of one pass needing the same operator insert the very same definition (added once).
  const bool defined = doc.text().find("def " + py + "(") != std::string::npos;
  std::string schema = with_message ? "(Tensor test, str message) -> ()" : "(Tensor test) -> ()";
  std::string definition = "@_graphmend_keep_state" + eol + "@_graphmend_runtime_op(\"" + op + "\", \"" + schema +
                           "\")" + eol + "def " + py + (with_message ? "(test, message):" : "(test):") + eol +
                           "    \"\"\"`" + (negated ? "if not <test>" : "if <test>") +
                           ": raise`, raised inside the compiled graph (graphmend " +
                           std::string(ctx.finding.rule->code) + ").\"\"\"" + eol + body;
  // Comments the `if` held stay: each on its own line before the call, in order.
  std::string call_indent = static_guard.empty() ? indentation_of(doc, node) : indent_step(indentation_of(doc, node));
  std::string call;
  for (const std::string& comment : comments_in(doc, node)) call += comment + eol + call_indent;
  call += py + "(" + text(doc, condition) + (with_message ? ", " + raised.message : "") + ")";
  if (!static_guard.empty()) call = "if " + static_guard + ":" + eol + call_indent + call;

  Fix fix;
  fix.applicability = Applicability::Safe;
  fix.title = "Raise `" + text(doc, exc) +
              "` from an operator that runs inside the compiled graph (same class and message, no break where "
              "the graph wrote no state before it)";
  if (torch.import_edit) fix.edits.push_back(*torch.import_edit);  // first: the definitions call torch
  fix.edits.push_back({node_range(node), call});
  add_operator_definition(fix, helper_at,
                          {runtime_op_helper(doc, torch.name, eol), keep_state_helper(doc, torch.name, eol)},
                          defined ? "" : definition, eol);
  return fix;
}

}  // namespace

const Transform& transform_raise_in_graph() {
  static const Transform t{"raise-in-graph", {"GM301"}, apply};
  return t;
}

}  // namespace graphmend
