// initialized, workspace/didChangeConfiguration, workspace/didChangeWatchedFiles: the settings the client
// gives (pushed or pulled) and the files that configure the analysis (pyproject.toml, a package's
// __init__.py).
#include <spdlog/spdlog.h>

#include "lsp/handlers/handlers.h"

using graphmend::protocol::Message;

namespace graphmend::lsp::handlers {

namespace {

void update_settings(Session& session, const json& value, const std::string& origin);

void fetch_configuration(Session& session) {
  session.send_request("workspace/configuration", {{"items", {{{"section", "graphmend"}}}}},
                       [&session](const Message& response) {
                         if (response.error || !response.result.is_array() || response.result.empty() ||
                             !response.result[0].is_object()) {
                           return;
                         }
                         update_settings(session, response.result[0], "workspace/configuration");
                       });
}

// A settings payload is complete: what it leaves out returns to the default.
void update_settings(Session& session, const json& value, const std::string& origin) {
  std::vector<std::string> warnings;
  Settings updated = merge_settings(Settings{}, value, &warnings);
  for (const std::string& warning : warnings) {
    session.log_message(protocol::message_type::kWarning, origin + ": " + warning);
  }
  if (updated == session.settings) return;
  session.settings = std::move(updated);
  session.settings_applied();
  spdlog::info("settings changed ({})", origin);
  session.configuration_changed();
}

}  // namespace

void initialized(Session& session) {
  if (session.client.watch_registration) {
    json registration = {
        {"id", "graphmend-pyproject"},
        {"method", "workspace/didChangeWatchedFiles"},
        {"registerOptions",
         {{"watchers", {{{"globPattern", "**/pyproject.toml"}}, {{"globPattern", "**/__init__.py"}}}}}}};
    session.send_request("client/registerCapability", {{"registrations", {registration}}}, [](const Message&) {});
  }
  if (session.client.configuration_pull) fetch_configuration(session);
}

void did_change_configuration(Session& session, const json& params) {
  const json* value = protocol::optional_member(params, "/settings", json::value_t::object);
  if (value != nullptr && !value->empty()) update_settings(session, *value, "didChangeConfiguration");
  if (session.client.configuration_pull) fetch_configuration(session);
}

void did_change_watched_files(Session& session, const json& params) {
  const json& changes = protocol::require(params, "/changes", json::value_t::array);
  bool relevant = false;
  for (const json& change : changes) {
    const json* uri = protocol::optional_member(change, "/uri", json::value_t::string);
    if (uri == nullptr) continue;
    const std::string& text = uri->get_ref<const std::string&>();
    if (text.ends_with("/pyproject.toml")) relevant = true;
    if (text.ends_with("/__init__.py")) {
      if (auto path = protocol::uri_to_path(text)) session.package_changed(*path);
    }
  }
  if (!relevant) return;
  spdlog::info("pyproject.toml changed: re-analysing {} open documents", session.scheduler().documents().size());
  session.configuration_changed();
}

}  // namespace graphmend::lsp::handlers
