// The model zoo's manifest: which targets `graphmend validate --all` runs, and how.
//
// Either a zoo file (TOML: a [defaults] table and [[target]] tables, paths relative to the file), or
// the `[tool.graphmend] validate` list of a pyproject.toml (paths relative to it, built-in defaults).
// Both become one JSON object for the zoo driver (graphmend_validator/zoo): {"source", "targets": [{
// "name", "target", "label" (the target as written), "modes", "fixed", "fixed_module", "backend", "repeats",
// "timeout_s", "threads", "timing", "timing_device", "timing_repeats"}]}, every key filled in and every path absolute.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace graphmend::validate {

// "FILE:LINE:COLUMN: what is wrong" (FILE alone where no position applies).
class ManifestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Settings given on the command line: they win over the manifest's (empty/zero: not given).
struct ZooOverrides {
  std::vector<std::string> modes;
  std::string backend;
  int repeats = 0;
  double timeout_s = 0;
};

nlohmann::json read_zoo_file(const std::filesystem::path& file, const ZooOverrides& overrides);
nlohmann::json zoo_from_pyproject(const std::filesystem::path& pyproject, const std::vector<std::string>& targets,
                                  const ZooOverrides& overrides);

}  // namespace graphmend::validate
