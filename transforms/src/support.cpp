#include "support.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>

namespace graphmend::fixes {

std::string text(const Document& doc, TSNode node) { return std::string(doc.node_text(node)); }

uint32_t line_start_of(const Document& doc, TSNode node) {
  return doc.lines().line_start(doc.lines().line_of(ts_node_start_byte(node)));
}

uint32_t start_of_next_line(const Document& doc, uint32_t offset) {
  uint32_t line = doc.lines().line_of(offset);
  return line + 1 >= doc.lines().line_count() ? static_cast<uint32_t>(doc.text().size())
                                              : doc.lines().line_start(line + 1);
}

std::string indent_step(const std::string& indent) {
  return indent + (indent.find('\t') != std::string::npos ? "\t" : "    ");
}

TSNode enclosing(const Document& doc, ByteRange range, std::initializer_list<std::string_view> types) {
  // Down from the root through the nodes that hold `range`, keeping the last of `types`: walking up
  // with ts_node_parent, which rescans from the root at every step, is quadratic in the depth.
  TSNode found{};
  for (TSNode n = doc.root(); !ts_node_is_null(n);) {
    for (std::string_view t : types) {
      if (is_type(n, t)) found = n;
    }
    TSNode child = ts_node_first_child_for_byte(n, range.start);
    if (ts_node_is_null(child) || ts_node_start_byte(child) > range.start || ts_node_end_byte(child) < range.end) break;
    n = child;
  }
  return found;
}

std::string indentation_of(const Document& doc, TSNode node) {
  uint32_t start = line_start_of(doc, node);
  std::string out;
  for (uint32_t i = start; i < doc.text().size() && (doc.text()[i] == ' ' || doc.text()[i] == '\t'); ++i)
    out += doc.text()[i];
  return out;
}

uint32_t after_imports_offset(const Document& doc) {
  TSNode root = doc.root();
  uint32_t n = ts_node_named_child_count(root);
  uint32_t offset = 0;
  bool first_statement = true;  // the docstring is the first statement, after comments (`#!`, encoding, license)
  for (uint32_t i = 0; i < n; ++i) {
    TSNode stmt = ts_node_named_child(root, i);
    auto t = type_of(stmt);
    bool docstring = first_statement && t == "expression_statement" && is_type(named_child(stmt, 0), "string");
    if (t != "comment") first_statement = false;
    if (t == "import_statement" || t == "import_from_statement" || t == "future_import_statement" || docstring ||
        t == "comment") {
      if (t == "comment" && offset == 0 && i > 0) continue;
      offset = start_of_next_line(doc, ts_node_end_byte(stmt));
      continue;
    }
    if (t == "comment") continue;
    // Conditional imports (try/except ImportError, if TYPE_CHECKING) are part of the import block too.
    if ((t == "try_statement" || t == "if_statement") && doc.node_text(stmt).find("import") != std::string_view::npos) {
      offset = start_of_next_line(doc, ts_node_end_byte(stmt));
      continue;
    }
    break;
  }
  return offset;
}

TorchName torch_name(const Document& doc, const SemanticModel& model) {
  if (!model.torch_alias().empty()) return {model.torch_alias(), std::nullopt};
  // Insert after the docstring and __future__ imports (those must stay first).
  TSNode root = doc.root();
  uint32_t offset = 0;
  uint32_t n = ts_node_named_child_count(root);
  for (uint32_t i = 0; i < n; ++i) {
    TSNode stmt = ts_node_named_child(root, i);
    bool docstring = is_type(stmt, "expression_statement") && is_type(named_child(stmt, 0), "string") &&
                     (i == 0 || offset > 0 || is_type(named_child(root, 0), "comment"));
    bool future = is_type(stmt, "future_import_statement");
    if (!docstring && !future && !is_type(stmt, "comment")) break;
    if (is_type(stmt, "comment")) {
      // A shebang and an encoding declaration must stay on the first lines.
      std::string_view c = doc.node_text(stmt);
      bool header = c.starts_with("#!") || c.find("coding") != std::string_view::npos;
      if (!header) continue;
    }
    offset = start_of_next_line(doc, ts_node_end_byte(stmt));
  }
  std::string eol(detect_line_ending(doc.text()));
  std::string insert = "import torch" + eol;
  const bool ends_line = !doc.text().empty() && (doc.text().back() == '\n' || doc.text().back() == '\r');
  if (offset == doc.text().size() && !doc.text().empty() && !ends_line) insert = eol + insert;
  return {"torch", TextEdit{{offset, offset}, insert}};
}

bool defined_before(const Document& doc, const FunctionInfo& fn, const std::string& name, TSNode stmt) {
  if (std::find(fn.params.begin(), fn.params.end(), name) != fn.params.end()) return true;
  auto it = fn.assignments.find(name);
  if (it == fn.assignments.end()) return false;
  // Blocks that enclose `stmt`: an assignment directly in one of them, before `stmt`, always ran.
  std::vector<TSNode> blocks;
  for (TSNode p = ts_node_parent(stmt); !ts_node_is_null(p); p = ts_node_parent(p)) {
    if (is_type(p, "block")) blocks.push_back(p);
    if (is_type(p, "function_definition")) break;
  }
  for (TSNode rhs : it->second) {
    if (ts_node_start_byte(rhs) >= ts_node_start_byte(stmt)) continue;
    TSNode assignment = ts_node_parent(rhs);
    TSNode statement = ts_node_parent(assignment);
    if (!is_type(statement, "expression_statement")) continue;
    TSNode block = ts_node_parent(statement);
    for (TSNode b : blocks) {
      if (ts_node_eq(b, block)) return true;
    }
  }
  (void)doc;
  return false;
}

GuardStatement guard_statement(const Document& doc, const SemanticModel& model, ByteRange finding_range) {
  GuardStatement out;
  out.node = enclosing(doc, finding_range, {"if_statement", "elif_clause"});
  if (ts_node_is_null(out.node)) {
    out.refusal = "no if statement around the guard";
  } else if (is_type(out.node, "elif_clause")) {
    out.refusal = "guards in an elif are not rewritten yet";
  } else if (out.fn = model.function_containing(out.node); !out.fn) {
    out.refusal = "the guard is not inside a function";
  } else {
    for (TSNode c : named_children(out.node))
      if (is_type(c, "elif_clause") || is_type(c, "else_clause")) out.refusal = "the guard has other branches";
  }
  return out;
}

std::vector<std::string> comments_in(const Document& doc, TSNode node) {
  std::vector<std::string> out;
  std::function<void(TSNode)> visit = [&](TSNode n) {
    if (is_type(n, "comment")) {
      out.push_back(text(doc, n));
      return;
    }
    uint32_t c = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < c; ++i) visit(ts_node_named_child(n, i));
  };
  visit(node);
  return out;
}

}  // namespace graphmend::fixes

