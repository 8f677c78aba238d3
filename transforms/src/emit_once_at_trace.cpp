// GM203: `logger.warning_once("literal")` emitted by Dynamo when it traces the call, instead of breaking the
// graph, in any frame (inlined helpers and submodule forwards included).
//
//   logger.warning_once("msg")
//   -> torch._dynamo.comptime.comptime(lambda ctx: logger.warning_once("msg"), lambda: logger.warning_once("msg"))
//
// torch 2.13: under Dynamo, `comptime(fn, fallback)` calls `fn` once each time Dynamo traces that point (inlined
// frames too) and puts nothing in the graph; run by plain Python (eager, non-strict torch.export) it calls
// `fallback`. `warning_once` is transformers' `lru_cache`-wrapped logger method: a message with the same
// arguments is emitted once per process, so emitting it when the call is traced keeps that meaning: a retrace
// or recompile hits the cache as a second call does. Dynamo traces a point only for a call that reaches it
// (control flow on data breaks the graph before it), with this call's own static values.
//
// What may differ, said in the title: under torch.compile the record is emitted while Dynamo traces, before the
// graph runs, so it comes before output the same graph produces earlier in program order (an in-graph print, a
// deferred log call), and a call whose graph then fails at run time has already emitted it.
//
// Sound only when: the arguments are literal constants (Dynamo requires a comptime function without free
// variables, and a constant key keeps the cache hit exact), the logger is the module's own (a global the lambda
// reads), the call is a statement of its own (its value, None, unused).
//
// An f-string message whose interpolations are all values Dynamo knows at trace time (config entries, sizes:
// graphmend's Static kind) is built first, where the call built it, into a local the comptime function reads
// through its context (a constant string by then; a size Dynamo holds symbolically is specialised when
// formatted, checked on 2.13 with dynamic=True):
//
//   logger.warning_once(f"padded to {window}")
//   -> graphmend_message = f"padded to {window}"
//      torch._dynamo.comptime.comptime(
//          lambda ctx: logger.warning_once(ctx.get_local("graphmend_message").as_python_constant()),
//          lambda: logger.warning_once(graphmend_message),
//      )
//
// The message is the same string, so the once-per-process cache is keyed as before: each distinct message
// once. Dynamo retraces a point for new values of what the message reads (it guards on them).
#include <algorithm>

#include "support.h"
#include "transform.h"

