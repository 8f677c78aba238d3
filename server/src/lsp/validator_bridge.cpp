#include "lsp/validator_bridge.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include "graphmend/analysis/config.h"
#include "graphmend/protocol/lsp.h"
#include "validate/process_tree.h"

extern char** environ;

namespace graphmend::lsp {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A --deploy run's summary is kept apart from the plain validation's: each lens shows its own.
constexpr const char* kDeploySuffix = "#deploy";

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Starts argv with stdout and stderr on pipes (returned), stdin on /dev/null, in a process group of
// its own, with default signal dispositions (the server ignores SIGPIPE) and nothing blocked.
// Returns the pid, or -1 with `error` set.
pid_t spawn_child(const std::vector<std::string>& argv, int& out_fd, int& err_fd, std::string& error) {
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  // Close-on-exec: a second run's child must not hold this run's pipes open (dup2 clears the flag
  // on the child's own 1 and 2).
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      if (fd >= 0) ::close(fd);
    return -1;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);  // its own process group: cancelling kills it as a whole
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    error = "cannot run " + argv[0] + ": " + std::strerror(rc);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return -1;
  }
  out_fd = out_pipe[0];
  err_fd = err_pipe[0];
  return pid;
}

// One line of the child's stderr: a progress line (`{"progress": {"message", "percentage"}}`,
// from --progress-json) goes to `report`; anything else is the child's log, and goes to ours.
void stderr_line(const std::string& target, const std::string& line, const Validator::Report& report) {
  if (line.empty()) return;
  if (line.front() == '{') {
    json parsed = json::parse(line, nullptr, false);
    if (parsed.is_object() && parsed.contains("progress") && parsed["progress"].is_object()) {
      const json& p = parsed["progress"];
      const std::string message = p.value("message", std::string());
      const int percentage =
          p.contains("percentage") && p["percentage"].is_number_integer() ? p["percentage"].get<int>() : -1;
      spdlog::debug("validate {}: {}", target, message);
      if (report) report(message, percentage);
      return;
    }
  }
  spdlog::info("validate {}: {}", target, line);
}

std::string ratio(const json& value) {
  if (!value.is_number()) return "–";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f×", value.get<double>());
  return buf;
}

}  // namespace

std::vector<std::pair<uint32_t, std::string>> validation_targets(const std::string& text,
                                                                 const std::vector<std::string>& names) {
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
  if (r.contains("ok") && r["ok"].is_boolean() && !r["ok"].get<bool>()) {
    const json error = r.contains("error") && r["error"].is_object() ? r["error"] : json::object();
    auto text = [&](const char* key) {
      return error.contains(key) && error[key].is_string() ? error[key].get<std::string>() : std::string();
    };
    std::string s = "failed: " + (text("kind").empty() ? std::string("error") : text("kind"));
    if (const std::string arm = text("arm"); !arm.empty())
      s += arm == "prepare" ? " in prepare" : " in the " + arm + " arm";
    std::string detail = text("type");
    if (const std::string message = text("message"); !message.empty()) detail += (detail.empty() ? "" : ": ") + message;
    if (detail.size() > 80) detail = detail.substr(0, 77) + "...";
    if (!detail.empty()) s += " (" + detail + ")";
    return s;
  }
  auto breaks = [](const json& arm) {
    const json* b = arm.contains("graph_break_count") ? &arm["graph_break_count"] : nullptr;
    return b && b->is_number() ? std::to_string(b->get<int64_t>()) : std::string("?");
  };
  std::string s =
      "breaks " + breaks(r.value("original", json::object())) + " → " + breaks(r.value("fixed", json::object()));
  s += " · cold " + ratio(r.value("cold_start_speedup", json())) + " · steady " +
       ratio(r.value("steady_state_speedup", json()));
  if (r.contains("outputs_match") && r["outputs_match"].is_boolean())
    s += r["outputs_match"].get<bool>() ? " · outputs equal" : " · OUTPUTS DIFFER";
  if (r.contains("deployable") && r["deployable"].is_boolean())
    s += r["deployable"].get<bool>() ? " · deployable (export, AOTInductor, C++)" : " · NOT DEPLOYABLE";
  return s;
}