namespace graphmend::fixes {
namespace {

// `id` is where a name is bound (assigned, a parameter, imported, defined, declared global...), not read.
bool is_binding_occurrence(const Document& doc, TSNode id) {
  TSNode n = id;
  TSNode p = ts_node_parent(n);
  while (!ts_node_is_null(p) && (is_type(p, "pattern_list") || is_type(p, "tuple_pattern") ||
                                 is_type(p, "list_pattern") || is_type(p, "list_splat_pattern") ||
                                 is_type(p, "dictionary_splat_pattern") || is_type(p, "parenthesized_expression"))) {
    n = p;
    p = ts_node_parent(n);
  }
  if (ts_node_is_null(p)) return false;
  auto t = type_of(p);
  auto is_field = [&](const char* name) { return ts_node_eq(field(p, name), n); };
  if (t == "assignment" || t == "augmented_assignment" || t == "for_statement" || t == "for_in_clause")
    return is_field("left");
  if (t == "named_expression") return is_field("name");
  if (t == "as_pattern_target" || t == "parameters" || t == "lambda_parameters" || t == "global_statement" ||
      t == "nonlocal_statement")
    return true;
  if (t == "as_pattern") return is_field("alias");
  if (t == "default_parameter" || t == "typed_default_parameter" || t == "function_definition" ||
      t == "class_definition")
    return is_field("name");
  if (t == "typed_parameter") return ts_node_eq(named_child(p, 0), n);
  if (t == "aliased_import") return is_field("alias");
  if (t == "dotted_name") {
    // `import a.b` binds `a`; `from m import a` binds `a` (never a part of `m`).
    TSNode g = ts_node_parent(p);
    if (is_type(g, "import_statement")) return ts_node_eq(named_child(p, 0), n);
    return is_type(g, "import_from_statement") && !ts_node_eq(field(g, "module_name"), p);
  }
  if (t == "except_clause") {
    TSNode prev = ts_node_prev_sibling(n);
    return !ts_node_is_null(prev) && doc.node_text(prev) == "as";
  }
  return false;
}

// The first binding of `name` under `scope` (nested scopes included: conservative), or a null node.
TSNode first_binding(const Document& doc, TSNode scope, std::string_view name, bool skip_function_bodies) {
  TSNode found{};
  walk_preorder(scope, [&](TSNode node) {
    if (skip_function_bodies && !ts_node_eq(node, scope) &&
        (is_type(node, "block") &&
         (is_type(ts_node_parent(node), "function_definition") || is_type(ts_node_parent(node), "class_definition"))))
      return Walk::Skip;
    if (skip_function_bodies && is_type(node, "parameters")) return Walk::Skip;
    if (is_type(node, "identifier") && doc.node_text(node) == name && is_binding_occurrence(doc, node)) {
      // `import torch` / `import torch.nn` at module level bind the module itself.
      TSNode p = ts_node_parent(node);
      bool binds_torch = is_type(p, "dotted_name") && is_type(ts_node_parent(p), "import_statement") &&
                         doc.node_text(named_child(p, 0)) == "torch" && name == "torch";
      bool aliases_torch = is_type(p, "aliased_import") && doc.node_text(field(p, "name")) == "torch";
      if (!(skip_function_bodies && (binds_torch || aliases_torch))) {
        found = node;
        return Walk::Stop;
      }
    }
    return Walk::Descend;
  });
  return found;
}

}  // namespace

std::string why_torch_unusable(const Document& doc, const SemanticModel& model, const FunctionInfo* fn,
                               const TorchName& torch) {
  // Asked for every finding: each function's answer and the module's are kept (FunctionInfo::memo).
  const std::string question = "torch rebound: " + torch.name;
  for (const FunctionInfo* f = fn; f; f = f->parent) {
    if (ts_node_is_null(f->node)) return "the enclosing function was not read";
    auto [it, fresh] = f->memo.try_emplace(question);
    if (fresh) {
      TSNode b = first_binding(doc, f->node, torch.name, false);
      if (!ts_node_is_null(b)) {
        uint32_t line = doc.lines().line_of(ts_node_start_byte(b)) + 1;
        it->second = "`" + torch.name + "` is rebound in `" + f->name + "` (line " + std::to_string(line) +
                     "), so the `" + torch.name + ".…` the fix inserts would not name the torch module";
      }
    }
    if (!it->second.empty()) return it->second;
  }
  auto [it, fresh] = model.memo().try_emplace(question);
  if (fresh) {
    TSNode b = first_binding(doc, doc.root(), torch.name, true);
    if (!ts_node_is_null(b)) {
      uint32_t line = doc.lines().line_of(ts_node_start_byte(b)) + 1;
      it->second = "`" + torch.name + "` is bound to something other than the torch module at module level (line " +
                   std::to_string(line) + ")";
    }
  }
  return it->second;
}

TSNode statement_of(TSNode node) {
  while (!ts_node_is_null(node) && !is_type(ts_node_parent(node), "block")) node = ts_node_parent(node);
  return node;
}

bool bound_locally(const FunctionInfo* fn, const std::string& name) {
  for (const FunctionInfo* f = fn; f; f = f->parent)
    if (f->locals.count(name) || std::find(f->params.begin(), f->params.end(), name) != f->params.end()) return true;
  return false;
}

std::string why_locals_unaddable(const Document& doc, const FunctionInfo& fn) {
  auto [memo, fresh] = fn.memo.try_emplace("locals unaddable");
  if (!fresh) return memo->second;
  std::string found;
  walk_preorder(fn.node, [&](TSNode node) {
    if (!is_type(node, "call")) return Walk::Descend;
    TSNode callee = field(node, "function");
    std::string_view c = doc.node_text(callee);
    bool no_args = named_child_count(field(node, "arguments")) == 0;
    if (c == "exec" || c == "eval" || ((c == "locals" || c == "vars" || c == "dir") && no_args)) {
      found = std::string(c);
      return Walk::Stop;
    }
    return Walk::Descend;
  });
  if (found.empty()) return "";
  memo->second = "`" + fn.name + "` calls `" + found + "()`, which would see the names the fix adds";
  return memo->second;
}

}  // namespace graphmend::fixes

