// The language server's validator: code lenses on validation targets, and `graphmend.validate`, which
// runs `graphmend validate TARGET --json` (this same executable) in a child process when the user asks.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "lsp/server.h"

namespace graphmend::lsp {

class ValidatorBridge : public Validator, public std::enable_shared_from_this<ValidatorBridge> {
 public:
  std::vector<std::string> commands() const override { return {"graphmend.validate"}; }
  nlohmann::json code_lenses(const std::string& uri, const std::string& text) override;
  void execute(const std::string& command, const nlohmann::json& arguments, Done done) override;
  void set_python(const std::string& python) override;

  // "breaks 5 → 0 · cold 3.1× · steady 1.1× · outputs equal" from `graphmend validate --json` output.
  static std::string summary(const nlohmann::json& result);

 private:
  std::mutex mutex_;
  std::string python_;
  std::map<std::string, std::string> last_summary_;  // target -> summary of its last run
};

// Targets in a file: functions named in pyproject.toml's `validate = ["file.py::factory"]`, and
// top-level `def example():` factories. Returns (line, factory name) pairs.
std::vector<std::pair<uint32_t, std::string>> validation_targets(const std::string& path, const std::string& text);

}  // namespace graphmend::lsp
