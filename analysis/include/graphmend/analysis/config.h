// User configuration: `[tool.graphmend]` in pyproject.toml plus command-line and editor overrides.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graphmend/analysis/torch_version.h"

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
  // pass of `graphmend check` and the server, not by users): they are traced too. Entries
  // "args:<function>:<kinds>" carry instead what one such call passes, so that the function's parameters
  // are typed by what flows in (semantic.h, kWorkspaceArgumentsPrefix).
  std::vector<std::string> traced_from_workspace;
  std::vector<std::string> validate_targets;  // "path.py::factory"
  // The torch whose facts apply (torch_version.h) and why: `torch-version`, --torch-version, the torch
  // found installed (resolve_torch()), or the newest supported.
  TorchVersion torch{};
  std::string torch_source = "the newest supported (no torch found)";
  std::string docs_url;  // `docs-url`: base URL of the rule pages, a rule's link is <docs_url>/GMxxx.md
  std::optional<std::filesystem::path> source;  // the pyproject.toml it came from
  // File selection (ruff's keys of the same names); patterns are relative to the config's folder.
  std::vector<std::string> exclude = default_exclude();  // replaces the defaults when set
  std::vector<std::string> extend_exclude;
  bool respect_gitignore = true;                // skip what .gitignore, .git/info/exclude and .ignore files ignore
  bool force_exclude = false;                   // exclude paths given on the command line too
  std::set<std::string, std::less<>> keys_set;  // the [tool.graphmend] keys the file sets

  // ruff's default `exclude`: VCS, tool and virtual environment folders.
  static const std::vector<std::string>& default_exclude();

  // Whether `code` is enabled for a file at `path` (relative to the config's folder when globbing).
  bool enabled(std::string_view code, const std::filesystem::path& path) const;
};

// Rules outside the default selection: GM0xx, about graphmend's own comments rather than graph breaks
// (GM001 unused-noqa). `GM` and `ALL` do not select them; their code or `GM0` does.
bool opt_in_rule(std::string_view code);

// The keys [tool.graphmend] accepts: the one list the loader, `graphmend config` and the published JSON
// Schema (docs/schema/graphmend.schema.json) come from.
enum class ConfigValueKind {
  StringList,  // array of strings
  String,      // a non-empty string
  Boolean,
  Scope,           // "compiled" or "all"
  GlobToCodeList,  // table: glob -> array of strings
};
struct ConfigKey {
  std::string_view name;
  ConfigValueKind kind;
  std::string_view default_json;  // JSON text; empty: no default
  std::string_view example_json;  // JSON text, a valid value
  std::string_view description;
};
std::span<const ConfigKey> config_keys();

// Reads [tool.graphmend] from a pyproject.toml; throws ConfigError naming the file, line and column
// (of an unknown key, with the nearest known one as a suggestion, or of a value of the wrong type).
Config load_pyproject(const std::filesystem::path& pyproject);
// Nearest pyproject.toml with a [tool.graphmend] table, walking up from `start` (a file or folder).
std::optional<std::filesystem::path> find_pyproject(const std::filesystem::path& start);

// The torch found installed near the checked file applies unless `torch-version` names one.
void apply_detected_torch(Config& config, const std::optional<DetectedTorch>& detected);

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What applies to the files of one folder: the nearest pyproject.toml with [tool.graphmend], and what it says.
struct DiscoveredConfig {
  std::optional<std::filesystem::path> pyproject;  // none: the defaults apply
  std::shared_ptr<const Config> config;            // null when `pyproject` is not a valid configuration
  std::string error;                               // then why (ConfigError's message, with its position)
  bool first_read = false;                         // this lookup read the file: report `error` once
};

// Configuration discovery for `check`, the server and its code lenses: each folder walks up once (from its
// parent's answer) and each pyproject.toml is read once. clear() when one may have changed. Thread-safe.
class ConfigCache {
 public:
  // For the files of `folder` (absolute).
  DiscoveredConfig discover(const std::filesystem::path& folder);
  void clear();

 private:
  std::optional<std::filesystem::path> nearest(const std::filesystem::path& folder);

  std::mutex mutex_;
  std::map<std::filesystem::path, std::optional<std::filesystem::path>> nearest_;  // by folder
  struct Loaded {
    std::shared_ptr<const Config> config;
    std::string error;
  };
  std::map<std::filesystem::path, Loaded> loaded_;  // by pyproject.toml
};

}  // namespace graphmend
