#include "lsp/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <list>
#include <map>
#include <set>
#include <thread>

#include "cli/notebook.h"
#include "graphmend/analysis/analyzer.h"
#include "graphmend/analysis/config.h"
#include "graphmend/analysis/document.h"
#include "graphmend/analysis/semantic.h"
#include "graphmend/analysis/workspace.h"
#include "graphmend/protocol/lsp.h"
#include "graphmend/transforms/fixer.h"
#include "lsp/debounce.h"
#include "lsp/features.h"
#include "lsp/settings.h"

namespace graphmend::lsp {
namespace {

using json = nlohmann::json;
using protocol::Message;
using protocol::MessageKind;
using protocol::ProtocolError;
namespace errc = protocol::error_code;
using Clock = std::chrono::steady_clock;
using Strand = asio::strand<asio::thread_pool::executor_type>;

constexpr std::string_view kApplyAutofix = "graphmend.applyAutofix";
// Fix all for a whole notebook (VS Code's `notebook.codeActionsOnSave`).
constexpr std::string_view kNotebookFixAll = "notebook.source.fixAll.graphmend";

// A notebook (LSP 3.17 notebook sync) is analysed as one document under the notebook's URI whose text is
// its Python code cells joined (cli/notebook.h): a model in one cell compiled in another is found. This is
// which cell document each part of one version of that text is, so that diagnostics go to the cells and
// requests on a cell are answered from the notebook's analysis.
struct NotebookLayout {
  cli::VirtualText virt;          // the joined text, its cells and the ranges no fix may touch
  std::vector<std::string> uris;  // the cell documents, parallel to virt.cells
  std::vector<int64_t> versions;

  bool same(const NotebookLayout& other) const {
    return virt.text == other.virt.text && uris == other.uris && versions == other.versions;
  }
  std::optional<size_t> find(const std::string& uri) const {
    const auto it = std::find(uris.begin(), uris.end(), uri);
    if (it == uris.end()) return std::nullopt;
    return static_cast<size_t>(it - uris.begin());
  }
  // The cell holding `offset` (an offset just after a cell's newline: the next cell).
  size_t cell_at(uint32_t offset) const {
    size_t cell = 0;
    while (cell + 1 < virt.cells.size() && virt.cells[cell + 1].offset <= offset) ++cell;
    return cell;
  }
  // The offset of the newline that ends `cell`.
  uint32_t end_of(size_t cell) const {
    const size_t next = cell + 1 < virt.cells.size() ? virt.cells[cell + 1].offset : virt.text.size();
    return static_cast<uint32_t>(next == 0 ? 0 : next - 1);
  }
  // `range` of the joined text as a range in the cell holding its start (clamped to that cell).
  std::pair<size_t, json> cell_range(const LineIndex& lines, ByteRange range, PositionEncoding encoding) const {
    const size_t cell = cell_at(range.start);
    const uint32_t end = std::max(range.start, std::min(range.end, end_of(cell)));
    const LinePosition a = lines.to_position(range.start, encoding), b = lines.to_position(end, encoding);
    const uint32_t base = virt.cells[cell].line;
    return {cell, protocol::to_json(protocol::Range{{a.line - base, a.character}, {b.line - base, b.character}})};
  }
};

// The findings of one version of a document, with everything needed to answer requests about it.
struct AnalysisResult {
  int64_t version = 0;
  uint64_t generation = 0;  // the document generation it was computed under
  std::shared_ptr<const TextSnapshot> snapshot;
  std::vector<Finding> findings;
  std::vector<Problem> problems;     // syntax errors, regions not analysed
  json diagnostics = json::array();  // parallel to `findings`, then the problems
  std::string result_id;
  Clock::duration elapsed{};
  bool incremental = false;            // only the edited function was analysed again
  bool held = false;                   // the edit broke the syntax: the last analysis, moved (IncrementalAnalyzer)
  Clock::duration reparse_time{};      // applying the edits to the tree before it
  bool provisional = false;            // held while the reparse was past its budget; the real one follows
  bool completes_provisional = false;  // the real analysis of a version given a provisional one first
  std::string error;                   // the engine failed: no findings
  std::string docs_url;                // the configuration's `docs-url`, for the rule links of hovers
  // Calls from traced code to functions imported from other modules: (module as written, name).
  std::vector<std::pair<std::string, std::string>> imported_calls;
  // A notebook: its cells for this version; each diagnostic's cell and the diagnostic in that cell's
  // positions (parallel to `diagnostics`).
  std::shared_ptr<const NotebookLayout> notebook;
  std::vector<size_t> diagnostic_cells;
  std::vector<json> cell_diagnostics;

  // What a client is given for `cell` (an index into notebook->uris).
  json diagnostics_of_cell(size_t cell) const {
    json items = json::array();
    for (size_t i = 0; i < cell_diagnostics.size(); ++i) {
      if (diagnostic_cells[i] == cell) items.push_back(cell_diagnostics[i]);
    }
    return items;
  }
  // The diagnostic `i` as its document has it.
  const json& diagnostic(size_t i) const {
    return notebook && i < cell_diagnostics.size() ? cell_diagnostics[i] : diagnostics[i];
  }
};

// The document's tree side: its parsed Document, analyzer and reparse statistics, touched only on its strand
// (one per document; the analysis threads are the pool the strands run on).
struct TreeState {
  std::unique_ptr<Document> document;
  // Re-analyses only the edited function when it can (the results equal a whole-file analysis).
  IncrementalAnalyzer analyzer;
  Clock::duration reparse_time{};  // spent applying edits to the tree since the last analysis (for the log)
  // Recent reparses that finished: the budget is a few times their median, so only the outliers
  // (tree-sitter's error recovery after an unclosed bracket) are cut short.
  std::array<Clock::duration, 16> recent_reparses{};
  std::size_t reparses = 0;
  void record_reparse(Clock::duration took) { recent_reparses[reparses++ % recent_reparses.size()] = took; }
  std::chrono::microseconds reparse_budget() const {
    constexpr std::chrono::microseconds kMinimum{2000}, kMaximum{100000};
    const std::size_t n = std::min(reparses, recent_reparses.size());
    if (n < 4) return kMaximum;
    std::array<Clock::duration, 16> sorted = recent_reparses;
    std::nth_element(sorted.begin(), sorted.begin() + n / 2, sorted.begin() + n);
    auto budget = std::chrono::duration_cast<std::chrono::microseconds>(4 * sorted[n / 2]);
    return std::clamp(budget, kMinimum, kMaximum);
  }
  void release() {
    analyzer.reset();
    document.reset();
  }
};

struct OpenDocument {
  OpenDocument(asio::io_context& io, Strand document_strand) : strand(std::move(document_strand)), debounce(io) {}

  std::string uri;
  std::string path;         // file system path, or the URI for non-file documents
  std::string module;       // dotted module name ("pkg.models.bert"), empty for non-file documents
  bool is_package = false;  // an __init__.py
  int64_t version = 0;
  // Bumped whenever the configuration that applies to this document changes (settings, a
  // pyproject.toml, functions other open files trace into it): results of older generations are stale.
  uint64_t generation = 1;
  std::shared_ptr<const TextSnapshot> snapshot;
  bool too_large = false;
  std::shared_ptr<const NotebookLayout> notebook;  // a notebook: its cells for `snapshot`

  Strand strand;
  std::shared_ptr<TreeState> tree_state = std::make_shared<TreeState>();
  // The newest version, readable from the strand so queued analyses of old versions are skipped.
  std::shared_ptr<std::atomic<int64_t>> live_version = std::make_shared<std::atomic<int64_t>>(0);
  // Whether the strand keeps the tree after an analysis (for incremental reparsing of the next
  // edit). Only documents being edited do: a tree costs far more memory than its text.
  std::shared_ptr<std::atomic<bool>> keep_tree = std::make_shared<std::atomic<bool>>(false);

  asio::steady_timer debounce;
  DebouncePolicy policy;
  int64_t scheduled_version = -1;
  uint64_t scheduled_generation = 0;

  std::shared_ptr<const AnalysisResult> latest;     // newest result of the current version
  std::shared_ptr<const AnalysisResult> published;  // what the client was last given
  bool publish_pending = false;
  std::vector<std::function<void(const AnalysisResult&)>> waiters;
};

struct PendingRequest {
  std::string method;
  std::string uri;  // the document it reads; an edit to it makes the request stale
};

struct WorkspaceRequest {
  json id;
  std::map<std::string, std::string> previous;  // uri -> resultId
};

std::string key_of(const json& id) { return id.dump(); }

std::string request_uri(const std::string& method, const json& params) {
  const char* pointer = "/textDocument/uri";
  if (method == "codeAction/resolve") pointer = "/data/uri";
  if (method == "workspace/executeCommand") pointer = "/arguments/0/uri";
  if (const json* uri = protocol::optional_member(params, pointer, json::value_t::string)) {
    return uri->get<std::string>();
  }
  return {};
}

bool flag(const json& capabilities, const std::string& pointer) {
  const json* value = protocol::optional_member(capabilities, pointer, json::value_t::boolean);
  return value != nullptr && value->get<bool>();
}

}  // namespace

struct Server::Impl {
  Impl(Server& owner, asio::io_context& context, Writer writer, ServerOptions options)
      : self(owner),
        io(context),
        write(std::move(writer)),
        // Two workers at least, even on two cores: one slow document never holds the others' diagnostics.
        pool(options.workers != 0 ? options.workers : std::clamp(std::thread::hardware_concurrency(), 3u, 5u) - 1u) {}

  ~Impl() {
    // Also when the server stops without `exit` (its output failed): no validation outlives it.
    if (validator) validator->stop_all();
    pool.stop();
    pool.join();
  }

  Server& self;
  asio::io_context& io;
  Writer write;
  asio::thread_pool pool;

  enum class State { Uninitialized, Running, ShutDown };
  State state = State::Uninitialized;
  std::optional<int> exit_code;

  // Negotiated at initialize.
  json client_capabilities = json::object();
  std::string encoding_name = "utf-16";
  PositionEncoding encoding = PositionEncoding::Utf16;
  bool pull_mode = false;
  bool resolve_edits = false;
  bool document_changes = false;
  bool configuration_pull = false;
  bool watch_registration = false;
  bool refresh_support = false;
  bool work_done_progress = false;  // window.workDoneProgress: the server may create tokens
  bool code_lens_refresh = false;   // workspace.codeLens.refreshSupport

