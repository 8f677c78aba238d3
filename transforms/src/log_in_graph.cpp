// GM202: `logger.<level>(...)` in a frame Dynamo inlines (a module's forward, a helper) becomes a call of a
// custom operator that emits the same log record inside the compiled graph, at run time, in program order:
//
//     _graphmend_site_<h> = _graphmend_call_site("_graphmend_log_<h>")
//
//
//     @_graphmend_runtime_op("log_<h>", "(Tensor order, str message, SymInt a1) -> ()")
//     def _graphmend_log_<h>(order, message, a1):
//         """`logger.info` of `Model.forward`, emitted inside the compiled graph (graphmend GM202)."""
//         _graphmend_log(logger, 20, _graphmend_site_<h>, message, (a1,))
//     ...
//         if torch.compiler.is_compiling() and not torch.compiler.is_exporting():
//             _graphmend_log_<h>(torch.empty(0), f"padded to {self.window}: %d", x.size(1))
//         else:
//             logger.info(f"padded to {self.window}: %d", x.size(1))
//
// The record is the one the original call made: the same logger, level, message and arguments, and the
// file, line and function that logging's findCaller would have given (read from the module's compiled code
// when it is imported: the line of the operator's call, the function holding it), emitted through the
// logger's own makeRecord and handle, after the same isEnabledFor test. The operator machinery is the one of
// raise-in-graph (`_graphmend_runtime_op`: an ordered effect, defined once per process, a name that changes
// with the body); the name also carries the call's place, so each call has its own operator and line.
//
// The operator also takes `torch.empty(0)` (`order`), read by nothing: see below.
// What the operator may take, and why: literals (in its body), Python ints from shapes (`SymInt`), and one
// f-string message over Python values Dynamo knows (formatted at the call, as the original formatted it,
// passed as `str`). Tensor arguments are refused: a tensor's text shows its autograd history (`grad_fn=`),
// which an operator's input does not have, so the message would differ in training. Keyword arguments
// (`exc_info`, `stack_info`, `extra`, `stacklevel`) are refused: they read the caller's frame or exception.
// Only torch.compile runs the operator (`is_compiling() and not is_exporting()`, decided while tracing): eager
// runs make the original call, and under torch.export it stays too, so the exported program gets no Python
// operator, which AOTInductor's C++ runner could not run, and the record is emitted while exporting, as before. In the
// torch.compile entry function itself the deferral (defer-side-effect) is preferred, for the same reason.
#include <algorithm>

#include "support.h"
#include "transform.h"

