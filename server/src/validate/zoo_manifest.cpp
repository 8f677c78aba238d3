#include "validate/zoo_manifest.h"

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "graphmend/analysis/text.h"

namespace graphmend::validate {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// The keys a [[target]] may set; [defaults] takes the same but name, target, fixed and fixed-module.
constexpr std::array<std::string_view, 12> kTargetKeys{"name",         "target",  "modes",         "fixed",
                                                       "fixed-module", "backend", "repeats",       "timeout",
                                                       "threads",      "timing",  "timing-device", "timing-repeats"};
constexpr std::array<std::string_view, 4> kPerTargetOnly{"name", "target", "fixed", "fixed-module"};

std::string where(const fs::path& file, const toml::node& node) {
  const auto& begin = node.source().begin;
  return file.string() + ":" + std::to_string(begin.line) + ":" + std::to_string(begin.column);
}

std::string unknown_key_message(std::string_view key, std::string_view table) {
  std::vector<std::string> names(kTargetKeys.begin(), kTargetKeys.end());
  std::string message = "unknown key `" + std::string(key) + "` in " + std::string(table);
  if (auto near = closest_match(key, names)) message += " (did you mean `" + *near + "`?)";
  return message;
}

// The built-in settings of every target, before [defaults], the target's own keys and the command line.
json builtin_settings() {
  return {{"modes", json::array({"eval"})},
          {"fixed", "auto"},
          {"fixed_module", nullptr},
          {"backend", "inductor"},
          {"repeats", 1},
          {"timeout_s", 600.0},
          {"threads", nullptr},
          {"timing", false},
          {"timing_device", "cuda"},
          {"timing_repeats", 3}};
}

fs::path resolve(const fs::path& base, const std::string& path) {
  std::error_code ec;
  return fs::absolute(base / path, ec).lexically_normal();
}

// Reads one key of a [[target]] or [defaults] table into `out` (JSON names: snake_case).
void read_setting(json& out, std::string_view key, const toml::node& node, const fs::path& file, const fs::path& base) {
  auto fail = [&](const std::string& what) {
    throw ManifestError(where(file, node) + ": `" + std::string(key) + "` " + what);
  };
  auto whole = [&](int low, int high) {
    auto value = node.value<int64_t>();
    if (!node.is_integer() || !value || *value < low || *value > high)
      fail("must be a whole number from " + std::to_string(low) + " to " + std::to_string(high));
    return static_cast<int>(*value);
  };
  auto text = [&]() {
    auto value = node.value<std::string>();
    if (!node.is_string() || !value || value->empty()) fail("must be a non-empty string");
    return *value;
  };
  if (key == "name") {
    out["name"] = text();
  } else if (key == "target") {
    const std::string target = text();
    const auto sep = target.rfind("::");
    if (sep == std::string::npos || sep + 2 >= target.size())
      fail("must be path/to/file.py::factory, got `" + target + "`");
    const fs::path path = resolve(base, target.substr(0, sep));
    std::error_code ec;
    if (path.extension() != ".py") fail("names `" + target.substr(0, sep) + "`, which is not a .py file");
    if (!fs::is_regular_file(path, ec)) fail("names `" + path.string() + "`, which does not exist");
    out["target"] = path.string() + "::" + target.substr(sep + 2);
    out["target_as_written"] = target;
  } else if (key == "modes") {
    const toml::array* list = node.as_array();
    if (list == nullptr || list->empty()) fail("must be a non-empty list of \"eval\" and \"train\"");
    json modes = json::array();
    std::set<std::string> seen;
    for (const auto& entry : *list) {
      auto mode = entry.value<std::string>();
      if (!entry.is_string() || !mode || (*mode != "eval" && *mode != "train"))
        throw ManifestError(where(file, entry) + ": `modes` may hold only \"eval\" and \"train\"");
      if (seen.insert(*mode).second) modes.push_back(*mode);
    }
    out["modes"] = modes;
  } else if (key == "fixed") {
    const std::string fixed = text();
    if (fixed == "auto" || fixed == "none") {
      out["fixed"] = fixed;
    } else {
      const fs::path path = resolve(base, fixed);
      std::error_code ec;
      if (!fs::is_regular_file(path, ec)) fail("names `" + path.string() + "`, which does not exist");
      out["fixed"] = path.string();
    }
  } else if (key == "fixed-module") {
    out["fixed_module"] = text();
  } else if (key == "backend") {
    out["backend"] = text();
  } else if (key == "repeats") {
    out["repeats"] = whole(1, 1000);
  } else if (key == "timing-repeats") {
    out["timing_repeats"] = whole(1, 1000);
  } else if (key == "threads") {
    out["threads"] = whole(1, 4096);
  } else if (key == "timeout") {
    auto value = node.value<double>();
    if (!(node.is_integer() || node.is_floating_point()) || !value || !std::isfinite(*value) || *value <= 0)
      fail("must be a positive number of seconds");
    out["timeout_s"] = *value;
  } else if (key == "timing") {
    if (!node.is_boolean()) fail("must be true or false");
    out["timing"] = *node.value<bool>();
  } else if (key == "timing-device") {
    const std::string device = text();
    if (!device.starts_with("cuda") && device != "cpu") fail("must be cuda, cuda:N or cpu, got `" + device + "`");
    out["timing_device"] = device;
  }
}

void apply_overrides(json& target, const ZooOverrides& overrides) {
  if (!overrides.modes.empty()) target["modes"] = overrides.modes;
  if (!overrides.backend.empty()) target["backend"] = overrides.backend;
  if (overrides.repeats > 0) target["repeats"] = overrides.repeats;
  if (overrides.timeout_s > 0) target["timeout_s"] = overrides.timeout_s;
}

// "dir/model.py::make" -> "model::make": short, and unique as long as file stems and factories are.
std::string default_name(const std::string& target_as_written) {
  const auto sep = target_as_written.rfind("::");
  return fs::path(target_as_written.substr(0, sep)).stem().string() + "::" + target_as_written.substr(sep + 2);
}

void check_unique_names(const json& targets, const fs::path& file) {
  std::map<std::string, std::string> seen;
  for (const auto& target : targets) {
    const std::string name = target["name"];
    auto [it, inserted] = seen.emplace(name, target["target"]);
    if (!inserted)
      throw ManifestError(file.string() + ": two targets are named `" + name + "` (" + it->second + " and " +
                          target["target"].get<std::string>() + "); give one a `name`");
  }
}

}  // namespace

