// Modules of a workspace: the dotted name of a file, relative imports, and names a package re-exports.
// One implementation for the command line's workspace pass and the language server's.
#pragma once

#include <filesystem>
#include <string>

namespace graphmend::workspace {

// Dotted module name of a file inside packages (folders with __init__.py), e.g. "transformers.utils.generic";
// "pkg" for pkg/__init__.py.
std::string module_name_of(const std::filesystem::path& file);

// `.utils` imported from `pkg.models.bert.modeling_bert` -> `pkg.models.bert.utils`; absolute names as they are.
std::string resolve_module(const std::string& importer, bool importer_is_package, const std::string& module);

// A package re-exports names from its submodules (`utils/__init__.py`: `from .import_utils import check`).
// For `name` imported from the package `module` (absolute), by the file `importer` whose module is
// `importer_module`: the module the package's __init__.py, found next to the importer on disk, imports it
// from, resolved; empty when there is none. "Class.method" and "@decorator" look up their first part. A
// renamed import (`import check as verify`) is not followed. The file is read and parsed, never run.
std::string reexporting_module(const std::filesystem::path& importer, const std::string& importer_module,
                               const std::string& module, const std::string& name);

}  // namespace graphmend::workspace
