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
        "The print becomes `torch._higher_order_ops.print(format, *args)`, an op that runs inside the graph in "
        "program order and prints the same text in eager runs.",
    .example_bad = "print('norm', x.norm())",
    .example_good = "torch._higher_order_ops.print(\"norm {!s}\", x.norm())",
    .fixable = true,
    .fix_safety =
        "Safe: strings, numbers and sizes printed in the function torch.compile compiles, when every statement "
        "after the print is pure and total: the same text, in program order, eager and compiled. Unsafe: in a "
        "frame Dynamo may inline (a module's forward, a helper), or before a statement that may fail, a graph "
        "that fails after the print never prints, where the original printed at its break; a tensor argument "
        "prints without its `grad_fn=` under aot_eager and inductor. Refused: `file=`, `flush=`, an `end=` "
        "other than a newline, `*args`, arguments that are not tensors, numbers, shapes or string literals.",
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
