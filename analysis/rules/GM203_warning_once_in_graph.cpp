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
    .fix_summary =
        "With literal arguments, or an f-string message over values Dynamo knows while tracing (sizes, config "
        "entries), the message is emitted when Dynamo traces the call (`torch._dynamo.comptime`), in any frame; "
        "eager runs call it as before.",
    .example_bad = "logger.warning_once('`use_cache=True` is incompatible with gradient checkpointing')",
    .example_good =
        "torch._dynamo.comptime.comptime(\n"
        "    lambda ctx: logger.warning_once('`use_cache=True` is incompatible with gradient checkpointing'),\n"
        "    lambda: logger.warning_once('`use_cache=True` is incompatible with gradient checkpointing'),\n"
        ")",
    .fixable = true,
    .fix_safety =
        "Safe with literal arguments, in any frame: `warning_once` emits a message once per process, and the fix "
        "emits it once when Dynamo traces the call (a retrace or recompile hits the logger's cache as a second "
        "call does); eager and non-strict torch.export runs call it as before. What moves: under torch.compile "
        "the record is emitted while tracing, before output the same graph produces earlier in program order, "
        "and a call whose graph then fails at run time has already emitted it. An f-string message over such "
        "values is built first into a local (`graphmend_message`) that the traced function reads: Dynamo guards "
        "on what it formats, so each distinct message is traced and emitted once, as in eager runs. With other "
        "arguments (a tensor's value in the message): deferred "
        "after the graph in the compile entry, skipped while compiling elsewhere (unsafe: no message under "
        "torch.compile).",
};

void check(RuleContext& ctx, const Visit& v) {
  TSNode callee = unparenthesize(field(v.node, "function"));
  if (!is_type(callee, "attribute")) return;
  std::string method = ctx.text(field(callee, "attribute"));
  if (method != "warning_once" && method != "info_once" && method != "warning_advice") return;
  if (!is_logger_expression(ctx, field(callee, "object"))) return;
  ctx.report(kInfo, node_range(v.node),
             "`" + ctx.text(callee) +
                 "` is a cached logging side effect Dynamo does not trace: it breaks the graph "
                 "here.",
             v);
}

}  // namespace

const Rule& rule_GM203() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
