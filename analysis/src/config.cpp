#include "graphmend/analysis/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <array>

#include "graphmend/analysis/glob.h"
#include "graphmend/analysis/text.h"

namespace graphmend {
namespace {

// The one table of [tool.graphmend] keys (see ConfigKey); load_pyproject reads each below.
constexpr std::array<ConfigKey, 12> kConfigKeys{{
    {"select", ConfigValueKind::StringList, R"(["GM"])", R"(["GM1", "GM201"])",
     "Rule codes or prefixes to enable (`GM`, `GM1`, `GM101`, `ALL`)."},
    {"extend-select", ConfigValueKind::StringList, "[]", R"(["GM6"])",
     "Rule codes or prefixes to enable in addition to `select`."},
    {"ignore", ConfigValueKind::StringList, "[]", R"(["GM104"])",
     "Rule codes or prefixes to disable; they win over `select` and `extend-select`."},
    {"per-file-ignores", ConfigValueKind::GlobToCodeList, "{}", R"({"tests/**/*.py": ["GM2"]})",
     "Rule codes or prefixes to disable in the files matching a glob (relative to the configuration's folder; "
     "a glob without `/` matches file names)."},
    {"scope", ConfigValueKind::Scope, R"("compiled")", R"("all")",
     "`compiled`: only code torch.compile traces (module forwards, compiled functions and their callees); "
     "`all`: every function, for libraries whose code others compile."},
    {"validate", ConfigValueKind::StringList, "[]", R"(["examples/model.py::example"])",
     "Validation targets (`path.py::factory`) for the editor's validation code lens and `graphmend validate --all`."},
    {"docs-url", ConfigValueKind::String, "", R"("https://example.org/graphmend/rules")",
     "Base URL of the rule pages: a rule's link is `<docs-url>/GMxxx.md`."},
    {"torch-version", ConfigValueKind::String, "", R"("2.15")",
     "The torch whose Dynamo facts apply (break ids, breaks that differ between releases): `2.13`, `2.14` or "
     "`2.15`. Unset: the torch installed in graphmend's own environment, `$VIRTUAL_ENV`, `$CONDA_PREFIX` or a "
     "`.venv` above the checked file, else the newest supported."},
    {"exclude", ConfigValueKind::StringList,
     R"([".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache", ".nox", )"
     R"(".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".vscode", )"
     R"("__pypackages__", "_build", "buck-out", "dist", "node_modules", "site-packages", "venv"])",
     R"([".git", ".venv", "generated/**"])",
     "Files and folders not checked (globs; replaces the default list). A glob without `/` matches names "
     "anywhere, one with `/` the path relative to the configuration's folder."},
    {"extend-exclude", ConfigValueKind::StringList, "[]", R"(["third_party", "tests/fixtures/*.py"])",
     "Files and folders not checked, in addition to `exclude`."},
    {"respect-gitignore", ConfigValueKind::Boolean, "true", "false",
     "Skip the files that `.gitignore`, `.git/info/exclude` and `.ignore` files ignore."},
    {"force-exclude", ConfigValueKind::Boolean, "false", "true",
     "Apply `exclude` and `extend-exclude` to paths given on the command line too."},
}};

bool has_prefix(std::string_view code, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& p) { return p == "ALL" || code.starts_with(p); });
}

std::string where(const std::filesystem::path& file, const toml::source_region& src) {
  return file.string() + ":" + std::to_string(src.begin.line) + ":" + std::to_string(src.begin.column);
}

std::vector<std::string> string_list(const toml::node& node, const std::filesystem::path& file, std::string_view key) {
  std::vector<std::string> out;
  const toml::array* arr = node.as_array();
  if (!arr)
    throw ConfigError(where(file, node.source()) + ": [tool.graphmend] " + std::string(key) +
                      " must be a list of strings");
  for (const auto& item : *arr) {
    const auto* s = item.as_string();
    if (!s)
      throw ConfigError(where(file, item.source()) + ": [tool.graphmend] " + std::string(key) +
                        " must contain only strings");
    out.push_back(s->get());
  }
  return out;
}

// The known key nearest to `key`, when it is close (`_` for `-` counts nothing).
std::optional<std::string> suggestion(std::string_view key) {
  std::string dashed(key);
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  std::vector<std::string> names;
  for (const ConfigKey& known : kConfigKeys) names.emplace_back(known.name);
  return closest_match(dashed, names);
}

void read_key(Config& config, const ConfigKey& key, const toml::node& node, const std::filesystem::path& file) {
  const std::string name(key.name);
  switch (key.kind) {
    case ConfigValueKind::StringList: {
      auto list = string_list(node, file, name);
      if (name == "select")
        config.select = std::move(list);
      else if (name == "extend-select")
        config.extend_select = std::move(list);
      else if (name == "ignore")
        config.ignore = std::move(list);
      else if (name == "validate")
        config.validate_targets = std::move(list);
      else if (name == "exclude")
        config.exclude = std::move(list);
      else if (name == "extend-exclude")
        config.extend_exclude = std::move(list);
      return;
    }
    case ConfigValueKind::String: {
      auto s = node.value<std::string>();
      if (!s || s->empty())
        throw ConfigError(where(file, node.source()) + ": [tool.graphmend] " + name + " must be a non-empty string");
      if (name == "docs-url") config.docs_url = *s;
      if (name == "torch-version") {
        auto v = parse_torch_version(*s);
        if (!v)
          throw ConfigError(where(file, node.source()) +
                            ": [tool.graphmend] torch-version must be a torch release "
                            "such as \"2.15\", got \"" +
                            *s + "\"");
        config.torch = nearest_supported(*v);
        config.torch_source = "torch-version in " + file.string();
      }
      return;
    }
    case ConfigValueKind::Boolean: {
      auto b = node.value<bool>();
      if (!node.is_boolean() || !b)
        throw ConfigError(where(file, node.source()) + ": [tool.graphmend] " + name + " must be true or false");
      if (name == "respect-gitignore")
        config.respect_gitignore = *b;
      else if (name == "force-exclude")
        config.force_exclude = *b;
      return;
    }
    case ConfigValueKind::Scope: {
      auto s = node.value<std::string>();
      if (!node.is_string() || !s || (*s != "compiled" && *s != "all"))
        throw ConfigError(where(file, node.source()) + ": [tool.graphmend] " + name +
                          " must be \"compiled\" or \"all\"");
      config.scope = *s == "all" ? Scope::All : Scope::Compiled;
      return;
    }
    case ConfigValueKind::GlobToCodeList: {
      const toml::table* t = node.as_table();
      if (!t) throw ConfigError(where(file, node.source()) + ": [tool.graphmend] " + name + " must be a table");
      for (const auto& [glob, value] : *t)
        config.per_file_ignores.emplace_back(std::string(glob.str()), string_list(value, file, name));
      return;
    }
  }
}

}  // namespace

const std::vector<std::string>& Config::default_exclude() {
  static const std::vector<std::string> kDefault{
      ".bzr",        ".direnv",      ".eggs",         ".git",    ".git-rewrite",   ".hg",     ".ipynb_checkpoints",
      ".mypy_cache", ".nox",         ".pants.d",      ".pyenv",  ".pytest_cache",  ".pytype", ".ruff_cache",
      ".svn",        ".tox",         ".venv",         ".vscode", "__pypackages__", "_build",  "buck-out",
      "dist",        "node_modules", "site-packages", "venv"};
  return kDefault;
}

std::span<const ConfigKey> config_keys() { return kConfigKeys; }

bool opt_in_rule(std::string_view code) { return code.starts_with("GM0"); }

bool Config::enabled(std::string_view code, const std::filesystem::path& path) const {
  // Opt-in rules (GM0xx) are selected only by a selector naming their family at least: `GM0`, `GM001`.
  auto selects = [&](const std::vector<std::string>& selectors) {
    if (!opt_in_rule(code)) return has_prefix(code, selectors);
    return std::any_of(selectors.begin(), selectors.end(),
                       [&](const std::string& s) { return s.size() >= 3 && code.starts_with(s); });
  };
  bool selected = selects(select) || selects(extend_select);
  if (!selected || has_prefix(code, ignore)) return false;
  if (per_file_ignores.empty()) return true;
  std::error_code ec;
  const std::filesystem::path file = std::filesystem::absolute(path, ec);
  const std::filesystem::path base = source ? source->parent_path() : std::filesystem::current_path(ec);
  for (const auto& [glob, prefixes] : per_file_ignores) {
    if (has_prefix(code, prefixes) && path_matches(glob, file, base)) return false;
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
    throw ConfigError(where(pyproject, e.source()) + ": invalid TOML: " + std::string(e.description()));
  }
  const toml::node* node = table["tool"]["graphmend"].node();
  if (!node) return config;
  const toml::table* gm = node->as_table();
  if (!gm) throw ConfigError(where(pyproject, node->source()) + ": [tool.graphmend] must be a table");
  for (const auto& [key, value] : *gm) {
    const std::string_view name = key.str();  // (clang 14 cannot capture a structured binding)
    const auto known =
        std::find_if(kConfigKeys.begin(), kConfigKeys.end(), [&](const ConfigKey& k) { return k.name == name; });
    if (known == kConfigKeys.end()) {
      std::string message =
          where(pyproject, key.source()) + ": unknown key `" + std::string(key.str()) + "` in [tool.graphmend]";
      if (auto near = suggestion(key.str())) message += "; did you mean `" + std::string(*near) + "`?";
      throw ConfigError(message);
    }
    read_key(config, *known, value, pyproject);
    config.keys_set.emplace(known->name);
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

DiscoveredConfig ConfigCache::discover(const std::filesystem::path& folder) {
  const std::filesystem::path dir = folder.lexically_normal();
  std::lock_guard lock(mutex_);
  DiscoveredConfig out;
  out.pyproject = nearest(dir);
  if (!out.pyproject) return out;
  auto it = loaded_.find(*out.pyproject);
  if (it == loaded_.end()) {
    Loaded loaded;
    try {
      loaded.config = std::make_shared<const Config>(load_pyproject(*out.pyproject));
    } catch (const std::exception& error) {  // ConfigError, or the file could not be read
      loaded.error = error.what();
    }
    it = loaded_.emplace(*out.pyproject, std::move(loaded)).first;
    out.first_read = true;
  }
  out.config = it->second.config;
  out.error = it->second.error;
  return out;
}

// find_pyproject(folder), from the parent's answer unless the folder has a pyproject.toml (a walk over a
// tree asks for every folder: each file is parsed once). The mutex is held.
std::optional<std::filesystem::path> ConfigCache::nearest(const std::filesystem::path& dir) {
  if (auto it = nearest_.find(dir); it != nearest_.end()) return it->second;
  std::error_code ec;
  std::optional<std::filesystem::path> found;
  if (std::filesystem::exists(dir / "pyproject.toml", ec))
    found = find_pyproject(dir);
  else if (dir.has_relative_path())
    found = nearest(dir.parent_path());
  return nearest_.emplace(dir, found).first->second;
}

void ConfigCache::clear() {
  std::lock_guard lock(mutex_);
  nearest_.clear();
  loaded_.clear();
}

void apply_detected_torch(Config& config, const std::optional<DetectedTorch>& detected) {
  if (!detected || config.keys_set.contains("torch-version")) return;
  config.torch = detected->version;
  config.torch_source = detected->source;
}

}  // namespace graphmend
