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
        "of the local that holds it (`adj = adj.coalesce()` reads it on the right), and where a function that "
        "returns one is called: a function of the file, or of another checked file through the workspace pass "
        "(torch_geometric's `to_torch_coo_tensor`, which binds its result again with `adj._coalesced_(True)`: "
        "`coalesce`, `_coalesced_`, `t`, `clone` and `detach` of a sparse tensor are sparse). Checked on torch 2.13 "
        "and 2.15.",
    .registry_id = "GB0277",
    .fix_summary =
        "No automatic fix: build the sparse tensor outside the compiled region and pass it in (it is then "
        "run eagerly where it is used), or keep the computation dense.",
    .example_bad = "adj = torch.sparse_coo_tensor(index, weight, (n, n))\nout = torch.sparse.mm(adj, x)",
    .example_good = "adj = torch.zeros(n, n).index_put_(tuple(index), weight, accumulate=True)\nout = adj @ x",
    .fixable = false,
};

// What makes `call` a sparse tensor and how Dynamo breaks on it; empty when it makes none.
std::string creation_break(RuleContext& ctx, TSNode call, const FunctionInfo& fn) {
  const std::string method = tensor_method(ctx, call, fn);
  if (!method.empty()) {
    if (!is_sparse_conversion(method)) return "";
    return "`." + method +
           "()` makes a sparse tensor, which torch.compile does not support: Dynamo breaks the graph here "
           "(Attempted to wrap sparse Tensor with VariableTracker).";
  }
  const std::string q = callee_qualified(ctx, call);
  const std::string_view why = sparse_constructor_break(q);
  if (why.empty() || callee_shadowed(ctx, call, fn)) return "";
  return "`" + q + "` creates a sparse tensor, " + std::string(why) + ": it breaks the graph here.";
}

// `node` is the identifier `name` used as a value: not an attribute's name (`x.adj`) nor a keyword's (`adj=`).
bool reads_name(const Document& document, TSNode node, const std::string& name) {
  if (!is_type(node, "identifier") || document.node_text(node) != name) return false;
  TSNode parent = ts_node_parent(node);
  if (is_type(parent, "attribute") && !ts_node_eq(field(parent, "object"), node)) return false;
  return !(is_type(parent, "keyword_argument") && ts_node_eq(field(parent, "name"), node));
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
    if (ts_node_start_byte(node) < after || !reads_name(document, node, name)) return Walk::Descend;
    TSNode parent = ts_node_parent(node);
    if (!(is_type(parent, "assignment") && ts_node_eq(field(parent, "left"), node))) {
      found = node;
      return Walk::Stop;
    }
    // Bound again: `adj = adj.coalesce()` reads it first, on the right.
    walk_preorder(field(parent, "right"), [&](TSNode inner) {
      if (!reads_name(document, inner, name)) return Walk::Descend;
      found = inner;
      return Walk::Stop;
    });
    return Walk::Stop;
  });
  return found;
}

void check(RuleContext& ctx, const Visit& v) {
  std::string why = creation_break(ctx, v.node, v.function);
  if (!why.empty()) {
    ctx.report(kInfo, node_range(v.node), std::move(why), v);
  } else {
    // A call of a function that returns a sparse tensor (of this file, or of another checked one by the
    // workspace pass): Dynamo wraps what it returns here.
    const FunctionInfo* callee = ctx.model.resolve_callee(v.node, v.function);
    const bool local = callee && callee != &v.function && ctx.model.returns_sparse(*callee);
    if (!local && !ctx.model.calls_imported_sparse_return(v.node)) return;
    ctx.report(kInfo, node_range(v.node),
               "`" + (local ? callee->name : ctx.text(field(v.node, "function"))) +
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
