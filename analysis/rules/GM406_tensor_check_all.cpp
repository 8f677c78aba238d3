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
        "No automatic fix: the exception class and message of the check would change. `torch._assert_async(cond)` "
        "keeps the test in the graph (it raises a RuntimeError when the device runs it), or check Python values "
        "(sizes) with `torch._check`.",
    .example_bad = "torch._check_tensor_all(lengths.sum() == seq_len)",
    .example_good = "torch._assert_async(lengths.sum() == seq_len)",
    .fixable = false,
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
