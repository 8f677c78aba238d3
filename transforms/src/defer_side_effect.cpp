// GM201-GM204: side effects that break the graph, kept without the break where stock torch allows it.
//
// print: becomes torch._higher_order_ops.print("{!s} {!s}", a, b), an effectful op that runs inside the
//   graph in program order, in inlined helpers too; in eager it prints exactly what print printed. Safe
//   only for numbers, sizes and strings in a compile entry whose statements after the print are pure and
//   total: elsewhere a graph that fails after the print (tracing or running) loses the text, which the
//   original printed at its break, and a tensor reaches the operator without its autograd history.
// logging / warning_once / warnings.warn: Dynamo can defer a function registered in
//   torch._dynamo.config.reorderable_logging_functions to the end of the graph, but in torch 2.13 it
//   drops such calls made from inlined frames (helpers, submodule forwards). So the deferral (through a
//   module-level wrapper, since bound methods are not accepted) is applied only in a function that is
//   itself the torch.compile entry. Elsewhere the fix offered is unsafe: the call is skipped while
//   compiling (`if not torch.compiler.is_compiling():`), and says so.
#include <algorithm>
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
        TSNode e = named_child(part, 0);
        if (model.kind_of(e, fn) != ValueKind::Tensor)
          return "the f-string part `" + text(doc, part) + "` is not a tensor or constant Dynamo can replay";
      }
      continue;
    }
    if (is_shape_int(doc, model, fn, a)) continue;
    if (model.kind_of(a, fn) != ValueKind::Tensor || !why_effectful(doc, model, a, fn).empty())
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

// The value of a plain string literal (no prefix, no interpolation, no escapes), or "\x01" if it is not one.
std::string plain_string(const Document& doc, TSNode node) {
  if (!is_type(node, "string")) return "\x01";
  std::string t = text(doc, node);
  if (t.size() < 2 || (t[0] != '"' && t[0] != '\'')) return "\x01";
  if (t.starts_with("\"\"\"") || t.starts_with("'''")) return "\x01";
  std::string body = t.substr(1, t.size() - 2);
  if (body.find('\\') != std::string::npos) {
    // Only the common escape \n is decoded; anything else keeps the original call.
    std::string out;
    for (size_t i = 0; i < body.size(); ++i) {
      if (body[i] == '\\') {
        if (i + 1 < body.size() && body[i + 1] == 'n') {
          out += '\n';
          ++i;
          continue;
        }
        return "\x01";
      }
      out += body[i];
    }
    return out;
  }
  return body;
}

std::string brace_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '{' || c == '}') out += c;
  }
  return out;
}

std::string python_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// Module-level statement defining `name` (`logger = logging.getLogger(__name__)`), or null.
TSNode module_definition(const Document& doc, const std::string& name) {
  TSNode root = doc.root();
  for (uint32_t i = 0; i < ts_node_named_child_count(root); ++i) {
    TSNode stmt = ts_node_named_child(root, i);
    if (!is_type(stmt, "expression_statement")) continue;
    TSNode a = named_child(stmt, 0);
    if (is_type(a, "assignment") && text(doc, field(a, "left")) == name) return stmt;
  }
  return TSNode{};
}

// A deferred call runs when the graph has finished: anything after it in the frame that prints, logs
// without deferral, or may raise would then be observed in another order (or the call would be lost
// with the exception). Deferral is sound only when every statement after the call is pure and total,
// or another deferrable logging call.
std::string why_effects_follow(const Document& doc, const SemanticModel& model, const FunctionInfo& fn, TSNode call) {
  TSNode stmt = statement_of(call);
  if (ts_node_is_null(stmt) || !ts_node_eq(ts_node_parent(stmt), field(fn.node, "body")))
    return "the call is inside a block of the function, and a deferred call would move past what follows it";
  auto deferrable = [&](TSNode c) {
    std::string callee = text(doc, field(c, "function"));
    std::string last = callee.substr(callee.rfind('.') + 1);
    return model.is_deferred(callee) || callee == "warnings.warn" ||
           ((last == "debug" || last == "info" || last == "warning" || last == "error" || last == "warning_once" ||
             last == "info_once") &&
            is_type(field(c, "function"), "attribute") &&
            model.is_module_logger(text(doc, field(field(c, "function"), "object"))));
  };
  for (TSNode next = ts_node_next_named_sibling(stmt); !ts_node_is_null(next);
       next = ts_node_next_named_sibling(next)) {
    if (is_type(next, "comment") || is_type(next, "pass_statement")) continue;
    TSNode expr{};
    if (is_type(next, "return_statement")) {
      if (named_child_count(next) == 0) continue;
      expr = named_child(next, 0);
    } else if (is_type(next, "expression_statement") && named_child_count(next) == 1) {
      expr = named_child(next, 0);
      if (is_type(expr, "assignment")) {
        if (!is_type(field(expr, "left"), "identifier")) return "`" + text(doc, next) + "` follows the call";
        expr = field(expr, "right");
      } else if (is_type(expr, "call") && deferrable(expr)) {
        continue;
      }
    } else {
      return "`" + std::string(doc.node_text(next).substr(0, 60)) +
             "` follows the call, and a deferred call would "
             "move past it";
    }
    if (auto why = why_not_total(doc, model, expr, fn); !why.empty())
      return "after the call, " + why + " (the deferred call would move past it)";
  }
  return "";
}