json ValidatorBridge::code_lenses(const std::string& uri, const std::string& text,
                                  const std::vector<std::string>& factories) {
  json lenses = json::array();
  // Only a file on disk can be validated: an in-memory document (untitled:...) has no lens.
  const std::optional<std::string> file = protocol::uri_to_path(uri);
  if (!file) return lenses;
  const std::string& path = *file;
  std::lock_guard lock(mutex_);
  for (const auto& [row, name] : validation_targets(text, factories)) {
    std::string target = path + "::" + name;
    const json range = {{"start", {{"line", row}, {"character", 0}}}, {"end", {{"line", row}, {"character", 0}}}};
    auto it = last_summary_.find(target);
    std::string title =
        it == last_summary_.end() ? "graphmend: validate under torch.compile" : "graphmend: " + it->second;
    lenses.push_back(
        {{"range", range},
         {"command", {{"title", title}, {"command", "graphmend.validate"}, {"arguments", json::array({target})}}}});
    // The deploy proof is a second lens: it exports, packages and builds C++, which takes longer.
    auto deployed = last_summary_.find(target + kDeploySuffix);
    std::string deploy_title = deployed == last_summary_.end()
                                   ? "graphmend: prove deployable (torch.export, AOTInductor, C++)"
                                   : "graphmend: " + deployed->second;
    lenses.push_back({{"range", range},
                      {"command",
                       {{"title", deploy_title},
                        {"command", "graphmend.validate"},
                        {"arguments", json::array({{{"target", target}, {"deploy", true}}})}}}});
  }
  return lenses;
}

void ValidatorBridge::set_python(const std::string& python) {
  std::lock_guard lock(mutex_);
  python_ = python;
}

void ValidatorBridge::execute(const std::string& command, const json& arguments, const json& id, Report report,
                              Done done) {
  (void)command;
  // [TARGET] or [{"target": TARGET, "backend"?: NAME, "repeats"?: N, "mode"?: "eval"|"train", "deploy"?: bool}].
  std::string target;
  std::string backend;
  std::string mode;
  bool deploy = false;
  int repeats = 2;
  auto bad = [&](const std::string& message) { done(nullptr, protocol::ResponseError{-32602, message, {}}); };
  if (arguments.is_array() && !arguments.empty()) {
    const json& first = arguments[0];
    if (first.is_string()) {
      target = first.get<std::string>();
    } else if (first.is_object()) {
      if (first.contains("target") && first["target"].is_string()) target = first["target"].get<std::string>();
      if (first.contains("backend")) {
        const json& b = first["backend"];
        if (!b.is_string() || b.get<std::string>().empty() ||
            !std::isalpha(static_cast<unsigned char>(b.get<std::string>()[0])) ||
            b.get<std::string>().find_first_not_of(
                "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-") != std::string::npos)
          return bad("graphmend.validate: `backend` must be a torch.compile backend name (inductor, eager, ...)");
        backend = b.get<std::string>();
      }
      if (first.contains("repeats")) {
        const json& r = first["repeats"];
        if (!r.is_number_integer() || r.get<int64_t>() < 1 || r.get<int64_t>() > 100)
          return bad("graphmend.validate: `repeats` must be a whole number from 1 to 100");
        repeats = static_cast<int>(r.get<int64_t>());
      }
      if (first.contains("mode")) {
        const json& m = first["mode"];
        if (!m.is_string() || (m.get<std::string>() != "eval" && m.get<std::string>() != "train"))
          return bad("graphmend.validate: `mode` must be eval or train");
        mode = m.get<std::string>();
      }
      if (first.contains("deploy")) {
        if (!first["deploy"].is_boolean()) return bad("graphmend.validate: `deploy` must be true or false");
        deploy = first["deploy"].get<bool>();
      }
    }
  }
  if (deploy && mode == "train") return bad("graphmend.validate: `deploy` exports for inference and needs mode eval");
  if (target.empty() || target.find("::") == std::string::npos)
    return bad("graphmend.validate takes a target `path/file.py::factory`");
  const std::string key = id.dump();
  std::unique_lock lock(mutex_);
  if (runs_.count(key) != 0) {
    lock.unlock();
    done(nullptr, protocol::ResponseError{-32600, "a validation with this request id is already running", {}});
    return;
  }
  // The validation runs in a child process (this executable's `validate`), off the server's threads;
  // its stdout is the result, its stderr progress lines (--progress-json) and log text.
  std::error_code ec;
  std::vector<std::string> argv{fs::read_symlink("/proc/self/exe", ec).string(),
                                "validate",
                                target,
                                "--json",
                                "--quiet",
                                "--progress-json",
                                "--repeats",
                                std::to_string(repeats),
                                "--threads",
                                "1"};
  if (!backend.empty()) argv.insert(argv.end(), {"--backend", backend});
  if (!mode.empty()) argv.insert(argv.end(), {"--mode", mode});
  if (deploy) argv.push_back("--deploy");
  if (!python_.empty()) {
    argv.push_back("--python");
    argv.push_back(python_);
  }
  int out_fd = -1;
  int err_fd = -1;
  std::string error;
  // What a run's child leaves behind when it dies before cleaning up comes to us, to be swept.
  static const bool subreaper = validate::become_subreaper();
  (void)subreaper;
  const pid_t pid = spawn_child(argv, out_fd, err_fd, error);
  if (pid < 0) {
    lock.unlock();
    spdlog::error("validate {}: {}", target, error);
    done(nullptr, protocol::ResponseError{-32803, "validation could not start: " + error, {}});
    return;
  }
  runs_[key].pid = pid;
  lock.unlock();
  spdlog::info("validate {}: started (pid {}, request {})", target, pid, key);
  std::thread([self = shared_from_this(), key, target, deploy, out_fd, err_fd, report = std::move(report),
               done = std::move(done)]() mutable {
    self->wait_run(std::move(key), target, target + (deploy ? std::string(kDeploySuffix) : std::string()), out_fd,
                   err_fd, std::move(report), std::move(done));
  }).detach();
}

