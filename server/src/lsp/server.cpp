#include "lsp/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <asio.hpp>
#include <map>
#include <string_view>

#include "lsp/handlers/handlers.h"
#include "lsp/session.h"

namespace graphmend::lsp {
namespace {

using protocol::Message;
using protocol::MessageKind;
using protocol::ProtocolError;
namespace errc = protocol::error_code;

std::string request_uri(const std::string& method, const json& params) {
  const char* pointer = "/textDocument/uri";
  if (method == "codeAction/resolve") pointer = "/data/uri";
  if (method == "workspace/executeCommand") pointer = "/arguments/0/uri";
  if (const json* uri = protocol::optional_member(params, pointer, json::value_t::string)) {
    return uri->get<std::string>();
  }
  return {};
}

// The requests and notifications the handlers answer (initialize, shutdown, exit and cancellation are the
// server's own). A request whose `available` says no is answered MethodNotFound.
using RequestHandler = void (*)(Session&, const json& id, const json& params);
using NotificationHandler = void (*)(Session&, const json& params);
struct RequestRoute {
  RequestHandler handler;
  bool (*available)(const Session&) = nullptr;
};

bool pulls(const Session& session) { return session.client.pull_mode; }
bool validates(const Session& session) { return session.validator != nullptr; }

const std::map<std::string_view, RequestRoute>& request_routes() {
  static const std::map<std::string_view, RequestRoute> routes = {
      {"textDocument/hover", {handlers::hover}},
      {"textDocument/codeAction", {handlers::code_action}},
      {"codeAction/resolve", {handlers::resolve_code_action}},
      {"workspace/executeCommand", {handlers::execute_command}},
      {"textDocument/diagnostic",
       {[](Session& session, const json& id, const json& params) {
          handlers::document_diagnostic(session, id, params);
        },
        pulls}},
      {"workspace/diagnostic", {handlers::workspace_diagnostic, pulls}},
      {"textDocument/codeLens", {handlers::code_lens, validates}},
  };
  return routes;
}

const std::map<std::string_view, NotificationHandler>& notification_routes() {
  static const std::map<std::string_view, NotificationHandler> routes = {
      {"initialized", [](Session& session, const json&) { handlers::initialized(session); }},
      {"window/workDoneProgress/cancel", handlers::cancel_progress},
      {"textDocument/didOpen", handlers::did_open},
      {"textDocument/didChange", handlers::did_change},
      {"textDocument/didSave", handlers::did_save},
      {"textDocument/didClose", handlers::did_close},
      {"notebookDocument/didOpen", handlers::notebook_did_open},
      {"notebookDocument/didChange", handlers::notebook_did_change},
      {"notebookDocument/didSave", handlers::notebook_did_save},
      {"notebookDocument/didClose", handlers::notebook_did_close},
      {"workspace/didChangeConfiguration", handlers::did_change_configuration},
      {"workspace/didChangeWatchedFiles", handlers::did_change_watched_files},
  };
  return routes;
}

bool flag(const json& capabilities, const std::string& pointer) {
  const json* value = protocol::optional_member(capabilities, pointer, json::value_t::boolean);
  return value != nullptr && value->get<bool>();
}

}  // namespace

// Speaks the protocol: framing events and messages in, dispatch to the handlers, the lifecycle
// (initialize, shutdown, exit), cancellation and the capabilities. Everything else is the Session's.
struct Server::Impl {
  Impl(Server& owner, asio::io_context& context, Writer writer, ServerOptions options)
      : self(owner), session(context, std::move(writer), options) {}

  ~Impl() {
    // Also when the server stops without `exit` (its output failed): no validation outlives it.
    if (session.validator) session.validator->stop_all();
  }

  Server& self;
  Session session;

  void send(const json& message) { session.send(message); }
  void reply(const json& id, json result) { session.reply(id, std::move(result)); }
  void reply_error(const json& id, int code, const std::string& message) { session.reply_error(id, code, message); }

  // ---------------------------------------------------------------------------------------------
  // Dispatch.

  void on_frame(const protocol::FrameEvent& event) {
    using Kind = protocol::FrameEvent::Kind;
    switch (event.kind) {
      case Kind::Message:
        if (!event.detail.empty()) spdlog::warn("framing: {}", event.detail);
        on_message(event.body);
        break;
      case Kind::Oversized:
        spdlog::warn("{}", event.detail);
        send(protocol::make_error_response(nullptr, errc::kInvalidRequest, event.detail));
        break;
      case Kind::Incomplete:
        // Not run: a wrongly framed message may be a mangled one. A request still gets its answer.
        spdlog::warn("framing: {}; resynchronised", event.detail);
        send(protocol::make_error_response(request_id_in(event.body), errc::kParseError, event.detail));
        break;
      case Kind::BadHeader:
      case Kind::Junk:
        spdlog::warn("framing: {}; resynchronised", event.detail);
        break;
    }
  }