namespace graphmend::fixes {

std::string why_written_in_place_after(const Document& doc, const FunctionInfo& fn, const std::string& name,
                                       TSNode stmt) {
  std::string found;
  const uint32_t after = ts_node_end_byte(stmt);
  walk_preorder(field(fn.node, "body"), [&](TSNode node) {
    if (ts_node_end_byte(node) <= after) return Walk::Skip;
    if (ts_node_start_byte(node) < after) return Walk::Descend;
    auto is_name = [&](TSNode n) { return is_type(n, "identifier") && doc.node_text(n) == name; };
    TSNode target{};
    if (is_type(node, "augmented_assignment")) {
      target = field(node, "left");
    } else if (is_type(node, "assignment")) {
      TSNode left = field(node, "left");
      if (is_type(left, "subscript") || is_type(left, "attribute"))
        target = field(left, is_type(left, "subscript") ? "value" : "object");
    } else if (is_type(node, "call")) {
      TSNode callee = field(node, "function");
      if (is_type(callee, "attribute")) {
        std::string_view m = doc.node_text(field(callee, "attribute"));
        if (m.ends_with("_") && !m.ends_with("__")) target = field(callee, "object");
      }
    }
    if (!ts_node_is_null(target) && is_name(target)) {
      found = std::string(doc.node_text(node).substr(0, 60));
      return Walk::Stop;
    }
    return Walk::Descend;
  });
  if (found.empty()) return "";
  return "`" + found + "` writes `" + name + "` in place after the select, and the select makes `" + name +
         "` a new tensor where the original may keep the caller's";
}

bool is_shape_int(const Document& doc, const SemanticModel& model, const FunctionInfo& fn, TSNode a) {
  return model.kind_of(a, fn) == ValueKind::Static &&
         ((is_type(a, "subscript") && text(doc, a).find(".shape[") != std::string::npos) ||
          (is_type(a, "call") && named_child_count(field(a, "arguments")) == 1 &&
           (text(doc, a).find(".size(") != std::string::npos || text(doc, a).starts_with("len("))));
}

std::string behaviour_hash(std::string_view behaviour) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : behaviour) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, 12);
}

