// User configuration: `[tool.graphmend]` in pyproject.toml plus command-line and editor overrides.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace graphmend {

enum class Scope {
  Compiled,  // only code Dynamo traces: module forwards, torch.compile'd functions and their callees
  All,       // every function (for library authors whose code is compiled by others)
};

struct Config {
  std::vector<std::string> select{"GM"};  // code prefixes
  std::vector<std::string> ignore;
  std::vector<std::string> extend_select;
  std::vector<std::pair<std::string, std::vector<std::string>>> per_file_ignores;  // glob -> prefixes
  Scope scope = Scope::Compiled;
  // Functions of this file that compiled code in other workspace files calls (set by the workspace
  // pass of `graphmend check` and the server, not by users): they are traced too.
  std::vector<std::string> traced_from_workspace;
  std::vector<std::string> validate_targets;  // "path.py::factory"
  std::string docs_url;  // `docs-url`: base URL of the rule pages, a rule's link is <docs_url>/GMxxx.md
  std::optional<std::filesystem::path> source;  // the pyproject.toml it came from

  // Whether `code` is enabled for a file at `path` (relative to the config's folder when globbing).
  bool enabled(std::string_view code, const std::filesystem::path& path) const;
};

// Reads [tool.graphmend] from a pyproject.toml; throws ConfigError naming the file and position.
Config load_pyproject(const std::filesystem::path& pyproject);
// Nearest pyproject.toml with a [tool.graphmend] table, walking up from `start` (a file or folder).
std::optional<std::filesystem::path> find_pyproject(const std::filesystem::path& start);

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace graphmend
