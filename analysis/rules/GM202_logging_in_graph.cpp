// GM202: `logging` calls (`logger.info(...)`, `logging.warning(...)`) inside traced code.
#include <algorithm>
#include <array>

#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM202",
    .name = "logging-in-graph",
    .family = "side effects",
    .summary = "`logging` call inside compiled code",
    .explanation =
        "Logger methods have side effects (handlers, streams, files) that Dynamo does not trace: a call to "
        "`logger.info` and friends breaks the graph.",
    .registry_id = "GB0291",
    .fix_summary = "The call is deferred after the graph with the same arguments, order and logger.",
    .example_bad = "logger.info('step %d', step)",
    .example_good = "# deferred: registered with torch._dynamo.config.reorderable_logging_functions",
    .fixable = true,
    .fix_safety =
        "In the torch.compile entry function: the call is deferred through a module-level wrapper that keeps "
        "the message, arguments, level, logger, the caller's file and line (`stacklevel=2`), the count and "
        "the order; refused when any statement after it prints, logs without deferral or may raise (the "
        "deferred call would move past it, or be lost with the exception). Elsewhere (inlined frames, where "
        "Dynamo 2.13 drops deferred calls) the only fix is unsafe: the call is skipped while compiling, so "
        "under torch.compile the message is not emitted.",
};

constexpr std::array<std::string_view, 9> kMethods{"debug",     "info",     "warning", "warn", "error",
                                                   "exception", "critical", "fatal",   "log"};

void check(RuleContext& ctx, const Visit& v) {
  TSNode callee = unparenthesize(field(v.node, "function"));
  if (!is_type(callee, "attribute")) return;
  std::string method = ctx.text(field(callee, "attribute"));
  if (std::find(kMethods.begin(), kMethods.end(), method) == kMethods.end()) return;
  if (!is_logger_expression(ctx, field(callee, "object"))) return;
  // Registered as reorderable: runs after the graph (or is dropped in an inlined frame: GM205). A bound logger
  // method is accepted from torch 2.14; 2.13 takes only functions (`logging.warning`) and still breaks.
  if (deferred_by_dynamo(ctx, callee)) return;
  ctx.report(kInfo, node_range(v.node),
             "`" + ctx.text(callee) +
                 "` is a logging side effect Dynamo does not trace: it breaks the graph here "
                 "(logging.Logger method not supported).",
             v);
}

}  // namespace

const Rule& rule_GM202() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
