// notebookDocument/didOpen, didChange, didSave, didClose (LSP 3.17 notebook sync), and requests on a cell's
// document. A notebook is one OpenDocument under the notebook's URI, its text the Python code cells joined
// (cli/notebook.h, NotebookLayout); its cells' documents get its diagnostics.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "lsp/handlers/handlers.h"

namespace graphmend::lsp::handlers {

using protocol::ProtocolError;
namespace errc = protocol::error_code;

namespace {

NotebookCell cell_from_json(const json& cell) {
  NotebookCell out;
  out.uri = protocol::require_string(cell, "/document");
  out.kind = protocol::require_integer(cell, "/kind");
  return out;
}

// TextDocumentItems of a notebook's cells: their language, version and text.
void open_cells(OpenNotebook& notebook, const json& items) {
  for (const json& item : items) {
    const std::string uri = protocol::require_string(item, "/uri");
    const auto cell =
        std::find_if(notebook.cells.begin(), notebook.cells.end(), [&](const NotebookCell& c) { return c.uri == uri; });
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

std::shared_ptr<const NotebookLayout> layout_of(const OpenNotebook& notebook) {
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

}  // namespace

void notebook_did_open(Session& session, const json& params) {
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
  if (session.notebooks.count(uri) != 0) {
    spdlog::warn("notebook {} opened twice; replacing it", uri);
    close_notebook(session, uri);
  }
  std::shared_ptr<const NotebookLayout> layout = layout_of(notebook);
  for (const NotebookCell& cell : notebook.cells) session.notebook_of_cell[cell.uri] = uri;
  session.notebooks[uri] = std::move(notebook);
  spdlog::info("opened notebook {} ({} cells, {} analysed)", uri, session.notebooks[uri].cells.size(),
               layout->virt.cells.size());
  std::string text = layout->virt.text;
  session.open_document(uri, path, version, std::move(text), std::move(layout));
}

void notebook_did_change(Session& session, const json& params) {
  const std::string uri = protocol::require_string(params, "/notebookDocument/uri");
  const int64_t version = protocol::require_integer(params, "/notebookDocument/version");
  const auto open = session.notebooks.find(uri);
  OpenDocument* document = session.find_document(uri);
  if (open == session.notebooks.end() || document == nullptr) {
    throw ProtocolError(errc::kInvalidParams, "notebook is not open: " + uri);
  }
  OpenNotebook updated = open->second;  // all changes or none
  if (const json* structure = protocol::optional_member(params, "/change/cells/structure", json::value_t::object)) {
    const json& array = protocol::require(*structure, "/array", json::value_t::object);
    const int64_t start = protocol::require_integer(array, "/start");
    const int64_t count = protocol::require_integer(array, "/deleteCount");
    const auto size = static_cast<int64_t>(updated.cells.size());
    if (start < 0 || count < 0 || start + count > size) {
      throw ProtocolError(errc::kInvalidParams,
                          "change.cells.structure.array is outside the notebook's " + std::to_string(size) + " cells");
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
      auto text = apply_changes(session, cell_uri, cell->snapshot,
                                protocol::require(item, "/changes", json::value_t::array), unused);
      cell->snapshot = std::move(text);
      cell->version = protocol::require_integer(item, "/document/version");
    }
  }
  // Cells gone: their documents' diagnostics are cleared.
  std::set<std::string> now;
  for (const NotebookCell& cell : updated.cells) now.insert(cell.uri);
  for (const NotebookCell& cell : open->second.cells) {
    if (now.count(cell.uri) != 0) continue;
    session.notebook_of_cell.erase(cell.uri);
    if (updated.published.erase(cell.uri) != 0 && !session.client.pull_mode) {
      session.notify("textDocument/publishDiagnostics", {{"uri", cell.uri}, {"diagnostics", json::array()}});
    }
  }
  for (const std::string& cell : now) session.notebook_of_cell[cell] = uri;
  open->second = std::move(updated);
  std::shared_ptr<const NotebookLayout> layout = layout_of(open->second);
  if (document->notebook && layout->same(*document->notebook)) return;  // a markdown cell changed
  // The joined text changes where the edited cells are: one edit for the tree (incremental reparse).
  auto text = std::make_shared<const TextSnapshot>(std::make_shared<const std::string>(layout->virt.text));
  std::vector<TreeEdit> edits;
  if (auto edit = minimal_edit(*document->snapshot->text, layout->virt.text)) {
    edits.push_back({false, edit->range, edit->new_text, text->text});
  }
  document->notebook = std::move(layout);
  commit_change(session, *document, std::max(version, document->version + 1), std::move(text), std::move(edits));
}

void notebook_did_save(Session& session, const json& params) {
  const std::string uri = protocol::require_string(params, "/notebookDocument/uri");
  OpenDocument* document = session.find_document(uri);
  if (document == nullptr || session.notebooks.count(uri) == 0) {
    throw ProtocolError(errc::kInvalidParams, "notebook is not open: " + uri);
  }
  saved(session, *document);
}

void notebook_did_close(Session& session, const json& params) {
  const std::string uri = protocol::require_string(params, "/notebookDocument/uri");
  if (session.notebooks.count(uri) == 0) throw ProtocolError(errc::kInvalidParams, "notebook is not open: " + uri);
  close_notebook(session, uri);
}

void close_notebook(Session& session, const std::string& uri) {
  const auto it = session.notebooks.find(uri);
  for (const NotebookCell& cell : it->second.cells) session.notebook_of_cell.erase(cell.uri);
  const std::set<std::string> published = std::move(it->second.published);
  session.notebooks.erase(it);
  if (session.find_document(uri) != nullptr) session.close_document(uri);
  if (session.client.pull_mode) return;
  for (const std::string& cell : published) {
    session.notify("textDocument/publishDiagnostics", {{"uri", cell}, {"diagnostics", json::array()}});
  }
}

// A request on a cell's document, answered from its notebook's analysis in the cell's positions.
void cell_request(Session& session, const std::string& method, const json& id, const json& params,
                  const std::string& cell_uri, const std::string& notebook_uri) {
  // An edit to any cell changes the notebook's text: the request is stale then.
  if (auto it = session.pending.find(key_of(id)); it != session.pending.end()) it->second.uri = notebook_uri;
  OpenDocument* document = session.find_document(notebook_uri);
  if (document == nullptr) throw Session::not_open(cell_uri);
  json translated = params;
  translated["textDocument"]["uri"] = notebook_uri;
  if (method == "textDocument/diagnostic" && session.client.pull_mode)
    return document_diagnostic(session, id, translated, cell_uri);
  if (method == "textDocument/codeLens") return session.reply(id, json::array());  // validation targets are files
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
    if (!cell) return session.reply(id, nullptr);  // a cell not analysed (another language, a %%bash cell)
    shift(member("/position"));
    return hover(session, id, translated);
  }
  if (method == "textDocument/codeAction") {
    if (!cell) return session.reply(id, json::array());
    shift(member("/range/start"));
    shift(member("/range/end"));
    return code_action(session, id, translated);
  }
  session.reply_error(id, errc::kMethodNotFound, "method not found for a notebook cell: " + method);
}

}  // namespace graphmend::lsp::handlers