  Settings settings;
  // Workspace pass over the open documents: target uri -> source uri -> functions of the target
  // that traced code in the source calls (they are traced too: Config::traced_from_workspace).
  std::map<std::string, std::map<std::string, std::set<std::string>>> traced_into;
  uint64_t next_result_id = 0;
  std::shared_ptr<Validator> validator;
  // Validator commands in flight, by request key: their `$/progress` token (null: the client gets
  // none) and whether it may be used yet (a token the server asked the client to create is usable
  // once the client answered).
  struct CommandRun {
    json id;
    std::string what;  // "validate example": the progress title (after "graphmend: ") and the log's
    json token;
    bool token_ready = false;
    bool begun = false;
    // The latest stage reported before `begin` could be sent (while the token was being created).
    std::optional<std::pair<std::string, int>> last_report;
  };
  std::map<std::string, CommandRun> command_runs;
  uint64_t next_progress_token = 0;

  std::map<std::string, std::shared_ptr<OpenDocument>> documents;
  // Documents edited most recently, newest first: only these keep their tree-sitter tree between
  // analyses (for incremental reparsing); the others are parsed again when they next change.
  std::list<std::string> recently_edited;
  static constexpr std::size_t kKeepTrees = 8;
  static constexpr std::chrono::milliseconds kFinishParseAfter{10};
  std::map<std::string, PendingRequest> pending;
  std::vector<WorkspaceRequest> workspace_requests;
  std::map<std::string, std::function<void(const Message&)>> outgoing;
  uint64_t next_outgoing_id = 0;

  std::map<std::filesystem::path, std::optional<std::filesystem::path>> pyproject_for_dir;
  std::map<std::filesystem::path, Config> pyproject_configs;

  // ---------------------------------------------------------------------------------------------
  // Output.

  void send(const json& message) {
    if (exit_code) return;
    write(message);
  }

  void notify(std::string_view method, json params) { send(protocol::make_notification(method, std::move(params))); }

  void log_message(int type, const std::string& text) {
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

  bool is_pending(const json& id) const { return pending.count(key_of(id)) != 0; }

  void reply(const json& id, json result) {
    if (pending.erase(key_of(id)) == 0) return;  // cancelled or made stale meanwhile
    send(protocol::make_response(id, std::move(result)));
  }

  void reply_error(const json& id, int code, const std::string& message) {
    if (pending.erase(key_of(id)) == 0) return;
    spdlog::debug("request {} failed: {} ({})", id.dump(), message, protocol::error_code_name(code));
    send(protocol::make_error_response(id, code, message));
  }

  void send_request(std::string_view method, json params, std::function<void(const Message&)> on_response) {
    const json id = "graphmend/" + std::to_string(++next_outgoing_id);
    outgoing[key_of(id)] = std::move(on_response);
    send(protocol::make_request(id, method, std::move(params)));
  }

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
    if (exit_code) return;
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
    if (pending.count(key) != 0) {
      send(protocol::make_error_response(id, errc::kInvalidRequest, "request id " + key + " is already in use"));
      return;
    }
    pending[key] = {message.method, request_uri(message.method, message.params)};
    if (state == State::Uninitialized && message.method != "initialize") {
      reply_error(id, errc::kServerNotInitialized, "the server is not initialized");
      return;
    }
    if (state == State::ShutDown) {
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
      const auto cell = notebook_of_cell.find(uri->get<std::string>());
      if (cell != notebook_of_cell.end()) return cell_request(method, id, params, cell->first, cell->second);
    }
    if (method == "shutdown") {
      state = State::ShutDown;
      for (auto& [uri, document] : documents) document->debounce.cancel();
      // Running validations are cancelled: each is answered with RequestCancelled once its
      // processes are gone.
      for (const auto& [key, run] : command_runs) validator->cancel(run.id);
      return reply(id, nullptr);
    }
    if (method == "textDocument/hover") return hover(id, params);
    if (method == "textDocument/codeAction") return code_action(id, params);
    if (method == "codeAction/resolve") return resolve_code_action(id, params);
    if (method == "workspace/executeCommand") return execute_command(id, params);
    if (method == "textDocument/diagnostic" && pull_mode) return document_diagnostic(id, params);
    if (method == "workspace/diagnostic" && pull_mode) return workspace_diagnostic(id, params);
    if (method == "textDocument/codeLens" && validator) return code_lens(id, params);
    reply_error(id, errc::kMethodNotFound, "method not found: " + method);
  }

  void on_notification(const Message& message) {
    const std::string& method = message.method;
    spdlog::debug("--> {}", method);
    if (method == "exit") return finish(state == State::ShutDown ? 0 : 1);
    if (state != State::Running) {
      spdlog::warn("ignoring {} {}", method, state == State::ShutDown ? "after shutdown" : "before initialize");
      return;
    }
    try {
      if (method == "initialized") return initialized();
      if (method == "$/cancelRequest") return cancel(message.params);
      if (method == "window/workDoneProgress/cancel") return cancel_progress(message.params);
      if (method == "textDocument/didOpen") return did_open(message.params);
      if (method == "textDocument/didChange") return did_change(message.params);
      if (method == "textDocument/didSave") return did_save(message.params);
      if (method == "textDocument/didClose") return did_close(message.params);
      if (method == "notebookDocument/didOpen") return notebook_did_open(message.params);
      if (method == "notebookDocument/didChange") return notebook_did_change(message.params);
      if (method == "notebookDocument/didSave") return notebook_did_save(message.params);
      if (method == "notebookDocument/didClose") return notebook_did_close(message.params);
      if (method == "workspace/didChangeConfiguration") {
        return did_change_configuration(message.params);
      }
      if (method == "workspace/didChangeWatchedFiles") {
        return did_change_watched_files(message.params);
      }
      if (method.rfind("$/", 0) != 0) spdlog::debug("ignoring unknown notification {}", method);
    } catch (const ProtocolError& error) {
      log_message(protocol::message_type::kWarning, "ignored " + method + ": " + std::string(error.what()));
    } catch (const std::exception& error) {
      log_message(protocol::message_type::kError, "internal error in " + method + ": " + std::string(error.what()));
    }
  }

  void on_response(const Message& message) {
    const auto it = outgoing.find(key_of(message.id));
    if (it == outgoing.end()) {
      spdlog::warn("response to unknown request {}", message.id.dump());
      return;
    }
    auto handler = std::move(it->second);
    outgoing.erase(it);
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
    if (exit_code) return;
    exit_code = code;
    spdlog::info("exiting with code {}", code);
    for (auto& [uri, document] : documents) document->debounce.cancel();
    if (validator) validator->stop_all();  // no validation outlives the server
    if (self.on_exit) self.on_exit(code);
  }

  void cancel(const json& params) {
    const json* id = protocol::optional_member(params, "/id", json::value_t::number_integer);
    if (id == nullptr) id = protocol::optional_member(params, "/id", json::value_t::string);
    if (id == nullptr) throw ProtocolError(errc::kInvalidParams, "params.id must be an id");
    if (is_pending(*id)) {
      spdlog::debug("cancelling request {}", id->dump());
      // A validation is answered once its processes are gone (its `done` gets RequestCancelled).
      if (command_runs.count(key_of(*id)) != 0 && validator->cancel(*id)) return;
      reply_error(*id, errc::kRequestCancelled, "request cancelled");
    }
  }

