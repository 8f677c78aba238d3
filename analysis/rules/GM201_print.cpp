// GM201: `print` inside traced code.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM201",
    .name = "print-in-graph",
    .family = "side effects",
    .summary = "`print` inside compiled code",
    .explanation =
        "`print` writes to a stream, a side effect Dynamo cannot put in an FX graph. It breaks the graph, runs "
        "the print in Python, and starts a new graph after it.",
    .registry_id = "GB0059",
    .fix_summary =
        "The print is deferred: Dynamo is told (through `torch._dynamo.config.reorderable_logging_functions`) "
        "that `print` may run after the graph, with the same arguments and in the same order.",
    .example_bad = "print('norm', x.norm())",
    .example_good = "# print stays; graphmend registers it as reorderable so Dynamo defers it",
    .fixable = true,
};

void check(RuleContext& ctx, const Visit& v) {
  TSNode callee = unparenthesize(field(v.node, "function"));
  if (!is_type(callee, "identifier") || ctx.text(callee) != "print") return;
  if (ctx.model.qualified_name(callee)) return;  // an imported `print` is not the builtin
  if (ctx.model.is_deferred("print")) return;    // registered as reorderable: Dynamo runs it after the graph
  ctx.report(kInfo, node_range(v.node),
             "`print` is a side effect Dynamo cannot record in the graph: it breaks the graph here.", v);
}

}  // namespace

const Rule& rule_GM201() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
