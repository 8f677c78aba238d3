// GM406: `torch._check_tensor_all(cond)` (and `torch._check_tensor_all_with(E, cond, msg)`) becomes a call of
// a custom operator whose body makes the very same call, with the real tensor, when the graph runs:
//
//     @_graphmend_keep_state
//     @_graphmend_check_op("check_tensor_all_<h>")
//     def _graphmend_check_tensor_all_<h>(test):
//         torch._check_tensor_all(test, lambda: "lengths must match")
//     ...
//         _graphmend_check_tensor_all_<h>(lengths.sum() == seq_len)
//
// The check is torch's own function, called with the same arguments, so what it raises (RuntimeError with
// the same message, `TypeError` for a condition that is not bool, the class `_with` names) is the original's
// by construction. The operator machinery is raise-in-graph's (support.cpp): defined once per process, an
// ordered effect (never dropped), a name that carries a hash of the body (`_graphmend_check_op`, the twin of
// `_graphmend_runtime_op` with the fake below), and `@_graphmend_keep_state`,
// which breaks the graph at the call, as the original broke there, when the graph traced so far wrote
// state a raise inside it would lose. Only the condition travels to the operator: the other arguments must
// be closed (literals, a lambda returning a literal, a class the module resolves), since the body runs them
// at module level.
//
// The operator's fake (`_graphmend_check_op`) runs the check on a condition that is not a bool tensor while
// Dynamo traces, so such a condition fails there, with Dynamo's error, exactly as the original did (torch
// 2.13 and 2.15: the same class and first line); eager runs raise the check's `TypeError` as before.
#include "support.h"
#include "transform.h"

namespace graphmend {
namespace {
using namespace fixes;

// An argument the operator's body can evaluate at module level with the same result.
bool is_closed_argument(const Document& doc, const FunctionInfo* fn, TSNode a, bool may_be_class) {
  a = unparenthesize(a);
  if (is_closed_literal(doc, a)) return true;
  if (may_be_class && is_module_level_name(doc, fn, a)) return true;
  if (!is_type(a, "lambda") || !ts_node_is_null(field(a, "parameters"))) return false;
  return is_closed_literal(doc, unparenthesize(field(a, "body")));
}

TransformResult apply(const TransformContext& ctx) {
  const Document& doc = ctx.document;
  const SemanticModel& model = ctx.model;
  TSNode call = enclosing(doc, ctx.finding.range, {"call"});
  if (ts_node_is_null(call)) return Refusal{"no call"};
  const FunctionInfo* fn = model.function_containing(call);
  if (!fn) return Refusal{"the check is not inside a function"};
  TSNode stmt = ts_node_parent(call);
  if (!is_type(stmt, "expression_statement") || named_child_count(stmt) != 1)
    return Refusal{"the check's value is used"};
  if (std::string why = why_under_handler(stmt, "the check"); !why.empty()) return Refusal{why};

  // torch._check_tensor_all(cond, message=None); torch._check_tensor_all_with(error_type, cond, message=None)
  const bool with_class = text(doc, field(call, "function")).ends_with("_with");
  const size_t cond_index = with_class ? 1 : 0;
  std::vector<TSNode> args;
  for (TSNode a : named_children(field(call, "arguments"))) {
    if (is_type(a, "comment")) continue;
    if (!is_type(a, "keyword_argument") && !is_type(a, "list_splat") && !is_type(a, "dictionary_splat")) {
      args.push_back(a);
      continue;
    }
    std::string name = is_type(a, "keyword_argument") ? text(doc, field(a, "name")) : "";
    if (name != "message" || args.size() != cond_index + 1)
      return Refusal{"the argument `" + text(doc, a) + "` is not passed by position, in order"};
    args.push_back(field(a, "value"));
  }
  if (args.size() <= cond_index || args.size() > cond_index + 2)
    return Refusal{"the check is not called with its condition and at most a message"};
  TSNode cond = args[cond_index];
  if (model.kind_of(cond, *fn) != ValueKind::Tensor)
    return Refusal{"the condition `" + text(doc, cond) + "` is not proven a tensor (the operator takes one)"};
  for (size_t i = 0; i < args.size(); ++i)
    if (i != cond_index && !is_closed_argument(doc, fn, args[i], with_class && i == 0))
      return Refusal{"the argument `" + text(doc, args[i]) +
                     "` reads values of the function (only literals, a lambda returning one, and classes the "
                     "module resolves are re-created inside the operator)"};

  TorchName torch = torch_name(doc, model);
  if (auto why = why_torch_unusable(doc, model, nullptr, torch); !why.empty()) return Refusal{why};
  if (auto why = why_torch_not_module_level(doc, torch); !why.empty()) return Refusal{why};
  std::optional<OperatorPlacement> placement = operator_placement(doc, call);
  if (!placement) return Refusal{"the check's function is defined before the file's imports end"};

  std::string eol(detect_line_ending(doc.text()));
  std::string body_call = torch.name + (with_class ? "._check_tensor_all_with(" : "._check_tensor_all(");
  for (size_t i = 0; i < args.size(); ++i)
    body_call += (i ? ", " : "") + (i == cond_index ? std::string("test") : text(doc, args[i]));
  body_call += ")";
  std::string body = "    " + body_call + eol;
  std::string op = "check_tensor_all_" + behaviour_hash(body);
  std::string py = "_graphmend_" + op;
  // The same body elsewhere in the file: the operator exists. Its text names no site, so that fixes of one pass
  // needing the same operator insert the very same definition (added once).
  const bool defined = doc.text().find("def " + py + "(") != std::string::npos;
  std::string definition = "@_graphmend_keep_state" + eol + "@_graphmend_check_op(\"" + op + "\")" + eol + "def " + py +
                           "(test):" + eol + "    \"\"\"`" +
                           (with_class ? "torch._check_tensor_all_with" : "torch._check_tensor_all") +
                           "`, checked inside the compiled graph (graphmend " + std::string(ctx.finding.rule->code) +
                           ").\"\"\"" + eol + body;

  Fix fix;
  fix.applicability = Applicability::Safe;
  fix.title = "Run `" + text(doc, field(call, "function")) +
              "` in an operator inside the compiled graph (the same check, exception and message; no break where "
              "the graph wrote no state before it)";
  if (torch.import_edit) fix.edits.push_back(*torch.import_edit);  // first: the definitions call torch
  std::string replacement = py + "(" + text(doc, cond) + ")";
  fix.edits.push_back({node_range(call), replacement});
  add_operator_definition(fix, placement->helper_at,
                          {check_op_helper(doc, torch.name, eol), keep_state_helper(doc, torch.name, eol)},
                          defined ? "" : definition, eol);
  return fix;
}

}  // namespace

const Transform& transform_check_in_graph() {
  static const Transform t{"check-in-graph", {"GM406"}, apply};
  return t;
}

}  // namespace graphmend
