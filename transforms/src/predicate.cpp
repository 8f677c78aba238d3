#include "predicate.h"

#include <algorithm>

namespace graphmend::fixes {
namespace {

// torch.where needs a boolean condition; `if t:` means `t != 0` (NaN counts as true), which is `t.bool()`.
std::string as_bool(const Document& doc, TSNode test) {
  TSNode t = unparenthesize(test);
  if (is_type(t, "comparison_operator")) return text(doc, test);
  if (is_type(t, "call")) {
    std::string callee = text(doc, field(t, "function"));
    std::string last = callee.substr(callee.rfind('.') + 1);
    for (const char* b : {"any", "all", "isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not",
                          "logical_xor", "eq", "ne", "gt", "lt", "ge", "le", "bool", "isneginf", "isposinf"}) {
      if (last == b) return text(doc, test);
    }
  }
  bool simple = is_type(t, "identifier") || is_type(t, "call") || is_type(t, "attribute") || is_type(t, "subscript");
  return (simple ? text(doc, t) : "(" + text(doc, t) + ")") + ".bool()";
}

// The tensor tests under `and`/`or`/`not` of `condition` (which become logical_* calls) are total.
std::string why_tests_not_total(const Document& doc, const SemanticModel& model, TSNode condition,
                                const FunctionInfo& fn, const std::vector<RaiseCondition>& facts) {
  condition = unparenthesize(condition);
  if (is_type(condition, "not_operator"))
    return why_tests_not_total(doc, model, field(condition, "argument"), fn, facts);
  if (is_type(condition, "boolean_operator")) {
    if (auto w = why_tests_not_total(doc, model, field(condition, "left"), fn, facts); !w.empty()) return w;
    return why_tests_not_total(doc, model, field(condition, "right"), fn, facts);
  }
  return why_not_total(doc, model, condition, fn, facts);
}

}  // namespace

std::string predicate_text(const Document& doc, const SemanticModel& model, TSNode condition, const FunctionInfo& fn,
                           const std::string& torch, std::string& why, bool* numel_unproven) {
  condition = unparenthesize(condition);
  if (is_type(condition, "not_operator")) {
    std::string inner = predicate_text(doc, model, field(condition, "argument"), fn, torch, why, numel_unproven);
    return inner.empty() ? "" : torch + ".logical_not(" + inner + ")";
  }
  if (is_type(condition, "boolean_operator")) {
    std::string op = text(doc, field(condition, "operator"));
    std::string l = predicate_text(doc, model, field(condition, "left"), fn, torch, why, numel_unproven);
    if (l.empty()) return "";
    std::string r = predicate_text(doc, model, field(condition, "right"), fn, torch, why, numel_unproven);
    if (r.empty()) return "";
    // `a and b` evaluates b only sometimes; logical_and always does: each test in b must not raise or
    // have effects (beyond what evaluating `a` already established).
    std::vector<RaiseCondition> facts = established_by(doc, model, field(condition, "left"), fn);
    if (auto w = why_tests_not_total(doc, model, field(condition, "right"), fn, facts); !w.empty()) {
      why = w + " (the original evaluates it only when `" + text(doc, field(condition, "left")) + "` allows)";
      return "";
    }
    return torch + ".logical_" + op + "(" + l + ", " + r + ")";
  }
  ValueKind kind = model.kind_of(condition, fn);
  if (kind != ValueKind::Tensor) {
    why = "the test `" + text(doc, condition) + "` is not a tensor, so it must stay a Python `if`";
    return "";
  }
  if (!is_one_element(doc, model, condition, fn)) {
    if (numel_unproven) {
      *numel_unproven = true;
      return as_bool(doc, condition);
    }
    why = "the test `" + text(doc, condition) +
          "` is not provably a single element (torch.where would select "
          "element-wise where the original raises)";
    return "";
  }
  return as_bool(doc, condition);
}

SelectCheck check_select(const Document& doc, const SemanticModel& model, const FunctionInfo& fn,
                         const std::vector<TSNode>& values, TSNode statement,
                         const std::vector<RaiseCondition>& established, bool keeps_old_value, const std::string& torch,
                         const std::string& kept_name) {
  SelectCheck out;
  Selectability sel = selectability(doc, model, fn, values, established, keeps_old_value);
  out.refusal = sel.refusal;
  if (!out.refusal.empty()) return out;
  for (const RaiseCondition& c : sel.checks) out.prechecks.push_back(check_text(doc, c, torch));
  std::string base;
  bool any_same = false, any_floating = false;
  for (TSNode v : values) {
    if (out.hazard.empty()) {
      if (std::string h = autograd_hazard(doc, model, v, fn); !h.empty())
        out.hazard = "`" + h + "` may have an inf/NaN derivative on the untaken side, which makes gradients NaN";
    }
    if (!out.shape_unproven.empty()) continue;
    ValueShape s = shape_of(doc, model, v, fn);
    if (s.likeness == Likeness::None) {
      out.shape_unproven = "cannot prove that `" + text(doc, v) + "` has the same shape as the other branch";
      continue;
    }
    if (!base.empty() && s.base != base) {
      out.shape_unproven = "cannot prove that `" + text(doc, v) + "` has the same shape as `" + base + "`";
      continue;
    }
    base = s.base;
    (s.likeness == Likeness::Same ? any_same : any_floating) = true;
  }
  // A path that keeps the variable's old value is an alternative too: `x` itself, with x's shape and dtype.
  if (!kept_name.empty() && (base.empty() || base == kept_name)) any_same = true;
  if (out.shape_unproven.empty() && any_same && any_floating) {
    // e.g. `x / 2` against `x`: equal dtypes only when x is floating.
    const bool floating = local_is_floating(doc, model, base, fn);
    if (!floating) {
      out.shape_unproven = "`" + base +
                           "` may be an integer tensor, and one branch gives a floating result: "
                           "torch.where would change the other branch's dtype";
    }
  }
  if (out.hazard.empty()) {
    // Every alternative must send gradients to the same names: the identity path (the variable keeps its old
    // value) reads the variable itself.
    std::vector<std::vector<std::string>> reads;
    for (TSNode v : values) reads.push_back(differentiable_reads(doc, model, v, fn));
    if (!kept_name.empty()) reads.push_back({kept_name});
    for (const auto& r : reads) {
      if (r == reads.front()) continue;
      std::string only;
      for (const auto& n : r)
        if (only.empty() && std::find(reads.front().begin(), reads.front().end(), n) == reads.front().end()) only = n;
      for (const auto& n : reads.front())
        if (only.empty() && std::find(r.begin(), r.end(), n) == r.end()) only = n;
      out.hazard = only.empty() ? "the alternatives send gradients to different tensors"
                                : "`" + only +
                                      "` would get a zero gradient on the path where the original does not "
                                      "use it (its .grad stays None there), and the result may require grad where the "
                                      "original's does not";
      break;
    }
  }
  if (under_no_grad(doc, statement)) {
    out.hazard.clear();
    // Under no_grad the select never requires grad; an original that passes a tensor through (`x` itself)
    // keeps its requires_grad.
    bool passes_through = keeps_old_value;
    for (TSNode v : values) {
      TSNode u = unparenthesize(v);
      passes_through |=
          (is_type(u, "identifier") || is_type(u, "attribute")) && model.kind_of(u, fn) != ValueKind::Static;
    }
    if (passes_through)
      out.hazard =
          "under torch.no_grad the selected tensor never requires grad, where the original returns an "
          "input tensor itself";
  }
  return out;
}

}  // namespace graphmend::fixes
