// GM204: `warnings.warn` inside traced code.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM204",
    .name = "warnings-warn-in-graph",
    .family = "side effects",
    .summary = "`warnings.warn` inside compiled code",
    .explanation =
        "`warnings.warn` consults and mutates the warnings registry and writes to stderr: Dynamo does not trace "
        "it and breaks the graph.",
    .registry_id = "GB0007",
    .fix_summary = "The warning is deferred after the graph with the same message and category.",
    .example_bad = "warnings.warn('deprecated argument', FutureWarning)",
    .example_good = "# deferred after the graph",
    .fixable = true,
    .fix_safety =
        "As for GM202: deferred in the compile entry through a wrapper that passes `stacklevel + 1`, so the "
        "warnings filter sees the caller's file and line and shows it as often as before; refused when a "
        "statement after it prints, logs or may raise; elsewhere the only fix is the unsafe skip while "
        "compiling.",
};

void check(RuleContext& ctx, const Visit& v) {
  std::string q = callee_qualified(ctx, v.node);
  if (q != "warnings.warn" && q != "warnings.warn_explicit") return;
  // Registered as reorderable: Dynamo runs it after the graph.
  if (q == "warnings.warn" &&
      (ctx.model.is_deferred("warnings.warn") || ctx.model.is_deferred(ctx.text(field(v.node, "function")))))
    return;
  ctx.report(kInfo, node_range(v.node),
             "`warnings.warn` is a side effect Dynamo does not trace: it breaks the graph here.", v);
}

}  // namespace

const Rule& rule_GM204() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
