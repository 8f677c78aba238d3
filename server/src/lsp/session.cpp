#include "lsp/session.h"

#include <spdlog/spdlog.h>

#include "graphmend/analysis/semantic.h"
#include "lsp/handlers/handlers.h"

namespace graphmend::lsp {

using protocol::Message;
using protocol::ProtocolError;
namespace errc = protocol::error_code;

std::string key_of(const json& id) { return id.dump(); }

Session::Session(asio::io_context& io, Writer write, ServerOptions options) : write_(std::move(write)) {
  Scheduler::Hooks hooks;
  hooks.config_for = [this](const OpenDocument& document) { return config_for(document); };
  // The encoding is agreed on at initialize, before any document opens.
  hooks.present = [this](const std::string& uri, AnalysisResult& result) {
    handlers::present_diagnostics(uri, result, client.encoding);
  };
  hooks.analysed = [this](OpenDocument& document, const AnalysisResult& result) { analysed(document, result); };
  hooks.warn = [this](const std::string& text) { log_message(protocol::message_type::kWarning, text); };
  scheduler_ = std::make_unique<Scheduler>(io, options.workers, std::move(hooks));
  scheduler_->set_max_file_bytes(settings.max_file_bytes);
}

Session::~Session() = default;

// ---------------------------------------------------------------------------------------------
// Output.

void Session::send(const json& message) {
  if (exit_code) return;
  write_(message);
}

void Session::notify(std::string_view method, json params) {
  send(protocol::make_notification(method, std::move(params)));
}

void Session::log_message(int type, const std::string& text) {
  switch (type) {
    case protocol::message_type::kError:
      spdlog::error("{}", text);
      break;
    case protocol::message_type::kWarning:
      spdlog::warn("{}", text);
      break;
    default:
      spdlog::info("{}", text);
      break;
  }
  if (state != State::Uninitialized) {
    notify("window/logMessage", {{"type", type}, {"message", "graphmend: " + text}});
  }
}

bool Session::is_pending(const json& id) const { return pending.count(key_of(id)) != 0; }

void Session::reply(const json& id, json result) {
  if (pending.erase(key_of(id)) == 0) return;  // cancelled or made stale meanwhile
  send(protocol::make_response(id, std::move(result)));
}

void Session::reply_error(const json& id, int code, const std::string& message) {
  if (pending.erase(key_of(id)) == 0) return;
  spdlog::debug("request {} failed: {} ({})", id.dump(), message, protocol::error_code_name(code));
  send(protocol::make_error_response(id, code, message));
}

void Session::send_request(std::string_view method, json params, std::function<void(const Message&)> on_response) {
  const json id = "graphmend/" + std::to_string(++next_outgoing_id_);
  outgoing_[key_of(id)] = std::move(on_response);
  send(protocol::make_request(id, method, std::move(params)));
}

std::function<void(const Message&)> Session::take_response(const json& id) {
  const auto it = outgoing_.find(key_of(id));
  if (it == outgoing_.end()) return {};
  auto handler = std::move(it->second);
  outgoing_.erase(it);
  return handler;
}

std::string Session::request_document(const json& id) const {
  const auto it = pending.find(key_of(id));
  return it == pending.end() ? std::string() : it->second.uri;
}

// ---------------------------------------------------------------------------------------------
// Documents.

ProtocolError Session::not_open(const std::string& uri) {
  protocol::document_path(uri);
  return ProtocolError(errc::kInvalidParams, "document is not open: " + uri);
}

OpenDocument& Session::document_for(const json& params) {
  const std::string uri = protocol::require_string(params, "/textDocument/uri");
  OpenDocument* document = find_document(uri);
  if (document == nullptr) throw not_open(uri);
  return *document;
}

void Session::make_stale(const std::string& uri) {
  std::vector<json> stale;
  for (const auto& [key, request] : pending) {
    if (request.uri == uri) stale.push_back(json::parse(key));
  }
  for (const json& id : stale) {
    reply_error(id, errc::kContentModified, "the document changed");
  }
  scheduler_->drop_waiters(uri);
}

OpenDocument& Session::open_document(const std::string& uri, const std::optional<std::string>& path, int64_t version,
                                     std::string text, std::shared_ptr<const NotebookLayout> notebook) {
  if (find_document(uri) != nullptr) {
    spdlog::warn("{} opened twice; replacing it", uri);
    close_document(uri);
  }
  return scheduler_->open(uri, path, version, std::move(text), std::move(notebook));
}

void Session::close_document(const std::string& uri) {
  make_stale(uri);
  scheduler_->close(uri);
  // What it traced into other documents no longer holds; what others traced into it is kept
  // for when it is opened again.
  set_contribution(uri, {});
  handlers::answer_workspace_diagnostics(*this);
}

// A result of the document's current version: the cross-file pass, the client, and what waits on it.
void Session::analysed(OpenDocument& document, const AnalysisResult& result) {
  if (!result.error.empty()) {
    log_message(protocol::message_type::kError, "analysis of " + document.uri + " failed: " + result.error);
  }
  if (document.publish_pending || result.completes_provisional) handlers::publish(*this, document);
  // After publishing: an answer about its own bases invalidates this document, and the new analysis must
  // find its publication still pending.
  update_workspace_calls(document, result);
  if (result.completes_provisional && client.pull_mode && client.refresh_support) {
    // Pull clients got the provisional findings: the real ones are ready.
    send_request("workspace/diagnostic/refresh", nullptr, [](const Message&) {});
  }
  scheduler_->answer_waiters(document, result);
  handlers::answer_workspace_diagnostics(*this);
}

// ---------------------------------------------------------------------------------------------
// Configuration.

void Session::settings_applied() {
  scheduler_->set_max_file_bytes(settings.max_file_bytes);
  if (!settings.log_level) return;
  std::string level = *settings.log_level;
  if (level == "warning") level = "warn";
  const auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") {
    log_message(protocol::message_type::kWarning, "unknown logLevel '" + level + "'");
    return;
  }
  spdlog::default_logger()->set_level(parsed);
}

