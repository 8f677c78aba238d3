// Modules of a workspace: the dotted name of a file, relative imports, and names a package re-exports.
// One implementation for the command line's workspace pass and the language server's.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>

namespace graphmend::workspace {

// Dotted module name of a file inside packages (folders with __init__.py), e.g. "transformers.utils.generic";
// "pkg" for pkg/__init__.py.
std::string module_name_of(const std::filesystem::path& file);

// `.utils` imported from `pkg.models.bert.modeling_bert` -> `pkg.models.bert.utils`; absolute names as they are.
std::string resolve_module(const std::string& importer, bool importer_is_package, const std::string& module);

// What packages re-export: `utils/__init__.py`'s `from .import_utils import check` makes `check`, imported
// from the package, live in `utils.import_utils`. Each __init__.py is read and parsed once, never run, and
// kept until forget() says it changed. One index serves a `check` run; the server keeps one for its session
// and forgets a package when its __init__.py is saved or changes on disk. Thread-safe.
class PackageIndex {
 public:
  // For `name` imported from the package `module` (absolute), by the file `importer` whose module is
  // `importer_module`: the module the package's __init__.py, found next to the importer on disk, imports it
  // from, resolved; empty when there is none. "Class.method" and "@decorator" look up their first part. A
  // renamed import (`import check as verify`) is not followed.
  std::string reexporting_module(const std::filesystem::path& importer, const std::string& importer_module,
                                 const std::string& module, const std::string& name);

  // The file `init` (an __init__.py) changed: it is read again when next needed.
  void forget(const std::filesystem::path& init);

 private:
  std::string look_up(const std::filesystem::path& importer, const std::string& importer_module,
                      const std::string& module, const std::string& name, uint64_t generation);

  std::mutex mutex_;
  // Counts forget() calls: what was computed from a file read before the latest one is not kept.
  uint64_t generation_ = 0;
  // __init__.py path (absolute, normal) -> its imports (local name -> dotted origin), shared with the
  // lookups reading them outside the lock.
  using Imports = std::unordered_map<std::string, std::string>;
  std::unordered_map<std::string, std::shared_ptr<const Imports>> imports_by_init_;
  // Answers by (importer's folder, importer module, module, name): a workspace pass asks the same
  // question from every file of a package. Dropped whole by forget().
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::string> answers_;
};

}  // namespace graphmend::workspace