  // The id of a request in `body`, when it is one; null otherwise.
  static json request_id_in(std::string_view body) {
    const json parsed = json::parse(body, nullptr, false);
    if (!parsed.is_object() || !parsed.contains("method") || !parsed.contains("id")) return nullptr;
    const json& id = parsed["id"];
    return id.is_string() || id.is_number_integer() ? id : json(nullptr);
  }

  void on_message(std::string_view body) {
    if (session.exit_code) return;
    Message message;
    try {
      message = protocol::parse_message(body);
    } catch (const ProtocolError& error) {
      spdlog::warn("bad message ({}): {}", protocol::error_code_name(error.code()), error.what());
      send(protocol::make_error_response(error.id(), error.code(), error.what()));
      return;
    }
    switch (message.kind) {
      case MessageKind::Request:
        on_request(message);
        break;
      case MessageKind::Notification:
        on_notification(message);
        break;
      case MessageKind::Response:
        on_response(message);
        break;
    }
  }

  void on_request(const Message& message) {
    const json& id = message.id;
    const std::string key = key_of(id);
    spdlog::debug("--> {} #{}", message.method, key);
    if (session.pending.count(key) != 0) {
      send(protocol::make_error_response(id, errc::kInvalidRequest, "request id " + key + " is already in use"));
      return;
    }
    session.pending[key] = {message.method, request_uri(message.method, message.params)};
    if (session.state == Session::State::Uninitialized && message.method != "initialize") {
      reply_error(id, errc::kServerNotInitialized, "the server is not initialized");
      return;
    }
    if (session.state == Session::State::ShutDown) {
      reply_error(id, errc::kInvalidRequest, "the server is shutting down");
      return;
    }
    try {
      dispatch_request(message.method, id, message.params);
    } catch (const ProtocolError& error) {
      reply_error(id, error.code(), error.what());
    } catch (const std::exception& error) {
      spdlog::error("{} failed: {}", message.method, error.what());
      reply_error(id, errc::kInternalError, error.what());
    }
  }

  void dispatch_request(const std::string& method, const json& id, const json& params) {
    if (method == "initialize") return initialize(id, params);
    if (const json* uri = protocol::optional_member(params, "/textDocument/uri", json::value_t::string)) {
      const auto cell = session.notebook_of_cell.find(uri->get<std::string>());
      if (cell != session.notebook_of_cell.end())
        return handlers::cell_request(session, method, id, params, cell->first, cell->second);
    }
    if (method == "shutdown") {
      session.state = Session::State::ShutDown;
      session.scheduler().stop_scheduling();
      // Running validations are cancelled: each is answered with RequestCancelled once its
      // processes are gone.
      for (const auto& [key, run] : session.command_runs) session.validator->cancel(run.id);
      return reply(id, nullptr);
    }
    const auto route = request_routes().find(method);
    if (route != request_routes().end() && (route->second.available == nullptr || route->second.available(session))) {
      return route->second.handler(session, id, params);
    }
    reply_error(id, errc::kMethodNotFound, "method not found: " + method);
  }

  void on_notification(const Message& message) {
    const std::string& method = message.method;
    spdlog::debug("--> {}", method);
    if (method == "exit") return finish(session.state == Session::State::ShutDown ? 0 : 1);
    if (session.state != Session::State::Running) {
      spdlog::warn("ignoring {} {}", method,
                   session.state == Session::State::ShutDown ? "after shutdown" : "before initialize");
      return;
    }
    try {
      if (method == "$/cancelRequest") return cancel(message.params);
      const auto route = notification_routes().find(method);
      if (route != notification_routes().end()) return route->second(session, message.params);
      if (method.rfind("$/", 0) != 0) spdlog::debug("ignoring unknown notification {}", method);
    } catch (const ProtocolError& error) {
      session.log_message(protocol::message_type::kWarning, "ignored " + method + ": " + std::string(error.what()));
    } catch (const std::exception& error) {
      session.log_message(protocol::message_type::kError,
                          "internal error in " + method + ": " + std::string(error.what()));
    }
  }

  void on_response(const Message& message) {
    auto handler = session.take_response(message.id);
    if (!handler) {
      spdlog::warn("response to unknown request {}", message.id.dump());
      return;
    }
    if (message.error) {
      spdlog::warn("client answered request {} with error {}: {}", message.id.dump(), message.error->code,
                   message.error->message);
    }
    try {
      handler(message);
    } catch (const std::exception& error) {
      spdlog::error("handling the response to {}: {}", message.id.dump(), error.what());
    }
  }

  void finish(int code) {
    if (session.exit_code) return;
    session.exit_code = code;
    spdlog::info("exiting with code {}", code);
    session.scheduler().stop();
    if (session.validator) session.validator->stop_all();  // no validation outlives the server
    if (self.on_exit) self.on_exit(code);
  }

