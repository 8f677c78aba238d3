#include "graphmend/analysis/module_bindings.h"

#include <string_view>

#include "graphmend/analysis/semantic.h"

namespace graphmend {
namespace {

std::string node_string(const Document& document, TSNode node) { return std::string(document.node_text(node)); }

// Every identifier in a target (`a, (b, *c)`, `x` of `as x`), bound to something other than a value.
void bind_target_names(const Document& document, TSNode target, ModuleBindings& out) {
  if (ts_node_is_null(target)) return;
  walk_preorder(target, [&](TSNode n) {
    auto t = type_of(n);
    if (t == "identifier") {
      out[node_string(document, n)].push_back(TSNode{});
      return Walk::Skip;
    }
    // `a.b = ...` and `a[i] = ...` bind no name.
    if (t == "attribute" || t == "subscript") return Walk::Skip;
    return Walk::Descend;
  });
}

void bind_import(const Document& document, TSNode statement, ModuleBindings& out) {
  const bool from = is_type(statement, "import_from_statement");
  TSNode module = from ? field(statement, "module_name") : TSNode{};
  for (TSNode child : named_children(statement)) {
    if (from && ts_node_eq(child, module)) continue;
    if (is_type(child, "aliased_import")) {
      out[node_string(document, field(child, "alias"))].push_back(TSNode{});
    } else if (is_type(child, "dotted_name")) {
      // `import a.b` binds `a`; `from m import x` binds `x`.
      TSNode first = named_child(child, 0);
      if (!ts_node_is_null(first)) out[node_string(document, first)].push_back(TSNode{});
    }
  }
}

bool is_string_literal(const Document& document, TSNode node, std::string_view value) {
  if (!is_type(node, "string")) return false;
  const std::string_view text = document.node_text(node);
  return text.size() == value.size() + 2 && (text.front() == '"' || text.front() == '\'') &&
         text.back() == text.front() && text.substr(1, value.size()) == value;
}

}  // namespace

ModuleBindings module_bindings(const Document& document) {
  ModuleBindings out;
  TSNode root = document.root();
  walk_preorder(root, [&](TSNode n) {
    auto t = type_of(n);
    if (t == "function_definition" || t == "class_definition") {
      out[node_string(document, field(n, "name"))].push_back(TSNode{});
      return Walk::Skip;
    }
    if (t == "lambda") return Walk::Skip;
    if (t == "assignment") {
      TSNode left = field(n, "left");
      TSNode right = field(n, "right");
      // `a = b = value`: each target is bound to the last value.
      while (is_type(right, "assignment")) {
        bind_target_names(document, field(right, "left"), out);
        right = field(right, "right");
      }
      if (is_type(left, "identifier") && !ts_node_is_null(right) && !is_type(right, "yield"))
        out[node_string(document, left)].push_back(right);
      else if (!ts_node_is_null(right))  // a tuple target; `x: int` alone binds nothing
        bind_target_names(document, left, out);
      return Walk::Skip;
    }
    if (t == "augmented_assignment") {
      bind_target_names(document, field(n, "left"), out);
      return Walk::Skip;
    }
    if (t == "import_statement" || t == "import_from_statement") {
      bind_import(document, n, out);
      return Walk::Skip;
    }
    if (t == "for_statement") bind_target_names(document, field(n, "left"), out);
    if (t == "named_expression") bind_target_names(document, field(n, "name"), out);
    if (t == "as_pattern") bind_target_names(document, field(n, "alias"), out);
    return Walk::Descend;
  });
  return out;
}

bool is_dynamo_disable(const Document& document, TSNode expr, const QualifiedNameOf& qualified_name,
                       const ModuleBindings& bindings, int depth) {
  expr = unparenthesize(expr);
  if (ts_node_is_null(expr) || depth > 4) return false;
  auto t = type_of(expr);
  if (t == "identifier" || t == "attribute") {
    if (auto q = qualified_name(expr)) return *q == "torch.compiler.disable" || *q == "torch._dynamo.disable";
    if (t == "attribute") return false;
    auto it = bindings.find(node_string(document, expr));
    if (it == bindings.end() || it->second.empty()) return false;
    for (TSNode value : it->second) {
      if (!is_dynamo_disable(document, value, qualified_name, bindings, depth + 1)) return false;
    }
    return true;
  }
  if (t == "call") {
    // getattr(torch.compiler, "disable") or getattr(torch.compiler, "disable", None): the function on 2.13.
    TSNode callee = field(expr, "function");
    if (!is_type(callee, "identifier") || document.node_text(callee) != "getattr" || bindings.count("getattr"))
      return false;
    std::vector<TSNode> args = named_children(field(expr, "arguments"));
    if (args.size() < 2 || args.size() > 3) return false;
    auto module = qualified_name(args[0]);
    // timm: `getattr(getattr(torch, "compiler", None), "disable", None)`.
    if (!module && is_type(args[0], "call") && document.node_text(field(args[0], "function")) == "getattr") {
      std::vector<TSNode> inner = named_children(field(args[0], "arguments"));
      auto torch = inner.size() >= 2 && inner.size() <= 3 ? qualified_name(inner[0]) : std::nullopt;
      if (torch && *torch == "torch" && is_string_literal(document, inner[1], "compiler")) module = "torch.compiler";
      if (torch && *torch == "torch" && is_string_literal(document, inner[1], "_dynamo")) module = "torch._dynamo";
    }
    return module && (*module == "torch.compiler" || *module == "torch._dynamo") &&
           is_string_literal(document, args[1], "disable");
  }
  if (t == "boolean_operator") {
    // `a or b` is `a` when `a` is a function.
    if (document.node_text(field(expr, "operator")) != "or") return false;
    return is_dynamo_disable(document, field(expr, "left"), qualified_name, bindings, depth + 1);
  }
  if (t == "conditional_expression") {
    if (named_child_count(expr) < 3) return false;
    return is_dynamo_disable(document, named_child(expr, 0), qualified_name, bindings, depth + 1) &&
           is_dynamo_disable(document, named_child(expr, 2), qualified_name, bindings, depth + 1);
  }
  return false;
}

std::unordered_set<std::string> dynamo_disable_aliases(const Document& document,
                                                       const QualifiedNameOf& qualified_name) {
  std::unordered_set<std::string> out;
  // Cheap test first: nothing to find in a file that never names `disable`.
  if (document.text().find("disable") == std::string::npos) return out;
  const ModuleBindings bindings = module_bindings(document);
  for (const auto& [name, values] : bindings) {
    bool all = !values.empty();
    for (TSNode value : values) all = all && is_dynamo_disable(document, value, qualified_name, bindings);
    if (all) out.insert(name);
  }
  return out;
}

}  // namespace graphmend