json read_zoo_file(const fs::path& file, const ZooOverrides& overrides) {
  toml::table root;
  try {
    root = toml::parse_file(file.string());
  } catch (const toml::parse_error& e) {
    const auto& begin = e.source().begin;
    throw ManifestError(file.string() + ":" + std::to_string(begin.line) + ":" + std::to_string(begin.column) + ": " +
                        std::string(e.description()));
  }
  const fs::path base = file.parent_path();
  json defaults = builtin_settings();
  for (const auto& [key, node] : root) {
    if (key.str() != "defaults" && key.str() != "target")
      throw ManifestError(where(file, node) + ": unknown table `" + std::string(key.str()) +
                          "` (a zoo file has [defaults] and [[target]] tables)");
  }
  if (const toml::node* node = root.get("defaults")) {
    const toml::table* table = node->as_table();
    if (table == nullptr) throw ManifestError(where(file, *node) + ": `defaults` must be a table");
    for (const auto& [key, value] : *table) {
      const std::string_view name = key.str();
      if (std::find(kTargetKeys.begin(), kTargetKeys.end(), name) == kTargetKeys.end())
        throw ManifestError(where(file, value) + ": " + unknown_key_message(name, "[defaults]"));
      if (std::find(kPerTargetOnly.begin(), kPerTargetOnly.end(), name) != kPerTargetOnly.end())
        throw ManifestError(where(file, value) + ": `" + std::string(name) +
                            "` belongs in a [[target]], not in [defaults]");
      read_setting(defaults, name, value, file, base);
    }
  }
  json targets = json::array();
  const toml::node* list_node = root.get("target");
  const toml::array* list = list_node != nullptr ? list_node->as_array() : nullptr;
  if (list_node != nullptr && list == nullptr)
    throw ManifestError(where(file, *list_node) + ": `target` must be an array of tables ([[target]])");
  if (list == nullptr || list->empty()) throw ManifestError(file.string() + ": the zoo file has no [[target]] tables");
  for (const auto& entry : *list) {
    const toml::table* table = entry.as_table();
    if (table == nullptr) throw ManifestError(where(file, entry) + ": each `target` must be a table ([[target]])");
    json target = defaults;
    for (const auto& [key, value] : *table) {
      const std::string_view name = key.str();
      if (std::find(kTargetKeys.begin(), kTargetKeys.end(), name) == kTargetKeys.end())
        throw ManifestError(where(file, value) + ": " + unknown_key_message(name, "[[target]]"));
      read_setting(target, name, value, file, base);
    }
    if (!target.contains("target")) throw ManifestError(where(file, entry) + ": this [[target]] has no `target` key");
    if (!target.contains("name")) target["name"] = default_name(target["target_as_written"]);
    target["label"] = target["target_as_written"];  // as written: reports stay the same on every machine
    target.erase("target_as_written");
    apply_overrides(target, overrides);
    targets.push_back(std::move(target));
  }
  check_unique_names(targets, file);
  std::error_code ec;
  return {{"source", fs::absolute(file, ec).lexically_normal().string()}, {"targets", targets}};
}

json zoo_from_pyproject(const fs::path& pyproject, const std::vector<std::string>& list,
                        const ZooOverrides& overrides) {
  const fs::path base = pyproject.parent_path();
  json targets = json::array();
  for (const std::string& written : list) {
    const auto sep = written.rfind("::");
    if (sep == std::string::npos || sep + 2 >= written.size())
      throw ManifestError(pyproject.string() + ": [tool.graphmend] validate: `" + written +
                          "` is not path/to/file.py::factory");
    const fs::path path = resolve(base, written.substr(0, sep));
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
      throw ManifestError(pyproject.string() + ": [tool.graphmend] validate: `" + written + "` names " + path.string() +
                          ", which does not exist");
    json target = builtin_settings();
    target["name"] = default_name(written);
    target["label"] = written;
    target["target"] = path.string() + "::" + written.substr(sep + 2);
    apply_overrides(target, overrides);
    targets.push_back(std::move(target));
  }
  check_unique_names(targets, pyproject);
  std::error_code ec;
  return {{"source", fs::absolute(pyproject, ec).lexically_normal().string()}, {"targets", targets}};
}

}  // namespace graphmend::validate
