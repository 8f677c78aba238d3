#include "graphmend/analysis/torch_version.h"

#include <unistd.h>

#include <array>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <regex>

namespace graphmend {
namespace fs = std::filesystem;

namespace {

constexpr std::array<TorchVersion, 3> kSupported{{{2, 13}, {2, 14}, {2, 15}}};
constexpr std::string_view kOwnEnvironment = "the environment graphmend is installed in";

bool is_executable(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

std::optional<fs::path> prefix_python(const fs::path& prefix) {
  if (prefix.empty()) return std::nullopt;
  for (const char* name : {"python", "python3"}) {
    if (is_executable(prefix / "bin" / name)) return prefix / "bin" / name;
  }
  return std::nullopt;
}

std::optional<fs::path> venv_python_above(fs::path dir) {
  std::error_code ec;
  dir = fs::absolute(dir, ec);
  while (!dir.empty()) {
    for (const char* venv : {".venv", "venv"}) {
      if (auto python = prefix_python(dir / venv)) return python;
    }
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return std::nullopt;
}

// <prefix>/lib/python3.*/site-packages/torch/version.py: `__version__ = '2.15.0+cu132'`.
std::optional<std::string> installed_torch(const fs::path& python) {
  std::error_code ec;
  const fs::path lib = python.parent_path().parent_path() / "lib";
  static const std::regex version_line(R"(^__version__\s*=\s*['"]([^'"]+)['"])");
  for (fs::directory_iterator it(lib, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->path().filename().string().starts_with("python")) continue;
    const fs::path torch = it->path() / "site-packages" / "torch";
    if (!fs::is_regular_file(torch / "__init__.py", ec)) continue;
    std::ifstream in(torch / "version.py");
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (std::regex_search(line, m, version_line)) return m[1].str();
    }
    return std::string("unknown");
  }
  return std::nullopt;
}

}  // namespace

std::optional<TorchVersion> parse_torch_version(std::string_view text) {
  TorchVersion v;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v.major);
  if (ec != std::errc{} || p == end || *p != '.') return std::nullopt;
  auto [q, ec2] = std::from_chars(p + 1, end, v.minor);
  if (ec2 != std::errc{}) return std::nullopt;
  if (q != end && *q != '.' && *q != '+' && *q != 'a' && *q != 'b' && *q != 'r') return std::nullopt;
  return v;
}

std::span<const TorchVersion> supported_torch_versions() { return kSupported; }

TorchVersion nearest_supported(TorchVersion v) {
  if (v < kSupported.front()) return kSupported.front();
  if (v > kSupported.back()) return kSupported.back();
  return v;
}

EnvironmentContext EnvironmentContext::current() {
  EnvironmentContext context;
  std::error_code ec;
  context.executable = fs::read_symlink("/proc/self/exe", ec);
  if (const char* v = std::getenv("VIRTUAL_ENV"); v != nullptr) context.virtual_env = v;
  if (const char* v = std::getenv("CONDA_PREFIX"); v != nullptr) context.conda_prefix = v;
  return context;
}

std::vector<PythonEnvironment> python_environments(const fs::path& near, const fs::path& workspace,
                                                   const EnvironmentContext& context) {
  std::vector<PythonEnvironment> out;
  auto add = [&](const fs::path& python, std::string source) {
    for (const PythonEnvironment& e : out) {
      if (e.python == python) return;
    }
    out.push_back({python, std::move(source), installed_torch(python)});
  };
  if (!context.executable.empty()) {
    const fs::path prefix = context.executable.parent_path().parent_path();
    std::error_code ec;
    if (fs::exists(prefix / "pyvenv.cfg", ec) || fs::is_directory(prefix / "conda-meta", ec)) {
      if (auto python = prefix_python(prefix)) add(*python, std::string(kOwnEnvironment));
    }
  }
  if (auto python = prefix_python(context.virtual_env)) add(*python, "$VIRTUAL_ENV");
  if (auto python = prefix_python(context.conda_prefix)) add(*python, "$CONDA_PREFIX");
  if (!near.empty()) {
    if (auto python = venv_python_above(near)) add(*python, "a .venv above the target");
  }
  if (!workspace.empty()) {
    if (auto python = venv_python_above(workspace)) add(*python, "a .venv above the current folder");
  }
  return out;
}

std::optional<PythonEnvironment> preferred_environment(const fs::path& near, const fs::path& workspace,
                                                       const EnvironmentContext& context) {
  std::vector<PythonEnvironment> all = python_environments(near, workspace, context);
  if (all.empty()) return std::nullopt;
  // graphmend's own environment without torch (an isolated tool install, pipx) is not the project's.
  if (all.size() > 1 && all.front().source == kOwnEnvironment && !all.front().torch_version) return std::move(all[1]);
  return std::move(all.front());
}

std::optional<DetectedTorch> detect_torch(const fs::path& near, const EnvironmentContext& context) {
  std::optional<PythonEnvironment> env;
  for (PythonEnvironment& e : python_environments(near, {}, context)) {
    if (e.torch_version) {
      env = std::move(e);
      break;
    }
  }
  if (!env) return std::nullopt;
  auto v = parse_torch_version(*env->torch_version);
  if (!v) return std::nullopt;
  return DetectedTorch{nearest_supported(*v),
                       "torch " + *env->torch_version + " in " + env->python.string() + " (" + env->source + ")"};
}

std::optional<DetectedTorch> TorchDetector::near(const fs::path& folder) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = by_folder_.find(folder); it != by_folder_.end()) return it->second;
  return by_folder_.emplace(folder, detect_torch(folder, context_)).first->second;
}

}  // namespace graphmend