void ValidatorBridge::wait_run(std::string key, std::string target, std::string summary_key, int out_fd, int err_fd,
                               Report report, Done done) {
  pid_t pid = -1;
  {
    std::lock_guard lock(mutex_);
    pid = runs_.at(key).pid;
  }
  std::string out;
  std::string err_buffer;
  std::string err_tail;  // the last lines of the child's log, for an error message
  int status = 0;
  bool reaped = false;
  char buf[4096];
  while (out_fd >= 0 || err_fd >= 0) {
    pollfd fds[2];
    nfds_t n = 0;
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    const int ready = ::poll(fds, n, 100);
    if (ready < 0 && errno != EINTR) break;
    for (nfds_t i = 0; ready > 0 && i < n; ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (fds[i].fd == out_fd) {
        if (got <= 0)
          close_fd(out_fd);
        else
          out.append(buf, static_cast<size_t>(got));
        continue;
      }
      if (got > 0) err_buffer.append(buf, static_cast<size_t>(got));
      if (got <= 0) {
        close_fd(err_fd);
        if (!err_buffer.empty()) err_buffer += '\n';
      }
      for (size_t nl; (nl = err_buffer.find('\n')) != std::string::npos;) {
        std::string line = err_buffer.substr(0, nl);
        err_buffer.erase(0, nl + 1);
        if (!line.starts_with("{\"progress\"")) {
          err_tail += line + "\n";
          if (err_tail.size() > 2000) err_tail.erase(0, err_tail.size() - 2000);
        }
        stderr_line(target, line, report);
      }
    }
    // A cancelled child that is still there after the grace period: kill its group outright.
    {
      std::lock_guard lock(mutex_);
      Run& run = runs_.at(key);
      if (run.pid > 0 && run.cancelled && !run.killed &&
          std::chrono::steady_clock::now() - run.cancelled_at > kCancelGrace) {
        spdlog::warn("validate {}: still running {} s after the cancellation; killing its process tree", target,
                     kCancelGrace.count());
        kill_run_locked(run);
      }
    }
    // The child is gone but something it started still holds the pipes: stop reading after a last look.
    if (!reaped && ::waitpid(pid, &status, WNOHANG) == pid) {
      reaped = true;
      {
        std::lock_guard lock(mutex_);
        runs_.at(key).pid = -1;  // reaped: its id may be reused, never signal it again
      }
      for (int* fd : {&out_fd, &err_fd}) {
        if (*fd < 0) continue;
        ::fcntl(*fd, F_SETFL, ::fcntl(*fd, F_GETFL) | O_NONBLOCK);
        for (ssize_t got; (got = ::read(*fd, buf, sizeof buf)) > 0;) {
          if (fd == &out_fd)
            out.append(buf, static_cast<size_t>(got));
          else
            err_buffer.append(buf, static_cast<size_t>(got));
        }
        close_fd(*fd);
      }
      std::istringstream rest(err_buffer);
      for (std::string line; std::getline(rest, line);) stderr_line(target, line, report);
    }
  }
  close_fd(out_fd);
  close_fd(err_fd);
  if (!reaped) {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::lock_guard lock(mutex_);
    runs_.at(key).pid = -1;
  }
  {
    // A child that died without cleaning up (killed, crashed) left its descendants to us.
    std::lock_guard lock(mutex_);
    sweep_locked();
  }
  const int exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

  bool cancelled = false;
  {
    std::lock_guard lock(mutex_);
    cancelled = runs_.at(key).cancelled;
    if (stopped_) {
      runs_.erase(key);
      runs_changed_.notify_all();
      spdlog::info("validate {}: stopped (exit status {})", target, exit_status);
      return;
    }
  }
  // Answer, then leave the registry: stop_all() waits for it, so `done` never runs after it returns.
  if (cancelled) {
    spdlog::info("validate {}: cancelled (exit status {})", target, exit_status);
    done(nullptr, protocol::ResponseError{-32800, "validation cancelled; its processes were killed", {}});
  } else {
    json result = json::parse(out, nullptr, false);
    if (!result.is_object()) {
      std::string detail = err_tail;
      while (!detail.empty() && detail.back() == '\n') detail.pop_back();
      if (auto nl = detail.rfind('\n'); nl != std::string::npos) detail = detail.substr(nl + 1);
      spdlog::error("validate {}: no result (exit status {})", target, exit_status);
      done(nullptr, protocol::ResponseError{-32803,
                                            "validation failed (exit status " + std::to_string(exit_status) + ")" +
                                                (detail.empty() ? "" : ": " + detail),
                                            {}});
    } else {
      std::string text = summary(result);
      {
        std::lock_guard lock(mutex_);
        last_summary_[summary_key] = text;
      }
      result["summary"] = text;
      spdlog::info("validate {}: {}", target, text);
      done(std::move(result), std::nullopt);
    }
  }
  std::lock_guard lock(mutex_);
  runs_.erase(key);
  runs_changed_.notify_all();
}

