// The language server's validator: code lenses on validation targets, and `graphmend.validate`, which
// runs `graphmend validate TARGET --json --progress-json` (this same executable) in a child process
// when the user asks. The child leads a process group of its own; cancelling a run sends SIGTERM to
// that group (the child then cancels the validator, which kills the running arm's process tree, and
// exits); when it is still there after a grace period, its whole process tree is killed. The server
// is a subreaper once a run started: what a child that died leaves behind is swept after it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "lsp/server.h"

namespace graphmend::lsp {

class ValidatorBridge : public Validator, public std::enable_shared_from_this<ValidatorBridge> {
 public:
  // How long a cancelled child gets to clean up (cancel the validator, whose arm group is then
  // killed) before its process group is killed outright.
  static constexpr std::chrono::seconds kCancelGrace{10};

  std::vector<std::string> commands() const override { return {"graphmend.validate"}; }
  nlohmann::json code_lenses(const std::string& uri, const std::string& text,
                             const std::vector<std::string>& factories) override;
  void execute(const std::string& command, const nlohmann::json& arguments, const nlohmann::json& id, Report report,
               Done done) override;
  bool cancel(const nlohmann::json& id) override;
  void stop_all() override;
  void set_python(const std::string& python) override;

  // "breaks 5 → 0 · cold 3.1× · steady 1.1× · outputs equal" from `graphmend validate --json` output;
  // "failed: exception in the fixed arm (ValueError: ...)" for a run whose user code failed.
  static std::string summary(const nlohmann::json& result);

 private:
  struct Run {
    pid_t pid = -1;  // the child, leader of its own process group; -1 once reaped
    bool cancelled = false;
    bool killed = false;  // its process tree was killed
    std::chrono::steady_clock::time_point cancelled_at;
  };
  // Waits for run `key`'s child (reading its result and progress), then calls `done`.
  // `summary_key` is the target, with a suffix for a --deploy run (its lens is a second one).
  void wait_run(std::string key, std::string target, std::string summary_key, int out_fd, int err_fd, Report report,
                Done done);
  // Sends SIGTERM to the run's group (once); the caller holds mutex_.
  static void terminate_locked(Run& run);
  // Kills the run's child and everything below it; the caller holds mutex_.
  static void kill_run_locked(Run& run);
  // Kills and reaps the children of this process that are no run's child (what a dead child left
  // behind); the caller holds mutex_.
  void sweep_locked();

  std::mutex mutex_;
  std::condition_variable runs_changed_;
  std::string python_;
  std::map<std::string, std::string> last_summary_;  // summary key -> summary of its last run
  std::map<std::string, Run> runs_;                  // request id (JSON text) -> run in flight
  bool stopped_ = false;                             // stop_all() was called: no more `done`s
};

// The top-level `def`s of `factories` in `text`: (line, factory name) pairs.
std::vector<std::pair<uint32_t, std::string>> validation_targets(const std::string& text,
                                                                 const std::vector<std::string>& factories);

}  // namespace graphmend::lsp
