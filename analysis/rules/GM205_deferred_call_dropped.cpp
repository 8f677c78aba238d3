// GM205: a call registered in torch._dynamo.config.reorderable_logging_functions, made in a frame Dynamo
// inlines: not a graph break, but under torch.compile the call never happens.
#include <string>

#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM205",
    .name = "deferred-call-dropped",
    .family = "side effects",
    .summary = "Deferred logging call in an inlined frame: dropped under torch.compile",
    .explanation =
        "Not a graph break, a lost side effect. A function registered with "
        "`torch._dynamo.config.reorderable_logging_functions.add(f)` (`print`, `warnings.warn`, "
        "`logging.warning`, a module-level wrapper, and from torch 2.14 a bound logger method such as "
        "`logger.info`) is not traced: Dynamo records the call and runs it after the graph. It does so only "
        "for the frame it compiles as the root; a call made in a frame it inlines (a helper called from the "
        "compiled function, a submodule's `forward` called by its parent, a method called through `self`) is "
        "recorded on that frame and never emitted: no output, no log record, no warning, and no graph break "
        "to point at it. graphmend reports such calls in functions that traced code of the file calls, and "
        "in traced functions that are not compile entries. Checked on torch 2.13, 2.14 and 2.15 (before "
        "2.14 a bound logger method is not accepted and breaks the graph instead: GM202).",
    .registry_id = "",
    .fix_summary =
        "No automatic fix: make the call in the root frame (return what to print and print it in the compiled "
        "function), or wrap it in a function Dynamo does not inline (`@torch.compiler.disable`, which breaks "
        "the graph there but keeps the output).",
    .example_bad =
        "torch._dynamo.config.reorderable_logging_functions.add(print)\n"
        "def helper(x):\n    print('norm', x.norm())  # called from the compiled forward: dropped\n    return x",
    .example_good =
        "def forward(self, x):\n    y = helper(x)\n    print('norm', x.norm())  # the root frame: printed\n",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  TSNode callee = unparenthesize(field(v.node, "function"));
  const std::string name = ctx.text(callee);
  // A bound logger method (`logger.info`) is deferred from 2.14; before, it breaks (GM202).
  if (!deferred_by_dynamo(ctx, callee)) return;
  // Keyword arguments (`print(..., file=f)`) make the call unreorderable: a break (GM201), not a drop.
  for (TSNode arg : named_children(field(v.node, "arguments")))
    if (is_type(arg, "keyword_argument")) return;
  const FunctionInfo* frame = &v.function;
  if (!frame_inlined(ctx, *frame)) return;
  ctx.report(kInfo, node_range(v.node),
             "`" + name + "` is registered in torch._dynamo.config.reorderable_logging_functions, but `" +
                 frame->qualified_name +
                 "` runs in a frame Dynamo inlines into its caller: the deferred call is dropped, so under "
                 "torch.compile it never happens (no output, no graph break).",
             v);
}

}  // namespace

const Rule& rule_GM205() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
