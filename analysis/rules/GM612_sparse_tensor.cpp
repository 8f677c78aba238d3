// GM612: creating a sparse tensor, or turning a dense one sparse, inside traced code.
#include <algorithm>
#include <array>
#include <string>
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
        "`sparse_compressed_tensor` are refused (Sparse tensor creation not supported, GB0374). Where the graph "
        "resumes, the sparse value breaks again (Attempted to wrap sparse Tensor, GB0015): at the first read "
        "of the local that holds it, and where a function of the file that returns one is called. Checked on "
        "torch 2.13 and 2.15.",
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

// What makes `call` a sparse tensor and how Dynamo breaks on it; empty when it makes none.
std::string creation_break(RuleContext& ctx, TSNode call, const FunctionInfo& fn) {
  const std::string method = tensor_method(ctx, call, fn);
  if (!method.empty()) {
    if (std::find(kConversions.begin(), kConversions.end(), method) == kConversions.end()) return "";
    return "`." + method +
           "()` makes a sparse tensor, which torch.compile does not support: Dynamo breaks the graph here "
           "(Attempted to wrap sparse Tensor with VariableTracker).";
  }
  const std::string q = callee_qualified(ctx, call);
  if (!q.starts_with("torch.sparse_")) return "";
  auto it = std::find_if(kConstructors.begin(), kConstructors.end(), [&](const Constructor& c) { return c.name == q; });
  if (it == kConstructors.end() || callee_shadowed(ctx, call, fn)) return "";
  return "`" + q + "` creates a sparse tensor, " + std::string(it->why) + ": it breaks the graph here.";
}

bool makes_sparse(RuleContext& ctx, TSNode expr, const FunctionInfo& fn, int depth);

// A function of this file each of whose returns gives a sparse tensor it made (`return adj` after
// `adj = torch.sparse_csr_tensor(...)`, torch_geometric's to_torch_csr_tensor).
bool returns_sparse(RuleContext& ctx, const FunctionInfo& fn, int depth) {
  bool any = false;
  for (TSNode node : fn.body_nodes) {
    if (!is_type(node, "return_statement")) continue;
    TSNode value = named_child(node, 0);
    if (ts_node_is_null(value) || !makes_sparse(ctx, value, fn, depth + 1)) return false;
    any = true;
  }
  return any;
}

// A sparse creation, a call of a function that returns one, or a local only ever assigned one of these.
bool makes_sparse(RuleContext& ctx, TSNode expr, const FunctionInfo& fn, int depth) {
  expr = unparenthesize(expr);
  if (depth > 4) return false;
  if (is_type(expr, "call")) {
    if (!creation_break(ctx, expr, fn).empty()) return true;
    const FunctionInfo* callee = ctx.model.resolve_callee(expr, fn);
    return callee && callee != &fn && returns_sparse(ctx, *callee, depth);
  }
  if (!is_type(expr, "identifier")) return false;
  const std::string name = ctx.text(expr);
  if (std::find(fn.params.begin(), fn.params.end(), name) != fn.params.end()) return false;
  auto it = fn.assignments.find(name);
  if (it == fn.assignments.end() || it->second.empty()) return false;
  return std::all_of(it->second.begin(), it->second.end(), [&](TSNode value) {
    return !ts_node_is_null(value) && is_type(unparenthesize(value), "call") && makes_sparse(ctx, value, fn, depth + 1);
  });
}

// The first read of `name` after byte `after` in the function's body (nested definitions left out), or a
// null node when the name is bound again first.
TSNode first_read_after(const FunctionInfo& fn, const Document& document, const std::string& name, uint32_t after) {
  TSNode found{};
  walk_preorder(fn.node, [&](TSNode node) {
    const auto t = type_of(node);
    if (ts_node_end_byte(node) <= after) return Walk::Skip;
    if ((t == "function_definition" || t == "class_definition" || t == "lambda") && !ts_node_eq(node, fn.node))
      return Walk::Skip;
    if (t != "identifier" || ts_node_start_byte(node) < after || document.node_text(node) != name) return Walk::Descend;
    TSNode parent = ts_node_parent(node);
    if (is_type(parent, "attribute") && !ts_node_eq(field(parent, "object"), node)) return Walk::Descend;
    if (is_type(parent, "keyword_argument") && ts_node_eq(field(parent, "name"), node)) return Walk::Descend;
    if (!(is_type(parent, "assignment") && ts_node_eq(field(parent, "left"), node))) found = node;
    return Walk::Stop;
  });
  return found;
}

void check(RuleContext& ctx, const Visit& v) {
  std::string why = creation_break(ctx, v.node, v.function);
  if (!why.empty()) {
    ctx.report(kInfo, node_range(v.node), std::move(why), v);
  } else {
    // A call of a function of this file that returns a sparse tensor: Dynamo wraps what it returns here.
    const FunctionInfo* callee = ctx.model.resolve_callee(v.node, v.function);
    if (!callee || callee == &v.function || !returns_sparse(ctx, *callee, 0)) return;
    ctx.report(kInfo, node_range(v.node),
               "`" + callee->name +
                   "` returns a sparse tensor, which torch.compile does not support: Dynamo breaks the graph here "
                   "when it wraps it (Attempted to wrap sparse Tensor).",
               v, "GB0015");
  }
  // `adj = <sparse>`: where the graph resumes, Dynamo wraps the sparse local at its first read and breaks again.
  TSNode parent = v.ancestor(0);
  if (!is_type(parent, "assignment") || !is_type(field(parent, "left"), "identifier") ||
      !ts_node_eq(unparenthesize(field(parent, "right")), v.node))
    return;
  const std::string name = ctx.text(field(parent, "left"));
  TSNode read = first_read_after(v.function, ctx.document, name, ts_node_end_byte(parent));
  if (ts_node_is_null(read)) return;
  ctx.report(kInfo, node_range(read),
             "`" + name + "` holds the sparse tensor made on line " +
                 std::to_string(ts_node_start_point(parent).row + 1) +
                 ": where the graph resumes after that break, Dynamo breaks again when it wraps it (Attempted to "
                 "wrap sparse Tensor).",
             v, "GB0015");
}

}  // namespace

const Rule& rule_GM612() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
