// GM203: Hugging Face `logger.warning_once` / `logger.info_once` inside traced code.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM203",
    .name = "warning-once-in-graph",
    .family = "side effects",
    .summary = "Hugging Face `logger.warning_once` inside compiled code",
    .explanation =
        "`warning_once` is an `lru_cache`-wrapped logger call in transformers: a cache and a logging side effect "
        "that Dynamo does not trace, so it breaks the graph.",
    .registry_id = "GB0291",
    .fix_summary = "The call is deferred after the graph, keeping its once-only behaviour.",
    .example_bad = "logger.warning_once('`use_cache=True` is incompatible with gradient checkpointing')",
    .example_good = "# deferred after the graph",
    .fixable = true,
    .fix_safety =
        "As for GM202: deferred in the compile entry (once-only behaviour kept by the logger's own cache), "
        "skipped while compiling elsewhere (unsafe: no message under torch.compile).",
};

void check(RuleContext& ctx, const Visit& v) {
  TSNode callee = unparenthesize(field(v.node, "function"));
  if (!is_type(callee, "attribute")) return;
  std::string method = ctx.text(field(callee, "attribute"));
  if (method != "warning_once" && method != "info_once" && method != "warning_advice") return;
  if (!is_logger_expression(ctx, field(callee, "object"))) return;
  ctx.report(kInfo, node_range(v.node),
             "`" + ctx.text(callee) + "` is a cached logging side effect Dynamo does not trace: it breaks the graph "
             "here.",
             v);
}

}  // namespace

const Rule& rule_GM203() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
