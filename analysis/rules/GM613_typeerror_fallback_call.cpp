// GM613: `try: f(x, kw=...) except TypeError: f(x)`, calling a function of the file with a keyword it
// does not take.
#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "graphmend/analysis/module_bindings.h"
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM613",
    .name = "typeerror-fallback-call",
    .family = "unsupported Python",
    .summary = "Call with a keyword the callee lacks, caught by `except TypeError`",
    .explanation =
        "Code that tries a call with a newer keyword and falls back on TypeError (`try: y = f(x, scale=s) "
        "except TypeError: y = f(x)`, or `except Exception`) works eagerly, but Dynamo binds the arguments "
        "before inlining `f`: when `f` takes no such parameter (and no `**kwargs`) the binding fails and the "
        "graph breaks at the call (failed to bind arguments when attempting to inline), before the fallback "
        "runs. When `f` accepts the keyword there is no break. After a break inside a try block Dynamo runs "
        "the rest of the function eagerly, so only the first such call of a function is reported. graphmend "
        "reports calls of functions of the same file, whose parameters it reads. Checked on torch 2.13; from "
        "torch 2.14 Dynamo raises the TypeError inside the trace and runs the handler: no break, no finding.",
    .registry_id = "GB7312",
    .fix_summary =
        "No automatic fix: which signature is meant is a choice; call `f` with the arguments it takes "
        "(decide once, outside the compiled code, e.g. with `inspect.signature(f).parameters`), or give `f` "
        "the parameter.",
    .example_bad = "try:\n    y = act(x, approximate=\"tanh\")\nexcept TypeError:\n    y = act(x)",
    .example_good =
        "ACT_TAKES_APPROXIMATE = \"approximate\" in inspect.signature(act).parameters  # module level\n"
        "...\ny = act(x, approximate=\"tanh\") if ACT_TAKES_APPROXIMATE else act(x)",
    .fixable = false,
};

bool catches_type_error(const RuleContext& ctx, TSNode try_statement) {
  for (TSNode clause : named_children(try_statement)) {
    if (!is_type(clause, "except_clause")) continue;
    TSNode value = field(clause, "value");
    if (ts_node_is_null(value)) return true;  // bare `except:`
    if (is_type(value, "as_pattern")) value = named_child(value, 0);
    value = unparenthesize(value);
    std::vector<TSNode> types = is_type(value, "tuple") ? named_children(value) : std::vector<TSNode>{value};
    for (TSNode type : types) {
      const std::string name = ctx.text(type);
      if (name == "TypeError" || name == "Exception" || name == "BaseException" || name == "builtins.TypeError")
        return true;
    }
  }
  return false;
}

// A try statement of the function, whose body holds `node`, catches TypeError.
bool in_guarded_try(const RuleContext& ctx, TSNode node) {
  TSNode child = node;
  for (TSNode p = ts_node_parent(node); !ts_node_is_null(p); child = p, p = ts_node_parent(p)) {
    auto t = type_of(p);
    if (t == "function_definition" || t == "lambda" || t == "class_definition") return false;
    if (t == "try_statement" && ts_node_eq(field(p, "body"), child) && catches_type_error(ctx, p)) return true;
  }
  return false;
}

// The names `fn` accepts as keywords, or nullopt when it takes `**kwargs` (or its parameters are unclear).
std::optional<std::vector<std::string>> keyword_parameters(const RuleContext& ctx, const FunctionInfo& fn) {
  TSNode params = field(definition_of(ctx, fn), "parameters");
  if (ts_node_is_null(params)) return std::nullopt;
  std::vector<std::string> names;
  for (TSNode p : named_children(params)) {
    auto t = type_of(p);
    if (t == "comment") continue;
    if (t == "positional_separator") {
      names.clear();  // those before `/` are positional-only
      continue;
    }
    if (t == "keyword_separator" || t == "list_splat_pattern") continue;
    if (t == "dictionary_splat_pattern") return std::nullopt;
    if (t == "identifier") {
      names.push_back(ctx.text(p));
    } else if (t == "typed_parameter") {
      TSNode inner = named_child(p, 0);
      if (is_type(inner, "dictionary_splat_pattern")) return std::nullopt;
      if (is_type(inner, "identifier")) names.push_back(ctx.text(inner));
    } else if (t == "default_parameter" || t == "typed_default_parameter") {
      TSNode name = field(p, "name");
      if (!is_type(name, "identifier")) return std::nullopt;
      names.push_back(ctx.text(name));
    } else {
      return std::nullopt;
    }
  }
  return names;
}

// Decorators other than @staticmethod/@classmethod may change the signature (a wrapper taking **kwargs).
bool plainly_defined(const RuleContext& ctx, const FunctionInfo& fn) {
  TSNode definition = definition_of(ctx, fn);
  if (ts_node_is_null(definition)) return false;
  TSNode parent = ts_node_parent(definition);
  if (!is_type(parent, "decorated_definition")) return true;
  for (TSNode decorator : named_children(parent)) {
    if (!is_type(decorator, "decorator")) continue;
    const std::string text = ctx.text(named_child(decorator, 0));
    if (text != "staticmethod" && text != "classmethod") return false;
  }
  return true;
}

const ClassInfo* named_class(const RuleContext& ctx, const std::string& base) {
  std::string_view name = base;
  if (auto dot = name.rfind('.'); dot != std::string_view::npos) name = name.substr(dot + 1);
  return ctx.model.find_class(name);
}

