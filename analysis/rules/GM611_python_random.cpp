// GM611: functions of Python's `random` module inside traced code.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM611",
    .name = "python-random",
    .family = "unsupported Python",
    .summary = "Python `random.*` call inside compiled code",
    .explanation =
        "Dynamo replays `random.randint`, `random.randrange` and `random.uniform` (from torch 2.14 also "
        "`random.random`) as graph inputs drawn at run time, and from 2.14 traces `shuffle`, `sample` and "
        "`seed`. Every other function of Python's `random` module (`choice`, `choices`, `gauss`, `getstate`, "
        "..., and before 2.14 `random`, `shuffle`, `sample`, `seed`) is a function it marks as skipped: "
        "calling one breaks the graph (Attempted to call function marked as skipped). Checked on torch 2.13, "
        "2.14 and 2.15. A drawn value used as a Python number breaks later: GM614.",
    .registry_id = "GB0007",
    .fix_summary =
        "No automatic fix: drawing from torch's generator instead (`torch.rand`, `torch.randint`, "
        "`torch.randperm`) changes the random stream; draw the Python value outside the compiled region "
        "and pass it in, or use `random.uniform`/`random.randint`, which Dynamo traces.",
    .example_bad = "scale = random.choice(self.scales)",
    .example_good = "scale = random.choice(scales)  # in the eager caller\ny = compiled_model(x, scale)",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  // `def f(random): random.choice(...)` is not the module (random_call checks).
  if (random_call(ctx, v.node, v.function) != RandomCall::Skipped) return;
  const std::string q = callee_qualified(ctx, v.node);
  const std::string written = ctx.text(field(v.node, "function"));
  ctx.report(kInfo, node_range(v.node),
             "`" + written + "`" + (written == q ? "" : " (`" + q + "`)") +
                 " is a function Dynamo marks as skipped: it breaks the graph here (Attempted to call function "
                 "marked as skipped).",
             v);
}

}  // namespace

const Rule& rule_GM611() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
