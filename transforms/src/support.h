// Shared machinery of the transforms: source text helpers, import insertion, names that must resolve.
// The legality facts (purity, totality, shapes, dtypes) live in graphmend/analysis/tensor_facts.h.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "graphmend/analysis/document.h"
#include "graphmend/analysis/semantic.h"
#include "graphmend/analysis/tensor_facts.h"

namespace graphmend::fixes {

std::string text(const Document& doc, TSNode node);
// Indentation (spaces/tabs) of the line on which `node` starts.
std::string indentation_of(const Document& doc, TSNode node);
// Start of the line holding `node` (its indentation included), and end of its last line (newline excluded).
uint32_t line_start_of(const Document& doc, TSNode node);
// Start of the line after the one holding `offset` (the text's end on the last line).
uint32_t start_of_next_line(const Document& doc, uint32_t offset);
// `indent` plus one more level, in the file's own style (a tab where it indents with tabs).
std::string indent_step(const std::string& indent);
// The node a finding is about: the innermost node around `range` whose type is one of `types`.
TSNode enclosing(const Document& doc, ByteRange range, std::initializer_list<std::string_view> types);

// The name under which `torch` is usable in the file, plus an edit adding `import torch` when it is not
// imported as a module. The insertion goes after the docstring and `from __future__` imports.
struct TorchName {
  std::string name;
  std::optional<TextEdit> import_edit;
};
TorchName torch_name(const Document& doc, const SemanticModel& model);
// Why the fix may not write `<torch.name>.…` inside `fn` (null: at module level): the name must resolve to
// the torch module there, so it must not be bound in the function, an enclosing one, or at module level
// other than by importing torch.
std::string why_torch_unusable(const Document& doc, const SemanticModel& model, const FunctionInfo* fn,
                               const TorchName& torch);
// Why `name` may not become a new tensor at `stmt`: it is written in place later in `fn` (`name += 1`,
// `name.add_(1)`, `name[i] = v`), where the original may write the caller's tensor.
std::string why_written_in_place_after(const Document& doc, const FunctionInfo& fn, const std::string& name,
                                       TSNode stmt);
// The statement holding `node` directly in a block (`node` itself when it is one), or null at module level.
TSNode statement_of(TSNode node);
// `name` is a parameter or local of `fn` or of a function enclosing it (so not the module-level or builtin name).
bool bound_locally(const FunctionInfo* fn, const std::string& name);
// Why the fix may not add locals (`graphmend_cond`...) to `fn`: it inspects its own namespace.
std::string why_locals_unaddable(const Document& doc, const FunctionInfo& fn);
// Offset after the module's import block (where module-level registrations go), at a line start.
uint32_t after_imports_offset(const Document& doc);

// `name` is bound before `stmt` on every path: a parameter, or assigned by a statement of an enclosing
// block that precedes `stmt`.
bool defined_before(const Document& doc, const FunctionInfo& fn, const std::string& name, TSNode stmt);
// The `if` statement a runtime-guard finding (GM301) is about, and the function holding it, for the guard
// fixes: a plain `if` without `elif`/`else`, inside a function. `refusal` says why not, otherwise empty.
struct GuardStatement {
  TSNode node{};
  const FunctionInfo* fn = nullptr;
  std::string refusal;
};
GuardStatement guard_statement(const Document& doc, const SemanticModel& model, ByteRange finding_range);
// Comments inside `node`, in order, each as its source text.
std::vector<std::string> comments_in(const Document& doc, TSNode node);

// A Python int from a shape (`x.size(1)`, `x.shape[0]`, `len(x)`): a constant to Dynamo (a SymInt under
// dynamic shapes); torch.Size is not.
bool is_shape_int(const Document& doc, const SemanticModel& model, const FunctionInfo& fn, TSNode node);

// Runtime operators (raise-in-graph, log-in-graph): plain Python functions defined as torch.library custom
// operators, which run inside the compiled graph at run time.
//
// A short hash of `behaviour` (FNV-1a): an operator's name changes whenever what it does changes, so a graph
// cached on disk never calls an operator that now does something else.
std::string behaviour_hash(std::string_view behaviour);
// A literal that means the same wherever it is evaluated: a number, True/False/None, a string without
// interpolation (implicitly concatenated ones included), a negated number.
bool is_closed_literal(const Document& doc, TSNode node);
// A number literal as Python reads it, one leading minus included: decimal integers and floats, `_` separators
// allowed. Hex, octal, binary and complex literals, and anything else, give nullopt.
struct NumericLiteral {
  double value = 0;
  bool integer = false;  // an integer literal (its value may be beyond double's exact range)
};
std::optional<NumericLiteral> numeric_literal(const Document& doc, TSNode node);
// Where a runtime operator goes: its definition before the top-level statement that holds `node`, the
// module-level helpers after the imports. Empty when that statement comes before the imports end.
struct OperatorPlacement {
  uint32_t define_at = 0;
  uint32_t helper_at = 0;
};
std::optional<OperatorPlacement> operator_placement(const Document& doc, TSNode node);
// `E`, `pkg.E`: a name (or attribute chain of one) the module resolves the same way: not bound in `fn`.
bool is_module_level_name(const Document& doc, const FunctionInfo* fn, TSNode node);
// Why an operator raising in place of `node` would differ: `node` runs while an exception is handled
// (`except`, `finally`: the context), or in a `try` with handlers (they would see the operator's frames); ""
// otherwise. `what` names the statement in the reason ("the guard", "the check").
std::string why_under_handler(TSNode node, const std::string& what);
// The edits that define a runtime operator after the imports: each helper its own insertion at `at` (so fixes
// of one pass needing one add it once: the fixer keeps one of identical insertions at one place), then the
// definition (empty: the file defines it already), whose text must name no site for the same reason.
void add_operator_definition(Fix& fix, uint32_t at, const std::vector<std::string>& helpers,
                             const std::string& definition, const std::string& eol);
// Why an operator defined at module level could not call `torch.name`: the file binds torch only inside
// functions or under a condition (a module meant to import without torch, such as transformers'
// import_utils), so the definition would fail, or import torch where the original did not. "" when an
// unconditional module-level `import torch` binds it, or when the fix adds one (`torch.import_edit`).
std::string why_torch_not_module_level(const Document& doc, const TorchName& torch);
// The module-level helper `_graphmend_runtime_op(name, schema)` that defines the operators, with its blank
// lines, to insert after the imports; empty when the file has it already.
std::string runtime_op_helper(const Document& doc, const std::string& torch, const std::string& eol);
// The module-level helpers behind `@_graphmend_keep_state`, which wraps an operator that may raise: under
// Dynamo it breaks the graph just before the operator when the graph traced so far wrote state that a raise
// inside it would lose (the original's break wrote it back), with their blank lines, to insert after the
// imports (after `runtime_op_helper`); empty when the file has them already.
std::string keep_state_helper(const Document& doc, const std::string& torch, const std::string& eol);
// The module-level helper `_graphmend_check_op(name)`, `_graphmend_runtime_op`'s twin for operators that make
// one of torch's tensor checks (`(Tensor test) -> ()`): while tracing, its fake runs the check's dtype test as
// the original did (a tensor that is not bool fails there, under compile, with Dynamo's error); empty when the
// file has it already.
std::string check_op_helper(const Document& doc, const std::string& torch, const std::string& eol);
// `fn` is the function torch.compile compiles and never a frame Dynamo inlines into a caller: a compile entry
// that is not a module's `forward` (which may also run as a submodule's). The rest of its graph is its own
// remaining statements.
bool is_uninlined_compile_entry(const FunctionInfo& fn);

}  // namespace graphmend::fixes