  void cancel(const json& params) {
    const json* id = protocol::optional_member(params, "/id", json::value_t::number_integer);
    if (id == nullptr) id = protocol::optional_member(params, "/id", json::value_t::string);
    if (id == nullptr) throw ProtocolError(errc::kInvalidParams, "params.id must be an id");
    if (session.is_pending(*id)) {
      spdlog::debug("cancelling request {}", id->dump());
      // A validation is answered once its processes are gone (its `done` gets RequestCancelled).
      if (session.command_runs.count(key_of(*id)) != 0 && session.validator->cancel(*id)) return;
      reply_error(*id, errc::kRequestCancelled, "request cancelled");
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Lifecycle.

  void initialize(const json& id, const json& params) {
    if (session.state != Session::State::Uninitialized) {
      return reply_error(id, errc::kInvalidRequest, "initialize may only be sent once");
    }
    if (!params.is_object()) throw ProtocolError(errc::kInvalidParams, "params must be an object");
    if (const json* caps = protocol::optional_member(params, "/capabilities", json::value_t::object)) {
      session.client.capabilities = *caps;
    }
    ClientSupport& client = session.client;
    const json& caps = client.capabilities;
    client.encoding_name = protocol::negotiate_position_encoding(caps);
    client.encoding = encoding_from_name(client.encoding_name);
    client.resolve_edits = false;
    if (const json* properties = protocol::optional_member(caps, "/textDocument/codeAction/resolveSupport/properties",
                                                           json::value_t::array)) {
      client.resolve_edits = std::find(properties->begin(), properties->end(), "edit") != properties->end();
    }
    client.document_changes = flag(caps, "/workspace/workspaceEdit/documentChanges");
    client.configuration_pull = flag(caps, "/workspace/configuration");
    client.watch_registration = flag(caps, "/workspace/didChangeWatchedFiles/dynamicRegistration");
    client.refresh_support = flag(caps, "/workspace/diagnostics/refreshSupport");
    client.work_done_progress = flag(caps, "/window/workDoneProgress");
    client.code_lens_refresh = flag(caps, "/workspace/codeLens/refreshSupport");

    std::vector<std::string> warnings;
    if (const json* options = protocol::optional_member(params, "/initializationOptions", json::value_t::object)) {
      session.settings = merge_settings(session.settings, *options, &warnings);
    }
    const bool client_pulls =
        protocol::optional_member(caps, "/textDocument/diagnostic", json::value_t::object) != nullptr;
    client.pull_mode = client_pulls && session.settings.pull_diagnostics.value_or(true);
    session.settings_applied();
    session.state = Session::State::Running;

    std::vector<std::string> commands{std::string(kApplyAutofix)};
    if (session.validator) {
      for (const std::string& command : session.validator->commands()) commands.push_back(command);
    }
    json capabilities = {
        {"positionEncoding", client.encoding_name},
        {"textDocumentSync", {{"openClose", true}, {"change", 2}, {"save", {{"includeText", false}}}}},
        {"hoverProvider", true},
        {"codeActionProvider",
         {{"codeActionKinds", {"quickfix", "source.fixAll.graphmend", kNotebookFixAll}}, {"resolveProvider", true}}},
        // Jupyter notebooks: the Python cells of each are analysed together, diagnostics go to each cell.
        {"notebookDocumentSync",
         {{"notebookSelector", json::array({{{"notebook", {{"notebookType", "jupyter-notebook"}}},
                                             {"cells", json::array({{{"language", "python"}}})}}})},
          {"save", true}}},
        {"executeCommandProvider", {{"commands", commands}}},
    };
    if (client.pull_mode) {
      capabilities["diagnosticProvider"] = {
          {"identifier", "graphmend"}, {"interFileDependencies", false}, {"workspaceDiagnostics", true}};
    }
    if (session.validator) capabilities["codeLensProvider"] = {{"resolveProvider", false}};
    spdlog::info("initialized: position encoding {}, {} diagnostics", client.encoding_name,
                 client.pull_mode ? "pull" : "push");
    reply(id, {{"capabilities", std::move(capabilities)},
               {"serverInfo", {{"name", "graphmend"}, {"version", GRAPHMEND_VERSION}}}});
    for (const std::string& warning : warnings) {
      session.log_message(protocol::message_type::kWarning, "initializationOptions: " + warning);
    }
  }
};

Server::Server(asio::io_context& io, Writer write, ServerOptions options)
    : impl_(std::make_unique<Impl>(*this, io, std::move(write), options)) {}

Server::~Server() = default;

void Server::set_validator(std::shared_ptr<Validator> validator) { impl_->session.validator = std::move(validator); }

void Server::on_frame(const protocol::FrameEvent& event) { impl_->on_frame(event); }

void Server::on_message(std::string_view body) { impl_->on_message(body); }

void Server::on_input_closed() {
  if (impl_->session.exit_code) return;
  spdlog::info("input closed");
  impl_->finish(impl_->session.state == Session::State::ShutDown ? 0 : 1);
}

std::optional<int> Server::exit_code() const { return impl_->session.exit_code; }

}  // namespace graphmend::lsp
