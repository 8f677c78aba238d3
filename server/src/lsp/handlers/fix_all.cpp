// Fix all: the fix loop over a document (source.fixAll.graphmend, graphmend.applyAutofix), run on the pool.
#include "graphmend/transforms/fixer.h"
#include "lsp/handlers/handlers.h"

using graphmend::protocol::Message;

namespace graphmend::lsp::handlers {

namespace errc = protocol::error_code;

void compute_fix_all(Session& session, OpenDocument& document, std::function<void(json edit, bool changed)> then) {
  FixOptions options;
  options.unsafe = session.settings.unsafe_fixes;
  if (document.notebook) options.protected_ranges = document.notebook->virt.protected_ranges;
  session.scheduler().background([&session, path = document.path, uri = document.uri, version = document.version,
                                  snapshot = document.snapshot, notebook = document.notebook,
                                  config = session.config_for(document), options,
                                  encoding_used = session.client.encoding, then = std::move(then)] {
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
    return
        [&session, edits = std::move(edits), cell_edits = std::move(cell_edits), error, then, notebook, uri, version] {
          if (!error.empty()) {
            session.log_message(protocol::message_type::kError, "fix all failed: " + error);
          }
          if (notebook) return then(cells_edit(session, *notebook, cell_edits), !cell_edits.empty());
          const bool changed = !edits.empty();
          then(workspace_edit(session, uri, version, edits), changed);
        };
  });
}

void apply_autofix(Session& session, const json& id, const json& arguments) {
  std::string uri = protocol::require_string(arguments, "/0/uri");
  // A notebook cell's document: the whole notebook is fixed (a cell's version is not the notebook's).
  const auto cell = session.notebook_of_cell.find(uri);
  if (cell != session.notebook_of_cell.end()) uri = cell->second;
  OpenDocument* document = session.find_document(uri);
  if (document == nullptr) {
    throw Session::not_open(uri);
  }
  if (const json* version = protocol::optional_member(arguments, "/0/version", json::value_t::number_integer);
      version != nullptr && cell == session.notebook_of_cell.end()) {
    if (version->get<int64_t>() != document->version) {
      return session.reply_error(id, errc::kContentModified, "the document changed");
    }
  }
  compute_fix_all(session, *document, [&session, id](json edit, bool changed) {
    if (!session.is_pending(id)) return;
    if (!changed) return session.reply(id, nullptr);
    // The client applies the edit (and sends didChange) before it answers: no longer stale.
    if (auto it = session.pending.find(key_of(id)); it != session.pending.end()) it->second.uri.clear();
    session.send_request(
        "workspace/applyEdit", {{"label", "graphmend: fix all graph breaks"}, {"edit", std::move(edit)}},
        [&session, id](const Message& response) {
          if (response.error) {
            return session.reply_error(id, errc::kRequestFailed,
                                       "the client did not apply the edit: " + response.error->message);
          }
          session.reply(id, nullptr);
        });
  });
}

}  // namespace graphmend::lsp::handlers