TransformResult apply(const TransformContext& ctx) {
  const Document& doc = ctx.document;
  const SemanticModel& model = ctx.model;
  TSNode call = enclosing(doc, ctx.finding.range, {"call"});
  if (ts_node_is_null(call)) return Refusal{"no call"};
  const FunctionInfo* fn = model.function_containing(call);
  if (!fn) return Refusal{"the call is not inside a function"};
  std::string code(ctx.finding.rule->code);
  TorchName torch = torch_name(doc, model);
  if (auto why = why_torch_unusable(doc, model, fn, torch); !why.empty()) return Refusal{why};
  std::string eol(detect_line_ending(doc.text()));
  TSNode callee = field(call, "function");
  std::string callee_text = text(doc, callee);

  Fix fix;
  if (torch.import_edit) fix.edits.push_back(*torch.import_edit);
  auto register_at = [&](uint32_t offset, const std::string& function, const std::string& prefix) {
    if (prefix.empty() && model.is_deferred(function)) return;
    std::string line =
        torch.name + kRegistry + function + ")  # graphmend: " + function + " runs after the graph" + eol;
    std::string insert = prefix + line;
    const bool ends_line = !doc.text().empty() && (doc.text().back() == '\n' || doc.text().back() == '\r');
    if (offset == doc.text().size() && !doc.text().empty() && !ends_line) insert = eol + insert;
    fix.edits.push_back({{offset, offset}, insert});
  };

  if (code == "GM201") {
    // print(a, b, sep=" ") -> torch._higher_order_ops.print("{!s} {!s}", a, b); literal strings are inlined.
    TSNode args = field(call, "arguments");
    std::string sep = " ";
    std::vector<TSNode> values;
    for (uint32_t i = 0; i < ts_node_named_child_count(args); ++i) {
      TSNode a = ts_node_named_child(args, i);
      if (is_type(a, "keyword_argument")) {
        std::string key = text(doc, field(a, "name"));
        TSNode value = field(a, "value");
        std::string literal = plain_string(doc, value);
        if (key == "sep" && is_type(value, "string") && literal != "\x01")
          sep = literal;
        else if (key == "end" && (literal == "\n"))
          continue;
        else
          return Refusal{"`print(..., " + text(doc, a) + ")` has no in-graph equivalent"};
        continue;
      }
      if (is_type(a, "list_splat") || is_type(a, "dictionary_splat")) return Refusal{"print with * arguments"};
      values.push_back(a);
    }
    std::string format;
    std::vector<std::string> passed;
    std::string first_tensor;
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) format += brace_escape(sep);
      std::string literal = plain_string(doc, values[i]);
      if (literal != "\x01") {
        format += brace_escape(literal);
        continue;
      }
      ValueKind k = model.kind_of(values[i], *fn);
      auto t = type_of(values[i]);
      bool scalar = t == "integer" || t == "float" || t == "true" || t == "false";
      if (k != ValueKind::Tensor && !scalar && !is_shape_int(doc, model, *fn, values[i]))
        return Refusal{"the argument `" + text(doc, values[i]) +
                       "` is not a tensor, number or string the in-graph "
                       "print can take"};
      format += "{!s}";
      passed.push_back(text(doc, values[i]));
      if (k == ValueKind::Tensor && first_tensor.empty()) first_tensor = text(doc, values[i]);
    }
    std::string replacement = torch.name + "._higher_order_ops.print(" + python_string(format);
    for (const auto& p : passed) replacement += ", " + p;
    replacement += ")";
    fix.edits.push_back({node_range(call), replacement});
    // The original prints at its break, before anything after it is traced or run. In one graph, a failure
    // after the print (an error tracing a later operation, a kernel that raises) may come before the print
    // runs, and the text is lost. Safe only where the rest of the graph is this function's remaining
    // statements (a compile entry) and those are pure and total.
    std::string why_unsafe;
    if (!is_uninlined_compile_entry(*fn))
      why_unsafe = "this function may be inlined, and its caller's code after the call shares the graph";
    else if (!why_effects_follow(doc, model, *fn, call).empty())
      why_unsafe = "a statement after the print may fail";
    // Under aot_eager and inductor the operator receives tensors without autograd history: a tensor that
    // requires grad prints without its `grad_fn=`/`requires_grad=True` suffix.
    if (!first_tensor.empty())
      why_unsafe = (why_unsafe.empty() ? "" : why_unsafe + "; ") + "`" + first_tensor +
                   "` prints without its grad_fn under aot_eager and inductor when it requires grad";
    if (why_unsafe.empty()) {
      fix.title =
          "Print inside the graph with torch._higher_order_ops.print (same text in eager runs; runs in "
          "program order under torch.compile)";
    } else {
      fix.applicability = Applicability::Unsafe;
      fix.title =
          "Print inside the graph with torch._higher_order_ops.print: the printed text may differ or be lost under "
          "torch.compile (" +
          why_unsafe + ")";
    }
    return fix;
  }

  if (!is_uninlined_compile_entry(*fn)) {
    // Unsafe: drop the call while compiling. Eager runs are unchanged.
    TSNode stmt = ts_node_parent(call);
    if (!is_type(stmt, "expression_statement")) return Refusal{"the call's value is used"};
    std::string indent = indentation_of(doc, stmt);
    std::string inner = indent_step(indent);
    fix.edits.push_back({{ts_node_start_byte(stmt), ts_node_start_byte(stmt)},
                         "if not " + torch.name + ".compiler.is_compiling():" + eol + inner});
    fix.applicability = Applicability::Unsafe;
    fix.title = "Skip `" + callee_text +
                "` while compiling: eager runs are unchanged, but under torch.compile the "
                "message is not emitted (torch 2.13 drops deferred calls made from inlined frames)";
    return fix;
  }
  if (code == "GM204") {
    std::string why = why_not_replayable(doc, model, *fn, call, false);
    if (why.empty()) why = why_effects_follow(doc, model, *fn, call);
    if (!why.empty()) return Refusal{why};
    std::string wrapper = "_graphmend_warnings_warn";
    if (doc.text().find("def " + wrapper + "(") == std::string::npos) {
      // stacklevel + 1 keeps the warning's file and line at the caller, as the direct call had them.
      std::string def = eol + eol + "def " + wrapper + "(message, category=None, stacklevel=1, source=None):" + eol +
                        "    \"\"\"`" + callee_text +
                        "`, run by Dynamo after the graph instead of breaking it (graphmend GM204).\"\"\"" + eol +
                        "    " + callee_text + "(message, category, stacklevel + 1, source)" + eol + eol + eol;
      register_at(after_imports_offset(doc), wrapper, def);
    }
    fix.edits.push_back({node_range(callee), wrapper});
    fix.title = "Run `" + callee_text +
                "` after the graph through a wrapper registered in Dynamo's "
                "reorderable_logging_functions (this function is the torch.compile entry)";
    return fix;
  }

  // GM202/GM203: logger.method(...) through a module-level wrapper.
  if (!is_type(callee, "attribute")) return Refusal{"not a logger method call"};
  std::string logger = text(doc, field(callee, "object"));
  std::string method = text(doc, field(callee, "attribute"));
  bool module_function = false;
  if (auto q = model.qualified_name(callee); q && q->starts_with("logging.")) module_function = true;
  TSNode definition = module_function ? TSNode{} : module_definition(doc, logger);
  if (bound_locally(fn, logger)) return Refusal{"`" + logger + "` is a local name here, not the module-level logger"};
  if (!module_function && ts_node_is_null(definition))
    return Refusal{"`" + logger + "` is not a module-level logger this file defines"};
  std::string why = why_not_replayable(doc, model, *fn, call, false);
  if (why.empty()) why = why_effects_follow(doc, model, *fn, call);
  if (!why.empty()) return Refusal{why};
  std::string wrapper = "_graphmend_" + logger + "_" + method;
  bool standard = method != "warning_once" && method != "info_once" && method != "warning_advice";
  if (doc.text().find("def " + wrapper + "(") == std::string::npos) {
    // stacklevel=2 keeps the record's file and line at the caller, as the direct call had them.
    std::string def = eol + eol + "def " + wrapper + "(*args, **kwargs):" + eol + "    \"\"\"`" + logger + "." +
                      method + "`, run by Dynamo after the graph instead of breaking it (graphmend " + code +
                      ").\"\"\"" + eol + "    " + logger + "." + method + "(*args, " +
                      (standard ? "stacklevel=2, " : "") + "**kwargs)" + eol + eol + eol;
    uint32_t at = module_function ? after_imports_offset(doc) : start_of_next_line(doc, ts_node_end_byte(definition));
    // The registration needs torch: import it first when the file imports torch only further down.
    TSNode root = doc.root();
    for (uint32_t i = 0; i < ts_node_named_child_count(root); ++i) {
      TSNode s = ts_node_named_child(root, i);
      if ((is_type(s, "import_statement") || is_type(s, "import_from_statement")) &&
          doc.node_text(s).find("import " + torch.name) != std::string_view::npos) {
        if (ts_node_start_byte(s) >= at) def = eol + "import " + torch.name + def;
        break;
      }
    }
    register_at(at, wrapper, def);
  }
  fix.edits.push_back({node_range(callee), wrapper});
  fix.title = "Run `" + callee_text +
              "` after the graph through a module-level wrapper registered in Dynamo's "
              "reorderable_logging_functions (this function is the torch.compile entry; same message and order)";
  return fix;
}

}  // namespace

const Transform& transform_defer_side_effect() {
  static const Transform t{"defer-side-effect", {"GM201", "GM202", "GM203", "GM204"}, apply};
  return t;
}

}  // namespace graphmend
