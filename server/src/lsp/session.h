// What the request handlers (lsp/handlers/) see of the server, as ruff_server's Session: what was negotiated
// with the client, the settings and the configuration they give each document, the open documents (through
// the scheduler), the open notebooks, the cross-file pass, and the replies. No Asio: the server owns the
// transport and the threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graphmend/analysis/config.h"
#include "graphmend/analysis/workspace.h"
#include "graphmend/protocol/jsonrpc.h"
#include "graphmend/protocol/lsp.h"
#include "lsp/scheduler.h"
#include "lsp/server.h"
#include "lsp/settings.h"

namespace graphmend::lsp {

using json = nlohmann::json;

constexpr std::string_view kApplyAutofix = "graphmend.applyAutofix";
// Fix all for a whole notebook (VS Code's `notebook.codeActionsOnSave`).
constexpr std::string_view kNotebookFixAll = "notebook.source.fixAll.graphmend";

// What the client declared at initialize, and the position encoding agreed on.
struct ClientSupport {
  json capabilities = json::object();
  std::string encoding_name = "utf-16";
  PositionEncoding encoding = PositionEncoding::Utf16;
  bool pull_mode = false;  // diagnostics are pulled (textDocument/diagnostic), not published
  bool resolve_edits = false;
  bool document_changes = false;
  bool configuration_pull = false;
  bool watch_registration = false;
  bool refresh_support = false;
  bool work_done_progress = false;  // window.workDoneProgress: the server may create tokens
  bool code_lens_refresh = false;   // workspace.codeLens.refreshSupport
};

struct PendingRequest {
  std::string method;
  std::string uri;  // the document it reads; an edit to it makes the request stale
};

// A long-polling workspace/diagnostic request, answered once something changed.
struct WorkspaceRequest {
  json id;
  std::map<std::string, std::string> previous;  // uri -> resultId
};

// A notebook (LSP 3.17 notebook document sync) is one OpenDocument under the notebook's URI, its text the
// Python code cells joined (NotebookLayout); its cells' documents get its diagnostics, and requests on a
// cell are answered from its analysis.
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

// A validator command in flight: its `$/progress` token (null: the client gets none) and whether it may be
// used yet (a token the server asked the client to create is usable once the client answered).
struct CommandRun {
  json id;
  std::string what;  // "validate example": the progress title (after "graphmend: ") and the log's
  json token;
  bool token_ready = false;
  bool begun = false;
  // The latest stage reported before `begin` could be sent (while the token was being created).
  std::optional<std::pair<std::string, int>> last_report;
};

std::string key_of(const json& id);

class Session {
 public:
  using Writer = std::function<void(const json&)>;
  Session(asio::io_context& io, Writer write, ServerOptions options);
  ~Session();

  enum class State { Uninitialized, Running, ShutDown };
  State state = State::Uninitialized;
  std::optional<int> exit_code;
  ClientSupport client;
  Settings settings;
  std::shared_ptr<Validator> validator;

  // Requests from the client not answered yet, by key_of(id).
  std::map<std::string, PendingRequest> pending;
  std::vector<WorkspaceRequest> workspace_requests;
  std::map<std::string, OpenNotebook> notebooks;
  std::map<std::string, std::string> notebook_of_cell;  // cell document -> its notebook
  std::map<std::string, CommandRun> command_runs;       // by request key
  uint64_t next_progress_token = 0;

  // Output (nothing once the server exits).
  void send(const json& message);
  void notify(std::string_view method, json params);
  // window/logMessage (once initialized) and the log file.
  void log_message(int type, const std::string& text);
  bool is_pending(const json& id) const;
  // Answers a pending request (nothing when it was cancelled or made stale meanwhile).
  void reply(const json& id, json result);
  void reply_error(const json& id, int code, const std::string& message);
  // A request to the client; `on_response` gets its answer.
  void send_request(std::string_view method, json params, std::function<void(const protocol::Message&)> on_response);
  // The handler waiting for the response `id` to one of ours (empty when none is), no longer waiting.
  std::function<void(const protocol::Message&)> take_response(const json& id);
  // The document a pending request reads (empty: none, or not pending).
  std::string request_document(const json& id) const;

  // Documents.
  Scheduler& scheduler() { return *scheduler_; }
  OpenDocument* find_document(const std::string& uri) { return scheduler_->find(uri); }
  // The open document params.textDocument.uri names (ProtocolError when there is none).
  OpenDocument& document_for(const json& params);
  // The error for a URI that names no open document: why the URI is invalid, when it is.
  static protocol::ProtocolError not_open(const std::string& uri);
  // Requests that read `uri` were computed for a version that no longer exists: ContentModified.
  void make_stale(const std::string& uri);
  // Opens a document (replacing one open under the same URI); `notebook`: `text` is its cells joined.
  OpenDocument& open_document(const std::string& uri, const std::optional<std::string>& path, int64_t version,
                              std::string text, std::shared_ptr<const NotebookLayout> notebook);
  void close_document(const std::string& uri);

  // Configuration: the pyproject.toml that applies to a document, the settings, what other open files trace.
  Config config_for(const OpenDocument& document);
  // The functions a document's validation code lenses offer: `example`, and the pyproject.toml's
  // `validate = ["file.py::factory"]` entries naming this file.
  std::vector<std::string> validation_factories(const OpenDocument& document);
  // Settings or a pyproject.toml changed: everything open is analysed again.
  void configuration_changed();
  // The settings changed: the log level and the size limit follow them.
  void settings_applied();

  // Workspace pass (open documents only): like `graphmend check` over several files, functions that
  // compiled code in one open file imports from another open file are traced there too.
  void update_workspace_calls(const OpenDocument& source, const AnalysisResult& result);
  // A package's __init__.py changed: what it re-exports is read again, and the open documents' calls into
  // other files are resolved again from their latest analyses (the files they now reach are re-analysed).
  void package_changed(const std::string& init_path);

 private:
  std::vector<std::string> traced_functions(const std::string& uri) const;
  void set_contribution(const std::string& source_uri, const std::map<std::string, std::set<std::string>>& wanted);
  void analysed(OpenDocument& document, const AnalysisResult& result);

  Writer write_;
  std::map<std::string, std::function<void(const protocol::Message&)>> outgoing_;
  uint64_t next_outgoing_id_ = 0;
  DiscoveredConfig discovered(const OpenDocument& document);
  ConfigCache configs_;
  TorchDetector torch_;  // the torch installed near each document's folder
  // Target uri -> source uri -> functions of the target that traced code in the source calls (they are
  // traced too: Config::traced_from_workspace).
  std::map<std::string, std::map<std::string, std::set<std::string>>> traced_into_;
  // What packages re-export, for names not found among the open modules; a package is forgotten when its
  // __init__.py is saved or changes on disk.
  workspace::PackageIndex packages_;
  // Last: its pool is joined before the state its tasks read goes away.
  std::unique_ptr<Scheduler> scheduler_;
};

}  // namespace graphmend::lsp
