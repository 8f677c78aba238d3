#include "lsp/validator_bridge.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "graphmend/analysis/config.h"

extern char** environ;

namespace graphmend::lsp {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string path_of(const std::string& uri) {
  if (!uri.starts_with("file://")) return uri;
  std::string out;
  for (size_t i = 7; i < uri.size(); ++i) {
    if (uri[i] == '%' && i + 2 < uri.size()) {
      out += static_cast<char>(std::stoi(uri.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += uri[i];
    }
  }
  return out;
}

// Runs argv, returns (exit status, stdout). stderr goes to our stderr (the log), never to stdout.
std::pair<int, std::string> run_capture(const std::vector<std::string>& argv) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) return {-1, ""};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipefd[0]);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    return {-1, ""};
  }
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

std::string ratio(const json& value) {
  if (!value.is_number()) return "–";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f×", value.get<double>());
  return buf;
}

}  // namespace

std::vector<std::pair<uint32_t, std::string>> validation_targets(const std::string& path, const std::string& text) {
  std::vector<std::string> names{"example"};
  std::error_code ec;
  fs::path file = fs::absolute(path, ec);
  try {
    if (auto pyproject = find_pyproject(file)) {
      Config config = load_pyproject(*pyproject);
      for (const auto& target : config.validate_targets) {
        auto sep = target.find("::");
        if (sep == std::string::npos) continue;
        fs::path target_file = pyproject->parent_path() / target.substr(0, sep);
        if (fs::weakly_canonical(target_file, ec) == fs::weakly_canonical(file, ec))
          names.push_back(target.substr(sep + 2));
      }
    }
  } catch (const ConfigError&) {
    // A broken pyproject.toml is reported by the diagnostics; lenses fall back to example().
  }
  std::vector<std::pair<uint32_t, std::string>> out;
  std::istringstream lines(text);
  std::string line;
  for (uint32_t row = 0; std::getline(lines, line); ++row) {
    if (!line.starts_with("def ")) continue;
    std::string name = line.substr(4, line.find('(') == std::string::npos ? 0 : line.find('(') - 4);
    if (std::find(names.begin(), names.end(), name) != names.end()) out.emplace_back(row, name);
  }
  return out;
}

std::string ValidatorBridge::summary(const json& r) {
  auto breaks = [](const json& arm) {
    const json* b = arm.contains("graph_break_count") ? &arm["graph_break_count"] : nullptr;
    return b && b->is_number() ? std::to_string(b->get<int64_t>()) : std::string("?");
  };
  std::string s = "breaks " + breaks(r.value("original", json::object())) + " → " +
                  breaks(r.value("fixed", json::object()));
  s += " · cold " + ratio(r.value("cold_start_speedup", json())) + " · steady " +
       ratio(r.value("steady_state_speedup", json()));
  if (r.contains("outputs_match") && r["outputs_match"].is_boolean())
    s += r["outputs_match"].get<bool>() ? " · outputs equal" : " · OUTPUTS DIFFER";
  return s;
}

json ValidatorBridge::code_lenses(const std::string& uri, const std::string& text) {
  std::string path = path_of(uri);
  json lenses = json::array();
  std::lock_guard lock(mutex_);
  for (const auto& [row, name] : validation_targets(path, text)) {
    std::string target = path + "::" + name;
    auto it = last_summary_.find(target);
    std::string title = it == last_summary_.end() ? "graphmend: validate under torch.compile" : "graphmend: " + it->second;
    lenses.push_back({{"range", {{"start", {{"line", row}, {"character", 0}}}, {"end", {{"line", row}, {"character", 0}}}}},
                      {"command", {{"title", title}, {"command", "graphmend.validate"}, {"arguments", json::array({target})}}}});
  }
  return lenses;
}

void ValidatorBridge::set_python(const std::string& python) {
  std::lock_guard lock(mutex_);
  python_ = python;
}

void ValidatorBridge::execute(const std::string& command, const json& arguments, Done done) {
  (void)command;
  std::string target;
  if (arguments.is_array() && !arguments.empty()) {
    if (arguments[0].is_string()) target = arguments[0].get<std::string>();
    else if (arguments[0].is_object() && arguments[0].contains("target")) target = arguments[0]["target"].get<std::string>();
  }
  if (target.empty() || target.find("::") == std::string::npos) {
    done(nullptr, protocol::ResponseError{-32602, "graphmend.validate takes a target `path/file.py::factory`", {}});
    return;
  }
  std::string python;
  {
    std::lock_guard lock(mutex_);
    python = python_;
  }
  // The validation runs in a child process (this executable's `validate`), off the server's threads.
  std::thread([self = shared_from_this(), target, python, done = std::move(done)] {
    std::error_code ec;
    std::vector<std::string> argv{fs::read_symlink("/proc/self/exe", ec).string(), "validate", target, "--json",
                                  "--quiet", "--repeats", "2", "--threads", "1"};
    if (!python.empty()) {
      argv.push_back("--python");
      argv.push_back(python);
    }
    auto [status, out] = run_capture(argv);
    json result;
    try {
      result = json::parse(out);
    } catch (const json::exception&) {
      done(nullptr, protocol::ResponseError{-32803, "validation failed (exit status " + std::to_string(status) + ")", {}});
      return;
    }
    std::string text = summary(result);
    {
      std::lock_guard lock(self->mutex_);
      self->last_summary_[target] = text;
    }
    result["summary"] = text;
    spdlog::info("validate {}: {}", target, text);
    done(result, std::nullopt);
  }).detach();
}

}  // namespace graphmend::lsp
