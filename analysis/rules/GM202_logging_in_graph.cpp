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
    .fix_summary =
        "The record is emitted inside the graph by a custom operator (in the torch.compile entry: the "
        "call is deferred after the graph), with the same logger, level, message, arguments and order.",
    .example_bad = "logger.info('step on %d rows', x.size(0))",
    .example_good = "_graphmend_log_<hash>(torch.empty(0), x.size(0))  # same record, in the graph (not exporting)",
    .fixable = true,
    .fix_safety =
        "In frames Dynamo inlines (a module's forward, helpers) the fix is unsafe: the call becomes a custom operator "
        "(log-in-graph) that runs inside the graph, in program order, and emits the record through the "
        "logger's own isEnabledFor, makeRecord and handle: same logger, level, message, arguments, function, "
        "count and order, with the file and line of the operator's call (read from the module's code at "
        "import). Taken: literals, sizes (`x.size(1)`), an f-string message over Python values Dynamo knows; "
        "refused: tensor arguments (under compile an operator's input has no `grad_fn`, so its text would "
        "differ), keyword arguments (`exc_info`, `stack_info`, `extra`), `logger.exception`/`log`/`warn`, "
        "the root logger's module functions. The operator also takes `torch.empty(0)`, read by nothing "
        "(Inductor 2.13-2.15 miscompiles an effectful operator without tensor inputs at the end of a graph "
        "built for autograd). Only torch.compile runs the operator (`if torch.compiler.is_compiling() and not "
        "torch.compiler.is_exporting():`): eager runs make the original call, and so does torch.export, whose "
        "program then holds no Python operator and emits the record while exporting, as before. In the torch.compile "
        "entry function itself "
        "the call is deferred through a module-level wrapper registered in Dynamo's "
        "reorderable_logging_functions, which keeps the message, arguments, level, logger, the caller's file "
        "and line (`stacklevel=2`), the count and the order; refused when any statement after it prints, logs "
        "without deferral or may raise. The operator is unsafe because a graph that fails (an error met tracing "
        "or running a later operation) never emits the record, where the original emitted it at its break, "
        "before the error. Where it does not apply either, the unsafe fix skips the call while compiling, so "
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
