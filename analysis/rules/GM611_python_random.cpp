// GM611: functions of Python's `random` module inside traced code.
#include <algorithm>
#include <array>
#include <string_view>

#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM611",
    .name = "python-random",
    .family = "unsupported Python",
    .summary = "Python `random.*` call inside compiled code",
    .explanation =
        "Dynamo replays only `random.randint`, `random.randrange` and `random.uniform` (with constant "
        "arguments) as graph inputs. Every other function of Python's `random` module (`random.random`, "
        "`choice`, `choices`, `shuffle`, `sample`, `gauss`, `seed`, ...) is a function it marks as skipped: "
        "calling one breaks the graph (Attempted to call function marked as skipped). Checked on torch 2.13.",
    .registry_id = "GB0007",
    .fix_summary =
        "No automatic fix: drawing from torch's generator instead (`torch.rand`, `torch.randint`, "
        "`torch.randperm`) changes the random stream; draw the Python value outside the compiled region "
        "and pass it in, or use `random.uniform`/`random.randint`, which Dynamo traces.",
    .example_bad = "if random.random() < self.drop_prob:\n    return x",
    .example_good = "if random.uniform(0, 1) < self.drop_prob:  # traced: a graph input\n    return x",
    .fixable = false,
};

// The functions of the `random` module that Dynamo 2.13 does not trace (each checked). randint,
// randrange and uniform are traced (a graph input drawn at run time) and are left out.
constexpr std::array<std::string_view, 20> kSkipped{
    "random",       "choice",        "choices",        "shuffle",        "sample",
    "gauss",        "normalvariate", "lognormvariate", "expovariate",    "vonmisesvariate",
    "gammavariate", "betavariate",   "paretovariate",  "weibullvariate", "triangular",
    "getrandbits",  "randbytes",     "seed",           "getstate",       "setstate",
};

void check(RuleContext& ctx, const Visit& v) {
  const std::string q = callee_qualified(ctx, v.node);
  if (!q.starts_with("random.")) return;
  const std::string_view function = std::string_view(q).substr(std::string_view("random.").size());
  if (std::find(kSkipped.begin(), kSkipped.end(), function) == kSkipped.end()) return;
  // `def f(random): random.choice(...)`: not the module.
  if (callee_shadowed(ctx, v.node, v.function)) return;
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
