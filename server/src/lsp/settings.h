// Editor settings of the language server (initializationOptions, workspace/configuration,
// didChangeConfiguration) and how they overlay a file's pyproject.toml configuration.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graphmend/analysis/config.h"

namespace graphmend::lsp {

enum class RunMode {
  OnType,  // re-analyse (debounced) after every edit
  OnSave,  // publish diagnostics when a file is opened or saved
};

struct Settings {
  RunMode run = RunMode::OnType;
  // Fixed debounce in milliseconds; nothing means adaptive (from recent analysis times).
  std::optional<int> debounce_ms;
  // Rule selection; when present they replace pyproject.toml's lists.
  std::optional<std::vector<std::string>> select;
  std::optional<std::vector<std::string>> ignore;
  std::optional<std::vector<std::string>> extend_select;
  std::optional<Scope> scope;
  bool unsafe_fixes = false;  // quick fixes and fix-all also apply Unsafe fixes
  bool fix_all = true;        // offer source.fixAll.graphmend
  std::optional<bool> pull_diagnostics;  // force pull (true) or push (false); default: client's
  std::optional<std::string> log_level;
  std::size_t max_file_bytes = 4u * 1024u * 1024u;  // larger documents are not analysed
  bool validate_enable = true;                // validation code lenses and graphmend.validate
  std::optional<std::string> validator_python;  // interpreter for the validator (else discovered)

  bool operator==(const Settings&) const = default;
};

// Reads the settings it knows from `value` (a settings object, or one with a "graphmend" member)
// over `base`. Unknown keys are ignored; known keys of the wrong type are reported in `warnings`.
Settings merge_settings(Settings base, const nlohmann::json& value,
                        std::vector<std::string>* warnings);

// The editor's overrides applied to a file's configuration.
Config apply_settings(Config config, const Settings& settings);

}  // namespace graphmend::lsp
