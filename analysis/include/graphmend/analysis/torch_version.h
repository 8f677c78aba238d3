// The torch whose facts apply: Dynamo's break ids and some breaks themselves moved between releases
// (docs/torch-versions.md). A checked project names it (`torch-version` in [tool.graphmend], or
// --torch-version), else it is read from the torch installed in the project's environment, else the
// newest supported one applies.
#pragma once

#include <compare>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace graphmend {

struct TorchVersion {
  int major = 2;
  int minor = 15;
  auto operator<=>(const TorchVersion&) const = default;
  std::string str() const { return std::to_string(major) + "." + std::to_string(minor); }
};
// "2.15", "2.15.0", "2.15.0+cu132", "2.16.0.dev20261201": nullopt when not a version.
std::optional<TorchVersion> parse_torch_version(std::string_view text);
// The releases graphmend's facts are checked on (oldest first).
std::span<const TorchVersion> supported_torch_versions();
// The supported release whose facts apply to `v`: older ones get the oldest's, newer the newest's.
TorchVersion nearest_supported(TorchVersion v);

// Where graphmend looks for Python environments besides the checked file: its own executable and the
// activated environments.
struct EnvironmentContext {
  std::filesystem::path executable;    // /proc/self/exe
  std::filesystem::path virtual_env;   // $VIRTUAL_ENV
  std::filesystem::path conda_prefix;  // $CONDA_PREFIX
  static EnvironmentContext current();
};
struct PythonEnvironment {
  std::filesystem::path python;              // <prefix>/bin/python
  std::string source;                        // why: "the environment graphmend is installed in", "$VIRTUAL_ENV", ...
  std::optional<std::string> torch_version;  // site-packages/torch/version.py's __version__, when installed
};
// The candidate interpreters, in order: the environment graphmend is installed in (bin/graphmend beside a
// pyvenv.cfg or conda-meta), $VIRTUAL_ENV, $CONDA_PREFIX, a .venv or venv in `near` or a folder above, one
// in `workspace` or above. Only files are read: no interpreter is started.
std::vector<PythonEnvironment> python_environments(const std::filesystem::path& near,
                                                   const std::filesystem::path& workspace,
                                                   const EnvironmentContext& context);
// The first candidate, passing over graphmend's own environment when it has no torch (an isolated tool
// install) and another candidate exists; nullopt when there is none.
std::optional<PythonEnvironment> preferred_environment(const std::filesystem::path& near,
                                                       const std::filesystem::path& workspace,
                                                       const EnvironmentContext& context);

// The torch installed in the first candidate near `near` that has one: its version (the nearest supported) and where it
// was found ("torch 2.15.0+cu132 in /p/.venv/bin/python (a .venv above the target)"); nullopt when none is.
struct DetectedTorch {
  TorchVersion version;
  std::string source;
};
std::optional<DetectedTorch> detect_torch(const std::filesystem::path& near, const EnvironmentContext& context);

// detect_torch() per folder, remembered: a walk over a tree asks for every file.
class TorchDetector {
 public:
  explicit TorchDetector(EnvironmentContext context = EnvironmentContext::current()) : context_(std::move(context)) {}
  // Thread-safe: `check --jobs N` resolves the configuration of its files from N threads.
  std::optional<DetectedTorch> near(const std::filesystem::path& folder);
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    by_folder_.clear();
  }

 private:
  EnvironmentContext context_;
  std::mutex mutex_;
  std::map<std::filesystem::path, std::optional<DetectedTorch>> by_folder_;
};

}  // namespace graphmend
