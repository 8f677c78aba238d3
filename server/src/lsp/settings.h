// Editor settings of the language server (initializationOptions, workspace/configuration,
// didChangeConfiguration) and how they overlay a file's pyproject.toml configuration.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "graphmend/analysis/config.h"

namespace graphmend::lsp {

enum class RunMode {
  OnType,  // re-analyse (debounced) after every edit
  OnSave,  // publish diagnostics when a file is opened or saved
};

// Which wins when the editor's settings and a pyproject.toml disagree (ruff's `configurationPreference`).
enum class ConfigurationPreference {
  EditorFirst,      // the editor's settings win over the file's
  FilesystemFirst,  // the file's keys win; the editor's settings fill in what it leaves unset
  EditorOnly,       // pyproject.toml files are not read at all
};

struct Settings {
  RunMode run = RunMode::OnType;
  // Fixed debounce in milliseconds; nothing means adaptive (from recent analysis times).
  std::optional<int> debounce_ms;
  ConfigurationPreference configuration_preference = ConfigurationPreference::EditorFirst;
  // Rule selection (see apply_settings): `select` replaces the file's, `ignore` and `extendSelect`
  // add to the file's lists.
  std::optional<std::vector<std::string>> select;
  std::optional<std::vector<std::string>> ignore;
  std::optional<std::vector<std::string>> extend_select;
  std::optional<Scope> scope;
  bool unsafe_fixes = false;             // quick fixes and fix-all also apply Unsafe fixes
  bool fix_all = true;                   // offer source.fixAll.graphmend
  std::optional<bool> pull_diagnostics;  // force pull (true) or push (false); default: client's
  std::optional<std::string> log_level;
  std::size_t max_file_bytes = 4u * 1024u * 1024u;  // larger documents are not analysed
  bool validate_enable = true;                      // validation code lenses and graphmend.validate
  std::optional<std::string> validator_python;      // interpreter for the validator (else discovered)

  bool operator==(const Settings&) const = default;
};

// Reads the settings it knows from `value` (a settings object, or one with a "graphmend" member)
// over `base`. Unknown keys are ignored; known keys of the wrong type are reported in `warnings`.
Settings merge_settings(Settings base, const nlohmann::json& value, std::vector<std::string>* warnings);

// The editor's settings combined with a file's configuration (`config`: its pyproject.toml's, or the
// defaults), as `configuration_preference` says. `ignore` and `extendSelect` always add to the file's
// lists; `select` and `scope` replace the file's (editorFirst), or only apply where the file does not
// set that key (filesystemFirst). editorOnly drops the file's configuration: the editor's settings
// over the defaults.
Config apply_settings(Config config, const Settings& settings);

}  // namespace graphmend::lsp
