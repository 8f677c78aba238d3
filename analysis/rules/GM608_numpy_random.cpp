// GM608: NumPy's random functions inside traced code.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM608",
    .name = "numpy-random",
    .family = "unsupported Python",
    .summary = "`np.random.*` call inside compiled code",
    .explanation =
        "Dynamo traces NumPy calls as tensor ops, but not NumPy's random number generator: with "
        "`torch._dynamo.config.use_numpy_random_stream = False` (the default) `np.random.rand`, `choice` and "
        "the like break the graph (Data dependent operator), and functions without a torch._numpy counterpart "
        "(`permutation`) break it too. Checked on torch 2.13.",
    .registry_id = "GB0033",
    .fix_summary =
        "No automatic fix: drawing from torch's generator instead (`torch.rand`, `torch.randperm`, "
        "`torch.multinomial`) changes the random stream.",
    .example_bad = "idx = np.random.choice(np.arange(n), k, replace=False)",
    .example_good = "idx = torch.randperm(n, device=x.device)[:k]",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  const std::string q = callee_qualified(ctx, v.node);
  if (!q.starts_with("numpy.random.")) return;
  ctx.report(kInfo, node_range(v.node),
             "`" + ctx.text(field(v.node, "function")) +
                 "` draws from NumPy's random generator, which Dynamo does not trace: it breaks "
                 "the graph here.",
             v);
}

}  // namespace

const Rule& rule_GM608() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
