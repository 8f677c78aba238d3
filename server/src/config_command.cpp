// `graphmend config [KEY] [--schema]`: the keys of [tool.graphmend], from the table the loader uses
// (config_keys()), like `ruff config`; --schema prints the JSON Schema published as
// docs/schema/graphmend.schema.json.
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/cli_app.h"
#include "commands.h"
#include "graphmend/analysis/config.h"

namespace graphmend::cli {
namespace {

using ordered_json = nlohmann::ordered_json;

const char* type_name(ConfigValueKind kind) {
  switch (kind) {
    case ConfigValueKind::StringList:
      return "list of strings";
    case ConfigValueKind::String:
      return "string";
    case ConfigValueKind::Boolean:
      return "boolean";
    case ConfigValueKind::Scope:
      return "\"compiled\" or \"all\"";
    case ConfigValueKind::GlobToCodeList:
      return "table: glob -> list of rule codes or prefixes";
  }
  return "";
}

ordered_json type_schema(ConfigValueKind kind) {
  const ordered_json strings = {{"type", "array"}, {"items", {{"type", "string"}}}};
  switch (kind) {
    case ConfigValueKind::StringList:
      return strings;
    case ConfigValueKind::String:
      return {{"type", "string"}, {"minLength", 1}};
    case ConfigValueKind::Boolean:
      return {{"type", "boolean"}};
    case ConfigValueKind::Scope:
      return {{"type", "string"}, {"enum", ordered_json::array({"compiled", "all"})}};
    case ConfigValueKind::GlobToCodeList:
      return {{"type", "object"}, {"additionalProperties", strings}};
  }
  return {};
}

ordered_json schema() {
  ordered_json properties = ordered_json::object();
  for (const ConfigKey& key : config_keys()) {
    ordered_json property = {{"description", key.description}};
    property.update(type_schema(key.kind));
    if (!key.default_json.empty()) property["default"] = ordered_json::parse(key.default_json);
    property["examples"] = ordered_json::array({ordered_json::parse(key.example_json)});
    properties[std::string(key.name)] = std::move(property);
  }
  return {{"$schema", "http://json-schema.org/draft-07/schema#"},
          {"title", "[tool.graphmend]"},
          {"description",
           "graphmend's configuration: the [tool.graphmend] table of pyproject.toml "
           "(docs/configuration.md). Unknown keys are errors."},
          {"type", "object"},
          {"properties", std::move(properties)},
          {"additionalProperties", false}};
}

}  // namespace

int run_config(const std::vector<std::string>& args) {
  std::optional<std::string> key;
  bool print_schema = false;
  auto app = make_app("config",
                      "The keys of [tool.graphmend] in pyproject.toml (docs/configuration.md): all of them, "
                      "or one's type, default and meaning.");
  app->add_option("KEY", key, "a key, e.g. exclude")->type_name("KEY");
  app->add_flag("--schema", print_schema,
                "print the JSON Schema of [tool.graphmend] (docs/schema/graphmend.schema.json)");
  if (auto stop = parse_command_line(*app, args)) return *stop;
  if (print_schema) {
    if (key) return usage_error(*app, "--schema takes no KEY");
    std::cout << schema().dump(2) << "\n";
    return 0;
  }
  if (!key) {
    for (const ConfigKey& k : config_keys()) std::cout << k.name << "\n";
    return 0;
  }
  std::vector<std::string> names;
  for (const ConfigKey& k : config_keys()) {
    names.emplace_back(k.name);
    if (k.name != *key) continue;
    std::cout << k.name << "\n\n" << k.description << "\n\ntype: " << type_name(k.kind) << "\n";
    if (!k.default_json.empty()) std::cout << "default: " << ordered_json::parse(k.default_json).dump() << "\n";
    std::cout << "example: " << ordered_json::parse(k.example_json).dump() << "\n";
    return 0;
  }
  std::string message = "unknown key `" + *key + "`";
  if (auto match = closest_match(*key, names)) message += " (did you mean `" + *match + "`?)";
  return usage_error(*app, message + "; `graphmend config` lists the keys");
}

}  // namespace graphmend::cli
