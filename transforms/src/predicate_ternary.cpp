// GM102: `a if t else b` on a tensor test becomes `torch.where(t, a, b)`.
#include "predicate.h"
#include "transform.h"

namespace graphmend {
namespace {
using namespace fixes;

TransformResult apply(const TransformContext& ctx) {
  const Document& doc = ctx.document;
  TSNode node = enclosing(doc, ctx.finding.range, {"conditional_expression"});
  if (ts_node_is_null(node) || named_child_count(node) < 3) return Refusal{"no conditional expression"};
  const FunctionInfo* fn = ctx.model.function_containing(node);
  if (!fn) return Refusal{"the expression is not inside a function"};
  TSNode a = named_child(node, 0), cond = named_child(node, 1), b = named_child(node, 2);
  // `.item()` in the test: selected on the exact comparison (#28 technique 4, predicate_text).
  if (ctx.finding.rule->code == "GM401" && !node_range(cond).contains(ctx.finding.range))
    return Refusal{"the `.item()` is not in the conditional expression's test", false};
  TorchName torch = torch_name(doc, ctx.model);
  std::string why;
  std::string predicate = predicate_text(doc, ctx.model, cond, *fn, torch.name, why);
  if (predicate.empty()) return Refusal{why};
  if (auto unusable = why_torch_unusable(doc, ctx.model, fn, torch); !unusable.empty()) return Refusal{unusable};
  // `y = a if t else b`: y becomes a new tensor, where the original may bind an input itself.
  if (TSNode parent = ts_node_parent(node);
      is_type(parent, "assignment") && is_type(field(parent, "left"), "identifier")) {
    if (auto written = why_written_in_place_after(doc, *fn, text(doc, field(parent, "left")), parent); !written.empty())
      return Refusal{written};
  }
  // #28 techniques 1 and 2 bind the test to a name first: statements, which an expression cannot hold.
  SelectCheck check = check_select(doc, ctx.model, *fn, {a, b}, node, established_by(doc, ctx.model, cond, *fn), false,
                                   torch.name, "", {},
                                   "not generated for conditional expressions, which cannot bind the test to a name "
                                   "(an if statement can)");
  if (!check.refusal.empty()) {
    SharedTestValue shared = shared_test_value(doc, ctx.model, *fn, cond, {a, b});
    if (!ts_node_is_null(shared.in_test) || !shared.missing.empty())
      check.refusal +=
          " (shared test subexpression: a value repeats part of the test, which is shared in if "
          "statements only)";
    return Refusal{check.refusal};
  }
  // Only the dtype unproven: a floating `x` keeps it in every value, checked at trace time (else the original runs).
  if (!check.shape_unproven.empty() && !check.floating_check.empty()) {
    check.prechecks.push_back(check.floating_check);
    check.shape_unproven.clear();
  }
  if (!check.shape_unproven.empty()) return Refusal{check.shape_unproven};
  if (check.hazard.empty()) check.hazard = why_alias_observable(doc, ctx.model, *fn, {a, b}, "", "", node);
  Fix fix;
  fix.title = "Select with torch.where: both alternatives are computed and one is selected in the graph";
  if (!check.hazard.empty()) {
    fix.applicability = Applicability::Unsafe;
    fix.title += " (unsafe: " + check.hazard + ")";
  }
  std::string select = torch.name + ".where(" + predicate + ", " + text(doc, a) + ", " + text(doc, b) + ")";
  if (!check.prechecks.empty()) {
    // Metadata checks Dynamo decides while tracing; when one fails, the original expression runs.
    std::string checks;
    for (const auto& c : check.prechecks) checks += (checks.empty() ? "" : " and ") + c;
    select = "(" + select + " if " + checks + " else (" + text(doc, node) + "))";
  }
  fix.edits.push_back({node_range(node), select});
  if (torch.import_edit) fix.edits.push_back(*torch.import_edit);
  return fix;
}

}  // namespace

const Transform& transform_predicate_ternary() {
  static const Transform t{"predicate-ternary", {"GM102", "GM401"}, apply};
  return t;
}

}  // namespace graphmend
