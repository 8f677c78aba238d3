// GM201-GM204: print, logging, HF warning_once and warnings.warn run after the graph instead of
// breaking it. The mechanism is stock Dynamo: functions in
// torch._dynamo.config.reorderable_logging_functions are not traced; Dynamo records the call with its
// (tensor, constant, string) arguments and replays it when the graph returns, in program order.
// Bound logger methods are not accepted there, so a logger call goes through a module-level wrapper.
#include <functional>

#include "support.h"
#include "transform.h"

namespace graphmend {
namespace {
using namespace fixes;

const char* kRegistry = "._dynamo.config.reorderable_logging_functions.add(";

// Arguments Dynamo can replay: literals, f-strings over tensors, tensors not changed in place later.
std::string why_not_replayable(const Document& doc, const SemanticModel& model, const FunctionInfo& fn, TSNode call,
                               bool allow_print_keywords) {
  TSNode args = field(call, "arguments");
  uint32_t n = ts_node_named_child_count(args);
  for (uint32_t i = 0; i < n; ++i) {
    TSNode a = ts_node_named_child(args, i);
    if (is_type(a, "keyword_argument")) {
      std::string name = text(doc, field(a, "name"));
      if (!allow_print_keywords || (name != "sep" && name != "end") || !is_type(field(a, "value"), "string"))
        return "the keyword argument `" + text(doc, a) + "` cannot be replayed after the graph";
      continue;
    }
    auto t = type_of(a);
    if (t == "integer" || t == "float" || t == "true" || t == "false" || t == "none") continue;
    if (t == "string") {
      for (uint32_t k = 0; k < ts_node_named_child_count(a); ++k) {
        TSNode part = ts_node_named_child(a, k);
        if (!is_type(part, "interpolation")) continue;
        TSNode e = ts_node_named_child(part, 0);
        if (model.kind_of(e, fn) != ValueKind::Tensor)
          return "the f-string part `" + text(doc, part) + "` is not a tensor or constant Dynamo can replay";
      }
      continue;
    }
    if (model.kind_of(a, fn) != ValueKind::Tensor || !why_impure(doc, model, a, fn).empty())
      return "the argument `" + text(doc, a) + "` is not a tensor, constant or string Dynamo can replay";
  }
  // A tensor argument changed in place later in the function would print its later value.
  std::vector<std::string> read = names_read(doc, args);
  std::string mutated;
  std::function<void(TSNode)> visit = [&](TSNode node) {
    if (!mutated.empty()) return;
    if (ts_node_start_byte(node) >= ts_node_end_byte(call)) {
      std::string target;
      if (is_type(node, "call")) {
        TSNode callee = field(node, "function");
        if (is_type(callee, "attribute")) {
          std::string m = text(doc, field(callee, "attribute"));
          if (m.ends_with("_") && !m.ends_with("__")) target = text(doc, field(callee, "object"));
        }
      } else if (is_type(node, "augmented_assignment")) {
        target = text(doc, field(node, "left"));
      } else if (is_type(node, "assignment") && is_type(field(node, "left"), "subscript")) {
        target = text(doc, field(field(node, "left"), "value"));
      }
      if (!target.empty() && std::find(read.begin(), read.end(), target) != read.end()) mutated = target;
    }
    for (uint32_t i = 0; i < ts_node_named_child_count(node); ++i) visit(ts_node_named_child(node, i));
  };
  visit(field(fn.node, "body"));
  if (!mutated.empty())
    return "`" + mutated + "` is changed in place after the call, and the deferred call would show the later value";
  return "";
}

// Module-level statement defining `name` (`logger = logging.getLogger(__name__)`), or null.
TSNode module_definition(const Document& doc, const std::string& name) {
  TSNode root = doc.root();
  for (uint32_t i = 0; i < ts_node_named_child_count(root); ++i) {
    TSNode stmt = ts_node_named_child(root, i);
    if (!is_type(stmt, "expression_statement")) continue;
    TSNode a = ts_node_named_child(stmt, 0);
    if (is_type(a, "assignment") && text(doc, field(a, "left")) == name) return stmt;
  }
  return TSNode{};
}

uint32_t line_after(const Document& doc, TSNode stmt) {
  uint32_t line = doc.lines().line_of(ts_node_end_byte(stmt));
  return line + 1 >= doc.lines().line_count() ? static_cast<uint32_t>(doc.text().size()) : doc.lines().line_start(line + 1);
}

TransformResult apply(const TransformContext& ctx) {
  const Document& doc = ctx.document;
  const SemanticModel& model = ctx.model;
  TSNode call = ts_node_descendant_for_byte_range(doc.root(), ctx.finding.range.start, ctx.finding.range.end);
  while (!ts_node_is_null(call) && !is_type(call, "call")) call = ts_node_parent(call);
  if (ts_node_is_null(call)) return Refusal{"no call"};
  const FunctionInfo* fn = model.function_containing(call);
  if (!fn) return Refusal{"the call is not inside a function"};
  std::string code(ctx.finding.rule->code);
  TorchName torch = torch_name(doc, model);
  std::string eol(detect_line_ending(doc.text()));
  TSNode callee = field(call, "function");
  std::string callee_text = text(doc, callee);

  Fix fix;
  if (torch.import_edit) fix.edits.push_back(*torch.import_edit);
  auto register_at = [&](uint32_t offset, const std::string& function, const std::string& prefix) {
    if (prefix.empty() && model.is_deferred(function)) return;
    std::string line = torch.name + kRegistry + function + ")  # graphmend: " + function + " runs after the graph" + eol;
    std::string insert = prefix + line;
    if (offset == doc.text().size() && !doc.text().empty() && doc.text().back() != '\n') insert = eol + insert;
    fix.edits.push_back({{offset, offset}, insert});
  };

  if (code == "GM201" || code == "GM204") {
    std::string why = why_not_replayable(doc, model, *fn, call, code == "GM201");
    if (!why.empty()) return Refusal{why};
    // Register the very function object that is called: `print`, `warnings.warn` or an imported `warn`.
    register_at(after_imports_offset(doc), callee_text, "");
    fix.title = "Run `" + callee_text + "` after the graph: register it in Dynamo's reorderable_logging_functions "
                "(same text and order; process-wide for " + callee_text + ")";
    return fix;
  }

  // GM202/GM203: logger.method(...) through a module-level wrapper.
  if (!is_type(callee, "attribute")) return Refusal{"not a logger method call"};
  std::string logger = text(doc, field(callee, "object"));
  std::string method = text(doc, field(callee, "attribute"));
  if (auto q = model.qualified_name(callee); q && q->starts_with("logging.") && !q->ends_with("getLogger")) {
    std::string why = why_not_replayable(doc, model, *fn, call, false);
    if (!why.empty()) return Refusal{why};
    register_at(after_imports_offset(doc), callee_text, "");
    fix.title = "Run `" + callee_text + "` after the graph: register it in Dynamo's reorderable_logging_functions";
    return fix;
  }
  TSNode definition = module_definition(doc, logger);
  if (ts_node_is_null(definition)) return Refusal{"`" + logger + "` is not a module-level logger this file defines"};
  std::string why = why_not_replayable(doc, model, *fn, call, false);
  if (!why.empty()) return Refusal{why};
  std::string wrapper = "_graphmend_" + logger + "_" + method;
  bool standard = method != "warning_once" && method != "info_once" && method != "warning_advice";
  if (doc.text().find("def " + wrapper + "(") == std::string::npos) {
    // stacklevel=2 keeps the record's file and line at the caller, as the direct call had them.
    std::string def = eol + eol + "def " + wrapper + "(*args, **kwargs):" + eol + "    \"\"\"`" + logger + "." +
                      method + "`, run by Dynamo after the graph instead of breaking it (graphmend " + code +
                      ").\"\"\"" + eol + "    " + logger + "." + method + "(*args, " +
                      (standard ? "stacklevel=2, " : "") + "**kwargs)" + eol + eol + eol;
    register_at(line_after(doc, definition), wrapper, def);
  }
  fix.edits.push_back({node_range(callee), wrapper});
  fix.title = "Run `" + callee_text + "` after the graph through a module-level wrapper registered in Dynamo's "
              "reorderable_logging_functions (same message, order and once-only behaviour)";
  return fix;
}

}  // namespace

const Transform& transform_defer_side_effect() {
  static const Transform t{"defer-side-effect", {"GM201", "GM202", "GM203", "GM204"}, apply};
  return t;
}

}  // namespace graphmend
