// GM506: operators whose output size is computed from the data: `bincount`, `repeat_interleave` with a
// tensor of repeats and no `output_size`, and custom operators whose fake (meta) implementation returns
// an unbacked size, such as torchvision's `nms`.
#include <algorithm>
#include <array>
#include <string_view>

#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM506",
    .name = "dynamic-output-op",
    .family = "data-dependent shapes",
    .summary = "An operator whose output size depends on the data (`bincount`, `repeat_interleave`, `nms`)",
    .explanation =
        "`torch.bincount(x)` returns `x.max() + 1` counts (at least `minlength`), `x.repeat_interleave(r)` as "
        "many rows as `r` sums to, and non-maximum suppression (`torch.ops.torchvision.nms`, "
        "`torchvision.ops.nms`, `batched_nms`) as many indices as boxes survive: the size is read from the data. "
        "With `capture_dynamic_output_shape_ops=False` (the default) Dynamo breaks the graph at such an "
        "operator (torchvision registers `nms` with an unbacked output size). `repeat_interleave` with "
        "`output_size=` given, or with an int of repeats, keeps a static size and does not break; an "
        "`output_size=` passed on from a parameter that defaults to None is reported, as a caller that gives "
        "none breaks.",
    .registry_id = "GB0036",
    .fix_summary =
        "No automatic fix: give `repeat_interleave` its `output_size=` when it is known; count with a "
        "fixed number of bins (`scatter_add_` into `zeros(num_bins)`); run NMS outside the "
        "compiled region or keep a fixed number of boxes (`topk`).",
    .example_bad = "counts = torch.bincount(labels, minlength=num_classes)",
    .example_good =
        "counts = torch.zeros(num_classes, dtype=torch.long).scatter_add_(0, labels, torch.ones_like(labels))",
    .fixable = false,
};

// Callees that always return a data-dependent size (qualified through the file's imports). Each is checked
// against Dynamo: the torch ones by tests/fixtures/rules/GM506_dynamic_output_op.py on every release CI
// runs, torchvision's by bench/libs (torch 2.14.1, torchvision 0.29.1), where its operators load.
constexpr std::array<std::string_view, 10> kAlwaysDynamic = {
    "torch.bincount",
    "torch.ops.torchvision.nms",
    "torch.ops.torchvision.nms.default",
    "torch.ops.torchvision.qnms",
    "torch.ops.torchvision.qnms.default",
    "torchvision.ops.nms",
    "torchvision.ops.batched_nms",
    "torchvision.ops.boxes.nms",
    "torchvision.ops.boxes.batched_nms",
    "torchvision.ops.boxes._batched_nms_vanilla",
};

bool has_keyword(const RuleContext& ctx, TSNode call, std::string_view name) {
  for (TSNode a : named_children(field(call, "arguments"))) {
    if (is_type(a, "keyword_argument") && ctx.document.node_text(field(a, "name")) == name) return true;
    if (is_type(a, "dictionary_splat")) return true;  // `**kwargs` may hold it
  }
  return false;
}

// `output_size=output_size` passing on a parameter of `fn` that defaults to None and is never bound again in
// the body: when its caller gives none, the size is read from the data (torch_geometric's ptr2index).
bool passes_optional_output_size(const RuleContext& ctx, TSNode call, const FunctionInfo& fn) {
  TSNode value{};
  for (TSNode a : named_children(field(call, "arguments"))) {
    if (is_type(a, "keyword_argument") && ctx.document.node_text(field(a, "name")) == "output_size")
      value = unparenthesize(field(a, "value"));
  }
  if (!is_type(value, "identifier")) return false;
  const std::string name = ctx.text(value);
  if (fn.assignments.count(name) || fn.binding_nodes.count(name)) return false;
  for (TSNode p : named_children(field(fn.node, "parameters"))) {
    if (!is_type(p, "default_parameter") && !is_type(p, "typed_default_parameter")) continue;
    if (ctx.document.node_text(field(p, "name")) == name) return is_type(field(p, "value"), "none");
  }
  return false;
}

std::vector<TSNode> positional(TSNode call) {
  std::vector<TSNode> args;
  for (TSNode a : named_children(field(call, "arguments"))) {
    if (is_type(a, "keyword_argument") || is_type(a, "comment") || is_type(a, "dictionary_splat")) continue;
    args.push_back(a);
  }
  return args;
}

void check(RuleContext& ctx, const Visit& v) {
  const std::string method = tensor_method(ctx, v.node, v.function);
  const std::string q = callee_qualified(ctx, v.node);
  std::string what;
  if (method == "bincount" || std::find(kAlwaysDynamic.begin(), kAlwaysDynamic.end(), q) != kAlwaysDynamic.end()) {
    if (!method.empty() || !callee_shadowed(ctx, v.node, v.function)) what = method.empty() ? q : "bincount";
  } else if ((method == "repeat_interleave" || q == "torch.repeat_interleave") &&
             (!has_keyword(ctx, v.node, "output_size") || passes_optional_output_size(ctx, v.node, v.function))) {
    // The repeats: `x.repeat_interleave(r)`, `torch.repeat_interleave(x, r)`, `torch.repeat_interleave(r)`.
    const std::vector<TSNode> args = positional(v.node);
    TSNode repeats{};
    if (!method.empty() && !args.empty()) repeats = args[0];
    if (method.empty() && args.size() == 2) repeats = args[1];
    if (method.empty() && args.size() == 1 && argument_count(v.node) == 1) repeats = args[0];
    if (!ts_node_is_null(repeats) && ctx.model.kind_of(repeats, v.function) == ValueKind::Tensor)
      what = "repeat_interleave";
  }
  if (what.empty()) return;
  std::string message = "`" + what +
                        "` returns a size read from the data: Dynamo breaks the graph here (Dynamic "
                        "shape operator).";
  if (what == "repeat_interleave" && has_keyword(ctx, v.node, "output_size"))
    message +=
        " Its `output_size=` is a parameter that defaults to None: a caller that gives none leaves the size "
        "to the data.";
  else if (what == "repeat_interleave")
    message += " Giving `output_size=` (the sum of the repeats, when known) keeps it in the graph.";
  ctx.report(kInfo, node_range(v.node), std::move(message), v);
}

}  // namespace

const Rule& rule_GM506() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
