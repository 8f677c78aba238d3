// Building torch.where predicates and checking that two branch values can be selected between.
#pragma once

#include <string>

#include "support.h"

namespace graphmend::fixes {

// `a and not b` -> `torch.logical_and(a, torch.logical_not(b))`. Every leaf must be a provably
// one-element tensor test; otherwise `why` says what is missing and the result is empty.
// With `numel_unproven`, a tensor test that is not provably one element is accepted and the flag set:
// the caller then checks `numel() == 1` at trace time.
std::string predicate_text(const Document& doc, const SemanticModel& model, TSNode condition, const FunctionInfo& fn,
                           const std::string& torch, std::string& why, bool* numel_unproven = nullptr);

struct SelectCheck {
  std::string refusal;  // non-empty: the fix is refused, with this reason
  std::string hazard;   // non-empty: legal but unsafe under autograd, naming the op
  // Non-empty when the values are pure but their shapes/dtypes are not provably equal: a select is still
  // legal behind a trace-time check (`a.shape == b.shape and a.dtype == b.dtype`, static for Dynamo).
  std::string shape_unproven;
  // Trace-time checks (`x.dtype != torch.bool`...) that must hold before the values may be evaluated: the
  // fix tests them first and runs the original branch when one fails.
  std::vector<std::string> prechecks;
};
// Values `a` and `b` (either may be a variable's previous value, given as an identifier node) may be
// computed both and selected: pure, total (given what the test established, see why_not_selectable),
// same shape, same dtype. `keeps_old_value`: on some path the original evaluates none of the values and
// keeps `kept_name` (the variable) as it was.
SelectCheck check_select(const Document& doc, const SemanticModel& model, const FunctionInfo& fn,
                         const std::vector<TSNode>& values, TSNode statement,
                         const std::vector<RaiseCondition>& established, bool keeps_old_value, const std::string& torch,
                         const std::string& kept_name = "");

}  // namespace graphmend::fixes
