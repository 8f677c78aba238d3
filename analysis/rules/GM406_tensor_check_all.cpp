// GM406: torch._check_tensor_all on a tensor condition.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM406",
    .name = "tensor-check-all",
    .family = "tensor to Python",
    .summary = "`torch._check_tensor_all(cond)` reads a tensor's value",
    .explanation =
        "`torch._check_tensor_all` and `torch._check_tensor_all_with` test `cond.all()` in Python to decide "
        "whether to raise, which reads the tensor's value: Dynamo breaks the graph there (Unsupported "
        "Tensor.item() call with capture_scalar_outputs=False). `torch._check` on a Python or symbolic bool "
        "and `torch._assert_async` on a tensor stay in the graph.",
    .registry_id = "GB0124",
    .fix_summary =
        "A safe fix: the call moves into a custom operator, defined once per process in the fixed file, whose "
        "body makes the very same call with the real tensor when the graph runs, so the check, its exception "
        "class and its message are torch's own, with no break where the graph wrote no state before it. The "
        "other arguments must be literals, a lambda returning one, or a class the module resolves.",
    .example_bad = "torch._check_tensor_all(lengths.sum() == seq_len)",
    .example_good =
        "@_graphmend_keep_state\n@_graphmend_check_op(\"check_tensor_all_5d2c0e9f41aa\")\n"
        "def _graphmend_check_tensor_all_5d2c0e9f41aa(test):\n    torch._check_tensor_all(test)\n"
        "...\n_graphmend_check_tensor_all_5d2c0e9f41aa(lengths.sum() == seq_len)",
    .fixable = true,
    .fix_safety =
        "Safe: torch's own check runs inside the graph, with the same arguments, so what it raises is the "
        "original's by construction. The operator is raise-in-graph's (GM301): an ordered effect, never "
        "dropped, a name that changes with its body, and `@_graphmend_keep_state`, which breaks the graph at "
        "the call where the graph traced so far wrote state a raise inside it would lose (the original broke "
        "there). Refused when the check's value is used, inside a `try` with handlers or an `except`/`finally` "
        "block, for a condition not proven a tensor, and for a message that reads the function's values. A "
        "deployment with AOTInductor needs Python for the operator.",
};

void check(RuleContext& ctx, const Visit& v) {
  const std::string callee = callee_qualified(ctx, v.node);
  if (callee != "torch._check_tensor_all" && callee != "torch._check_tensor_all_with") return;
  ctx.report(kInfo, node_range(v.node),
             "`" + callee +
                 "` reads the condition tensor's value in Python to decide whether to raise: Dynamo breaks the "
                 "graph here (Unsupported Tensor.item() call with capture_scalar_outputs=False).",
             v);
}

}  // namespace

const Rule& rule_GM406() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