DiscoveredConfig Session::discovered(const OpenDocument& document) {
  if (document.path == document.uri) return {};  // not a file: no pyproject.toml applies
  std::error_code ec;
  return configs_.discover(std::filesystem::absolute(document.path, ec).parent_path());
}

std::vector<std::string> Session::validation_factories(const OpenDocument& document) {
  std::vector<std::string> names{"example"};
  const DiscoveredConfig found = discovered(document);
  if (!found.config) return names;  // a broken pyproject.toml is reported by the diagnostics
  std::error_code ec;
  const std::filesystem::path file = std::filesystem::weakly_canonical(document.path, ec);
  for (const std::string& target : found.config->validate_targets) {
    const auto sep = target.find("::");
    if (sep == std::string::npos) continue;
    if (std::filesystem::weakly_canonical(found.pyproject->parent_path() / target.substr(0, sep), ec) == file)
      names.push_back(target.substr(sep + 2));
  }
  return names;
}

void Session::configuration_changed() {
  configs_.clear();
  torch_.clear();
  for (const auto& [uri, document] : scheduler_->documents()) scheduler_->invalidate(*document);
  if (client.pull_mode && client.refresh_support) {
    send_request("workspace/diagnostic/refresh", nullptr, [](const Message&) {});
  }
}

Config Session::config_for(const OpenDocument& document) {
  Config config;
  if (document.path != document.uri && settings.configuration_preference != ConfigurationPreference::EditorOnly) {
    const DiscoveredConfig found = discovered(document);
    if (found.config) {
      config = *found.config;
    } else if (found.pyproject && found.first_read) {
      log_message(protocol::message_type::kError, "invalid configuration, using defaults: " + found.error);
    }
  }
  config = apply_settings(std::move(config), settings);
  if (document.path != document.uri) {
    std::error_code ec;
    apply_detected_torch(config, torch_.near(std::filesystem::absolute(document.path, ec).parent_path()));
  }
  config.traced_from_workspace = traced_functions(document.uri);
  return config;
}

// ---------------------------------------------------------------------------------------------
// Workspace pass.

std::vector<std::string> Session::traced_functions(const std::string& uri) const {
  std::set<std::string> names;
  if (const auto it = traced_into_.find(uri); it != traced_into_.end()) {
    for (const auto& [source, functions] : it->second) {
      names.insert(functions.begin(), functions.end());
    }
  }
  return {names.begin(), names.end()};
}

// Records what `source_uri`'s traced code calls in other open documents (`wanted`: target uri ->
// names, replacing its previous contribution) and re-analyses the targets whose set changed.
void Session::set_contribution(const std::string& source_uri,
                               const std::map<std::string, std::set<std::string>>& wanted) {
  std::set<std::string> targets;
  for (const auto& [target, sources] : traced_into_) {
    if (sources.count(source_uri) != 0) targets.insert(target);
  }
  for (const auto& [target, names] : wanted) targets.insert(target);
  for (const std::string& target : targets) {
    const std::vector<std::string> before = traced_functions(target);
    auto& sources = traced_into_[target];
    const auto names = wanted.find(target);
    if (names == wanted.end() || names->second.empty()) {
      sources.erase(source_uri);
    } else {
      sources[source_uri] = names->second;
    }
    if (sources.empty()) traced_into_.erase(target);
    if (traced_functions(target) == before) continue;
    if (OpenDocument* document = find_document(target)) {
      spdlog::debug("{}: functions traced from other open files changed", target);
      scheduler_->invalidate(*document);
    }
  }
}

void Session::update_workspace_calls(const OpenDocument& source, const AnalysisResult& result) {
  std::map<std::string, std::set<std::string>> wanted;
  if (!source.module.empty()) {
    for (const auto& [module, function] : result.imported_calls) {
      if (module.empty()) continue;  // an announcement (module classes, returns), read by the askers
      std::string absolute = workspace::resolve_module(source.module, source.is_package, module);
      const std::string& traced_name = function;  // clang 14 cannot capture a structured binding
      const std::string& module_text = module;
      const std::string name(traced_entry_function(function));
      auto open_as = [&](const std::string& target_module) {
        bool found = false;
        for (const auto& [uri, document] : scheduler_->documents()) {
          if (uri == source.uri || document->module.empty() || document->module != target_module) continue;
          found = true;
          if (!is_workspace_query(traced_name) &&
              (!document->latest || workspace_entry_wanted(traced_name, document->latest->imported_calls)))
            wanted[uri].insert(traced_name);
          // What its open document announced answers the source (as in the CLI's pass).
          if (document->latest) {
            for (std::string& answer : workspace_answers(module_text, traced_name, document->latest->imported_calls))
              wanted[source.uri].insert(std::move(answer));
          }
        }
        return found;
      };
      // A package that re-exports the name from one of its modules: that module (see the CLI's pass), whether
      // or not the package's __init__.py is open too.
      const std::string origin = packages_.reexporting_module(source.path, source.module, absolute, name);
      if (origin.empty() || !open_as(origin)) open_as(absolute);
    }
  }
  set_contribution(source.uri, wanted);
}

void Session::package_changed(const std::string& init_path) {
  packages_.forget(init_path);
  spdlog::info("{} changed: resolving the workspace calls of {} open documents again", init_path,
               scheduler_->documents().size());
  for (const auto& [uri, document] : scheduler_->documents()) {
    if (document->latest) update_workspace_calls(*document, *document->latest);
  }
}

}  // namespace graphmend::lsp
