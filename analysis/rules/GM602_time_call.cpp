// GM602: `time.*` calls inside traced code.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM602",
    .name = "time-call",
    .family = "unsupported Python",
    .summary = "`time.*` call inside compiled code",
    .explanation =
        "Clock reads and sleeps are side effects with results that change every call: Dynamo cannot bake them into "
        "a graph and breaks it.",
    .registry_id = "GB0007",
    .fix_summary = "No automatic fix: time outside the compiled region (or with torch.profiler).",
    .example_bad = "t0 = time.perf_counter()",
    .example_good = "# measure around the compiled call instead",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  std::string q = callee_qualified(ctx, v.node);
  if (!q.starts_with("time.")) return;
  // From torch 2.15 clock reads are "Call to a time function" (GB9193); time.sleep stays a skipped function.
  std::string_view id = ctx.torch >= TorchVersion{2, 15} && q != "time.sleep" ? "GB9193" : "GB0007";
  ctx.report(kInfo, node_range(v.node), "`" + q + "` is not traced by Dynamo: it breaks the graph here.", v, id);
}

}  // namespace

const Rule& rule_GM602() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