namespace graphmend {
namespace {
using namespace fixes;

// A literal whose value every call shares: a string without interpolation (implicitly concatenated ones
// included), a number, True/False/None, a negated number.
bool is_literal_constant(TSNode node) {
  std::string_view t = ts_node_type(node);
  if (t == "integer" || t == "float" || t == "true" || t == "false" || t == "none") return true;
  if (t == "unary_operator") return is_literal_constant(field(node, "argument"));
  if (t == "parenthesized_expression" && named_child_count(node) == 1) return is_literal_constant(named_child(node, 0));
  if (t == "concatenated_string") {
    for (uint32_t i = 0; i < ts_node_named_child_count(node); ++i)
      if (!is_literal_constant(ts_node_named_child(node, i))) return false;
    return true;
  }
  if (t == "string") {
    for (uint32_t i = 0; i < ts_node_named_child_count(node); ++i)
      if (is_type(ts_node_named_child(node, i), "interpolation")) return false;
    return true;
  }
  return false;
}

std::string why_arguments_not_constant(const Document& doc, TSNode call) {
  TSNode args = field(call, "arguments");
  if (!is_type(args, "argument_list")) return "the call's arguments are not a plain argument list";
  for (uint32_t i = 0; i < ts_node_named_child_count(args); ++i) {
    TSNode a = ts_node_named_child(args, i);
    if (is_type(a, "comment")) continue;
    TSNode value = is_type(a, "keyword_argument") ? field(a, "value") : a;
    if (!is_literal_constant(value))
      return "the argument `" + text(doc, a) +
             "` is not a literal constant (the message is emitted when Dynamo traces the call, so it must be the "
             "same on every call)";
  }
  return "";
}

bool has_interpolation(TSNode node) {
  if (is_type(node, "interpolation")) return true;
  for (uint32_t i = 0; i < ts_node_named_child_count(node); ++i)
    if (has_interpolation(ts_node_named_child(node, i))) return true;
  return false;
}

// Every `{...}` of an f-string (or of a concatenation of strings) is a value Dynamo knows while tracing.
std::string why_interpolations_not_static(const Document& doc, const SemanticModel& model, const FunctionInfo& fn,
                                          TSNode message) {
  std::string why;
  walk_preorder(message, [&](TSNode node) {
    if (!is_type(node, "interpolation")) return Walk::Descend;
    TSNode expr = field(node, "expression");
    if (ts_node_is_null(expr)) expr = named_child(node, 0);
    bool plain = true;
    walk_preorder(expr, [&](TSNode inner) {
      const std::string_view t = ts_node_type(inner);
      if (t == "call" || t == "lambda" || t == "named_expression" || t == "await" || t == "yield") plain = false;
      return plain ? Walk::Descend : Walk::Stop;
    });
    if (!plain || model.kind_of(expr, fn) != ValueKind::Static) {
      why = "the message interpolates `" + text(doc, expr) +
            "`, which is not a value Dynamo knows while tracing (a constant, a size or a config entry)";
      return Walk::Stop;
    }
    return Walk::Skip;
  });
  return why;
}

bool has_multiline_string(const Document& doc, TSNode node) {
  if (is_type(node, "string") && doc.node_text(node).find('\n') != std::string_view::npos) return true;
  for (uint32_t i = 0; i < ts_node_named_child_count(node); ++i)
    if (has_multiline_string(doc, ts_node_named_child(node, i))) return true;
  return false;
}

const std::string kTitleEnd =
    "` when Dynamo traces this call (torch._dynamo.comptime) instead of breaking the graph: once per process as "
    "before, eager and torch.export runs unchanged; under torch.compile it is emitted while tracing, before the "
    "graph's own earlier output";

// The f-string form (see the top of the file): the message into a local, read by the comptime function.
TransformResult with_message_local(const TransformContext& ctx, const FunctionInfo& fn, TSNode call, TSNode message,
                                   const std::string& logger) {
  const Document& doc = ctx.document;
  const SemanticModel& model = ctx.model;
  TSNode statement = ts_node_parent(call);
  if (ts_node_start_byte(statement) != ts_node_start_byte(call) ||
      ts_node_end_byte(statement) != ts_node_end_byte(call))
    return Refusal{"the call shares its line with other code"};
  if (auto why = why_interpolations_not_static(doc, model, fn, message); !why.empty()) return Refusal{why};
  for (uint32_t i = 0; i < ts_node_named_child_count(field(call, "arguments")); ++i) {
    TSNode a = ts_node_named_child(field(call, "arguments"), i);
    if (is_type(a, "comment")) continue;
    TSNode value = is_type(a, "keyword_argument") ? field(a, "value") : a;
    if (!ts_node_eq(value, message) && !is_literal_constant(value))
      return Refusal{"the argument `" + text(doc, a) + "` is neither the message nor a literal constant"};
  }
  if (auto why = why_locals_unaddable(doc, fn); !why.empty())
    return Refusal{"the function calls `" + why + "`, which would see the message's new local name"};
  std::string name = "graphmend_message";
  for (int n = 2; bound_locally(&fn, name) || model.is_module_logger(name); ++n)
    name = "graphmend_message_" + std::to_string(n);
  TorchName torch = torch_name(doc, model);
  if (auto why = why_torch_unusable(doc, model, &fn, torch); !why.empty()) return Refusal{why};

  // The call on one line, with `replacement` where the message was (the other arguments are literals).
  auto call_with = [&](const std::string& replacement) {
    std::string out = text(doc, field(call, "function")) + "(";
    bool first = true;
    for (TSNode a : named_children(field(call, "arguments"))) {
      if (is_type(a, "comment")) continue;
      out += first ? "" : ", ";
      first = false;
      if (is_type(a, "keyword_argument")) {
        out += text(doc, field(a, "name")) + "=" +
               (ts_node_eq(field(a, "value"), message) ? replacement : text(doc, field(a, "value")));
      } else {
        out += ts_node_eq(a, message) ? replacement : text(doc, a);
      }
    }
    return out + ")";
  };
  const std::string indent = indentation_of(doc, call), inner = indent_step(indent);
  const std::string eol(detect_line_ending(doc.text()));
  Fix fix;
  if (torch.import_edit) fix.edits.push_back(*torch.import_edit);
  // A message over several lines (implicitly concatenated f-strings) continued the call's parentheses:
  // the assignment needs its own.
  std::string value = text(doc, message);
  if (value.find('\n') != std::string::npos) value = "(" + value + ")";
  fix.edits.push_back({node_range(call),
                       name + " = " + value + eol + indent + torch.name + "._dynamo.comptime.comptime(" + eol + inner +
                           "lambda ctx: " + call_with("ctx.get_local(\"" + name + "\").as_python_constant()") + "," +
                           eol + inner + "lambda: " + call_with(name) + "," + eol + indent + ")"});
  fix.title = "Build the message, then emit `" + text(doc, field(call, "function")) + kTitleEnd + " (" + logger +
              "'s message is the same string, so the once-per-process cache sees the same key)";
  return fix;
}

TransformResult apply(const TransformContext& ctx) {
  const Document& doc = ctx.document;
  const SemanticModel& model = ctx.model;
  TSNode call = enclosing(doc, ctx.finding.range, {"call"});
  if (ts_node_is_null(call)) return Refusal{"no call"};
  const FunctionInfo* fn = model.function_containing(call);
  if (!fn) return Refusal{"the call is not inside a function"};
  TSNode callee = field(call, "function");
  if (!is_type(callee, "attribute")) return Refusal{"not a logger method call"};
  const std::string logger = text(doc, field(callee, "object"));
  const std::string method = text(doc, field(callee, "attribute"));
  // Only the once-per-process methods: a per-call `warning` would be emitted once per compilation instead.
  if (method != "warning_once" && method != "info_once")
    return Refusal{"`" + method + "` is not a once-per-process logger method"};
  if (!model.is_module_logger(logger))
    return Refusal{"`" + logger + "` is not a module-level logger this file defines"};
  if (bound_locally(fn, logger)) return Refusal{"`" + logger + "` is a local name here, not the module-level logger"};
  if (!is_type(ts_node_parent(call), "expression_statement")) return Refusal{"the call's value is used"};
  // The one argument that is an f-string, when the others are literal.
  TSNode message{};
  for (uint32_t i = 0; i < ts_node_named_child_count(field(call, "arguments")); ++i) {
    TSNode a = ts_node_named_child(field(call, "arguments"), i);
    TSNode value = is_type(a, "keyword_argument") ? field(a, "value") : a;
    if ((is_type(value, "string") || is_type(value, "concatenated_string")) && has_interpolation(value)) {
      if (!ts_node_is_null(message)) return Refusal{"the call has more than one f-string argument"};
      message = value;
    }
  }
  if (!ts_node_is_null(message)) return with_message_local(ctx, *fn, call, message, logger);
  if (auto why = why_arguments_not_constant(doc, call); !why.empty()) return Refusal{why};
  TorchName torch = torch_name(doc, model);
  if (auto why = why_torch_unusable(doc, model, fn, torch); !why.empty()) return Refusal{why};

  Fix fix;
  if (torch.import_edit) fix.edits.push_back(*torch.import_edit);
  const std::string original = text(doc, call);
  if (original.find('\n') == std::string::npos) {
    fix.edits.push_back({node_range(call), torch.name + "._dynamo.comptime.comptime(lambda ctx: " + original +
                                               ", lambda: " + original + ")"});
  } else {
    // One lambda per line, the call's own lines one level deeper (kept as they are when a string spans lines,
    // whose text would change).
    const std::string indent = indentation_of(doc, call), inner = indent_step(indent);
    const std::string eol(detect_line_ending(doc.text()));
    std::string deeper = original;
    if (!has_multiline_string(doc, call)) {
      for (size_t at = deeper.find('\n'); at != std::string::npos; at = deeper.find('\n', at + 1))
        if (at + 1 < deeper.size() && deeper[at + 1] != '\n' && deeper[at + 1] != '\r')
          deeper.insert(at + 1, inner.substr(indent.size()));
    }
    fix.edits.push_back({node_range(call), torch.name + "._dynamo.comptime.comptime(" + eol + inner +
                                               "lambda ctx: " + deeper + "," + eol + inner + "lambda: " + deeper + "," +
                                               eol + indent + ")"});
  }
  fix.title = "Emit `" + text(doc, callee) +
              "` when Dynamo traces this call (torch._dynamo.comptime) instead of breaking the graph: once per "
              "process as before, eager and torch.export runs unchanged; under torch.compile it is emitted while "
              "tracing, before the graph's own earlier output";
  return fix;
}

}  // namespace

const Transform& transform_emit_once_at_trace() {
  static const Transform t{"emit-once-at-trace", {"GM203"}, apply};
  return t;
}

}  // namespace graphmend
