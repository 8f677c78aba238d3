#include "graphmend/analysis/config.h"

#include <fnmatch.h>

#include <algorithm>
#include <toml++/toml.h>

namespace graphmend {
namespace {

bool has_prefix(std::string_view code, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) {
    return p == "ALL" || code.starts_with(p);
  });
}

std::vector<std::string> string_list(const toml::node* node, const std::filesystem::path& file, const char* key) {
  std::vector<std::string> out;
  if (!node) return out;
  const toml::array* arr = node->as_array();
  if (!arr) {
    const auto& src = node->source();
    throw ConfigError(file.string() + ":" + std::to_string(src.begin.line) + ":" + std::to_string(src.begin.column) +
                      ": [tool.graphmend] " + key + " must be a list of strings");
  }
  for (const auto& item : *arr) {
    const auto* s = item.as_string();
    if (!s) {
      const auto& src = item.source();
      throw ConfigError(file.string() + ":" + std::to_string(src.begin.line) + ":" + std::to_string(src.begin.column) +
                        ": [tool.graphmend] " + key + " must contain only strings");
    }
    out.push_back(s->get());
  }
  return out;
}

}  // namespace

bool Config::enabled(std::string_view code, const std::filesystem::path& path) const {
  bool selected = has_prefix(code, select) || has_prefix(code, extend_select);
  if (!selected || has_prefix(code, ignore)) return false;
  if (per_file_ignores.empty()) return true;
  std::filesystem::path rel = path;
  if (source) {
    std::error_code ec;
    auto r = std::filesystem::relative(std::filesystem::absolute(path, ec), source->parent_path(), ec);
    if (!ec && !r.empty()) rel = r;
  }
  std::string rel_s = rel.generic_string(), name = rel.filename().string();
  for (const auto& [glob, prefixes] : per_file_ignores) {
    bool match = fnmatch(glob.c_str(), rel_s.c_str(), 0) == 0 || fnmatch(glob.c_str(), name.c_str(), 0) == 0;
    if (match && has_prefix(code, prefixes)) return false;
  }
  return true;
}

Config load_pyproject(const std::filesystem::path& pyproject) {
  Config config;
  config.source = std::filesystem::absolute(pyproject);
  toml::table table;
  try {
    table = toml::parse_file(pyproject.string());
  } catch (const toml::parse_error& e) {
    const auto& src = e.source();
    throw ConfigError(pyproject.string() + ":" + std::to_string(src.begin.line) + ":" +
                      std::to_string(src.begin.column) + ": invalid TOML: " + std::string(e.description()));
  }
  const toml::table* gm = table["tool"]["graphmend"].as_table();
  if (!gm) return config;
  if (auto* n = gm->get("select")) config.select = string_list(n, pyproject, "select");
  if (auto* n = gm->get("ignore")) config.ignore = string_list(n, pyproject, "ignore");
  if (auto* n = gm->get("extend-select")) config.extend_select = string_list(n, pyproject, "extend-select");
  if (auto* n = gm->get("validate")) config.validate_targets = string_list(n, pyproject, "validate");
  if (auto* n = gm->get("scope")) {
    auto s = n->value<std::string>();
    if (!s || (*s != "compiled" && *s != "all")) {
      const auto& src = n->source();
      throw ConfigError(pyproject.string() + ":" + std::to_string(src.begin.line) + ":" +
                        std::to_string(src.begin.column) + ": [tool.graphmend] scope must be \"compiled\" or \"all\"");
    }
    config.scope = *s == "all" ? Scope::All : Scope::Compiled;
  }
  if (auto* n = gm->get("docs-url")) {
    auto s = n->value<std::string>();
    if (!s || s->empty()) {
      const auto& src = n->source();
      throw ConfigError(pyproject.string() + ":" + std::to_string(src.begin.line) + ":" +
                        std::to_string(src.begin.column) + ": [tool.graphmend] docs-url must be a non-empty string");
    }
    config.docs_url = *s;
  }
  if (auto* pfi = gm->get("per-file-ignores")) {
    const toml::table* t = pfi->as_table();
    if (!t) {
      const auto& src = pfi->source();
      throw ConfigError(pyproject.string() + ":" + std::to_string(src.begin.line) + ":" +
                        std::to_string(src.begin.column) + ": [tool.graphmend] per-file-ignores must be a table");
    }
    for (const auto& [key, value] : *t) {
      config.per_file_ignores.emplace_back(std::string(key.str()), string_list(&value, pyproject, "per-file-ignores"));
    }
  }
  return config;
}

std::optional<std::filesystem::path> find_pyproject(const std::filesystem::path& start) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(start, ec);
  if (ec) return std::nullopt;
  if (!std::filesystem::is_directory(dir, ec)) dir = dir.parent_path();
  for (; !dir.empty(); dir = dir.parent_path()) {
    auto candidate = dir / "pyproject.toml";
    if (std::filesystem::is_regular_file(candidate, ec)) {
      try {
        auto table = toml::parse_file(candidate.string());
        if (table["tool"]["graphmend"].as_table()) return candidate;
      } catch (const toml::parse_error&) {
        return candidate;  // let load_pyproject report the syntax error with its position
      }
    }
    if (dir == dir.parent_path()) break;
  }
  return std::nullopt;
}

}  // namespace graphmend
