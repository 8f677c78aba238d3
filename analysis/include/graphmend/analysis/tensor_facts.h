// Tensor facts shared by rules and transforms: what a value is (one element, floating, bool), how it is
// shaped relative to other values, and what evaluating it on a path the original never took could do:
// side effects, exceptions (and under which static conditions it cannot raise), inf/NaN under autograd.
//
// docs/fix-safety.md is the contract these facts serve; tests/oracle/test_speculation_ops.py checks the
// operation table (speculation_ops.def) against the installed torch.
#pragma once

#include <tree_sitter/api.h>

#include <string>
#include <vector>

#include "graphmend/analysis/document.h"
#include "graphmend/analysis/semantic.h"

namespace graphmend {

// A condition on static metadata (dtype, shape) under which an operation does not raise. Whether it holds
// never depends on tensor data, so Dynamo's trace and every eager run agree on it.
struct RaiseCondition {
  enum class Kind {
    NotBool,      // `-x`, `x - y`, `x.abs()`, `relu(x)` raise for a bool tensor
    Floating,     // `x.mean()`, `gelu(x)`, `torch.finfo(x.dtype)`, `x // y` raise for integer (or bool) tensors
    Integral,     // `~x`, `x & y` raise for floating tensors
    Broadcast,    // `a + b`: the shapes of `a` and `b` must broadcast
    BroadcastTo,  // `x.masked_fill(m, v)`: `m` (subject) must broadcast to the shape of `x` (other)
    Dims,         // `x[:, :3]`, `x.sum(1)`, `x.shape[1]`: x needs at least `dims` dimensions
    NonEmpty,     // `x.max()`, `x.amin()`: x needs at least one element
  };
  Kind kind;
  TSNode subject{};  // the tensor expression the condition is about
  TSNode other{};    // Broadcast: the second operand; BroadcastTo: the tensor whose shape the subject takes
  std::string key;   // identity: same key, same condition and same exception when it fails
  std::string why;   // "`-x` raises for a bool tensor"
};

// What running `expr` on a path the original program did not take could change.
struct Speculation {
  std::string effect;  // non-empty: a side effect, randomness or a graph exit; never run it speculatively
  std::string raises;  // non-empty: may raise whatever the metadata (`x.view(2, 2)`, torch.cat, user code)
  std::vector<RaiseCondition> needs;  // otherwise it cannot raise when these hold (in evaluation order)
};
// `precomputed`: subexpressions the original has already evaluated (a test's value the fix reuses), which
// run nothing when read again.
Speculation speculate(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn,
                      const std::vector<ByteRange>& precomputed = {});
// The conditions that hold once the original has evaluated `test` without raising: the conditions of its
// unconditionally evaluated part (the left operand of `and`/`or`, recursively).
std::vector<RaiseCondition> established_by(const Document& doc, const SemanticModel& model, TSNode test,
                                           const FunctionInfo& fn);
// `condition` holds by static facts alone (a proven floating tensor is not bool, and so on).
bool proven(const Document& doc, const SemanticModel& model, const RaiseCondition& condition, const FunctionInfo& fn);
// Why `expr` may not be evaluated on a path the original never took, given conditions already established;
// empty when it is pure and cannot raise.
std::string why_not_total(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn,
                          const std::vector<RaiseCondition>& established = {});
// Whether a select may evaluate every alternative. Each must be pure and must not raise whatever the
// metadata; a condition it needs is met when proven, established by the test, or a shape condition
// (broadcast, dimensions) that every alternative needs in the same order (the original evaluates one
// alternative, so it raises the same exception whenever the fixed code does). Any other condition becomes a
// trace-time check (`x.dtype != torch.bool`, `x.is_floating_point()`, `x.dim() >= 2`, `a.shape == b.shape`),
// which Dynamo decides without a break; the fix runs the original code when a check fails. Checks are
// only possible on plain names and `self.<attr>`. `keeps_old_value`: some path evaluates none of them.
struct Selectability {
  std::string refusal;                 // non-empty: not selectable, with the reason
  std::vector<RaiseCondition> checks;  // to test before the alternatives are evaluated
};
Selectability selectability(const Document& doc, const SemanticModel& model, const FunctionInfo& fn,
                            const std::vector<TSNode>& alternatives, const std::vector<RaiseCondition>& established,
                            bool keeps_old_value, const std::vector<ByteRange>& precomputed = {});
// The Python test that a condition holds, for a trace-time check (`torch` is the module's name in the file).
std::string check_text(const Document& doc, const RaiseCondition& condition, const std::string& torch);
// Side effects only (randomness, in-place ops, unknown calls, graph exits): for arguments that the original
// evaluates anyway.
std::string why_effectful(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn);

// `expr` is provably a one-element tensor (so `bool(expr)` and `torch.where(expr, ...)` agree).
bool is_one_element(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn,
                    int depth = 0);
// `expr` is provably a 0-dim tensor or a Python number (comparisons and logical operations of full reductions
// such as `x.amin() > 0`): torch.where with it as the condition keeps the other operands' shapes exactly.
bool is_zero_dim(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn, int depth = 0);
// `expr` is provably a bool tensor (comparisons, isnan, logical_*, `~` of one, locals only assigned those).
bool is_bool_valued(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn,
                    int depth = 0);

// Shape and dtype of a branch value relative to a base tensor variable.
enum class Likeness { None, Same, Floating };  // Same: shape and dtype of base; Floating: shape of base, float dtype
struct ValueShape {
  std::string base;  // the tensor variable the value is shaped like ("" for none)
  Likeness likeness = Likeness::None;
  // Same, but for a bool base: an integer literal mixed in (`b + 1`, `b * 2`, `b ** 2`) makes an int64 tensor.
  bool unless_bool = false;
};
ValueShape shape_of(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn);
// The variable provably holds a floating-point tensor (module outputs, float factories, divisions...).
// `assumed`: locals taken to be floating while their own assignments are checked (a value that feeds
// back into its variable, `out = out * 0.1`, keeps it floating when every other assignment does).
bool is_floating(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn, int depth = 0,
                 std::vector<std::string>* assumed = nullptr);
// Every assignment to local `name` gives a floating value (coinductively: reads of `name` itself in
// them count as floating). False for parameters: their first value comes from the caller.
bool local_is_floating(const Document& doc, const SemanticModel& model, const std::string& name, const FunctionInfo& fn,
                       int depth = 0, std::vector<std::string>* assumed = nullptr);
// Every binding of local `name` is arithmetic with a number (`x * 2`, `x + 0.5`, `x / 3`, augmented ones keep the
// dtype): never a bool tensor (a bool mixed with a number is int64 or floating). False for parameters.
bool local_not_bool(const Document& doc, const FunctionInfo& fn, const std::string& name);
// `expr` is a tensor on every path, not only where the kind model says "a tensor where used" (which lets a
// tensor dominate None or a Python value): both alternatives of `a if c else b` and of `a or b`, each binding of
// a name that reaches `expr` (by its right side for plain assignments), and no parameter that may be None.
// Fixes that call tensor methods on a value (`.bool()`, `.numel()`, torch.where) need this.
bool definitely_tensor(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn,
                       int depth = 0);
// The first part of `expr` whose derivative is not constant (a product of tensors, a division by one, log,
// exp, sigmoid, max...): on the untaken side of torch.where its zero gradient becomes NaN for NaN or inf
// inputs, so gradients differ from the original's. Empty when the backward is linear with constant
// coefficients (sums, scaling by numbers, slicing, reshapes, casts, clamp/relu masks).
std::string autograd_hazard(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn);
// The names (locals, parameters, `self.<attr>` tensors and submodules) through which gradients flow from
// `expr`, sorted: a select between values that read different names gives the names only one side reads a
// zero gradient on the other path, where the original leaves their `.grad` None (and a result built
// from none of them, `torch.zeros_like(x)`, starts to require grad).
std::vector<std::string> differentiable_reads(const Document& doc, const SemanticModel& model, TSNode expr,
                                              const FunctionInfo& fn);
// `node` sits inside `with torch.no_grad():` / `torch.inference_mode()` in its function.
bool under_no_grad(const Document& doc, TSNode node);
// Start bytes, in order, of the calls in `fn`'s body that always break the graph whatever the data:
// `.nonzero()`, `.item()`, `.tolist()`, `.unique()`, `.masked_select()` on a tensor.
std::vector<uint32_t> surely_breaking_calls(const Document& doc, const SemanticModel& model, const FunctionInfo& fn);

// Identifiers read anywhere inside `expr`.
std::vector<std::string> names_read(const Document& doc, TSNode expr);

}  // namespace graphmend
