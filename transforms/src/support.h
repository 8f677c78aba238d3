// Shared machinery of the transforms: source text helpers, import insertion, and the legality
// checks (purity, one-element conditions, shapes and dtypes, autograd hazards).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "graphmend/analysis/document.h"
#include "graphmend/analysis/semantic.h"

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
// Offset after the module's import block (where module-level registrations go), at a line start.
uint32_t after_imports_offset(const Document& doc);

// Legality. Each returns an empty string when the property holds, else the reason in plain words.
// `expr` can run on a path the original never took: no side effects, randomness, or possible raise.
std::string why_impure(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn);
// `expr` is provably a one-element tensor (so `bool(expr)` and `torch.where(expr, ...)` agree).
bool is_one_element(const Document& doc, const SemanticModel& model, TSNode expr, const FunctionInfo& fn,
                    int depth = 0);

// Shape and dtype of a branch value relative to a base tensor variable.
enum class Likeness { None, Same, Floating };  // Same: shape and dtype of base; Floating: shape of base, float dtype
struct ValueShape {
  std::string base;  // the tensor variable the value is shaped like ("" for none)
  Likeness likeness = Likeness::None;
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
// An op that can produce inf/NaN (division by a tensor, log, sqrt, exp, pow...): under autograd the
// untaken side of torch.where then turns gradients into NaN.
std::string autograd_hazard(const Document& doc, TSNode expr);
// `node` sits inside `with torch.no_grad():` / `torch.inference_mode()` in its function.
bool under_no_grad(const Document& doc, TSNode node);

// Identifiers read anywhere inside `expr`.
std::vector<std::string> names_read(const Document& doc, TSNode expr);
// `name` is bound before `stmt` on every path: a parameter, or assigned by a statement of an enclosing
// block that precedes `stmt`.
bool defined_before(const Document& doc, const FunctionInfo& fn, const std::string& name, TSNode stmt);
// Comments inside `node`, in order, each as its source text.
std::vector<std::string> comments_in(const Document& doc, TSNode node);

}  // namespace graphmend::fixes
