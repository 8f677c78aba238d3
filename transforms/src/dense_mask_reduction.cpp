// GM501: a reduction over a boolean-mask selection becomes a dense reduction:
//   x[m].sum()  -> torch.where(m, x, 0).sum()
//   x[m].mean() -> (torch.where(m, x, 0).sum() / m.sum())      (floating x only)
// Legal when the mask is computed element-wise from x alone (same shape as x). The dense sum adds the
// same numbers in another order, so the result can differ in the last bits: the fix is unsafe.
#include "support.h"
#include "transform.h"

namespace graphmend {
namespace {
using namespace fixes;

// The mask is built element-wise from `base` (comparisons with numbers, isnan/isfinite, ~, &, |).
bool elementwise_mask_of(const Document& doc, const SemanticModel& model, TSNode mask, const std::string& base,
                         const FunctionInfo& fn, int depth = 0) {
  mask = unparenthesize(mask);
  if (depth > 6) return false;
  auto t = type_of(mask);
  if (t == "comparison_operator") {
    bool has_base = false;
    for (uint32_t i = 0; i < ts_node_named_child_count(mask); ++i) {
      TSNode o = unparenthesize(ts_node_named_child(mask, i));
      if (is_type(o, "identifier") && text(doc, o) == base)
        has_base = true;
      else if (model.kind_of(o, fn) != ValueKind::Static)
        return false;
    }
    return has_base;
  }
  if (t == "unary_operator") return elementwise_mask_of(doc, model, field(mask, "argument"), base, fn, depth + 1);
  if (t == "binary_operator") {
    std::string op = text(doc, field(mask, "operator"));
    return (op == "&" || op == "|" || op == "^") &&
           elementwise_mask_of(doc, model, field(mask, "left"), base, fn, depth + 1) &&
           elementwise_mask_of(doc, model, field(mask, "right"), base, fn, depth + 1);
  }
  if (t == "call") {
    std::string callee = text(doc, field(mask, "function"));
    std::string last = callee.substr(callee.rfind('.') + 1);
    if (last != "isnan" && last != "isinf" && last != "isfinite" && last != "isneginf" && last != "isposinf" &&
        last != "logical_not" && last != "signbit")
      return false;
    TSNode args = field(mask, "arguments");
    if (named_child_count(args) == 1) return text(doc, named_child(args, 0)) == base;
    if (named_child_count(args) == 0 && is_type(field(mask, "function"), "attribute"))
      return text(doc, field(field(mask, "function"), "object")) == base;
    return false;
  }
  if (t == "identifier") {
    auto it = fn.assignments.find(text(doc, mask));
    if (it == fn.assignments.end() || it->second.size() != 1) return false;
    return elementwise_mask_of(doc, model, it->second[0], base, fn, depth + 1);
  }
  return false;
}

TransformResult apply(const TransformContext& ctx) {
  const Document& doc = ctx.document;
  TSNode sub = enclosing(doc, ctx.finding.range, {"subscript"});
  if (ts_node_is_null(sub)) return Refusal{"no subscript"};
  const FunctionInfo* fn = ctx.model.function_containing(sub);
  if (!fn) return Refusal{"not inside a function"};
  TSNode attr = ts_node_parent(sub);
  TSNode call = ts_node_parent(attr);
  if (!is_type(attr, "attribute") || !is_type(call, "call") || named_child_count(field(call, "arguments")) != 0)
    return Refusal{"the selection is used as a tensor of its own, not only reduced"};
  std::string reduction = text(doc, field(attr, "attribute"));
  if (reduction != "sum" && reduction != "mean") return Refusal{"only .sum() and .mean() have dense forms here"};
  TSNode base = unparenthesize(field(sub, "value"));
  TSNode mask = field(sub, "subscript");
  if (!is_type(base, "identifier")) return Refusal{"the selected tensor is not a plain variable"};
  std::string x = text(doc, base);
  if (!elementwise_mask_of(doc, ctx.model, mask, x, *fn))
    return Refusal{"cannot prove the mask has the shape of `" + x + "` (it must be computed element-wise from it)"};
  if (reduction == "mean" && !is_floating(doc, ctx.model, base, *fn))
    return Refusal{"`" + x + "` may be an integer tensor, whose masked mean raises in the original"};
  TorchName torch = torch_name(doc, ctx.model);
  if (auto why = why_torch_unusable(doc, ctx.model, fn, torch); !why.empty()) return Refusal{why};
  std::string m = text(doc, mask);
  std::string dense = torch.name + ".where(" + m + ", " + x + ", 0).sum()";
  if (reduction == "mean") dense = "(" + dense + " / (" + m + ").sum())";
  Fix fix;
  fix.applicability = Applicability::Unsafe;
  fix.title =
      "Reduce densely with torch.where instead of selecting with the mask (unsafe: the sum runs in another "
      "order and can differ in the last bits)";
  fix.edits.push_back({node_range(call), dense});
  if (torch.import_edit) fix.edits.push_back(*torch.import_edit);
  return fix;
}

}  // namespace

const Transform& transform_dense_mask_reduction() {
  static const Transform t{"dense-mask-reduction", {"GM501"}, apply};
  return t;
}

}  // namespace graphmend
