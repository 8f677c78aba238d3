#include "validate/validator_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "graphmend/protocol/jsonrpc.h"

extern char** environ;

namespace graphmend::validate {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kStderrTailBytes = 8 * 1024;

bool is_validator_dir(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::is_regular_file(dir / "graphmend_validator" / "__init__.py", ec);
}

std::string errno_text(int err) { return std::string(std::strerror(err)); }

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

fs::path executable_path() {
  std::error_code ec;
  auto path = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path{} : path;
}

std::vector<std::string> child_environment(const fs::path& validator_dir) {
  std::vector<std::string> env;
  std::string pythonpath = validator_dir.string();
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view item(*entry);
    if (item.starts_with("PYTHONPATH=")) {
      const auto rest = item.substr(std::string_view("PYTHONPATH=").size());
      if (!rest.empty()) pythonpath += ":" + std::string(rest);
      continue;
    }
    if (item.starts_with("PYTHONUNBUFFERED=")) continue;
    env.emplace_back(item);
  }
  env.push_back("PYTHONPATH=" + pythonpath);
  env.push_back("PYTHONUNBUFFERED=1");
  return env;
}

fs::path find_validator_dir() {
  if (const char* env = std::getenv("GRAPHMEND_VALIDATOR_DIR"); env != nullptr && *env != '\0') {
    if (is_validator_dir(env)) return fs::path(env);
  }
  const fs::path exe = executable_path();
  if (!exe.empty()) {
    fs::path dir = exe.parent_path();
    for (int up = 0; up < 4 && !dir.empty(); ++up) {
      if (is_validator_dir(dir / "gpu-validator")) return dir / "gpu-validator";
      if (is_validator_dir(dir / "share" / "graphmend" / "gpu-validator"))
        return dir / "share" / "graphmend" / "gpu-validator";
      if (dir == dir.parent_path()) break;
      dir = dir.parent_path();
    }
  }
  // server/src/validate/validator_client.cpp -> <root>/gpu-validator
  const fs::path source_root = fs::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
  if (is_validator_dir(source_root / "gpu-validator")) return source_root / "gpu-validator";
  return {};
}

PythonChoice discover_python(const std::string& explicit_python, const fs::path& target_file, const fs::path& workspace,
                             const EnvironmentContext& context) {
  if (!explicit_python.empty()) return {explicit_python, "given with --python"};
  const fs::path near = target_file.empty() ? fs::path{} : target_file.parent_path();
  if (auto env = preferred_environment(near, workspace, context)) return {env->python.string(), env->source};
  return {"python3", "python3 on PATH"};
}

ValidatorClient::~ValidatorClient() { stop(); }