bool is_closed_literal(const Document& doc, TSNode node) {
  std::string_view t = ts_node_type(node);
  if (t == "integer" || t == "float" || t == "true" || t == "false" || t == "none") return true;
  if (t == "unary_operator") return is_closed_literal(doc, field(node, "argument"));
  if (t == "concatenated_string") {
    for (TSNode c : named_children(node))
      if (!is_type(c, "comment") && !is_closed_literal(doc, c)) return false;
    return true;
  }
  if (t != "string") return false;
  for (uint32_t i = 0; i < ts_node_named_child_count(node); ++i)
    if (is_type(ts_node_named_child(node, i), "interpolation")) return false;
  return true;
}

std::optional<NumericLiteral> numeric_literal(const Document& doc, TSNode node) {
  node = unparenthesize(node);
  bool negative = false;
  if (is_type(node, "unary_operator") && text(doc, field(node, "operator")) == "-") {
    negative = true;
    node = unparenthesize(field(node, "argument"));
  }
  if (!is_type(node, "integer") && !is_type(node, "float")) return std::nullopt;
  std::string digits = text(doc, node);
  digits.erase(std::remove(digits.begin(), digits.end(), '_'), digits.end());
  if (digits.find_first_of("xXoObBjJ") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(digits.c_str(), &end);
  if (end == digits.c_str() || *end != '\0') return std::nullopt;
  return NumericLiteral{negative ? -v : v, is_type(node, "integer")};
}

std::optional<OperatorPlacement> operator_placement(const Document& doc, TSNode node) {
  TSNode top = node;
  while (!ts_node_is_null(ts_node_parent(top)) && !is_type(ts_node_parent(top), "module")) top = ts_node_parent(top);
  OperatorPlacement at{line_start_of(doc, top), after_imports_offset(doc)};
  if (at.define_at < at.helper_at) return std::nullopt;
  return at;
}

std::string runtime_op_helper(const Document& doc, const std::string& t, const std::string& eol) {
  if (doc.text().find("def _graphmend_runtime_op(") != std::string::npos) return "";
  // `t` is the name torch is bound to (`import torch as T`); an import statement names the module itself.
  // Two blank lines before the helper (it follows the imports); the blank lines already there stay.
  return eol + eol + "def _graphmend_runtime_op(name, schema):" + eol +
         "    \"\"\"Defines the decorated function once per process as an operator that runs inside the compiled "
         "graph," +
         eol + "    at run time and in program order (an ordered effect, never dropped for having no output).\"\"\"" +
         eol + "    from torch._library.effects import EffectType" + eol + eol + "    def define(fn):" + eol +
         "        namespace = \"graphmend_\" + \"\".join(c if c.isascii() and c.isalnum() else \"_\" for c in "
         "__name__)" +
         eol + "        if not hasattr(getattr(" + t +
         ".ops, namespace), name):  # imported twice: the operator exists" + eol + "            op = " + t +
         ".library.custom_op(namespace + \"::\" + name, fn, mutates_args=(), schema=schema)" + eol +
         "            op.register_fake(lambda *args: None)" + eol +
         "            op.register_effect(EffectType.ORDERED)" + eol + "        return getattr(getattr(" + t +
         ".ops, namespace), name).default" + eol + eol + "    return define" + eol;
}

// Python source with `{torch}` standing for the name torch is bound to, and `\n` for the file's line ending.
static std::string substitute_torch(std::string_view source, const std::string& t, const std::string& eol) {
  std::string out;
  for (size_t i = 0; i < source.size(); ++i) {
    if (source.compare(i, 7, "{torch}") == 0) {
      out += t;
      i += 6;
    } else if (source[i] == '\n') {
      out += eol;
    } else {
      out += source[i];
    }
  }
  return out;
}

std::string keep_state_helper(const Document& doc, const std::string& t, const std::string& eol) {
  if (doc.text().find("def _graphmend_keep_state(") != std::string::npos) return "";
  // Python source with `{torch}` for the name torch is bound to. The checks read the graph Dynamo has traced
  // up to the call (docs/fix-safety.md, "Runtime effects in the graph"): graph inputs written in place (the
  // version counter of their fake tensors, which start at 0 in every trace), normalizations that update
  // running statistics inside their kernel (invisible to the counter), `out=` writes, and Python side effects
  // Dynamo holds until the graph ends. Where a check cannot be made (Dynamo's internals moved), it breaks.
  static const std::string_view source = R"PY(

def _graphmend_keep_state(op):
    """Calls an operator that may raise where no state written earlier in the same graph could be lost with
    the raise: otherwise, under torch.compile, the graph breaks just before it, where the original broke, so
    the state is written back first."""

    def call(*args):
        if {torch}.compiler.is_compiling():
            {torch}._dynamo.comptime.comptime(_graphmend_break_if_state_written)
        return op(*args)

    return call


def _graphmend_break_if_state_written(ctx):
    """Run by Dynamo where it traces the call: breaks the graph if it wrote state before the operator."""
    reason = _graphmend_state_written(ctx)
    if reason is not None:
        ctx.graph_break("graphmend: " + reason + " before a guard; the graph breaks as the original's did")


def _graphmend_state_written(ctx):
    """What the graph traced so far writes that a raise inside it would lose, or None."""
    try:
        for node in ctx.graph().nodes:
            value = node.meta.get("example_value")
            if node.op in ("placeholder", "get_attr") and isinstance(value, {torch}.Tensor) and value._version:
                return "an input written in place"
            if node.op != "call_function":
                continue
            if "out" in node.kwargs:
                return "an `out=` write"
            if getattr(node.target, "__name__", "") in ("batch_norm", "instance_norm"):
                updates = node.kwargs.get("training", node.kwargs.get("use_input_stats"))
                if updates is None:
                    updates = node.args[5] if len(node.args) > 5 else True
                if updates is not False:
                    return "running statistics updated"
        side_effects = ctx._ComptimeContext__tx.output.side_effects
        if side_effects.tensor_hooks:
            return "a tensor hook registered"
        for variable in side_effects.id_to_variable.values():
            if not type(variable.mutation_type).__name__.endswith("New") and side_effects.is_modified(variable):
                return "Python state written"
    except Exception as error:  # noqa: BLE001 - whatever the tracer's internals became, break as the original
        return "state that cannot be inspected (" + type(error).__name__ + ")"
    return None
)PY";
  return substitute_torch(source, t, eol);
}