  void cancel_progress(const json& params) {
    const json* token = protocol::optional_member(params, "/token", json::value_t::string);
    if (token == nullptr) token = protocol::optional_member(params, "/token", json::value_t::number_integer);
    if (token == nullptr) throw ProtocolError(errc::kInvalidParams, "params.token must be a progress token");
    for (const auto& [key, run] : command_runs) {
      if (run.token == *token) {
        spdlog::debug("progress {} cancelled: cancelling request {}", token->dump(), key);
        validator->cancel(run.id);
        return;
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Lifecycle.

  void initialize(const json& id, const json& params) {
    if (state != State::Uninitialized) {
      return reply_error(id, errc::kInvalidRequest, "initialize may only be sent once");
    }
    if (!params.is_object()) throw ProtocolError(errc::kInvalidParams, "params must be an object");
    if (const json* caps = protocol::optional_member(params, "/capabilities", json::value_t::object)) {
      client_capabilities = *caps;
    }
    const json& caps = client_capabilities;
    encoding_name = protocol::negotiate_position_encoding(caps);
    encoding = encoding_from_name(encoding_name);
    resolve_edits = false;
    if (const json* properties = protocol::optional_member(caps, "/textDocument/codeAction/resolveSupport/properties",
                                                           json::value_t::array)) {
      resolve_edits = std::find(properties->begin(), properties->end(), "edit") != properties->end();
    }
    document_changes = flag(caps, "/workspace/workspaceEdit/documentChanges");
    configuration_pull = flag(caps, "/workspace/configuration");
    watch_registration = flag(caps, "/workspace/didChangeWatchedFiles/dynamicRegistration");
    refresh_support = flag(caps, "/workspace/diagnostics/refreshSupport");
    work_done_progress = flag(caps, "/window/workDoneProgress");
    code_lens_refresh = flag(caps, "/workspace/codeLens/refreshSupport");

    std::vector<std::string> warnings;
    if (const json* options = protocol::optional_member(params, "/initializationOptions", json::value_t::object)) {
      settings = merge_settings(settings, *options, &warnings);
    }
    const bool client_pulls =
        protocol::optional_member(caps, "/textDocument/diagnostic", json::value_t::object) != nullptr;
    pull_mode = client_pulls && settings.pull_diagnostics.value_or(true);
    apply_log_level();
    state = State::Running;

    std::vector<std::string> commands{std::string(kApplyAutofix)};
    if (validator) {
      for (const std::string& command : validator->commands()) commands.push_back(command);
    }
    json capabilities = {
        {"positionEncoding", encoding_name},
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
    if (pull_mode) {
      capabilities["diagnosticProvider"] = {
          {"identifier", "graphmend"}, {"interFileDependencies", false}, {"workspaceDiagnostics", true}};
    }
    if (validator) capabilities["codeLensProvider"] = {{"resolveProvider", false}};
    spdlog::info("initialized: position encoding {}, {} diagnostics", encoding_name, pull_mode ? "pull" : "push");
    reply(id, {{"capabilities", std::move(capabilities)},
               {"serverInfo", {{"name", "graphmend"}, {"version", GRAPHMEND_VERSION}}}});
    for (const std::string& warning : warnings) {
      log_message(protocol::message_type::kWarning, "initializationOptions: " + warning);
    }
  }

  void apply_log_level() {
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

  void initialized() {
    if (watch_registration) {
      json registration = {
          {"id", "graphmend-pyproject"},
          {"method", "workspace/didChangeWatchedFiles"},
          {"registerOptions",
           {{"watchers", {{{"globPattern", "**/pyproject.toml"}}, {{"globPattern", "**/__init__.py"}}}}}}};
      send_request("client/registerCapability", {{"registrations", {registration}}}, [](const Message&) {});
    }
    if (configuration_pull) fetch_configuration();
  }

  void fetch_configuration() {
    send_request("workspace/configuration", {{"items", {{{"section", "graphmend"}}}}}, [this](const Message& response) {
      if (response.error || !response.result.is_array() || response.result.empty() || !response.result[0].is_object()) {
        return;
      }
      update_settings(response.result[0], "workspace/configuration");
    });
  }

  // A settings payload is complete: what it leaves out returns to the default.
  void update_settings(const json& value, const std::string& origin) {
    std::vector<std::string> warnings;
    Settings updated = merge_settings(Settings{}, value, &warnings);
    for (const std::string& warning : warnings) {
      log_message(protocol::message_type::kWarning, origin + ": " + warning);
    }
    if (updated == settings) return;
    settings = std::move(updated);
    apply_log_level();
    spdlog::info("settings changed ({})", origin);
    configuration_changed();
  }

  void did_change_configuration(const json& params) {
    const json* value = protocol::optional_member(params, "/settings", json::value_t::object);
    if (value != nullptr && !value->empty()) update_settings(*value, "didChangeConfiguration");
    if (configuration_pull) fetch_configuration();
  }

  void did_change_watched_files(const json& params) {
    const json& changes = protocol::require(params, "/changes", json::value_t::array);
    bool relevant = false;
    for (const json& change : changes) {
      const json* uri = protocol::optional_member(change, "/uri", json::value_t::string);
      if (uri == nullptr) continue;
      const std::string& text = uri->get_ref<const std::string&>();
      if (text.ends_with("/pyproject.toml")) relevant = true;
      if (text.ends_with("/__init__.py")) {
        if (auto path = protocol::uri_to_path(text)) package_changed(*path);
      }
    }
    if (!relevant) return;
    spdlog::info("pyproject.toml changed: re-analysing {} open documents", documents.size());
    configuration_changed();
  }

  // Configuration (settings or a pyproject.toml) changed: everything open is re-analysed.
  void configuration_changed() {
    pyproject_for_dir.clear();
    pyproject_configs.clear();
    for (auto& [uri, document] : documents) {
      ++document->generation;
      document->publish_pending = true;
      schedule_analysis(*document);
    }
    if (pull_mode && refresh_support) {
      send_request("workspace/diagnostic/refresh", nullptr, [](const Message&) {});
    }
  }

  Config config_for(const OpenDocument& document) {
    Config config;
    if (document.path != document.uri && settings.configuration_preference != ConfigurationPreference::EditorOnly) {
      const std::filesystem::path file(document.path);
      const std::filesystem::path dir = file.parent_path();
      auto found = pyproject_for_dir.find(dir);
      if (found == pyproject_for_dir.end()) {
        std::optional<std::filesystem::path> pyproject;
        try {
          pyproject = find_pyproject(file);
        } catch (const std::exception& error) {
          spdlog::warn("looking for pyproject.toml from {}: {}", dir.string(), error.what());
        }
        found = pyproject_for_dir.emplace(dir, pyproject).first;
      }
      if (found->second) {
        auto loaded = pyproject_configs.find(*found->second);
        if (loaded == pyproject_configs.end()) {
          Config from_file;
          try {
            from_file = load_pyproject(*found->second);
          } catch (const std::exception& error) {
            log_message(protocol::message_type::kError,
                        "invalid configuration, using defaults: " + std::string(error.what()));
          }
          loaded = pyproject_configs.emplace(*found->second, std::move(from_file)).first;
        }
        config = loaded->second;
      }
    }
    config = apply_settings(std::move(config), settings);
    config.traced_from_workspace = traced_functions(document.uri);
    return config;
  }

  // ---------------------------------------------------------------------------------------------
  // Workspace pass (open documents only): like `graphmend check` over several files, functions
  // that compiled code in one open file imports from another open file are traced there too.

  std::vector<std::string> traced_functions(const std::string& uri) const {
    std::set<std::string> names;
    if (const auto it = traced_into.find(uri); it != traced_into.end()) {
      for (const auto& [source, functions] : it->second) {
        names.insert(functions.begin(), functions.end());
      }
    }
    return {names.begin(), names.end()};
  }

  // Records what `source_uri`'s traced code calls in other open documents (`wanted`: target uri ->
  // names, replacing its previous contribution) and re-analyses the targets whose set changed.
  void set_contribution(const std::string& source_uri, const std::map<std::string, std::set<std::string>>& wanted) {
    std::set<std::string> targets;
    for (const auto& [target, sources] : traced_into) {
      if (sources.count(source_uri) != 0) targets.insert(target);
    }
    for (const auto& [target, names] : wanted) targets.insert(target);
    for (const std::string& target : targets) {
      const std::vector<std::string> before = traced_functions(target);
      auto& sources = traced_into[target];
      const auto names = wanted.find(target);
      if (names == wanted.end() || names->second.empty()) {
        sources.erase(source_uri);
      } else {
        sources[source_uri] = names->second;
      }
      if (sources.empty()) traced_into.erase(target);
      if (traced_functions(target) == before) continue;
      if (OpenDocument* document = find_document(target)) {
        spdlog::debug("{}: functions traced from other open files changed", target);
        ++document->generation;
        document->publish_pending = true;
        schedule_analysis(*document);
      }
    }
  }

  // What packages re-export, for names not found among the open modules; a package is forgotten when its
  // __init__.py is saved or changes on disk.
  workspace::PackageIndex packages_;

  void update_workspace_calls(const OpenDocument& source, const AnalysisResult& result) {
    std::map<std::string, std::set<std::string>> wanted;
    if (!source.module.empty()) {
      for (const auto& [module, function] : result.imported_calls) {
        std::string absolute = workspace::resolve_module(source.module, source.is_package, module);
        const std::string& traced_name = function;  // clang 14 cannot capture a structured binding
        auto open_as = [&](const std::string& name) {
          bool found = false;
          for (const auto& [uri, document] : documents) {
            if (uri != source.uri && !document->module.empty() && document->module == name) {
              wanted[uri].insert(traced_name);
              found = true;
            }
          }
          return found;
        };
        // Not an open module: a package that may re-export the name from one (see the CLI's pass).
        if (!open_as(absolute)) {
          const std::string origin = packages_.reexporting_module(source.path, source.module, absolute, function);
          if (!origin.empty()) open_as(origin);
        }
      }
    }
    set_contribution(source.uri, wanted);
  }

  // ---------------------------------------------------------------------------------------------
  // Documents.

  // The error for a URI that names no open document: why the URI is invalid, when it is.
  static ProtocolError not_open(const std::string& uri) {
    protocol::document_path(uri);
    return ProtocolError(errc::kInvalidParams, "document is not open: " + uri);
  }

  OpenDocument& document_for(const json& params) {
    const std::string uri = protocol::require_string(params, "/textDocument/uri");
    const auto it = documents.find(uri);
    if (it == documents.end()) {
      throw not_open(uri);
    }
    return *it->second;
  }

  OpenDocument* find_document(const std::string& uri) {
    const auto it = documents.find(uri);
    return it == documents.end() ? nullptr : it->second.get();
  }

  void set_text(OpenDocument& document, std::shared_ptr<const std::string> text) {
    document.snapshot = std::make_shared<const TextSnapshot>(std::move(text));
    const bool too_large = document.snapshot->text->size() > settings.max_file_bytes;
    if (too_large != document.too_large) {
      document.too_large = too_large;
      std::shared_ptr<TreeState> tree_state = document.tree_state;
      if (too_large) {
        log_message(protocol::message_type::kWarning, document.uri + " has " +
                                                          std::to_string(document.snapshot->text->size()) +
                                                          " bytes, more than maxFileSize (" +
                                                          std::to_string(settings.max_file_bytes) + "): not analysed");
        asio::post(document.strand, [tree_state] { tree_state->release(); });
      }
    }
  }

  void did_open(const json& params) {
    const std::string uri = protocol::require_string(params, "/textDocument/uri");
    // Before anything changes: an unusable URI leaves what is open as it was.
    const std::optional<std::string> path = protocol::document_path(uri);
    const int64_t version = protocol::require_integer(params, "/textDocument/version");
    std::string text = protocol::require_string(params, "/textDocument/text");
    open_document(uri, path, version, std::move(text), nullptr);
  }

  // `notebook`: the document is a notebook's cells joined (`text` is notebook->virt.text).
  void open_document(const std::string& uri, const std::optional<std::string>& path, int64_t version, std::string text,
                     std::shared_ptr<const NotebookLayout> notebook) {
    if (documents.count(uri) != 0) {
      spdlog::warn("{} opened twice; replacing it", uri);
      close_document(uri);
    }
    auto document = std::make_shared<OpenDocument>(io, asio::make_strand(pool));
    document->uri = uri;
    document->path = path.value_or(uri);
    if (document->path != uri) {
      document->module = workspace::module_name_of(document->path);
      document->is_package = std::filesystem::path(document->path).filename() == "__init__.py";
    }
    document->version = version;
    document->live_version->store(version);
    document->notebook = std::move(notebook);
    document->snapshot = std::make_shared<const TextSnapshot>(std::make_shared<const std::string>(std::move(text)));
    document->too_large = document->snapshot->text->size() > settings.max_file_bytes;
    documents[uri] = document;
    // The tree is built by the first analysis (on the strand), not here.
    if (document->too_large) {
      log_message(protocol::message_type::kWarning, uri + " has " + std::to_string(document->snapshot->text->size()) +
                                                        " bytes, more than maxFileSize (" +
                                                        std::to_string(settings.max_file_bytes) + "): not analysed");
    }
    spdlog::info("opened {} (version {}, {} bytes)", uri, version, document->snapshot->text->size());
    // A file is opened to be read or edited: it keeps its tree and model like an edited one, so the
    // first keystroke is analysed incrementally.
    touch(*document);
    document->publish_pending = true;
    schedule_analysis(*document);
  }

  void did_change(const json& params) {
    OpenDocument& document = document_for(params);
    const int64_t version = protocol::require_integer(params, "/textDocument/version");
    const json& changes = protocol::require(params, "/contentChanges", json::value_t::array);
    if (version <= document.version) {
      log_message(protocol::message_type::kWarning, "ignored a change to " + document.uri + ": version " +
                                                        std::to_string(version) + " is not newer than " +
                                                        std::to_string(document.version));
      return;
    }
    // The tree's edits, posted only once every change was accepted (all or nothing).
    std::vector<TreeEdit> tree_edits;
    std::shared_ptr<const std::string> text = apply_changes(document.uri, document.snapshot, changes, tree_edits);
    commit_change(document, version, std::move(text), std::move(tree_edits));
  }

  struct TreeEdit {
    bool full = false;
    ByteRange range;
    std::string text;
  };

  // `snapshot`'s text after LSP content `changes` (ProtocolError for a malformed one); `tree_edits` gets
  // the same as edits of the tree.
  std::shared_ptr<const std::string> apply_changes(const std::string& uri, std::shared_ptr<const TextSnapshot> snapshot,
                                                   const json& changes, std::vector<TreeEdit>& tree_edits) {
    std::shared_ptr<const std::string> text = snapshot->text;
    std::size_t index = 0;
    for (const json& change : changes) {
      const std::string where = "contentChanges[" + std::to_string(index++) + "]";
      const json* new_text = protocol::optional_member(change, "/text", json::value_t::string);
      if (new_text == nullptr) {
        throw ProtocolError(errc::kInvalidParams, where + ".text must be a string");
      }
      if (!change.contains("range")) {
        text = std::make_shared<const std::string>(new_text->get<std::string>());
        snapshot = std::make_shared<const TextSnapshot>(text);
        tree_edits.push_back({true, {}, *text});
        continue;
      }
      const protocol::Range range = protocol::range_from_json(change["range"], where + ".range");
      const LinePosition start{range.start.line, range.start.character};
      const LinePosition end{range.end.line, range.end.character};
      if (!snapshot->lines.is_valid(start, encoding) || !snapshot->lines.is_valid(end, encoding)) {
        log_message(protocol::message_type::kWarning,
                    "a change to " + uri + " has a range outside the text (" + std::to_string(start.line) + ":" +
                        std::to_string(start.character) + "-" + std::to_string(end.line) + ":" +
                        std::to_string(end.character) + "); clamped to the text");
      }
      const uint32_t start_offset = snapshot->lines.to_offset(start, encoding);
      const uint32_t end_offset = snapshot->lines.to_offset(end, encoding);
      if (start_offset > end_offset) {
        throw ProtocolError(errc::kInvalidParams, where + ".range ends before it starts");
      }
      const std::string& inserted = new_text->get_ref<const std::string&>();
      auto updated = std::make_shared<std::string>();
      updated->reserve(text->size() - (end_offset - start_offset) + inserted.size());
      updated->append(*text, 0, start_offset);
      updated->append(inserted);
      updated->append(*text, end_offset, std::string::npos);
      text = std::move(updated);
      snapshot = std::make_shared<const TextSnapshot>(text);
      tree_edits.push_back({false, {start_offset, end_offset}, inserted});
    }
    return text;
  }

  // A new version of the document: its tree is edited on its strand, requests on the old one are stale.
  void commit_change(OpenDocument& document, int64_t version, std::shared_ptr<const std::string> text,
                     std::vector<TreeEdit> tree_edits) {
    if (!document.too_large) {
      asio::post(document.strand, [tree_state = document.tree_state, edits = std::move(tree_edits)] {
        if (!tree_state->document) return;  // released: the next analysis parses the text afresh
        const auto start = Clock::now();
        const bool was_pending = tree_state->document->parse_pending();
        bool done = true;
        for (const TreeEdit& edit : edits) {
          if (edit.full) {
            tree_state->document->replace_text(edit.text);
          } else {
            // A reparse in error recovery can take tens of milliseconds: past the budget the analysis
            // gives the last findings at once and the parse finishes after (run_analysis()).
            done = tree_state->document->apply_edit(edit.range, edit.text, tree_state->reparse_budget());
          }
        }
        const auto took = Clock::now() - start;
        if (done && !was_pending && edits.size() == 1) tree_state->record_reparse(took);
        tree_state->reparse_time += took;
      });
    }
    document.version = version;
    document.live_version->store(version);
    set_text(document, text);
    touch(document);
    document.latest.reset();
    make_stale(document.uri);
    if (settings.run == RunMode::OnType) {
      document.publish_pending = true;
      arm_debounce(document);
    }
  }

  void touch(OpenDocument& document) {
    document.keep_tree->store(true);
    recently_edited.remove(document.uri);
    recently_edited.push_front(document.uri);
    if (recently_edited.size() <= kKeepTrees) return;
    // The least recently edited document gives its tree back; it is parsed again when needed.
    if (OpenDocument* evicted = find_document(recently_edited.back())) {
      evicted->keep_tree->store(false);
      asio::post(evicted->strand, [tree_state = evicted->tree_state, keep = evicted->keep_tree] {
        if (!keep->load()) tree_state->release();
      });
    }
    recently_edited.pop_back();
  }

  // Requests that read `uri` were computed for a version that no longer exists.
  void make_stale(const std::string& uri) {
    std::vector<json> stale;
    for (const auto& [key, request] : pending) {
      if (request.uri == uri) stale.push_back(json::parse(key));
    }
    for (const json& id : stale) {
      reply_error(id, errc::kContentModified, "the document changed");
    }
    if (OpenDocument* document = find_document(uri)) document->waiters.clear();
  }

  void did_save(const json& params) {
    OpenDocument& document = document_for(params);
    if (std::filesystem::path(document.path).filename() == "__init__.py") package_changed(document.path);
    saved(document);
  }

  // A package's __init__.py changed: what it re-exports is read again, and the open documents' calls into
  // other files are resolved again from their latest analyses (the files they now reach are re-analysed).
  void package_changed(const std::string& init_path) {
    packages_.forget(init_path);
    spdlog::info("{} changed: resolving the workspace calls of {} open documents again", init_path, documents.size());
    for (auto& [uri, document] : documents) {
      if (document->latest) update_workspace_calls(*document, *document->latest);
    }
  }

  void saved(OpenDocument& document) {
    if (settings.run != RunMode::OnSave) return;
    document.publish_pending = true;
    if (is_current(document)) {
      publish(document);
    } else {
      schedule_analysis(document);
    }
  }

  void did_close(const json& params) {
    const std::string uri = protocol::require_string(params, "/textDocument/uri");
    if (documents.count(uri) == 0) {
      throw not_open(uri);
    }
    close_document(uri);
    if (!pull_mode) {
      notify("textDocument/publishDiagnostics", {{"uri", uri}, {"diagnostics", json::array()}});
    }
  }

  void close_document(const std::string& uri) {
    make_stale(uri);
    recently_edited.remove(uri);
    const auto it = documents.find(uri);
    it->second->debounce.cancel();
    it->second->live_version->store(-1);
    documents.erase(it);
    // What it traced into other documents no longer holds; what others traced into it is kept
    // for when it is opened again.
    set_contribution(uri, {});
    try_answer_workspace();
  }

  // ---------------------------------------------------------------------------------------------
  // Notebooks (LSP 3.17 notebook document sync). A notebook is one OpenDocument under the notebook's
  // URI, its text the Python code cells joined (cli/notebook.h, NotebookLayout); its cells' documents
  // get its diagnostics, and requests on a cell are answered from its analysis.

  struct NotebookCell {
    std::string uri;
    int64_t kind = 2;  // NotebookCellKind: 1 markup, 2 code
    std::string language;
    int64_t version = 0;
    std::shared_ptr<const TextSnapshot> snapshot =
        std::make_shared<const TextSnapshot>(std::make_shared<const std::string>());
  };
  struct OpenNotebook {
    std::vector<NotebookCell> cells;  // in the notebook's order
    std::set<std::string> published;  // the cell documents last given diagnostics
  };
  std::map<std::string, OpenNotebook> notebooks;
  std::map<std::string, std::string> notebook_of_cell;  // cell document -> its notebook

  static NotebookCell cell_from_json(const json& cell) {
    NotebookCell out;
    out.uri = protocol::require_string(cell, "/document");
    out.kind = protocol::require_integer(cell, "/kind");
    return out;
  }

  // TextDocumentItems of a notebook's cells: their language, version and text.
  static void open_cells(OpenNotebook& notebook, const json& items) {
    for (const json& item : items) {
      const std::string uri = protocol::require_string(item, "/uri");
      const auto cell = std::find_if(notebook.cells.begin(), notebook.cells.end(),
                                     [&](const NotebookCell& c) { return c.uri == uri; });
      if (cell == notebook.cells.end()) {
        spdlog::warn("ignoring the text of {}: no cell of the notebook", uri);
        continue;
      }
      cell->language = protocol::require_string(item, "/languageId");
      cell->version = protocol::require_integer(item, "/version");
      cell->snapshot = std::make_shared<const TextSnapshot>(
          std::make_shared<const std::string>(protocol::require_string(item, "/text")));
    }
  }

  static std::shared_ptr<const NotebookLayout> layout_of(const OpenNotebook& notebook) {
    std::vector<cli::CodeCellText> texts;
    std::vector<const NotebookCell*> code;
    for (std::size_t i = 0; i < notebook.cells.size(); ++i) {
      const NotebookCell& cell = notebook.cells[i];
      if (cell.kind != 2 || cell.language != "python") continue;
      texts.push_back({static_cast<uint32_t>(i + 1), *cell.snapshot->text});
      code.push_back(&cell);
    }
    auto layout = std::make_shared<NotebookLayout>();
    layout->virt = cli::build_virtual_text(texts);
    for (const auto& cell : layout->virt.cells) {
      layout->uris.push_back(code[cell.source]->uri);
      layout->versions.push_back(code[cell.source]->version);
    }
    return layout;
  }

  void notebook_did_open(const json& params) {
    const std::string uri = protocol::require_string(params, "/notebookDocument/uri");
    const std::optional<std::string> path = protocol::document_path(uri);
    const int64_t version = protocol::require_integer(params, "/notebookDocument/version");
    OpenNotebook notebook;
    for (const json& cell : protocol::require(params, "/notebookDocument/cells", json::value_t::array)) {
      notebook.cells.push_back(cell_from_json(cell));
    }
    if (const json* items = protocol::optional_member(params, "/cellTextDocuments", json::value_t::array)) {
      open_cells(notebook, *items);
    }
    if (notebooks.count(uri) != 0) {
      spdlog::warn("notebook {} opened twice; replacing it", uri);
      close_notebook(uri);
    }
    std::shared_ptr<const NotebookLayout> layout = layout_of(notebook);
    for (const NotebookCell& cell : notebook.cells) notebook_of_cell[cell.uri] = uri;
    notebooks[uri] = std::move(notebook);
    spdlog::info("opened notebook {} ({} cells, {} analysed)", uri, notebooks[uri].cells.size(),
                 layout->virt.cells.size());
    std::string text = layout->virt.text;
    open_document(uri, path, version, std::move(text), std::move(layout));
  }

  void notebook_did_change(const json& params) {
    const std::string uri = protocol::require_string(params, "/notebookDocument/uri");
    const int64_t version = protocol::require_integer(params, "/notebookDocument/version");
    const auto open = notebooks.find(uri);
    OpenDocument* document = find_document(uri);
    if (open == notebooks.end() || document == nullptr) {
      throw ProtocolError(errc::kInvalidParams, "notebook is not open: " + uri);
    }
    OpenNotebook updated = open->second;  // all changes or none
    if (const json* structure = protocol::optional_member(params, "/change/cells/structure", json::value_t::object)) {
      const json& array = protocol::require(*structure, "/array", json::value_t::object);
      const int64_t start = protocol::require_integer(array, "/start");
      const int64_t count = protocol::require_integer(array, "/deleteCount");
      const auto size = static_cast<int64_t>(updated.cells.size());
      if (start < 0 || count < 0 || start + count > size) {
        throw ProtocolError(errc::kInvalidParams, "change.cells.structure.array is outside the notebook's " +
                                                      std::to_string(size) + " cells");
      }
      auto at = updated.cells.erase(updated.cells.begin() + start, updated.cells.begin() + start + count);
      if (const json* cells = protocol::optional_member(array, "/cells", json::value_t::array)) {
        std::vector<NotebookCell> inserted;
        for (const json& cell : *cells) inserted.push_back(cell_from_json(cell));
        updated.cells.insert(at, inserted.begin(), inserted.end());
      }
      if (const json* items = protocol::optional_member(*structure, "/didOpen", json::value_t::array)) {
        open_cells(updated, *items);
      }
    }
    if (const json* data = protocol::optional_member(params, "/change/cells/data", json::value_t::array)) {
      for (const json& item : *data) {
        const NotebookCell changed = cell_from_json(item);
        for (NotebookCell& cell : updated.cells) {
          if (cell.uri == changed.uri) cell.kind = changed.kind;
        }
      }
    }
    if (const json* contents = protocol::optional_member(params, "/change/cells/textContent", json::value_t::array)) {
      for (const json& item : *contents) {
        const std::string cell_uri = protocol::require_string(item, "/document/uri");
        const auto cell = std::find_if(updated.cells.begin(), updated.cells.end(),
                                       [&](const NotebookCell& c) { return c.uri == cell_uri; });
        if (cell == updated.cells.end()) {
          throw ProtocolError(errc::kInvalidParams, cell_uri + " is no cell of " + uri);
        }
        std::vector<TreeEdit> unused;
        auto text =
            apply_changes(cell_uri, cell->snapshot, protocol::require(item, "/changes", json::value_t::array), unused);
        cell->snapshot = std::make_shared<const TextSnapshot>(std::move(text));
        cell->version = protocol::require_integer(item, "/document/version");
      }
    }
    // Cells gone: their documents' diagnostics are cleared.
    std::set<std::string> now;
    for (const NotebookCell& cell : updated.cells) now.insert(cell.uri);
    for (const NotebookCell& cell : open->second.cells) {
      if (now.count(cell.uri) != 0) continue;
      notebook_of_cell.erase(cell.uri);
      if (updated.published.erase(cell.uri) != 0 && !pull_mode) {
        notify("textDocument/publishDiagnostics", {{"uri", cell.uri}, {"diagnostics", json::array()}});
      }
    }
    for (const std::string& cell : now) notebook_of_cell[cell] = uri;
    open->second = std::move(updated);
    std::shared_ptr<const NotebookLayout> layout = layout_of(open->second);
    if (document->notebook && layout->same(*document->notebook)) return;  // a markdown cell changed
    // The joined text changes where the edited cells are: one edit for the tree (incremental reparse).
    std::vector<TreeEdit> edits;
    if (auto edit = minimal_edit(*document->snapshot->text, layout->virt.text)) {
      edits.push_back({false, edit->range, edit->new_text});
    }
    auto text = std::make_shared<const std::string>(layout->virt.text);
    document->notebook = std::move(layout);
    commit_change(*document, std::max(version, document->version + 1), std::move(text), std::move(edits));
  }

  void notebook_did_save(const json& params) {
    const std::string uri = protocol::require_string(params, "/notebookDocument/uri");
    OpenDocument* document = find_document(uri);
    if (document == nullptr || notebooks.count(uri) == 0) {
      throw ProtocolError(errc::kInvalidParams, "notebook is not open: " + uri);
    }
    saved(*document);
  }

  void notebook_did_close(const json& params) {
    const std::string uri = protocol::require_string(params, "/notebookDocument/uri");
    if (notebooks.count(uri) == 0) throw ProtocolError(errc::kInvalidParams, "notebook is not open: " + uri);
    close_notebook(uri);
  }

  void close_notebook(const std::string& uri) {
    const auto it = notebooks.find(uri);
    for (const NotebookCell& cell : it->second.cells) notebook_of_cell.erase(cell.uri);
    const std::set<std::string> published = std::move(it->second.published);
    notebooks.erase(it);
    if (documents.count(uri) != 0) close_document(uri);
    if (pull_mode) return;
    for (const std::string& cell : published) {
      notify("textDocument/publishDiagnostics", {{"uri", cell}, {"diagnostics", json::array()}});
    }
  }

  // Diagnostics for every analysed cell (none where there are none); cells no longer analysed are cleared.
  void publish_cells(const std::string& uri, const AnalysisResult& result) {
    const NotebookLayout& layout = *result.notebook;
    std::set<std::string> now;
    for (std::size_t cell = 0; cell < layout.uris.size(); ++cell) {
      notify("textDocument/publishDiagnostics", {{"uri", layout.uris[cell]},
                                                 {"version", layout.versions[cell]},
                                                 {"diagnostics", result.diagnostics_of_cell(cell)}});
      now.insert(layout.uris[cell]);
    }
    const auto it = notebooks.find(uri);
    if (it == notebooks.end()) return;
    for (const std::string& cell : it->second.published) {
      if (now.count(cell) == 0) {
        notify("textDocument/publishDiagnostics", {{"uri", cell}, {"diagnostics", json::array()}});
      }
    }
    it->second.published = std::move(now);
  }

  // A request on a cell's document, answered from its notebook's analysis in the cell's positions.
  void cell_request(const std::string& method, const json& id, const json& params, const std::string& cell_uri,
                    const std::string& notebook_uri) {
    // An edit to any cell changes the notebook's text: the request is stale then.
    if (auto it = pending.find(key_of(id)); it != pending.end()) it->second.uri = notebook_uri;
    OpenDocument* document = find_document(notebook_uri);
    if (document == nullptr) throw not_open(cell_uri);
    json translated = params;
    translated["textDocument"]["uri"] = notebook_uri;
    if (method == "textDocument/diagnostic" && pull_mode) return document_diagnostic(id, translated, cell_uri);
    if (method == "textDocument/codeLens") return reply(id, json::array());  // validation targets are files
    const std::optional<std::size_t> cell = document->notebook ? document->notebook->find(cell_uri) : std::nullopt;
    const uint32_t base = cell ? document->notebook->virt.cells[*cell].line : 0;
    auto shift = [base](json* position) {
      if (position != nullptr && position->contains("line") && (*position)["line"].is_number_unsigned()) {
        (*position)["line"] = (*position)["line"].get<uint32_t>() + base;
      }
    };
    auto member = [&](const char* pointer) -> json* {
      const json::json_pointer at(pointer);
      return translated.contains(at) && translated[at].is_object() ? &translated[at] : nullptr;
    };
    if (method == "textDocument/hover") {
      if (!cell) return reply(id, nullptr);  // a cell not analysed (another language, a %%bash cell)
      shift(member("/position"));
      return hover(id, translated);
    }
    if (method == "textDocument/codeAction") {
      if (!cell) return reply(id, json::array());
      shift(member("/range/start"));
      shift(member("/range/end"));
      return code_action(id, translated);
    }
    reply_error(id, errc::kMethodNotFound, "method not found for a notebook cell: " + method);
  }

  // ---------------------------------------------------------------------------------------------
  // Scheduling.

  void arm_debounce(OpenDocument& document) {
    const auto delay = document.policy.next(settings.debounce_ms);
    if (delay <= Clock::duration::zero()) return schedule_analysis(document);
    document.debounce.expires_after(delay);
    document.debounce.async_wait([this, uri = document.uri, version = document.version](const std::error_code& error) {
      if (error || exit_code) return;
      OpenDocument* current = find_document(uri);
      if (current != nullptr && current->version == version) schedule_analysis(*current);
    });
  }

  bool is_current(const OpenDocument& document) const {
    return document.latest && document.latest->version == document.version &&
           document.latest->generation == document.generation;
  }

  void schedule_analysis(OpenDocument& document) {
    if (exit_code || state == State::ShutDown) return;
    if (document.scheduled_version == document.version && document.scheduled_generation == document.generation) {
      return;  // already queued
    }
    document.debounce.cancel();
    document.scheduled_version = document.version;
    document.scheduled_generation = document.generation;
    auto result = std::make_shared<AnalysisResult>();
    result->version = document.version;
    result->generation = document.generation;
    result->snapshot = document.snapshot;
    result->notebook = document.notebook;
    if (document.too_large) {
      asio::post(io, [this, uri = document.uri, result] { on_analysis_done(uri, result); });
      return;
    }
    AnalysisJob job{config_for(document), document.uri,       document.path,         document.strand,
                    document.tree_state,  document.keep_tree, document.live_version, encoding};
    asio::post(document.strand, [this, job = std::move(job), result] { run_analysis(job, result); });
  }

  // What an analysis on a document's strand needs.
  struct AnalysisJob {
    Config config;
    std::string uri;
    std::string path;
    Strand strand;
    std::shared_ptr<TreeState> tree_state;
    std::shared_ptr<std::atomic<bool>> keep;
    std::shared_ptr<std::atomic<int64_t>> live;
    PositionEncoding encoding;
  };

  // Runs on the document's strand.
  void run_analysis(const AnalysisJob& job, std::shared_ptr<AnalysisResult> result) {
    const std::string& uri = job.uri;
    const std::shared_ptr<TreeState>& tree_state = job.tree_state;
    if (job.live->load() != result->version) {
      // An edit arrived after this was queued: a newer analysis will follow.
      asio::post(io, [this, uri, result] { on_analysis_dropped(uri, *result); });
      return;
    }
    const auto start = Clock::now();
    try {
      if (!tree_state->document) {
        // Released while idle (or never parsed): parse the current text from scratch.
        tree_state->document = std::make_unique<Document>(job.path, *result->snapshot->text);
      }
      if (tree_state->document->text() != *result->snapshot->text) {
        // Never expected; recover by parsing the text the client holds.
        spdlog::error("{}: tree text out of sync with version {}; reparsing", uri, result->version);
        tree_state->document = std::make_unique<Document>(job.path, *result->snapshot->text);
      }
      // Fixes are attached to new findings only; carried ones keep theirs.
      auto attach = [](const Document& edited, Analysis& fresh) { attach_fixes(edited, fresh); };
      IncrementalAnalyzer::Result run =
          tree_state->analyzer.run(*tree_state->document, job.config, result->generation, attach);
      if (run.analysis.model) {
        result->imported_calls = run.analysis.model->imported_calls_from_traced_code();
      }
      result->findings = std::move(run.analysis.findings);
      result->problems = std::move(run.analysis.problems);
      // A fix across two cells, or one editing an IPython line, cannot be applied to the cells.
      if (result->notebook) cli::drop_cross_cell_fixes(result->findings, result->notebook->virt.protected_ranges);
      result->incremental = run.reanalyzed.has_value();
      result->held = run.held;
      result->provisional = run.provisional;
      result->reparse_time = std::exchange(tree_state->reparse_time, Clock::duration{});
    } catch (const std::exception& error) {
      tree_state->analyzer.reset();
      result->findings.clear();
      result->problems.clear();
      result->error = error.what();
    }
    if (!result->provisional && !job.keep->load()) tree_state->release();
    result->docs_url = job.config.docs_url;
    for (const Finding& finding : result->findings) {
      result->diagnostics.push_back(
          to_diagnostic(finding, result->snapshot->lines, job.encoding, uri, result->version, result->docs_url));
    }
    for (const Problem& problem : result->problems) {
      result->diagnostics.push_back(to_diagnostic(problem, result->snapshot->lines, job.encoding));
    }
    if (result->notebook) place_in_cells(*result, job.encoding);
    result->elapsed = Clock::now() - start;
    asio::post(io, [this, uri, result] { on_analysis_done(uri, result); });
    if (result->provisional) {
      // The reparse ran out of its budget: these were the last findings moved through the edit. Once the
      // user pauses, finish the parse and analyse the same version again; that result is published too.
      // (Finishing at once would make the next keystroke wait for it.)
      auto complete = std::make_shared<AnalysisResult>();
      complete->version = result->version;
      complete->generation = result->generation;
      complete->snapshot = result->snapshot;
      complete->notebook = result->notebook;
      complete->completes_provisional = true;
      auto pause = std::make_shared<asio::steady_timer>(io, kFinishParseAfter);
      pause->async_wait([this, pause, job, complete](const std::error_code& ec) {
        if (ec || job.live->load() != complete->version) return;  // a newer edit has its own
        asio::post(job.strand, [this, job, complete] { finish_then_run_analysis(job, complete); });
      });
    }
  }

  // A notebook's diagnostics in the positions of their cells' documents (related locations and fix edits
  // included, each in the cell it lies in).
  static void place_in_cells(AnalysisResult& result, PositionEncoding encoding) {
    const NotebookLayout& layout = *result.notebook;
    if (layout.virt.cells.empty()) return;  // no code cells: no text, nothing found
    const LineIndex& lines = result.snapshot->lines;
    auto place = [&](size_t i, ByteRange range) {
      auto [cell, where] = layout.cell_range(lines, range, encoding);
      json diagnostic = result.diagnostics[i];
      diagnostic["range"] = std::move(where);
      result.diagnostic_cells.push_back(cell);
      return diagnostic;
    };
    for (size_t i = 0; i < result.findings.size(); ++i) {
      const Finding& finding = result.findings[i];
      json diagnostic = place(i, finding.range);
      for (size_t k = 0; k < finding.related.size() && diagnostic.contains("relatedInformation"); ++k) {
        auto [cell, where] = layout.cell_range(lines, finding.related[k].range, encoding);
        diagnostic["relatedInformation"][k]["location"] = {{"uri", layout.uris[cell]}, {"range", std::move(where)}};
      }
      if (finding.fix && diagnostic.contains("data") && diagnostic["data"].contains("fix")) {
        json& edits = diagnostic["data"]["fix"]["edits"];
        for (size_t k = 0; k < finding.fix->edits.size() && k < edits.size(); ++k) {
          edits[k]["range"] = layout.cell_range(lines, finding.fix->edits[k].range, encoding).second;
        }
      }
      result.cell_diagnostics.push_back(std::move(diagnostic));
    }
    for (size_t i = 0; i < result.problems.size(); ++i) {
      result.cell_diagnostics.push_back(place(result.findings.size() + i, result.problems[i].range));
    }
  }

  // Resumes a halted reparse one budget at a time, so that an edit queued meanwhile goes first (it
  // starts the parse over, and its own analysis follows); analyses once the parse is complete.
  void finish_then_run_analysis(const AnalysisJob& job, std::shared_ptr<AnalysisResult> result) {
    Document* document = job.tree_state->document.get();
    if (job.live->load() == result->version && document && !document->finish_parse(job.tree_state->reparse_budget())) {
      asio::post(job.strand, [this, job, result] { finish_then_run_analysis(job, result); });
      return;
    }
    run_analysis(job, result);
  }

  void on_analysis_dropped(const std::string& uri, const AnalysisResult& result) {
    OpenDocument* document = find_document(uri);
    if (document == nullptr) return;
    if (document->scheduled_version == result.version && document->scheduled_generation == result.generation) {
      document->scheduled_version = -1;
    }
    if (!document->waiters.empty()) schedule_analysis(*document);
  }

  void on_analysis_done(const std::string& uri, std::shared_ptr<AnalysisResult> result) {
    if (exit_code) return;
    OpenDocument* document = find_document(uri);
    if (document == nullptr) return;
    if (result->elapsed > Clock::duration::zero()) document->policy.record(result->elapsed);
    if (result->version != document->version || result->generation != document->generation) {
      spdlog::debug("dropping stale analysis of {} version {}", uri, result->version);
      on_analysis_dropped(uri, *result);
      return;
    }
    result->result_id = std::to_string(++next_result_id);
    if (!result->error.empty()) {
      log_message(protocol::message_type::kError, "analysis of " + uri + " failed: " + result->error);
    }
    spdlog::debug("analysed {} v{}: {} findings in {:.2f} ms after {:.2f} ms reparsing ({})", uri, result->version,
                  result->findings.size(), std::chrono::duration<double, std::milli>(result->elapsed).count(),
                  std::chrono::duration<double, std::milli>(result->reparse_time).count(),
                  result->provisional   ? "provisional: the reparse is past its budget"
                  : result->held        ? "held: the edit broke the syntax"
                  : result->incremental ? "the edited function"
                                        : "whole file");
    document->latest = result;
    update_workspace_calls(*document, *result);
    if (document->publish_pending || result->completes_provisional) publish(*document);
    if (result->completes_provisional && pull_mode && refresh_support) {
      // Pull clients got the provisional findings: the real ones are ready.
      send_request("workspace/diagnostic/refresh", nullptr, [](const Message&) {});
    }
    auto waiters = std::move(document->waiters);
    document->waiters.clear();
    for (auto& waiter : waiters) waiter(*result);
    try_answer_workspace();
  }

  void publish(OpenDocument& document) {
    document.published = document.latest;
    document.publish_pending = false;
    if (pull_mode) return;
    if (document.published->notebook) return publish_cells(document.uri, *document.published);
    notify("textDocument/publishDiagnostics", {{"uri", document.uri},
                                               {"version", document.published->version},
                                               {"diagnostics", document.published->diagnostics}});
  }

  // Runs `then` with the analysis of the document's current version, now or once it exists
  // (analysing right away, without debounce). An edit in between answers ContentModified.
  void with_analysis(OpenDocument& document, std::function<void(const AnalysisResult&)> then) {
    if (is_current(document)) return then(*document.latest);
    document.waiters.push_back(std::move(then));
    schedule_analysis(document);
  }

  // ---------------------------------------------------------------------------------------------
  // Diagnostics (pull).

  // What a pull answers with for this document: the published result in onSave mode, the
  // current one otherwise; nothing while it is being computed.
  std::shared_ptr<const AnalysisResult> report_result(const OpenDocument& document) const {
    if (settings.run == RunMode::OnSave && document.published &&
        document.published->generation == document.generation) {
      return document.published;
    }
    if (is_current(document)) return document.latest;
    return nullptr;
  }

  // `cell`: a notebook cell's document asks (params name its notebook): that cell's diagnostics.
  void document_diagnostic(const json& id, const json& params, const std::string& cell = {}) {
    const std::string uri = protocol::require_string(params, "/textDocument/uri");
    std::string previous;
    if (const json* value = protocol::optional_member(params, "/previousResultId", json::value_t::string)) {
      previous = value->get<std::string>();
    }
    OpenDocument* document = find_document(uri);
    if (document == nullptr) {
      return reply(id, {{"kind", "full"}, {"items", json::array()}});
    }
    auto answer = [this, id, previous, cell](const AnalysisResult& result) {
      if (!is_pending(id)) return;
      if (!previous.empty() && previous == result.result_id) {
        return reply(id, {{"kind", "unchanged"}, {"resultId", result.result_id}});
      }
      json items = result.diagnostics;
      if (result.notebook) {
        const auto index = result.notebook->find(cell);
        items = index ? result.diagnostics_of_cell(*index) : json::array();
      }
      reply(id, {{"kind", "full"}, {"resultId", result.result_id}, {"items", std::move(items)}});
    };
    if (auto result = report_result(*document)) return answer(*result);
    with_analysis(*document, [this, answer, uri](const AnalysisResult& result) {
      const OpenDocument* current = find_document(uri);
      const auto reported = current != nullptr ? report_result(*current) : nullptr;
      answer(reported ? *reported : result);
    });
  }

  void workspace_diagnostic(const json& id, const json& params) {
    WorkspaceRequest request{id, {}};
    if (const json* previous = protocol::optional_member(params, "/previousResultIds", json::value_t::array)) {
      for (const json& item : *previous) {
        const json* uri = protocol::optional_member(item, "/uri", json::value_t::string);
        const json* value = protocol::optional_member(item, "/value", json::value_t::string);
        if (uri != nullptr && value != nullptr) {
          request.previous[uri->get<std::string>()] = value->get<std::string>();
        }
      }
    }
    workspace_requests.push_back(std::move(request));
    try_answer_workspace();
  }

  // Answers the long-polling workspace/diagnostic requests that have something new to report.
  void try_answer_workspace() {
    if (workspace_requests.empty()) return;
    std::vector<WorkspaceRequest> waiting;
    for (WorkspaceRequest& request : workspace_requests) {
      if (!is_pending(request.id)) continue;
      json items = json::array();
      bool ready = true;
      bool changed = false;
      for (auto& [uri, document] : documents) {
        const auto result = report_result(*document);
        if (!result) {
          ready = false;
          schedule_analysis(*document);
          continue;
        }
        auto report = [&](const std::string& target, int64_t version, const json& diagnostics) {
          const auto previous = request.previous.find(target);
          if (previous != request.previous.end() && previous->second == result->result_id) {
            items.push_back(
                {{"kind", "unchanged"}, {"uri", target}, {"version", version}, {"resultId", result->result_id}});
          } else {
            changed = true;
            items.push_back({{"kind", "full"},
                             {"uri", target},
                             {"version", version},
                             {"resultId", result->result_id},
                             {"items", diagnostics}});
          }
        };
        if (!result->notebook) {
          report(uri, result->version, result->diagnostics);
          continue;
        }
        // A notebook: a report per cell document.
        const NotebookLayout& layout = *result->notebook;
        for (std::size_t cell = 0; cell < layout.uris.size(); ++cell) {
          report(layout.uris[cell], layout.versions[cell], result->diagnostics_of_cell(cell));
        }
      }
      for (const auto& [uri, value] : request.previous) {
        if (documents.count(uri) == 0 && notebook_of_cell.count(uri) == 0 && !value.empty()) {
          // Closed since: clear what the client still shows for it.
          changed = true;
          items.push_back({{"kind", "full"}, {"uri", uri}, {"version", nullptr}, {"items", json::array()}});
        }
      }
      if (ready && changed) {
        reply(request.id, {{"items", std::move(items)}});
      } else {
        waiting.push_back(std::move(request));
      }
    }
    workspace_requests = std::move(waiting);
  }

  // ---------------------------------------------------------------------------------------------
  // Hover.

  void hover(const json& id, const json& params) {
    OpenDocument& document = document_for(params);
    const protocol::Position position =
        protocol::position_from_json(protocol::require(params, "/position", json::value_t::object));
    with_analysis(document, [this, id, position](const AnalysisResult& result) {
      if (!is_pending(id)) return;
      const LineIndex& lines = result.snapshot->lines;
      const uint32_t offset = lines.to_offset({position.line, position.character}, encoding);
      // In a notebook a related location is named by its cell and the line in it.
      std::function<std::string(uint32_t)> where;
      if (result.notebook && !result.notebook->virt.cells.empty()) {
        where = [&layout = *result.notebook, &lines](uint32_t at) {
          const auto& cell = layout.virt.cells[layout.cell_at(at)];
          return "cell " + std::to_string(cell.number) + ", line " + std::to_string(lines.line_of(at) - cell.line + 1);
        };
      }
      std::string markdown;
      const Finding* first = nullptr;
      for (const Finding& finding : result.findings) {
        if (finding.range.start <= offset && offset <= finding.range.end) {
          if (first == nullptr) {
            first = &finding;
          } else {
            markdown += "\n---\n\n";
          }
          markdown += hover_markdown(finding, *result.snapshot->text, lines, result.docs_url, where);
        }
      }
      if (first == nullptr) return reply(id, nullptr);
      json range = result.notebook ? result.notebook->cell_range(lines, first->range, encoding).second
                                   : protocol::to_json(to_lsp_range(lines, first->range, encoding));
      reply(id, {{"contents", {{"kind", "markdown"}, {"value", markdown}}}, {"range", std::move(range)}});
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Code actions and fixes.

  json workspace_edit(const std::string& uri, int64_t version, json edits) const {
    if (document_changes) {
      json change = {{"textDocument", {{"uri", uri}, {"version", version}}}, {"edits", std::move(edits)}};
      return {{"documentChanges", json::array({std::move(change)})}};
    }
    return {{"changes", {{uri, std::move(edits)}}}};
  }

  // The WorkspaceEdit applying `edits` of the analysed text: to the document, or to a notebook's cell
  // documents (nothing when an edit spans two cells).
  std::optional<json> edit_for(const AnalysisResult& result, const std::string& uri,
                               const std::vector<TextEdit>& edits) const {
    const LineIndex& lines = result.snapshot->lines;
    if (!result.notebook) return workspace_edit(uri, result.version, to_lsp_edits(lines, edits, encoding));
    const NotebookLayout& layout = *result.notebook;
    if (layout.virt.cells.empty()) return std::nullopt;
    std::vector<std::pair<std::size_t, json>> cells;  // (cell, its edits)
    for (const TextEdit& edit : edits) {
      const std::size_t cell = layout.cell_at(edit.range.start);
      if (edit.range.end > layout.end_of(cell)) return std::nullopt;
      json lsp = {{"range", layout.cell_range(lines, edit.range, encoding).second}, {"newText", edit.new_text}};
      auto it = std::find_if(cells.begin(), cells.end(), [&](const auto& entry) { return entry.first == cell; });
      if (it == cells.end()) it = cells.insert(cells.end(), {cell, json::array()});
      it->second.push_back(std::move(lsp));
    }
    return cells_edit(layout, cells);
  }

  json cells_edit(const NotebookLayout& layout, const std::vector<std::pair<std::size_t, json>>& cells) const {
    if (document_changes) {
      json changes = json::array();
      for (const auto& [cell, edits] : cells) {
        changes.push_back(
            {{"textDocument", {{"uri", layout.uris[cell]}, {"version", layout.versions[cell]}}}, {"edits", edits}});
      }
      return {{"documentChanges", std::move(changes)}};
    }
    json changes = json::object();
    for (const auto& [cell, edits] : cells) changes[layout.uris[cell]] = edits;
    return {{"changes", std::move(changes)}};
  }

  bool applicable(const Fix& fix) const {
    return fix.applicability == Applicability::Safe ||
           (fix.applicability == Applicability::Unsafe && settings.unsafe_fixes);
  }

  // Runs the fix loop on the pool over the current version; `then` gets the WorkspaceEdit and whether
  // it changes anything (I/O thread). A notebook's fixes are edits of its cells' documents.
  void compute_fix_all(OpenDocument& document, std::function<void(json edit, bool changed)> then) {
    FixOptions options;
    options.unsafe = settings.unsafe_fixes;
    if (document.notebook) options.protected_ranges = document.notebook->virt.protected_ranges;
    asio::post(pool, [this, path = document.path, uri = document.uri, version = document.version,
                      snapshot = document.snapshot, notebook = document.notebook, config = config_for(document),
                      options, encoding_used = encoding, then = std::move(then)] {
      json edits = json::array();
      std::vector<std::pair<std::size_t, json>> cell_edits;
      std::string error;
      try {
        const FixAllResult fixed = fix_all(path, *snapshot->text, config, options);
        if (fixed.changed && notebook) {
          const cli::VirtualText& virt = notebook->virt;
          const auto before = cli::split_virtual_text(virt, virt.text, virt.protected_ranges);
          const auto after = cli::split_virtual_text(virt, fixed.text, fixed.protected_ranges);
          for (std::size_t cell = 0; cell < before.size(); ++cell) {
            if (before[cell] == after[cell]) continue;
            const LineIndex lines(before[cell]);
            json list = json::array();
            for (const TextEdit& edit : diff_edits(before[cell], after[cell])) {
              list.push_back(to_lsp_edit(lines, edit, encoding_used));
            }
            cell_edits.emplace_back(cell, std::move(list));
          }
        } else if (fixed.changed) {
          for (const TextEdit& edit : diff_edits(*snapshot->text, fixed.text)) {
            edits.push_back(to_lsp_edit(snapshot->lines, edit, encoding_used));
          }
        }
      } catch (const std::exception& exception) {
        error = exception.what();
      }
      asio::post(io, [this, edits = std::move(edits), cell_edits = std::move(cell_edits), error, then, notebook, uri,
                      version] {
        if (!error.empty()) {
          log_message(protocol::message_type::kError, "fix all failed: " + error);
        }
        if (notebook) return then(cells_edit(*notebook, cell_edits), !cell_edits.empty());
        const bool changed = !edits.empty();
        then(workspace_edit(uri, version, edits), changed);
      });
    });
  }

  void code_action(const json& id, const json& params) {
    OpenDocument& document = document_for(params);
    const protocol::Range range = protocol::range_from_json(protocol::require(params, "/range", json::value_t::object));
    std::vector<std::string> only;
    if (const json* kinds = protocol::optional_member(params, "/context/only", json::value_t::array)) {
      for (const json& kind : *kinds) {
        if (kind.is_string()) only.push_back(kind.get<std::string>());
      }
    }
    with_analysis(document, [this, id, range, only](const AnalysisResult& result) {
      if (!is_pending(id)) return;
      OpenDocument* current = find_document(request_document(id));
      if (current == nullptr) return;
      build_code_actions(*current, id, range, only, result);
    });
  }

  std::string request_document(const json& id) const {
    const auto it = pending.find(key_of(id));
    return it == pending.end() ? std::string() : it->second.uri;
  }

  void build_code_actions(OpenDocument& document, const json& id, const protocol::Range& range,
                          const std::vector<std::string>& only, const AnalysisResult& result) {
    const LineIndex& lines = result.snapshot->lines;
    const std::string& text = *result.snapshot->text;
    const uint32_t start = lines.to_offset({range.start.line, range.start.character}, encoding);
    const uint32_t end = lines.to_offset({range.end.line, range.end.character}, encoding);
    json actions = json::array();
    const bool quickfix = protocol::code_action_kind_requested(only, protocol::code_action_kind::kQuickFix);
    bool any_fixable = false;
    for (std::size_t i = 0; i < result.findings.size(); ++i) {
      const Finding& finding = result.findings[i];
      if (finding.fix && applicable(*finding.fix)) any_fixable = true;
      const bool touches = finding.range.start <= end && start <= finding.range.end;
      if (!quickfix || !touches) continue;
      const json& diagnostic = result.diagnostic(i);
      const std::string code = finding.rule != nullptr ? std::string(finding.rule->code) : "GM";
      if (finding.fix) {
        std::string title = code + ": " + finding.fix->title;
        if (finding.fix->applicability == Applicability::Unsafe) title += " (unsafe)";
        if (std::optional<json> edit = edit_for(result, document.uri, finding.fix->edits)) {
          actions.push_back({{"title", title},
                             {"kind", protocol::code_action_kind::kQuickFix},
                             {"diagnostics", {diagnostic}},
                             {"isPreferred", finding.fix->applicability == Applicability::Safe},
                             {"edit", std::move(*edit)}});
        }
      }
      if (const std::optional<TextEdit> suppress = noqa_edit(finding, text, lines)) {
        if (std::optional<json> edit = edit_for(result, document.uri, {*suppress})) {
          actions.push_back({{"title", code + ": suppress with `# noqa: " + code + "`"},
                             {"kind", protocol::code_action_kind::kQuickFix},
                             {"diagnostics", {diagnostic}},
                             {"edit", std::move(*edit)}});
        }
      }
    }
    // In a notebook, VS Code asks for `notebook.source.fixAll` (notebook.codeActionsOnSave) on one cell;
    // either kind fixes every cell.
    std::string_view fix_all_kind = protocol::code_action_kind::kSourceFixAllGraphmend;
    if (result.notebook && !only.empty() && protocol::code_action_kind_requested(only, kNotebookFixAll)) {
      fix_all_kind = kNotebookFixAll;
    }
    const bool fix_all_requested =
        settings.fix_all && any_fixable && protocol::code_action_kind_requested(only, fix_all_kind);
    if (!fix_all_requested) return reply(id, std::move(actions));
    json fix_all_action = {{"title", "graphmend: fix all graph breaks"},
                           {"kind", fix_all_kind},
                           {"data", {{"uri", document.uri}, {"version", result.version}, {"type", "fixAll"}}}};
    if (resolve_edits) {
      actions.push_back(std::move(fix_all_action));
      return reply(id, std::move(actions));
    }
    compute_fix_all(document, [this, id, actions = std::move(actions), fix_all_action = std::move(fix_all_action)](
                                  json edit, bool) mutable {
      if (!is_pending(id)) return;
      fix_all_action["edit"] = std::move(edit);
      actions.push_back(std::move(fix_all_action));
      reply(id, std::move(actions));
    });
  }

  void resolve_code_action(const json& id, const json& params) {
    if (!params.is_object()) {
      throw ProtocolError(errc::kInvalidParams, "params must be a CodeAction");
    }
    const json* type = protocol::optional_member(params, "/data/type", json::value_t::string);
    if (type == nullptr || *type != "fixAll" || params.contains("edit")) return reply(id, params);
    const std::string uri = protocol::require_string(params, "/data/uri");
    const int64_t version = protocol::require_integer(params, "/data/version");
    OpenDocument* document = find_document(uri);
    if (document == nullptr || document->version != version) {
      return reply_error(id, errc::kContentModified, "the document changed since the action was offered");
    }
    compute_fix_all(*document, [this, id, action = params](json edit, bool) mutable {
      if (!is_pending(id)) return;
      action["edit"] = std::move(edit);
      reply(id, std::move(action));
    });
  }

  void execute_command(const json& id, const json& params) {
    const std::string command = protocol::require_string(params, "/command");
    json arguments = json::array();
    if (const json* value = protocol::optional_member(params, "/arguments", json::value_t::array)) {
      arguments = *value;
    }
    if (command == kApplyAutofix) return apply_autofix(id, arguments);
    if (validator) {
      const auto commands = validator->commands();
      if (std::find(commands.begin(), commands.end(), command) != commands.end()) {
        // User code runs only on this explicit request, and never when validation is turned off.
        if (!settings.validate_enable)
          return reply_error(id, errc::kRequestFailed, "validation is turned off (graphmend.validate.enable)");
        validator->set_python(settings.validator_python.value_or(""));
        return run_command(id, command, arguments, params);
      }
    }
    throw ProtocolError(errc::kInvalidParams, "unknown command: " + command);
  }

  // A validator command: `$/progress` from its reports (begun at the first one, so a command
  // refused at once shows none), the answer and the progress's end from `done`, then a code lens
  // refresh.
  void run_command(const json& id, const std::string& command, const json& arguments, const json& params) {
    const std::string key = key_of(id);
    CommandRun& run = command_runs[key];
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
    validator->execute(
        command, arguments, id,
        [this, key](const std::string& message, int percentage) {
          asio::post(io, [this, key, message, percentage] { command_report(key, message, percentage); });
        },
        [this, key](json result, std::optional<protocol::ResponseError> error) {
          asio::post(io, [this, key, result = std::move(result), error = std::move(error)]() mutable {
            command_done(key, std::move(result), std::move(error));
          });
        });
  }

  void command_report(const std::string& key, const std::string& message, int percentage) {
    auto it = command_runs.find(key);
    if (it == command_runs.end() || !is_pending(it->second.id)) return;
    CommandRun& run = it->second;
    if (run.token.is_null() && !run.token_ready && work_done_progress) {
      // No token from the request: ask the client for one; progress starts once it agrees.
      run.token = "graphmend/progress/" + std::to_string(++next_progress_token);
      send_request("window/workDoneProgress/create", {{"token", run.token}}, [this, key](const Message& response) {
        auto found = command_runs.find(key);
        if (found == command_runs.end()) return;
        if (response.error) {
          // The client refused: no progress for this run.
          found->second.token = nullptr;
          return;
        }
        found->second.token_ready = true;
        if (auto last = found->second.last_report) command_report(key, last->first, last->second);
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
    notify("$/progress", {{"token", run.token}, {"value", std::move(value)}});
  }

  void command_done(const std::string& key, json result, std::optional<protocol::ResponseError> error) {
    auto it = command_runs.find(key);
    if (it == command_runs.end()) return;
    const CommandRun run = std::move(it->second);
    command_runs.erase(it);
    std::string summary = error ? error->message : result.value("summary", std::string("done"));
    if (run.begun) notify("$/progress", {{"token", run.token}, {"value", {{"kind", "end"}, {"message", summary}}}});
    if (error) {
      if (error->code != errc::kRequestCancelled && error->code != errc::kInvalidParams)
        log_message(protocol::message_type::kWarning, run.what + ": " + summary);
      return reply_error(run.id, error->code, error->message);
    }
    const bool ok = !result.contains("ok") || !result["ok"].is_boolean() || result["ok"].get<bool>();
    log_message(ok ? protocol::message_type::kInfo : protocol::message_type::kWarning, run.what + ": " + summary);
    reply(run.id, std::move(result));
    // The lens shows the last result: clients that can be told to ask again are.
    if (code_lens_refresh && state == State::Running)
      send_request("workspace/codeLens/refresh", nullptr, [](const Message&) {});
  }

  void apply_autofix(const json& id, const json& arguments) {
    std::string uri = protocol::require_string(arguments, "/0/uri");
    // A notebook cell's document: the whole notebook is fixed (a cell's version is not the notebook's).
    const auto cell = notebook_of_cell.find(uri);
    if (cell != notebook_of_cell.end()) uri = cell->second;
    OpenDocument* document = find_document(uri);
    if (document == nullptr) {
      throw not_open(uri);
    }
    if (const json* version = protocol::optional_member(arguments, "/0/version", json::value_t::number_integer);
        version != nullptr && cell == notebook_of_cell.end()) {
      if (version->get<int64_t>() != document->version) {
        return reply_error(id, errc::kContentModified, "the document changed");
      }
    }
    compute_fix_all(*document, [this, id](json edit, bool changed) {
      if (!is_pending(id)) return;
      if (!changed) return reply(id, nullptr);
      // The client applies the edit (and sends didChange) before it answers: no longer stale.
      if (auto it = pending.find(key_of(id)); it != pending.end()) it->second.uri.clear();
      send_request("workspace/applyEdit", {{"label", "graphmend: fix all graph breaks"}, {"edit", std::move(edit)}},
                   [this, id](const Message& response) {
                     if (response.error) {
                       return reply_error(id, errc::kRequestFailed,
                                          "the client did not apply the edit: " + response.error->message);
                     }
                     reply(id, nullptr);
                   });
    });
  }

  void code_lens(const json& id, const json& params) {
    OpenDocument& document = document_for(params);
    if (!settings.validate_enable) return reply(id, json::array());
    validator->set_python(settings.validator_python.value_or(""));
    reply(id, validator->code_lenses(document.uri, *document.snapshot->text));
  }
};

Server::Server(asio::io_context& io, Writer write, ServerOptions options)
    : impl_(std::make_unique<Impl>(*this, io, std::move(write), options)) {}

Server::~Server() = default;

void Server::set_validator(std::shared_ptr<Validator> validator) { impl_->validator = std::move(validator); }

void Server::on_frame(const protocol::FrameEvent& event) { impl_->on_frame(event); }

void Server::on_message(std::string_view body) { impl_->on_message(body); }

void Server::on_input_closed() {
  if (impl_->exit_code) return;
  spdlog::info("input closed");
  impl_->finish(impl_->state == Impl::State::ShutDown ? 0 : 1);
}

std::optional<int> Server::exit_code() const { return impl_->exit_code; }

}  // namespace graphmend::lsp
