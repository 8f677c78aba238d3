// GM501: indexing a tensor with a boolean mask (`x[mask]`): the result's shape depends on data.
#include <algorithm>

#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM501",
    .name = "boolean-mask-index",
    .family = "data-dependent shapes",
    .summary = "Boolean-mask indexing `x[mask]`",
    .explanation =
        "`x[mask]` keeps the elements where the mask is true: how many depends on the mask's values. With "
        "`capture_dynamic_output_shape_ops=False` (the default) Dynamo breaks the graph at such an operator.",
    .registry_id = "GB0036",
    .fix_summary =
        "When the selection only feeds a reduction (`x[m].sum()`, `.mean()`, `.amax()`, a count), it becomes a "
        "dense form: `torch.where(m, x, 0).sum()` and friends.",
    .example_bad = "total = x[x > 0].sum()",
    .example_good = "total = torch.where(x > 0, x, 0).sum()",
    .fixable = true,
    .fix_safety =
        "Always unsafe: the dense reduction adds the same numbers in another order, so a float result can "
        "differ in the last bits; the mask must be computed element-wise from the selected tensor, and "
        "`.mean()` needs a floating tensor (the masked mean of an integer tensor raises in the original).",
};

void check(RuleContext& ctx, const Visit& v) {
  // Stores through a mask (`x[m] = 0`) keep static shapes; only reads break (`x[m] += 1` reads first).
  TSNode parent = v.ancestor(0);
  if (is_type(parent, "assignment") && ts_node_eq(field(parent, "left"), v.node)) return;
  if (ctx.model.kind_of(field(v.node, "value"), v.function) != ValueKind::Tensor) return;
  // The mask may stand in any index position: `x[mask]`, `x[:, mask]`, `x[..., mask]`.
  const std::vector<TSNode> parts = named_children(v.node);
  if (std::none_of(parts.begin() + (parts.empty() ? 0 : 1), parts.end(), [&](TSNode index) {
        // Slices, `...`, None and integers are never masks: skip the proof for them.
        const std::string_view t = type_of(index);
        return t != "slice" && t != "ellipsis" && t != "none" && t != "integer" && t != "comment" &&
               is_bool_tensor(ctx, index, v.function);
      }))
    return;
  ctx.report(kInfo, node_range(v.node),
             "Indexing with a boolean mask gives a result whose size depends on the mask's values: Dynamo breaks "
             "the graph here (Dynamic shape operator).",
             v);
}

}  // namespace

const Rule& rule_GM501() {
  static const Rule rule{&kInfo, {"subscript"}, check};
  return rule;
}

}  // namespace graphmend
