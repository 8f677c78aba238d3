// Building torch.where predicates and checking that two branch values can be selected between.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

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
  // Set with shape_unproven when only the dtype is unproven and the base is a name: `x.is_floating_point()` (or
  // `x.dtype != torch.bool`), a trace-time check under which every value keeps `x`'s dtype (a transform may use
  // it as a precheck instead).
  std::string floating_check;
  // Trace-time checks (`x.dtype != torch.bool`...) that must hold before the values may be evaluated: the
  // fix tests them first and runs the original branch when one fails.
  std::vector<std::string> prechecks;
  // #28 technique 1, per value (in `values` order): the tensor reads to feed ones on the path where that value
  // is not selected (total_untaken_side). Empty for a value that needs none, and for all under no_grad.
  std::vector<std::vector<TSNode>> untaken_guards;
};
// Values `a` and `b` (either may be a variable's previous value, given as an identifier node) may be
// computed both and selected: pure, total (given what the test established, see why_not_selectable),
// same shape, same dtype. `keeps_old_value`: on some path the original evaluates none of the values and
// keeps `kept_name` (the variable) as it was.
// `precomputed`: parts of the values the test has already computed and the fix reuses (technique 2).
// `no_untaken_guards`: why this form cannot feed a value's untaken side ones (technique 1); empty when it can.
SelectCheck check_select(const Document& doc, const SemanticModel& model, const FunctionInfo& fn,
                         const std::vector<TSNode>& values, TSNode statement,
                         const std::vector<RaiseCondition>& established, bool keeps_old_value, const std::string& torch,
                         const std::string& kept_name = "", const std::vector<ByteRange>& precomputed = {},
                         const std::string& no_untaken_guards = "not generated for this form");

// #28 technique 1, total untaken side: a value whose derivative is not constant may still be selected under
// autograd when its untaken side computes on ones. `leaves` are the tensor reads of `value` (names,
// `self.<attr>`, reused test values) that the fix replaces by `torch.where(c, leaf, torch.ones_like(leaf))`
// (the condition negated for the else side): taken, the value is computed from its real inputs bit for bit;
// untaken, from ones, where interval arithmetic in bfloat16's rounding proves every value and local
// derivative finite and small, and the guard's backward sends exactly 0 to the real input. `missing` says
// why the proof fails (an operation outside the table, a Python value not known statically, a singularity
// within reach, a reused test value whose own derivative is not constant).
struct UntakenSide {
  std::string missing;
  std::vector<TSNode> leaves;
};
UntakenSide total_untaken_side(const Document& doc, const SemanticModel& model, const FunctionInfo& fn, TSNode value,
                               const std::vector<ByteRange>& precomputed);
// The text of `value` with each of `leaves` replaced by `guard_name(<its source>)` (a leaf's source is its
// text, or its name in `renamed`) and each part in `renamed` by that name.
std::string rewritten_value(const Document& doc, TSNode value, const std::vector<TSNode>& leaves,
                            const std::vector<std::pair<ByteRange, std::string>>& renamed,
                            const std::function<std::string(const std::string&)>& guard_name);

// #28 technique 2, reuse what the test computed: `if h.sum() > 1.0: h = h / h.sum()` binds `h.sum()` once
// (`graphmend_shared`), before the test, and the values read the name, so no operation (or warning it emits)
// runs more often than in the original. Only the first operand of a single comparison with a number or a name
// is shared, so binding it first keeps the test's own evaluation order; it must be free of effects and
// randomness (the original computes it twice and gets the same value).
struct SharedTestValue {
  TSNode in_test{};                  // the shared part of the test; null when nothing is shared
  std::vector<ByteRange> in_values;  // its repeats in the values
  std::string missing;               // a value repeats part of the test that cannot be shared: why
};
SharedTestValue shared_test_value(const Document& doc, const SemanticModel& model, const FunctionInfo& fn, TSNode test,
                                  const std::vector<TSNode>& values);

// #28 technique 6, aliasing made explicit: torch.where returns a new tensor, where the original may return one
// of its alternatives itself: an input, an attribute, a view of one (`x[:, :1]`, `x.view(...)`, `x.to(...)`,
// which may return `x`), or the variable's old value (`kept_name`) when that is one of these. Non-empty (the
// reason, for an unsafe fix's title) when some alternative may be such a tensor and the selected value escapes
// where identity can be seen: returned or yielded, stored (an attribute, a subscript, a container's
// append/extend/insert/add/update/setdefault, another name), or compared by identity (`is`, `id()`). `target`
// is the name the select is bound to; empty when the select itself is the expression at `site` (a ternary, a
// predicated return). Calls that receive the value are assumed not to keep it (torch operators and modules do
// not; a callee that stores its argument is not followed). With `target`, `site` is the statement being
// rewritten, whose own reads are not followed.
std::string why_alias_observable(const Document& doc, const SemanticModel& model, const FunctionInfo& fn,
                                 const std::vector<TSNode>& values, const std::string& kept_name,
                                 const std::string& target, TSNode site);

}  // namespace graphmend::fixes
