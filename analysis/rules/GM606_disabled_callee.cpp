// GM606: calling a function decorated with `@torch.compiler.disable` from traced code.
#include <sstream>
#include <string_view>

#include "graphmend/analysis/module_bindings.h"
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM606",
    .name = "disabled-callee",
    .family = "unsupported Python",
    .summary = "Call of a `@torch.compiler.disable` function",
    .explanation =
        "Dynamo never traces into a function marked with `torch.compiler.disable` (or `torch._dynamo.disable`, "
        "also through a module-level alias such as `_disable = getattr(torch.compiler, \"disable\", None) or "
        "torch._dynamo.disable`): calling it from compiled code breaks the graph before and after the call.",
    .registry_id = "GB0098",
    .fix_summary = "No automatic fix: remove the decorator if the function is traceable, or call it outside.",
    .example_bad = "@torch.compiler.disable\ndef debug_hook(x): ...\n...\ndebug_hook(x)",
    .example_good = "# call debug_hook outside the compiled region",
    .fixable = false,
};

// Whether the module binds `name` to torch.compiler.disable through an alias (module_bindings.h), worked
// out once per file (the model's memo, cleared when the file changes).
bool is_disable_alias(const RuleContext& ctx, std::string_view name) {
  auto& memo = ctx.model.memo();
  auto [it, added] = memo.try_emplace("GM606:disable-aliases");
  if (added) {
    auto aliases = dynamo_disable_aliases(ctx.document, [&](TSNode n) { return ctx.model.qualified_name(n); });
    for (const std::string& alias : aliases) it->second += alias + "\n";
  }
  std::istringstream lines(it->second);
  for (std::string line; std::getline(lines, line);) {
    if (line == name) return true;
  }
  return false;
}

// `@_disable` or `@_disable(recursive=True)` with `_disable = torch.compiler.disable` (or `getattr(...) or
// torch._dynamo.disable`) at module level. SemanticModel::is_dynamo_disabled knows only the imported names.
bool decorated_with_disable_alias(const RuleContext& ctx, const FunctionInfo& fn) {
  if (ts_node_is_null(fn.node)) return false;
  TSNode decorated = ts_node_parent(fn.node);
  if (!is_type(decorated, "decorated_definition")) return false;
  for (TSNode decorator : named_children(decorated)) {
    if (!is_type(decorator, "decorator")) continue;
    TSNode expr = ts_node_named_child(decorator, 0);
    if (is_type(expr, "call")) expr = field(expr, "function");
    if (is_type(expr, "identifier") && !ctx.model.qualified_name(expr) && is_disable_alias(ctx, ctx.text(expr)))
      return true;
  }
  return false;
}

void check(RuleContext& ctx, const Visit& v) {
  const FunctionInfo* callee = ctx.model.resolve_callee(v.node, v.function);
  if (!callee || !(ctx.model.is_dynamo_disabled(*callee) || decorated_with_disable_alias(ctx, *callee))) return;
  ctx.report(kInfo, node_range(v.node),
             "`" + callee->name +
                 "` is marked with torch.compiler.disable: Dynamo skips it and breaks the graph "
                 "here (Skip calling torch.compiler.disable()d function).",
             v);
}

}  // namespace

const Rule& rule_GM606() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
