// GM610: packing and unpacking padded sequences (torch.nn.utils.rnn) inside traced code.
#include <algorithm>
#include <array>
#include <string_view>

#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM610",
    .name = "packed-sequence",
    .family = "unsupported torch features",
    .summary = "`pack_padded_sequence` and friends inside compiled code",
    .explanation =
        "Dynamo marks `torch.nn.utils.rnn.pack_padded_sequence` and `pad_packed_sequence` as skipped, and "
        "`pack_sequence`/`unpack_sequence` call them: each of these calls breaks the graph (Attempted to "
        "call function marked as skipped). `pad_sequence` is traced. Checked on torch 2.13.",
    .registry_id = "GB0007",
    .fix_summary =
        "No automatic fix: pack outside the compiled region, or run the recurrent layer on the padded batch "
        "and mask the padding (`pad_sequence` plus a length mask), which changes what the layer computes on "
        "padded steps.",
    .example_bad = "packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)",
    .example_good = "# pack outside the compiled function, or keep the padded batch and mask by lengths",
    .fixable = false,
};

// Each function, with why Dynamo breaks at its call.
struct Skipped {
  std::string_view name;
  std::string_view why;
};
constexpr std::array<Skipped, 4> kSkipped{{
    {"torch.nn.utils.rnn.pack_padded_sequence", "is a function Dynamo marks as skipped"},
    {"torch.nn.utils.rnn.pad_packed_sequence", "is a function Dynamo marks as skipped"},
    {"torch.nn.utils.rnn.pack_sequence", "calls pack_padded_sequence, which Dynamo marks as skipped"},
    {"torch.nn.utils.rnn.unpack_sequence", "calls pad_packed_sequence, which Dynamo marks as skipped"},
}};

void check(RuleContext& ctx, const Visit& v) {
  const std::string q = callee_qualified(ctx, v.node);
  if (!q.starts_with("torch.nn.utils.rnn.")) return;
  auto it = std::find_if(kSkipped.begin(), kSkipped.end(), [&](const Skipped& s) { return s.name == q; });
  if (it == kSkipped.end() || callee_shadowed(ctx, v.node, v.function)) return;
  const std::string_view name = std::string_view(q).substr(q.rfind('.') + 1);
  ctx.report(kInfo, node_range(v.node),
             "`" + std::string(name) + "` " + std::string(it->why) +
                 ": it breaks the graph here (Attempted to call function marked as skipped).",
             v);
}

}  // namespace

const Rule& rule_GM610() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
