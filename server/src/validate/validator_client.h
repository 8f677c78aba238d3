// The C++ side of the validator: starts `python -m graphmend_validator` in the user's interpreter,
// speaks JSON-RPC 2.0 with LSP framing to it (protocol/ framing and messages), and runs `validate`
// requests with progress and cancellation. Used by `graphmend validate` and, later, by the language
// server's code lenses.
//
// One request at a time per client (validate() holds a mutex); start one client per concurrent run.
// start() ignores SIGPIPE for the process, so a validator that dies mid-write cannot kill its caller.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "graphmend/analysis/torch_version.h"
#include "graphmend/protocol/framing.h"

namespace graphmend::validate {

using json = nlohmann::json;

// A failure with a machine-readable kind:
//   spawn_failed, validator_missing, torch_missing, torch_too_old, probe_failed, cuda_unavailable,
//   bad_target, bad_params, cancelled, validator_died, timeout, protocol, internal.
// `code` is the JSON-RPC error code when the validator answered with one (0 otherwise).
class ValidatorError : public std::runtime_error {
 public:
  ValidatorError(std::string kind, const std::string& message, int code = 0, json data = nullptr)
      : std::runtime_error(message), kind_(std::move(kind)), code_(code), data_(std::move(data)) {}
  const std::string& kind() const { return kind_; }
  int code() const { return code_; }
  const json& data() const { return data_; }

 private:
  std::string kind_;
  int code_;
  json data_;
};

// One `$/progress` report: message ("original 2/3") and percentage (0..100, -1 when absent).
struct Progress {
  std::string kind;  // begin, report, end
  std::string message;
  int percentage = -1;
};
using ProgressCallback = std::function<void(const Progress&)>;

// Where the `graphmend_validator` package lives: $GRAPHMEND_VALIDATOR_DIR, then gpu-validator/ or
// share/graphmend/gpu-validator/ next to or above the executable, then the source tree this file was
// built from. Empty when none holds graphmend_validator/__init__.py.
std::filesystem::path find_validator_dir();

// This executable (/proc/self/exe; empty where it cannot be read).
std::filesystem::path executable_path();

// The environment of a Python child that imports graphmend_validator: ours, PYTHONPATH led by
// `validator_dir`, output unbuffered.
std::vector<std::string> child_environment(const std::filesystem::path& validator_dir);

struct PythonChoice {
  std::string path;
  std::string source;  // why this one: "the environment graphmend is installed in", "$VIRTUAL_ENV", ...
};
// The interpreter to run: `explicit_python` when given; otherwise preferred_environment() (torch_version.h)
// near the target and the workspace: the first of graphmend's own environment (unless it has no torch),
// $VIRTUAL_ENV, $CONDA_PREFIX and a .venv above the target or the workspace; `python3` on PATH when there
// is none.
PythonChoice discover_python(const std::string& explicit_python, const std::filesystem::path& target_file,
                             const std::filesystem::path& workspace,
                             const EnvironmentContext& context = EnvironmentContext::current());

class ValidatorClient {
 public:
  ValidatorClient() = default;
  ~ValidatorClient();
  ValidatorClient(const ValidatorClient&) = delete;
  ValidatorClient& operator=(const ValidatorClient&) = delete;

  // Starts `python -m graphmend_validator extra_args...` with PYTHONPATH pointing at `validator_dir`
  // (find_validator_dir() when empty) and performs the `initialize` handshake. Returns its result:
  // torch_version, cuda_available, device_name, python, ... Throws ValidatorError (torch_missing,
  // torch_too_old, spawn_failed, validator_died, ...); the process is stopped on failure.
  json start(const std::string& python, const std::vector<std::string>& extra_args = {},
             std::filesystem::path validator_dir = {},
             std::chrono::seconds handshake_timeout = std::chrono::seconds(300));

  // Sends `validate` and waits for its answer, calling `on_progress` for each `$/progress`. When
  // `cancel` is requested, sends `$/cancelRequest` (the validator kills the running arm's process
  // group) and throws ValidatorError("cancelled"). `deadline` bounds the whole wait (the validator
  // is killed past it). Returns the result object (ok true, or ok false with an error for user code
  // that raised, hung, exited or crashed). Throws ValidatorError for protocol-level errors.
  json validate(const json& params, const ProgressCallback& on_progress = {}, std::stop_token cancel = {},
                std::optional<std::chrono::seconds> deadline = std::nullopt);

  // Where the user's interpreter imports `module` from (with the target's package root on sys.path
  // when `target` is given): an absolute .py path. Throws ValidatorError("bad_module") when it has none.
  std::string locate(const std::string& module, const std::string& target = {});

  // shutdown + exit, then waits briefly and kills the process group if it lingers. Idempotent.
  void stop();

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  const json& server_info() const { return server_info_; }
  // The last few KiB the validator wrote to its stderr (for error messages).
  std::string stderr_tail() const;

 private:
  void send(const json& message);
  // Waits for the response to `id`; handles notifications meanwhile. nullopt when `poll_stop` asks to stop early.
  json wait_response(const json& id, const ProgressCallback& on_progress, std::stop_token cancel,
                     std::chrono::steady_clock::time_point deadline, bool cancel_sends_request);
  bool read_some(int timeout_ms);  // false at end of stream
  void kill_now();
  void reap();

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  std::jthread stderr_reader_;
  mutable std::mutex stderr_mutex_;
  std::string stderr_tail_;
  protocol::FrameDecoder decoder_;
  std::vector<json> inbox_;  // decoded messages not yet handled
  std::mutex request_mutex_;
  long next_id_ = 1;
  json server_info_;
};

}  // namespace graphmend::validate
