// GM606: calling a function decorated with `@torch.compiler.disable` from traced code.
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

void check(RuleContext& ctx, const Visit& v) {
  const FunctionInfo* callee = ctx.model.resolve_callee(v.node, v.function);
  // Aliases (`@_disable`) are resolved by the model (SemanticModel::is_dynamo_disabled), at construction: an
  // incremental update re-reads only the edited function, so the rule must not read other functions' trees.
  if (!callee || !ctx.model.is_dynamo_disabled(*callee) || ctx.model.runs_as_operator(*callee)) return;
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