std::string check_op_helper(const Document& doc, const std::string& t, const std::string& eol) {
  if (doc.text().find("def _graphmend_check_op(") != std::string::npos) return "";
  static const std::string_view source = R"PY(

def _graphmend_check_op(name):
    """Defines the decorated check once per process as an operator that runs inside the compiled graph, at
    run time and in program order (an ordered effect). While tracing, a condition that is not a bool tensor
    fails the check's dtype test, as the original check failed there."""
    from torch._library.effects import EffectType

    def define(fn):
        namespace = "graphmend_" + "".join(c if c.isascii() and c.isalnum() else "_" for c in __name__)
        if not hasattr(getattr({torch}.ops, namespace), name):  # imported twice: the operator exists
            op = {torch}.library.custom_op(namespace + "::" + name, fn, mutates_args=(), schema="(Tensor test) -> ()")
            op.register_fake(lambda test: None if test.dtype == {torch}.bool else fn(test))
            op.register_effect(EffectType.ORDERED)
        return getattr(getattr({torch}.ops, namespace), name).default

    return define
)PY";
  return substitute_torch(source, t, eol);
}

std::string why_torch_not_module_level(const Document& doc, const TorchName& torch) {
  if (torch.import_edit) return "";
  for (TSNode stmt : named_children(doc.root())) {
    if (!is_type(stmt, "import_statement")) continue;
    for (TSNode name : named_children(stmt)) {
      if (is_type(name, "aliased_import")) {
        if (text(doc, field(name, "alias")) == torch.name && text(doc, field(name, "name")) == "torch") return "";
      } else if (is_type(name, "dotted_name") && torch.name == "torch" && text(doc, named_child(name, 0)) == "torch") {
        return "";
      }
    }
  }
  return "the file imports torch only inside functions or under a condition, so an operator defined at module "
         "level would import it where the original did not (or fail where torch is missing)";
}