void ValidatorBridge::terminate_locked(Run& run) {
  if (run.cancelled) return;
  run.cancelled = true;
  run.cancelled_at = std::chrono::steady_clock::now();
  // Until its waiting thread reaps the child (and clears `pid`), the group id is still its own.
  if (run.pid > 0) ::kill(-run.pid, SIGTERM);
}

bool ValidatorBridge::cancel(const json& id) {
  std::lock_guard lock(mutex_);
  auto it = runs_.find(id.dump());
  if (it == runs_.end()) return false;
  spdlog::info("validate: cancelling request {} (process group {})", it->first, it->second.pid);
  terminate_locked(it->second);
  return true;
}

void ValidatorBridge::stop_all() {
  std::unique_lock lock(mutex_);
  stopped_ = true;
  if (runs_.empty()) return;
  spdlog::info("stopping {} running validation{}", runs_.size(), runs_.size() == 1 ? "" : "s");
  for (auto& [key, run] : runs_) terminate_locked(run);
  // A clean cancellation takes a moment (the child cancels its validator, which kills the arm).
  if (!runs_changed_.wait_for(lock, std::chrono::seconds(5), [&] { return runs_.empty(); })) {
    for (auto& [key, run] : runs_) kill_run_locked(run);
    runs_changed_.wait_for(lock, std::chrono::seconds(2), [&] { return runs_.empty(); });
  }
  sweep_locked();
}

void ValidatorBridge::kill_run_locked(Run& run) {
  run.killed = true;
  if (run.pid <= 0) return;
  // The child is a subreaper: stopped, it holds everything below it (the validator, the arm, what
  // user code detached) while that is killed; its group goes too.
  validate::kill_tree(run.pid, true);
  ::kill(-run.pid, SIGKILL);
}

void ValidatorBridge::sweep_locked() {
  std::set<pid_t> keep;
  for (const auto& [key, run] : runs_) {
    if (run.pid > 0) keep.insert(run.pid);
  }
  validate::sweep_orphans(keep);
}

}  // namespace graphmend::lsp