namespace graphmend {
namespace {
using namespace fixes;

int level_of(std::string_view method) {
  if (method == "debug") return 10;
  if (method == "info") return 20;
  if (method == "warning") return 30;
  if (method == "error") return 40;
  if (method == "critical" || method == "fatal") return 50;
  return 0;  // `warn` (deprecated: it warns too), `exception` (reads the exception), `log`, custom methods
}

const char* level_name(int level) {
  switch (level) {
    case 10:
      return "DEBUG";
    case 20:
      return "INFO";
    case 30:
      return "WARNING";
    case 40:
      return "ERROR";
    default:
      return "CRITICAL";
  }
}

// `self.config.window`, `n`, `x.size(1)`: a Python value Dynamo knows at trace time that formatting reads
// without calling user code (a name or attribute chain, or a size).
bool is_known_python_value(const Document& doc, const SemanticModel& model, const FunctionInfo& fn, TSNode e) {
  if (model.kind_of(e, fn) != ValueKind::Static) return false;
  if (is_shape_int(doc, model, fn, e)) return true;
  TSNode n = e;
  while (is_type(n, "attribute")) n = field(n, "object");
  return is_type(n, "identifier");
}

// Why the f-string `s` cannot be formatted at the call and passed as the message.
std::string why_not_formattable(const Document& doc, const SemanticModel& model, const FunctionInfo& fn, TSNode s) {
  if (is_type(s, "concatenated_string")) {  // "a" f"{b}": each part
    for (TSNode c : named_children(s))
      if (std::string why = is_type(c, "string") ? why_not_formattable(doc, model, fn, c) : ""; !why.empty())
        return why;
    return "";
  }
  for (TSNode part : named_children(s)) {
    if (!is_type(part, "interpolation")) continue;
    TSNode e = named_child(part, 0);
    if (ts_node_is_null(e) || !is_known_python_value(doc, model, fn, e))
      return "the f-string part `" + text(doc, part) +
             "` is not a Python value Dynamo knows (a name, an attribute chain or a size)";
    for (TSNode c : named_children(part))
      if (is_type(c, "format_specifier"))
        for (TSNode spec_part : named_children(c))
          if (is_type(spec_part, "format_expression") || is_type(spec_part, "interpolation"))
            return "the f-string part `" + text(doc, part) + "` has a computed format";
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
  if (is_uninlined_compile_entry(*fn))
    return Refusal{"in the torch.compile entry the call is deferred after the graph instead", false};
  TSNode callee = field(call, "function");
  if (!is_type(callee, "attribute")) return Refusal{"not a logger method call", false};
  std::string logger = text(doc, field(callee, "object"));
  std::string method = text(doc, field(callee, "attribute"));
  if (logger == "logging" && !bound_locally(fn, logger))
    return Refusal{"`logging." + method +
                   "` logs to the root logger, which it configures first when it has no handler"};
  if (!model.is_module_logger(logger) || bound_locally(fn, logger))
    return Refusal{"`" + logger + "` is not a module-level logger this file defines"};
  const int level = level_of(method);
  if (level == 0) return Refusal{"`" + logger + "." + method + "` is not a plain level method"};
  TSNode stmt = ts_node_parent(call);
  if (!is_type(stmt, "expression_statement")) return Refusal{"the call's value is used"};
  {
    const uint32_t line_start = line_start_of(doc, stmt);
    std::string_view before = std::string_view(doc.text()).substr(line_start, ts_node_start_byte(stmt) - line_start);
    if (before.find_first_not_of(" \t") != std::string_view::npos)
      return Refusal{"the call shares its line with other code (the fix needs lines of its own)"};
  }

  // The message and arguments: literals stay in the body; the rest is passed to the operator.
  std::vector<std::string> body_args;  // message first
  std::vector<std::string> params, schema, passed;
  TSNode args = field(call, "arguments");
  for (TSNode a : named_children(args)) {
    if (is_type(a, "comment")) continue;
    if (is_type(a, "keyword_argument") || is_type(a, "list_splat") || is_type(a, "dictionary_splat"))
      return Refusal{"the argument `" + text(doc, a) +
                     "` reads the caller's frame or exception, or is not a positional value"};
    const bool message = body_args.empty();
    if (is_closed_literal(doc, a)) {
      body_args.push_back(text(doc, a));
      continue;
    }
    std::string param = message ? "message" : "a" + std::to_string(body_args.size());
    if (message && (is_type(a, "string") || is_type(a, "concatenated_string"))) {
      if (std::string why = why_not_formattable(doc, model, *fn, a); !why.empty()) return Refusal{why};
      schema.push_back("str " + param);
    } else if (!message && is_shape_int(doc, model, *fn, a)) {
      schema.push_back("SymInt " + param);
    } else if (model.kind_of(a, *fn) == ValueKind::Tensor) {
      return Refusal{"the argument `" + text(doc, a) +
                     "` is a tensor, whose text shows its autograd history (`grad_fn=`), which an operator's "
                     "input does not have"};
    } else {
      return Refusal{"the argument `" + text(doc, a) + "` is not a literal, a size or an f-string message"};
    }
    body_args.push_back(param);
    params.push_back(param);
    passed.push_back(text(doc, a));
  }
  if (body_args.empty()) return Refusal{"no message"};
  TorchName torch = torch_name(doc, model);
  if (auto why = why_torch_unusable(doc, model, fn, torch); !why.empty()) return Refusal{why};
  // The operator also takes a tensor made at the call and read by nothing (`torch.empty(0)`): Inductor
  // (torch 2.13 to 2.15) miscompiles an effectful operator without tensor inputs that ends a graph built for
  // autograd (its code frees a buffer before the last kernel that reads it). A parameter of the function
  // would not do: it may be None (`x: Optional[Tensor] = None`), and the operator must not fail where the
  // original did not.
  const std::string order = torch.name + ".empty(0)";
  params.insert(params.begin(), "order");
  schema.insert(schema.begin(), "Tensor order");
  passed.insert(passed.begin(), order);

  if (auto why = why_torch_unusable(doc, model, nullptr, torch); !why.empty()) return Refusal{why};
  if (auto why = why_torch_not_module_level(doc, torch); !why.empty()) return Refusal{why};
  std::optional<OperatorPlacement> placement = operator_placement(doc, call);
  if (!placement) return Refusal{"the call's function is defined before the file's imports end"};
  const uint32_t define_at = placement->define_at, helper_at = placement->helper_at;

  std::string eol(detect_line_ending(doc.text()));
  std::string record_args;  // a tuple, as logging holds them
  for (size_t i = 1; i < body_args.size(); ++i) record_args += (i > 1 ? ", " : "") + body_args[i];
  record_args = "(" + record_args + (body_args.size() == 2 ? ",)" : ")");
  // The call's place is part of the name (each call has its own operator, and so its own line): its function
  // and how many calls of the same text precede it there. Not its offset: a fix must read the same when
  // edits elsewhere move the function (incremental analysis carries it).
  int earlier = 0;
  std::string call_source = text(doc, call);
  for (TSNode n : fn->body_nodes)
    if (is_type(n, "call") && ts_node_start_byte(n) < ts_node_start_byte(call) && text(doc, n) == call_source)
      ++earlier;
  std::string place = fn->qualified_name + "#" + std::to_string(earlier);
  std::string op = "log_" + behaviour_hash(logger + "." + method + "(" + text(doc, args) + ") at " + place);
  std::string py = "_graphmend_" + op;
  if (doc.text().find("def " + py + "(") != std::string::npos)
    return Refusal{"the file defines `" + py + "` already (a function of the same name with the same call)"};
  std::string site = "_graphmend_site_" + op.substr(4);
  std::string body = "    _graphmend_log(" + logger + ", " + std::to_string(level) + ", " + site + ", " +
                     body_args.front() + ", " + record_args + ")  # " + level_name(level) + eol;
  std::string signature = "(";
  for (size_t i = 0; i < schema.size(); ++i) signature += (i ? ", " : "") + schema[i];
  signature += ") -> ()";
  std::string param_list;
  for (size_t i = 0; i < params.size(); ++i) param_list += (i ? ", " : "") + params[i];
  std::string definition = site + " = _graphmend_call_site(\"" + py + "\")" + eol + eol + eol +
                           "@_graphmend_runtime_op(\"" + op + "\", \"" + signature + "\")" + eol + "def " + py + "(" +
                           param_list + "):" + eol + "    \"\"\"`" + logger + "." + method + "` of `" +
                           fn->qualified_name + "`, emitted inside the compiled graph (graphmend " +
                           std::string(ctx.finding.rule->code) + ").\"\"\"" + eol + body + eol + eol;
  const std::string& t = torch.name;
  std::string helpers;
  if (doc.text().find("def _graphmend_call_site(") == std::string::npos)
    helpers = eol + eol + "def _graphmend_call_site(name):" + eol +
              "    \"\"\"(file, line, function) of the call of `name` in this module, as logging's findCaller reports "
              "a caller," +
              eol + "    read from the module's compiled code while it is imported.\"\"\"" + eol + "    import dis" +
              eol + "    import sys" + eol + eol +
              "    pending = [sys._getframe(1).f_code]  # this runs at module level" + eol +
              "    while pending:" + eol + "        code = pending.pop()" + eol + "        line = code.co_firstlineno" +
              eol + "        for ins in dis.get_instructions(code):" + eol +
              "            positions = getattr(ins, \"positions\", None)" + eol +
              "            if positions is not None and positions.lineno is not None:" + eol +
              "                line = positions.lineno" + eol +
              "            elif type(ins.starts_line) is int:  # Python < 3.11" + eol +
              "                line = ins.starts_line" + eol +
              "            if ins.opname in (\"LOAD_GLOBAL\", \"LOAD_NAME\") and ins.argval == name:" + eol +
              "                return code.co_filename, line, code.co_name" + eol +
              "        pending.extend(c for c in code.co_consts if isinstance(c, type(code)))" + eol +
              "    raise RuntimeError(\"graphmend: no call of \" + name + \" in \" + __name__)" + eol + eol + eol +
              "def _graphmend_log(logger, level, site, message, args):" + eol +
              "    \"\"\"Emits the record a logging call made at `site`: same logger, level, message, arguments, file, "
              "line" +
              eol + "    and function, after the same isEnabledFor test.\"\"\"" + eol +
              "    if logger.isEnabledFor(level):" + eol +
              "        record = logger.makeRecord(logger.name, level, site[0], site[1], message, args, None, site[2])" +
              eol + "        logger.handle(record)" + eol + eol;  // two blank lines before what follows

  Fix fix;
  // Unsafe, found by the differential oracle: the original emitted the record at its break, before anything
  // later could fail; in one graph, an error met while tracing a later operation (or raised by a kernel the
  // graph runs first) comes before the record, which is then never emitted.
  fix.applicability = Applicability::Unsafe;
  fix.title = "Emit the `" + logger + "." + method +
              "` record from an operator that runs inside the compiled graph, in program order (same logger, "
              "level, message, arguments, file, line and function; no break); unsafe: when the graph fails "
              "(an error tracing or running a later operation), the record is not emitted, where the original "
              "emitted it before the error";
  if (torch.import_edit) fix.edits.push_back(*torch.import_edit);  // first: the definitions call torch
  std::string call_text = py + "(";
  for (size_t i = 0; i < passed.size(); ++i) call_text += (i ? ", " : "") + passed[i];
  // Only torch.compile runs the operator. Eager runs keep the original call (the very same record, and no
  // operator dispatch on every call); torch.export keeps it too (Dynamo emits it while exporting, as it did),
  // so an exported program holds no Python operator and AOTInductor's C++ runner can still run it.
  std::string indent = indentation_of(doc, stmt);
  std::string inner = indent_step(indent);
  fix.edits.push_back({node_range(stmt), "if " + t + ".compiler.is_compiling() and not " + t +
                                             ".compiler.is_exporting():" + eol + inner + call_text + ")" + eol +
                                             indent + "else:" + eol + inner + text(doc, stmt)});
  // Separate insertions: one another fix adds too (raise-in-graph's helper) is then added once.
  if (std::string helper = runtime_op_helper(doc, t, eol); !helper.empty())
    fix.edits.push_back({{helper_at, helper_at}, helper});
  if (!helpers.empty()) fix.edits.push_back({{helper_at, helper_at}, helpers});
  fix.edits.push_back({{define_at, define_at}, definition});
  return fix;
}

}  // namespace

const Transform& transform_log_in_graph() {
  static const Transform t{"log-in-graph", {"GM202"}, apply};
  return t;
}

}  // namespace graphmend
