// The request and notification handlers, one file per LSP method family (as ruff_server's handlers): each
// reads its params, works on the Session, and answers through it. The server (lsp/server.cpp) dispatches.
// A malformed params object is a protocol::ProtocolError, which the server turns into the right answer.
#pragma once

#include <string>

#include "lsp/session.h"

namespace graphmend::lsp::handlers {

// text_document_sync.cpp
void did_open(Session& session, const json& params);
void did_change(Session& session, const json& params);
void did_save(Session& session, const json& params);
void did_close(Session& session, const json& params);
// `snapshot` after LSP content `changes` (ProtocolError for a malformed one); `tree_edits` gets the same as
// edits of the tree.
std::shared_ptr<const TextSnapshot> apply_changes(Session& session, const std::string& uri,
                                                  std::shared_ptr<const TextSnapshot> snapshot, const json& changes,
                                                  std::vector<TreeEdit>& tree_edits);
// A new version of the document: requests on the old one are stale; analysed after a pause (run: onType).
void commit_change(Session& session, OpenDocument& document, int64_t version, std::shared_ptr<const TextSnapshot> text,
                   std::vector<TreeEdit> tree_edits);

// notebook_sync.cpp
void notebook_did_open(Session& session, const json& params);
void notebook_did_change(Session& session, const json& params);
void notebook_did_save(Session& session, const json& params);
void notebook_did_close(Session& session, const json& params);
void close_notebook(Session& session, const std::string& uri);
// A request on a cell's document, answered from its notebook's analysis in the cell's positions.
void cell_request(Session& session, const std::string& method, const json& id, const json& params,
                  const std::string& cell_uri, const std::string& notebook_uri);

// diagnostics.cpp
// The result's diagnostics in the client's positions (a notebook's in its cells' too); on a worker thread.
void present_diagnostics(const std::string& uri, AnalysisResult& result, PositionEncoding encoding);
// Gives the client the document's latest analysis (push mode: publishDiagnostics).
void publish(Session& session, OpenDocument& document);
// The document was saved (run: onSave publishes then).
void saved(Session& session, OpenDocument& document);
// `cell`: a notebook cell's document asks (params name its notebook): that cell's diagnostics.
void document_diagnostic(Session& session, const json& id, const json& params, const std::string& cell = {});
void workspace_diagnostic(Session& session, const json& id, const json& params);
// Answers the long-polling workspace/diagnostic requests that have something new to report.
void answer_workspace_diagnostics(Session& session);

// hover.cpp
void hover(Session& session, const json& id, const json& params);

// code_action.cpp
void code_action(Session& session, const json& id, const json& params);
void resolve_code_action(Session& session, const json& id, const json& params);
// The WorkspaceEdit giving a notebook's cells (by index in `layout`) these LSP edits.
json cells_edit(const Session& session, const NotebookLayout& layout,
                const std::vector<std::pair<std::size_t, json>>& cells);
json workspace_edit(const Session& session, const std::string& uri, int64_t version, json edits);

// fix_all.cpp
// Runs the fix loop on the pool over the current version; `then` gets the WorkspaceEdit and whether it
// changes anything (I/O thread). A notebook's fixes are edits of its cells' documents.
void compute_fix_all(Session& session, OpenDocument& document, std::function<void(json edit, bool changed)> then);
// workspace/executeCommand graphmend.applyAutofix.
void apply_autofix(Session& session, const json& id, const json& arguments);

// execute_command.cpp
void execute_command(Session& session, const json& id, const json& params);
// A validator command's progress token was cancelled (window/workDoneProgress/cancel).
void cancel_progress(Session& session, const json& params);

// code_lens.cpp
void code_lens(Session& session, const json& id, const json& params);

// configuration.cpp
void initialized(Session& session);
void did_change_configuration(Session& session, const json& params);
void did_change_watched_files(Session& session, const json& params);

}  // namespace graphmend::lsp::handlers
