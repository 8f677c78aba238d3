// The cache of `graphmend check` (ruff's .ruff_cache): a file's findings are kept under a key made of
// everything they depend on (the file's bytes and path, the configuration file's bytes, the options
// that change the analysis, the functions other files trace into it, and the executable itself), so a
// second run over an unchanged tree reads them back instead of parsing and analysing again.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graphmend/analysis/finding.h"

namespace graphmend::cli {

struct CachedResult {
  std::vector<Finding> findings;  // with their fixes (or no-fix reasons) attached
  std::vector<Problem> problems;
  std::vector<std::pair<std::string, std::string>> imported_calls;  // (module, function) from traced code
};

class CheckCache {
 public:
  // `dir` is created on the first write (with a .gitignore and CACHEDIR.TAG inside, as ruff does).
  // `options_key`: the command-line options that change findings (selection, scope, configuration).
  CheckCache(std::filesystem::path dir, std::string options_key);

  // The key of `file` with content `text` configured by `pyproject` (absent: defaults), traced into
  // from other files through `traced` (function names).
  std::string key(const std::filesystem::path& file, const std::string& text,
                  const std::optional<std::filesystem::path>& pyproject, std::vector<std::string> traced) const;

  // The result stored under `key`, or nullopt (never there, stale, or unreadable: the cache is only an
  // optimisation, so every problem with it is a miss).
  std::optional<CachedResult> get(const std::filesystem::path& file, const std::string& key) const;
  // Stores atomically (a temporary file renamed over the entry); failures are ignored, like misses.
  void put(const std::filesystem::path& file, const std::string& key, const CachedResult& result) const;

 private:
  std::filesystem::path entry_path(const std::filesystem::path& file) const;
  std::filesystem::path dir_;
  std::string options_key_;
  std::string executable_id_;
};

}  // namespace graphmend::cli
