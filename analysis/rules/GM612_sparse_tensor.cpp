// GM612: creating a sparse tensor, or turning a dense one sparse, inside traced code.
#include <algorithm>
#include <array>
#include <string_view>

#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM612",
    .name = "sparse-tensor",
    .family = "unsupported torch features",
    .summary = "Sparse tensor created inside compiled code",
    .explanation =
        "torch.compile does not support sparse tensors: `x.to_sparse()` and the other `to_sparse_*` "
        "conversions break the graph when Dynamo wraps their result (Attempted to wrap sparse Tensor with "
        "VariableTracker, GB0277), `torch.sparse_coo_tensor` is a function it marks as skipped (GB0007), and "
        "`torch.sparse_csr_tensor`, `sparse_csc_tensor`, `sparse_bsr_tensor`, `sparse_bsc_tensor` and "
        "`sparse_compressed_tensor` are refused (Sparse tensor creation not supported, GB0374). A later use "
        "of the sparse value breaks again (Attempted to wrap sparse Tensor, GB0015). Checked on torch 2.13.",
    .registry_id = "GB0277",
    .fix_summary =
        "No automatic fix: build the sparse tensor outside the compiled region and pass it in (it is then "
        "run eagerly where it is used), or keep the computation dense.",
    .example_bad = "adj = torch.sparse_coo_tensor(index, weight, (n, n))\nout = torch.sparse.mm(adj, x)",
    .example_good = "adj = torch.zeros(n, n).index_put_(tuple(index), weight, accumulate=True)\nout = adj @ x",
    .fixable = false,
};

constexpr std::array<std::string_view, 6> kConversions{
    "to_sparse", "to_sparse_coo", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr", "to_sparse_bsc",
};

// Constructors, with the break Dynamo takes at each.
struct Constructor {
  std::string_view name;
  std::string_view why;
};
constexpr std::array<Constructor, 6> kConstructors{{
    {"torch.sparse_coo_tensor", "a function Dynamo marks as skipped (GB0007)"},
    {"torch.sparse_csr_tensor", "refused by Dynamo (Sparse tensor creation not supported, GB0374)"},
    {"torch.sparse_csc_tensor", "refused by Dynamo (Sparse tensor creation not supported, GB0374)"},
    {"torch.sparse_bsr_tensor", "refused by Dynamo (Sparse tensor creation not supported, GB0374)"},
    {"torch.sparse_bsc_tensor", "refused by Dynamo (Sparse tensor creation not supported, GB0374)"},
    {"torch.sparse_compressed_tensor", "refused by Dynamo (Sparse tensor creation not supported, GB0374)"},
}};

void check(RuleContext& ctx, const Visit& v) {
  const std::string method = tensor_method(ctx, v.node, v.function);
  if (!method.empty()) {
    if (std::find(kConversions.begin(), kConversions.end(), method) == kConversions.end()) return;
    ctx.report(kInfo, node_range(v.node),
               "`." + method +
                   "()` makes a sparse tensor, which torch.compile does not support: Dynamo breaks the graph "
                   "here (Attempted to wrap sparse Tensor with VariableTracker).",
               v);
    return;
  }
  const std::string q = callee_qualified(ctx, v.node);
  if (!q.starts_with("torch.sparse_")) return;
  auto it = std::find_if(kConstructors.begin(), kConstructors.end(), [&](const Constructor& c) { return c.name == q; });
  if (it == kConstructors.end() || callee_shadowed(ctx, v.node, v.function)) return;
  ctx.report(kInfo, node_range(v.node),
             "`" + q + "` creates a sparse tensor, " + std::string(it->why) + ": it breaks the graph here.", v);
}

}  // namespace

const Rule& rule_GM612() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