json ValidatorClient::start(const std::string& python, const std::vector<std::string>& extra_args,
                            fs::path validator_dir, std::chrono::seconds handshake_timeout) {
  if (running()) throw ValidatorError("internal", "validator already started");
  if (validator_dir.empty()) validator_dir = find_validator_dir();
  if (!is_validator_dir(validator_dir)) {
    throw ValidatorError("validator_missing",
                         "cannot find the graphmend_validator package (set GRAPHMEND_VALIDATOR_DIR to the "
                         "gpu-validator folder)");
  }
  ::signal(SIGPIPE, SIG_IGN);

  std::array<int, 2> in_pipe{-1, -1}, out_pipe{-1, -1}, err_pipe{-1, -1};
  auto close_all = [&] {
    for (auto* p : {&in_pipe, &out_pipe, &err_pipe}) {
      close_fd((*p)[0]);
      close_fd((*p)[1]);
    }
  };
  if (::pipe2(in_pipe.data(), O_CLOEXEC) != 0 || ::pipe2(out_pipe.data(), O_CLOEXEC) != 0 ||
      ::pipe2(err_pipe.data(), O_CLOEXEC) != 0) {
    const int err = errno;
    close_all();
    throw ValidatorError("spawn_failed", "pipe: " + errno_text(err));
  }

  std::vector<std::string> argv_strings{python, "-m", "graphmend_validator"};
  if (python.find('/') != std::string::npos) {
    std::error_code ec;
    argv_strings[0] = fs::absolute(python, ec).string();
  }
  argv_strings.insert(argv_strings.end(), extra_args.begin(), extra_args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = child_environment(validator_dir);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  // Its own process group, so stop() can take the validator and anything it left behind.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t default_signals;
  sigemptyset(&default_signals);
  sigaddset(&default_signals, SIGPIPE);
  sigaddset(&default_signals, SIGINT);
  sigaddset(&default_signals, SIGTERM);
  posix_spawnattr_setsigdefault(&attr, &default_signals);
  sigset_t no_mask;
  sigemptyset(&no_mask);
  posix_spawnattr_setsigmask(&attr, &no_mask);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv_strings[0].c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    close_all();
    throw ValidatorError("spawn_failed", "cannot run python '" + python + "': " + errno_text(rc));
  }
  pid_ = pid;
  close_fd(in_pipe[0]);
  close_fd(out_pipe[1]);
  close_fd(err_pipe[1]);
  stdin_fd_ = in_pipe[1];
  stdout_fd_ = out_pipe[0];
  stderr_fd_ = err_pipe[0];
  decoder_ = protocol::FrameDecoder();
  inbox_.clear();
  {
    std::lock_guard lock(stderr_mutex_);
    stderr_tail_.clear();
  }
  const int err_fd = stderr_fd_;
  stderr_reader_ = std::jthread([this, err_fd] {
    std::array<char, 4096> buffer{};
    while (true) {
      const ssize_t n = ::read(err_fd, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      std::lock_guard lock(stderr_mutex_);
      stderr_tail_.append(buffer.data(), static_cast<std::size_t>(n));
      if (stderr_tail_.size() > kStderrTailBytes) stderr_tail_.erase(0, stderr_tail_.size() - kStderrTailBytes);
    }
  });

  try {
    const json id = next_id_++;
    send(protocol::make_request(id, "initialize", json::object({{"python", argv_strings[0]}})));
    server_info_ = wait_response(id, {}, {}, Clock::now() + handshake_timeout, false);
  } catch (...) {
    stop();
    throw;
  }
  return server_info_;
}

void ValidatorClient::send(const json& message) {
  const std::string frame = protocol::encode_frame(protocol::serialize(message));
  std::size_t written = 0;
  while (written < frame.size()) {
    const ssize_t n = ::write(stdin_fd_, frame.data() + written, frame.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw ValidatorError("validator_died", "the validator process is gone (write failed: " + errno_text(errno) + ")" +
                                                 (stderr_tail().empty() ? "" : "\n" + stderr_tail()));
    }
    written += static_cast<std::size_t>(n);
  }
}

bool ValidatorClient::read_some(int timeout_ms) {
  pollfd pfd{stdout_fd_, POLLIN, 0};
  const int ready = ::poll(&pfd, 1, timeout_ms);
  if (ready < 0) return errno == EINTR;
  if (ready == 0) return true;
  std::array<char, 65536> buffer{};
  const ssize_t n = ::read(stdout_fd_, buffer.data(), buffer.size());
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  decoder_.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
  while (auto event = decoder_.next()) {
    if (event->kind != protocol::FrameEvent::Kind::Message) continue;
    try {
      inbox_.push_back(json::parse(event->body));
    } catch (const json::parse_error&) {
      // Not ours to answer: the validator never sends bad JSON; skip it.
    }
  }
  return true;
}

json ValidatorClient::wait_response(const json& id, const ProgressCallback& on_progress, std::stop_token cancel,
                                    Clock::time_point deadline, bool cancel_sends_request) {
  bool cancel_sent = false;
  Clock::time_point cancel_deadline{};
  while (true) {
    for (std::size_t i = 0; i < inbox_.size(); ++i) {
      json message = std::move(inbox_[i]);
      inbox_.erase(inbox_.begin() + static_cast<std::ptrdiff_t>(i));
      --i;
      if (!message.is_object()) continue;
      if (message.contains("method")) {
        if (message["method"] == "$/progress" && on_progress) {
          const json& value = message.value("params", json::object()).value("value", json::object());
          Progress progress;
          progress.kind = value.value("kind", "");
          progress.message = value.value("message", value.value("title", ""));
          progress.percentage = value.contains("percentage") && value["percentage"].is_number_integer()
                                    ? value["percentage"].get<int>()
                                    : -1;
          on_progress(progress);
        }
        continue;
      }
      if (message.value("id", json()) != id) continue;
      if (message.contains("error")) {
        const json& error = message["error"];
        const int code = error.value("code", 0);
        const std::string text = error.value("message", std::string("validator error"));
        json data = error.value("data", json());
        std::string kind = data.is_object() ? data.value("kind", std::string()) : std::string();
        if (code == protocol::error_code::kRequestCancelled) kind = "cancelled";
        if (kind.empty()) kind = code == protocol::error_code::kInternalError ? "internal" : "protocol";
        throw ValidatorError(kind, text, code, data);
      }
      return message.value("result", json());
    }
    const auto now = Clock::now();
    if (cancel.stop_requested() && !cancel_sent) {
      if (cancel_sends_request) {
        send(protocol::make_notification("$/cancelRequest", json::object({{"id", id}})));
        cancel_sent = true;
        cancel_deadline = now + std::chrono::seconds(30);
      } else {
        kill_now();
        throw ValidatorError("cancelled", "cancelled");
      }
    }
    if (cancel_sent && now > cancel_deadline) {
      kill_now();
      throw ValidatorError("cancelled", "cancelled (the validator did not answer the cancellation; killed)");
    }
    if (now > deadline) {
      kill_now();
      throw ValidatorError("timeout", "the validator did not answer in time and was killed");
    }
    if (!read_some(50)) {
      reap();
      std::string tail = stderr_tail();
      throw ValidatorError("validator_died",
                           "the validator process exited unexpectedly" + (tail.empty() ? "" : ":\n" + tail));
    }
  }
}

json ValidatorClient::validate(const json& params, const ProgressCallback& on_progress, std::stop_token cancel,
                               std::optional<std::chrono::seconds> deadline) {
  std::lock_guard lock(request_mutex_);
  if (!running()) throw ValidatorError("internal", "validator not started");
  const json id = next_id_++;
  send(protocol::make_request(id, "validate", params));
  const auto until = deadline ? Clock::now() + *deadline : Clock::time_point::max();
  return wait_response(id, on_progress, cancel, until, true);
}

std::string ValidatorClient::locate(const std::string& module, const std::string& target) {
  std::lock_guard lock(request_mutex_);
  if (!running()) throw ValidatorError("internal", "validator not started");
  const json id = next_id_++;
  json params = {{"module", module}};
  if (!target.empty()) params["target"] = target;
  send(protocol::make_request(id, "locate", params));
  const json result = wait_response(id, {}, {}, Clock::now() + std::chrono::seconds(300), false);
  if (!result.is_object() || !result.contains("file") || !result["file"].is_string()) {
    throw ValidatorError("protocol", "locate answered without a file");
  }
  return result["file"].get<std::string>();
}

void ValidatorClient::kill_now() { reap(); }

void ValidatorClient::reap() {
  if (pid_ > 0) {
    // The group first, while its leader is unreaped and the group id cannot have been reused.
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  close_fd(stdin_fd_);
  close_fd(stdout_fd_);
  if (stderr_reader_.joinable()) stderr_reader_.join();
  close_fd(stderr_fd_);
}

void ValidatorClient::stop() {
  if (pid_ <= 0) {
    reap();
    return;
  }
  try {
    const json id = next_id_++;
    send(protocol::make_request(id, "shutdown", nullptr));
    try {
      wait_response(id, {}, {}, Clock::now() + std::chrono::seconds(5), false);
    } catch (const ValidatorError&) {
    }
    if (pid_ > 0) send(protocol::make_notification("exit", nullptr));
  } catch (const ValidatorError&) {
  }
  if (pid_ > 0) {
    close_fd(stdin_fd_);
    // Give it a moment to exit on its own (it cancels and kills its running arms first).
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < until) {
      siginfo_t info{};
      const int rc = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
      if (rc < 0 && errno != EINTR) break;
      if (rc == 0 && info.si_pid == pid_) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  reap();
}

std::string ValidatorClient::stderr_tail() const {
  std::lock_guard lock(stderr_mutex_);
  return stderr_tail_;
}

}  // namespace graphmend::validate
