#include "lsp/settings.h"

namespace graphmend::lsp {
namespace {

using nlohmann::json;

std::optional<std::vector<std::string>> read_list(const json& value, const char* key,
                                                  std::vector<std::string>* warnings) {
  const auto it = value.find(key);
  if (it == value.end() || it->is_null()) return std::nullopt;
  bool ok = it->is_array();
  std::vector<std::string> list;
  if (ok) {
    for (const json& item : *it) {
      if (!item.is_string()) {
        ok = false;
        break;
      }
      list.push_back(item.get<std::string>());
    }
  }
  if (!ok) {
    if (warnings != nullptr) warnings->push_back(std::string(key) + " must be a list of strings");
    return std::nullopt;
  }
  return list;
}

void warn(std::vector<std::string>* warnings, std::string text) {
  if (warnings != nullptr) warnings->push_back(std::move(text));
}

}  // namespace

Settings merge_settings(Settings base, const json& value, std::vector<std::string>* warnings) {
  if (!value.is_object()) return base;
  if (const auto nested = value.find("graphmend"); nested != value.end() && nested->is_object()) {
    return merge_settings(std::move(base), *nested, warnings);
  }
  if (const auto it = value.find("run"); it != value.end()) {
    if (*it == "onType") {
      base.run = RunMode::OnType;
    } else if (*it == "onSave") {
      base.run = RunMode::OnSave;
    } else {
      warn(warnings, "run must be \"onType\" or \"onSave\"");
    }
  }
  for (const char* key : {"debounce", "debounceMs"}) {
    const auto it = value.find(key);
    if (it == value.end()) continue;
    if (it->is_number_integer() && it->get<int64_t>() >= 0 && it->get<int64_t>() <= 60000) {
      base.debounce_ms = it->get<int>();
    } else if (*it == "auto" || it->is_null()) {
      base.debounce_ms.reset();
    } else {
      warn(warnings, std::string(key) + " must be a number of milliseconds (0-60000) or \"auto\"");
    }
  }
  if (const auto it = value.find("configurationPreference"); it != value.end()) {
    if (*it == "editorFirst") {
      base.configuration_preference = ConfigurationPreference::EditorFirst;
    } else if (*it == "filesystemFirst") {
      base.configuration_preference = ConfigurationPreference::FilesystemFirst;
    } else if (*it == "editorOnly") {
      base.configuration_preference = ConfigurationPreference::EditorOnly;
    } else {
      warn(warnings, "configurationPreference must be \"editorFirst\", \"filesystemFirst\" or \"editorOnly\"");
    }
  }
  if (auto list = read_list(value, "select", warnings)) base.select = std::move(list);
  if (auto list = read_list(value, "ignore", warnings)) base.ignore = std::move(list);
  if (auto list = read_list(value, "extendSelect", warnings)) base.extend_select = std::move(list);
  if (const auto it = value.find("scope"); it != value.end()) {
    if (*it == "compiled") {
      base.scope = Scope::Compiled;
    } else if (*it == "all") {
      base.scope = Scope::All;
    } else {
      warn(warnings, "scope must be \"compiled\" or \"all\"");
    }
  }
  const auto read_bool = [&](const char* key, auto&& set) {
    const auto it = value.find(key);
    if (it == value.end()) return;
    if (it->is_boolean()) {
      set(it->template get<bool>());
    } else {
      warn(warnings, std::string(key) + " must be true or false");
    }
  };
  read_bool("unsafeFixes", [&](bool flag) { base.unsafe_fixes = flag; });
  read_bool("fixAll", [&](bool flag) { base.fix_all = flag; });
  // validate: {enable} and validator: {python}, as objects or as dotted keys.
  if (const auto it = value.find("validate"); it != value.end() && it->is_object()) {
    if (const auto e = it->find("enable"); e != it->end() && e->is_boolean()) base.validate_enable = e->get<bool>();
  }
  read_bool("validate.enable", [&](bool flag) { base.validate_enable = flag; });
  if (const auto it = value.find("validator"); it != value.end() && it->is_object()) {
    if (const auto p = it->find("python"); p != it->end() && p->is_string() && !p->get<std::string>().empty())
      base.validator_python = p->get<std::string>();
  }
  if (const auto it = value.find("validator.python");
      it != value.end() && it->is_string() && !it->get<std::string>().empty())
    base.validator_python = it->get<std::string>();
  read_bool("pullDiagnostics", [&](bool flag) { base.pull_diagnostics = flag; });
  if (const auto it = value.find("logLevel"); it != value.end()) {
    if (it->is_string()) {
      base.log_level = it->get<std::string>();
    } else {
      warn(warnings, "logLevel must be a string");
    }
  }
  if (const auto it = value.find("maxFileSize"); it != value.end()) {
    if (it->is_number_integer() && it->get<int64_t>() > 0) {
      base.max_file_bytes = it->get<std::size_t>();
    } else {
      warn(warnings, "maxFileSize must be a positive number of bytes");
    }
  }
  return base;
}

Config apply_settings(Config config, const Settings& settings) {
  if (settings.configuration_preference == ConfigurationPreference::EditorOnly) config = Config{};
  const bool file_first = settings.configuration_preference == ConfigurationPreference::FilesystemFirst;
  const auto editor_sets = [&](const auto& setting, std::string_view key) {
    return setting && !(file_first && config.keys_set.contains(key));
  };
  if (editor_sets(settings.select, "select")) config.select = *settings.select;
  if (editor_sets(settings.scope, "scope")) config.scope = *settings.scope;
  if (settings.ignore) config.ignore.insert(config.ignore.end(), settings.ignore->begin(), settings.ignore->end());
  if (settings.extend_select)
    config.extend_select.insert(config.extend_select.end(), settings.extend_select->begin(),
                                settings.extend_select->end());
  return config;
}

}  // namespace graphmend::lsp