bool derives_from(const RuleContext& ctx, const ClassInfo* cls, const ClassInfo* ancestor, int depth = 0) {
  if (!cls || depth > 16) return false;
  if (cls == ancestor) return true;
  return std::any_of(cls->bases.begin(), cls->bases.end(),
                     [&](const std::string& b) { return derives_from(ctx, named_class(ctx, b), ancestor, depth + 1); });
}

// Whether `cls` or one of its bases of this file defines `__call__`.
bool defines_call(const RuleContext& ctx, const ClassInfo* cls, int depth = 0) {
  if (!cls || depth > 16) return false;
  if (cls->methods.count("__call__")) return true;
  return std::any_of(cls->bases.begin(), cls->bases.end(),
                     [&](const std::string& b) { return defines_call(ctx, named_class(ctx, b), depth + 1); });
}

// The callee is the function that runs: a name not rebound locally, defined once and bound to nothing
// else at module level (or nested once); a method that no subclass of this file overrides and no instance
// attribute hides; a module's forward when its classes define no __call__.
bool callee_is_certain(const RuleContext& ctx, TSNode call, const FunctionInfo& caller, const FunctionInfo& callee) {
  TSNode function = unparenthesize(field(call, "function"));
  const std::string& name = callee.name;
  const auto& all = ctx.model.functions();
  auto same_name = [&](const auto& f) {
    return f->name == name && f->owner == callee.owner && f->parent == callee.parent;
  };
  if (std::count_if(all.begin(), all.end(), same_name) != 1) return false;
  if (is_type(function, "identifier")) {
    if (callee.owner || ctx.text(function) != name) return false;
    // A parameter or local of that name shadows the function (the nested definition's own function aside).
    for (const FunctionInfo* f = &caller; f && f != callee.parent; f = f->parent) {
      if (bound_in_function(*f, name)) return false;
    }
    if (callee.parent) return true;
    auto bindings = module_bindings(ctx.document);
    auto it = bindings.find(name);
    return it != bindings.end() && it->second.size() == 1;  // the def alone
  }
  if (!callee.owner || !is_type(function, "attribute")) return false;
  for (const auto& cls : ctx.model.classes()) {
    if (cls.get() == callee.owner || !derives_from(ctx, cls.get(), callee.owner)) continue;
    if (cls->methods.count(name) || cls->methods.count("__call__")) return false;
  }
  const std::string attribute = ctx.text(field(function, "attribute"));
  if (attribute == name) {
    // `self.act(...)`: an instance attribute `self.act = ...` would be called instead.
    const FunctionInfo* top = &caller;
    while (top->parent) top = top->parent;
    for (const ClassInfo* cls :
         {static_cast<const ClassInfo*>(top->owner), static_cast<const ClassInfo*>(callee.owner)}) {
      if (cls && cls->attributes.count(name)) return false;
    }
    return true;
  }
  // `self.block(x, ...)` runs Block.forward through nn.Module.__call__, unless Block defines its own.
  return name == "__call__" || !defines_call(ctx, callee.owner);
}

// What to say of `call` when it passes a keyword its callee (a function of this file) does not take, in
// the body of a try that catches TypeError; "" otherwise.
std::string site_message(const RuleContext& ctx, TSNode call, const FunctionInfo& fn) {
  TSNode args = field(call, "arguments");
  if (!is_type(args, "argument_list")) return "";
  std::vector<TSNode> keywords;
  for (TSNode a : named_children(args)) {
    if (is_type(a, "dictionary_splat")) return "";  // `**opts`: which keywords is unknown
    if (is_type(a, "keyword_argument")) keywords.push_back(a);
  }
  if (keywords.empty() || !in_guarded_try(ctx, call)) return "";
  const FunctionInfo* callee = ctx.model.resolve_callee(call, fn);
  // The callee's tree through definition_of: an incremental update drops the nodes of the functions it did
  // not re-read.
  if (!callee || !plainly_defined(ctx, *callee)) return "";
  if (!callee_is_certain(ctx, call, fn, *callee)) return "";
  auto accepted = keyword_parameters(ctx, *callee);
  if (!accepted) return "";
  for (TSNode keyword : keywords) {
    const std::string name = ctx.text(field(keyword, "name"));
    if (std::find(accepted->begin(), accepted->end(), name) != accepted->end()) continue;
    return "`" + callee->qualified_name + "` takes no parameter `" + name +
           "`: Dynamo fails to bind the arguments when inlining it and breaks the graph here (failed to bind "
           "arguments when attempting to inline), before the `except TypeError` fallback runs.";
  }
  return "";
}

void check(RuleContext& ctx, const Visit& v) {
  // From torch 2.14 Dynamo raises the binding's TypeError inside the trace and follows the handler.
  if (ctx.torch >= TorchVersion{2, 14}) return;
  std::string message = site_message(ctx, v.node, v.function);
  if (message.empty()) return;
  // A break inside a try block makes Dynamo run the rest of the function eagerly: only the first site that
  // runs breaks.
  if (!first_site_in_function(v.function, v.node, [&](TSNode n) {
        return is_type(n, "call") && !site_message(ctx, n, v.function).empty();
      }))
    return;
  message += " Dynamo runs the rest of this function eagerly after a break inside a try block.";
  ctx.report(kInfo, node_range(v.node), std::move(message), v);
}

}  // namespace

const Rule& rule_GM613() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
