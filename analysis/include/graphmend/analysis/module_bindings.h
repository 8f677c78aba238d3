// What a module's top-level statements bind names to, and the names bound to torch.compiler.disable.
// Independent of the semantic model (it takes the import resolution as a function), so that the model and
// the rules can both use it.
#pragma once

#include <tree_sitter/api.h>

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graphmend/analysis/document.h"

namespace graphmend {

// Each name the module binds at its top level (and in the if/try/with/for/while blocks there, not in
// function or class bodies), with what it is bound to in source order: the right-hand side of a
// `name = value` (the last target's value in `a = b = value`), or a null node for any other binding (def,
// class, import, augmented or annotated assignment, a tuple target, a for target, `with ... as name`).
// Only the module's own code is read, not `global name` in a function: an edit inside a function body
// (which the model may take incrementally) leaves the bindings as they are.
using ModuleBindings = std::unordered_map<std::string, std::vector<TSNode>>;
ModuleBindings module_bindings(const Document& document);

// Resolves an expression through the file's imports ("torch.compiler.disable"), nullopt when it is not
// one (SemanticModel::qualified_name).
using QualifiedNameOf = std::function<std::optional<std::string>(TSNode)>;

// Whether `expr`, evaluated at module level, is torch.compiler.disable or torch._dynamo.disable (on torch
// 2.13): a reference through the imports, `getattr(torch.compiler, "disable"[, default])`, `a or b` whose
// left operand is one, `a if c else b` whose both branches are, or a module-level name only ever bound to
// one.
bool is_dynamo_disable(const Document& document, TSNode expr, const QualifiedNameOf& qualified_name,
                       const ModuleBindings& bindings, int depth = 0);

// The module-level names bound only to torch.compiler.disable or torch._dynamo.disable (`_disable =
// getattr(torch.compiler, "disable", None) or torch._dynamo.disable`, `disable = torch.compiler.disable`):
// `@_disable` marks a function as `@torch.compiler.disable` does. Imports are not aliases here (the
// import resolution already names them).
std::unordered_set<std::string> dynamo_disable_aliases(const Document& document, const QualifiedNameOf& qualified_name);

}  // namespace graphmend
