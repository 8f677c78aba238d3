// GM301: `if <tensor test>: raise E("msg")` keeps raising E in eager runs and becomes an assertion
// that stays in the graph under torch.compile:
//
//     if torch.compiler.is_compiling():
//         torch._assert_async(torch.logical_not(<test>), "msg")
//     elif <test>:
//         raise E("msg")
//
// Dynamo prunes the eager branch while tracing; eager runs never reach the assertion.
//
// The fix is unsafe by the contract of docs/fix-safety.md, whatever the exception: under compile a failing
// check raises RuntimeError (on CUDA, an asynchronous device-side assert that poisons the CUDA context),
// the original class, its cause and an interpolated message are lost. Its title says exactly that. It is
// refused where a handler in the same function could catch the original exception (under compile the
// handler would no longer run), for a bare `raise`, and where `torch` does not name the module.
#include "predicate.h"
#include "transform.h"

namespace graphmend {
namespace {
using namespace fixes;

TransformResult apply(const TransformContext& ctx) {
  const Document& doc = ctx.document;
  GuardStatement guard = guard_statement(doc, ctx.model, ctx.finding.range);
  if (!guard.refusal.empty()) return Refusal{guard.refusal};
  TSNode node = guard.node;
  const FunctionInfo* fn = guard.fn;
  for (TSNode p = ts_node_parent(node); !ts_node_is_null(p) && !is_type(p, "function_definition");
       p = ts_node_parent(p)) {
    if (!is_type(p, "try_statement")) continue;
    TSNode body = field(p, "body");
    bool in_body =
        ts_node_start_byte(node) >= ts_node_start_byte(body) && ts_node_end_byte(node) <= ts_node_end_byte(body);
    bool handles = false;
    for (TSNode c : named_children(p)) handles |= is_type(c, "except_clause") || is_type(c, "except_group_clause");
    if (in_body && handles)
      return Refusal{
          "the guard sits in a `try` whose handlers could catch its exception; under torch.compile the "
          "assertion raises RuntimeError outside them"};
  }
  TSNode condition = field(node, "condition");
  TorchName torch = torch_name(doc, ctx.model);
  if (auto why = why_torch_unusable(doc, ctx.model, fn, torch); !why.empty()) return Refusal{why};
  // `if flag and <tensor test>: raise`: the static part stays a Python test around the assertion (Dynamo
  // decides it at trace time); only the tensor part goes into the graph.
  std::string static_guard;
  TSNode tensor_test = condition;
  if (TSNode c = unparenthesize(condition);
      is_type(c, "boolean_operator") && text(doc, field(c, "operator")) == "and") {
    ValueKind left = ctx.model.kind_of(field(c, "left"), *fn);
    if (left == ValueKind::Static) {
      static_guard = text(doc, field(c, "left"));
      tensor_test = field(c, "right");
    }
  }
  std::string why;
  std::string predicate = predicate_text(doc, ctx.model, tensor_test, *fn, torch.name, why);
  if (predicate.empty()) return Refusal{why};
  // Find the raise and its message: the assertion needs a string literal.
  TSNode block = field(node, "consequence");
  TSNode raise{};
  for (uint32_t i = 0; i < ts_node_named_child_count(block); ++i) {
    TSNode s = ts_node_named_child(block, i);
    if (is_type(s, "raise_statement")) {
      raise = s;
      break;
    }
  }
  if (ts_node_is_null(raise)) return Refusal{"no raise in the guard"};
  if (named_child_count(raise) == 0)
    return Refusal{"a bare `raise` re-raises the exception being handled, which an assertion cannot"};
  std::string test_text;
  for (char c : doc.node_text(condition)) {
    bool space = c == ' ' || c == '\n' || c == '\r' || c == '\t';
    if (space && (test_text.empty() || test_text.back() == ' ')) continue;
    test_text += space ? ' ' : c;
  }
  std::string message = "graph-native guard: `" + test_text + "` must be false";
  TSNode exc = named_child(raise, 0);
  std::string exception_class = text(doc, exc);
  bool message_kept = false;
  if (is_type(exc, "call")) {
    exception_class = text(doc, field(exc, "function"));
    TSNode args = field(exc, "arguments");
    if (named_child_count(args) == 1 && is_type(named_child(args, 0), "string")) {
      TSNode lit = named_child(args, 0);
      bool interpolated = false;
      for (uint32_t i = 0; i < ts_node_named_child_count(lit); ++i)
        interpolated |= is_type(ts_node_named_child(lit, i), "interpolation");
      std::string_view prefix = doc.node_text(lit).substr(0, 2);
      bool bytes = prefix.find_first_of("bB") != std::string_view::npos;
      if (!interpolated && !bytes) {
        message = text(doc, lit);
        message_kept = true;
      }
    }
  }
  const bool has_cause = !ts_node_is_null(field(raise, "cause"));
  if (message.front() != '"' && message.front() != '\'') {
    std::string escaped;
    for (char c : message) {
      if (c == '\\' || c == '"') escaped += '\\';
      escaped += c;
    }
    message = "\"" + escaped + "\"";
  }
  std::string indent = indentation_of(doc, node);
  std::string eol(detect_line_ending(doc.text()));
  std::string inner = indent_step(indent);
  // The assertion holds when the guard's test is false: `not (test)`, without a double negation.
  std::string holds = torch.name + ".logical_not(" + predicate + ")";
  std::string negated_prefix = torch.name + ".logical_not(";
  if (predicate.starts_with(negated_prefix) && predicate.ends_with(")"))
    holds = predicate.substr(negated_prefix.size(), predicate.size() - negated_prefix.size() - 1);
  std::string assertion = torch.name + "._assert_async(" + holds + ", " + message + ")";
  if (!static_guard.empty()) {
    assertion = "if " + static_guard + ":" + eol + indent_step(inner) + assertion;
  }
  std::string replacement =
      "if " + torch.name + ".compiler.is_compiling():" + eol + inner + assertion + eol + indent + "el" +
      std::string(doc.node_text(node).substr(0, ts_node_end_byte(condition) - ts_node_start_byte(node)));
  Fix fix;
  fix.applicability = Applicability::Unsafe;
  std::string changes = "under torch.compile a failing check raises RuntimeError";
  if (exception_class != "RuntimeError") changes += " instead of " + exception_class;
  if (!message_kept) changes += " with the message " + message;
  if (has_cause) changes += ", without the `from` cause";
  changes += " (on CUDA an asynchronous device-side assert that poisons the CUDA context)";
  fix.title =
      "Keep the guard in the graph with torch._assert_async; eager runs raise the original exception, but " + changes;
  fix.edits.push_back({{ts_node_start_byte(node), ts_node_end_byte(condition)}, replacement});
  if (torch.import_edit) fix.edits.push_back(*torch.import_edit);
  return fix;
}

}  // namespace

const Transform& transform_graph_native_guard() {
  static const Transform t{"graph-native-guard", {"GM301"}, apply};
  return t;
}

}  // namespace graphmend