bool is_module_level_name(const Document& doc, const FunctionInfo* fn, TSNode node) {
  if (is_type(node, "identifier")) return !bound_locally(fn, std::string(doc.node_text(node)));
  if (is_type(node, "attribute")) return is_module_level_name(doc, fn, field(node, "object"));
  return false;
}

std::string why_under_handler(TSNode node, const std::string& what) {
  for (TSNode p = ts_node_parent(node); !ts_node_is_null(p) && !is_type(p, "function_definition");
       p = ts_node_parent(p)) {
    if (is_type(p, "except_clause") || is_type(p, "except_group_clause") || is_type(p, "finally_clause"))
      return what + " runs while an exception is handled, which the operator would not see as context";
    if (!is_type(p, "try_statement")) continue;
    for (TSNode c : named_children(p))
      if (is_type(c, "except_clause") || is_type(c, "except_group_clause"))
        return what + " sits in a `try` with handlers, which would see the operator's frames";
  }
  return "";
}

void add_operator_definition(Fix& fix, uint32_t at, const std::vector<std::string>& helpers,
                             const std::string& definition, const std::string& eol) {
  for (const std::string& helper : helpers)
    if (!helper.empty()) fix.edits.push_back({{at, at}, helper});
  if (!definition.empty()) fix.edits.push_back({{at, at}, eol + eol + definition});
}

bool is_uninlined_compile_entry(const FunctionInfo& fn) { return fn.is_entry && !(fn.owner && fn.name == "forward"); }

}  // namespace graphmend::fixes
