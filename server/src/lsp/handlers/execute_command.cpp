// workspace/executeCommand: graphmend.applyAutofix, and the validator's commands with their $/progress.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "lsp/handlers/handlers.h"

using graphmend::protocol::Message;
using graphmend::protocol::ProtocolError;

namespace graphmend::lsp::handlers {

namespace errc = protocol::error_code;

namespace {

void run_command(Session& session, const json& id, const std::string& command, const json& arguments,
                 const json& params);
void command_report(Session& session, const std::string& key, const std::string& message, int percentage);
void command_done(Session& session, const std::string& key, json result, std::optional<protocol::ResponseError> error);

}  // namespace

void execute_command(Session& session, const json& id, const json& params) {
  const std::string command = protocol::require_string(params, "/command");
  json arguments = json::array();
  if (const json* value = protocol::optional_member(params, "/arguments", json::value_t::array)) {
    arguments = *value;
  }
  if (command == kApplyAutofix) return apply_autofix(session, id, arguments);
  if (session.validator) {
    const auto commands = session.validator->commands();
    if (std::find(commands.begin(), commands.end(), command) != commands.end()) {
      // User code runs only on this explicit request, and never when validation is turned off.
      if (!session.settings.validate_enable)
        return session.reply_error(id, errc::kRequestFailed, "validation is turned off (graphmend.validate.enable)");
      session.validator->set_python(session.settings.validator_python.value_or(""));
      return run_command(session, id, command, arguments, params);
    }
  }
  throw ProtocolError(errc::kInvalidParams, "unknown command: " + command);
}

namespace {

// A validator command: `$/progress` from its reports (begun at the first one, so a command
// refused at once shows none), the answer and the progress's end from `done`, then a code lens
// refresh.
void run_command(Session& session, const json& id, const std::string& command, const json& arguments,
                 const json& params) {
  const std::string key = key_of(id);
  CommandRun& run = session.command_runs[key];
  run.id = id;
  std::string target;
  if (const json* t = protocol::optional_member(arguments, "/0", json::value_t::string))
    target = *t;
  else if (const json* u = protocol::optional_member(arguments, "/0/target", json::value_t::string))
    target = *u;
  run.what = command == "graphmend.validate" ? std::string("validate") : command;
  if (const auto sep = target.rfind("::"); sep != std::string::npos) run.what += " " + target.substr(sep + 2);
  const json* token = protocol::optional_member(params, "/workDoneToken", json::value_t::string);
  if (token == nullptr) token = protocol::optional_member(params, "/workDoneToken", json::value_t::number_integer);
  if (token != nullptr) {
    run.token = *token;
    run.token_ready = true;
  }
  session.validator->execute(
      command, arguments, id,
      [&session, key](const std::string& message, int percentage) {
        session.scheduler().on_io_thread(
            [&session, key, message, percentage] { command_report(session, key, message, percentage); });
      },
      [&session, key](json result, std::optional<protocol::ResponseError> error) {
        session.scheduler().on_io_thread(
            [&session, key, result = std::move(result), error = std::move(error)]() mutable {
              command_done(session, key, std::move(result), std::move(error));
            });
      });
}

void command_report(Session& session, const std::string& key, const std::string& message, int percentage) {
  auto it = session.command_runs.find(key);
  if (it == session.command_runs.end() || !session.is_pending(it->second.id)) return;
  CommandRun& run = it->second;
  if (run.token.is_null() && !run.token_ready && session.client.work_done_progress) {
    // No token from the request: ask the client for one; progress starts once it agrees.
    run.token = "graphmend/progress/" + std::to_string(++session.next_progress_token);
    session.send_request("window/workDoneProgress/create", {{"token", run.token}},
                         [&session, key](const Message& response) {
                           auto found = session.command_runs.find(key);
                           if (found == session.command_runs.end()) return;
                           if (response.error) {
                             // The client refused: no progress for this run.
                             found->second.token = nullptr;
                             return;
                           }
                           found->second.token_ready = true;
                           if (auto last = found->second.last_report)
                             command_report(session, key, last->first, last->second);
                         });
  }
  if (!run.token_ready) {
    run.last_report = {message, percentage};
    return;
  }
  json value = {{"kind", run.begun ? "report" : "begin"}, {"message", message}};
  if (!run.begun) {
    value["title"] = "graphmend: " + run.what;
    value["cancellable"] = true;
    run.begun = true;
  }
  if (percentage >= 0) value["percentage"] = percentage;
  session.notify("$/progress", {{"token", run.token}, {"value", std::move(value)}});
}

void command_done(Session& session, const std::string& key, json result, std::optional<protocol::ResponseError> error) {
  auto it = session.command_runs.find(key);
  if (it == session.command_runs.end()) return;
  const CommandRun run = std::move(it->second);
  session.command_runs.erase(it);
  std::string summary = error ? error->message : result.value("summary", std::string("done"));
  if (run.begun)
    session.notify("$/progress", {{"token", run.token}, {"value", {{"kind", "end"}, {"message", summary}}}});
  if (error) {
    if (error->code != errc::kRequestCancelled && error->code != errc::kInvalidParams)
      session.log_message(protocol::message_type::kWarning, run.what + ": " + summary);
    return session.reply_error(run.id, error->code, error->message);
  }
  const bool ok = !result.contains("ok") || !result["ok"].is_boolean() || result["ok"].get<bool>();
  session.log_message(ok ? protocol::message_type::kInfo : protocol::message_type::kWarning, run.what + ": " + summary);
  session.reply(run.id, std::move(result));
  // The lens shows the last result: clients that can be told to ask again are.
  if (session.client.code_lens_refresh && session.state == Session::State::Running)
    session.send_request("workspace/codeLens/refresh", nullptr, [](const Message&) {});
}

}  // namespace

void cancel_progress(Session& session, const json& params) {
  const json* token = protocol::optional_member(params, "/token", json::value_t::string);
  if (token == nullptr) token = protocol::optional_member(params, "/token", json::value_t::number_integer);
  if (token == nullptr) throw ProtocolError(errc::kInvalidParams, "params.token must be a progress token");
  for (const auto& [key, run] : session.command_runs) {
    if (run.token == *token) {
      spdlog::debug("progress {} cancelled: cancelling request {}", token->dump(), key);
      session.validator->cancel(run.id);
      return;
    }
  }
}

}  // namespace graphmend::lsp::handlers
