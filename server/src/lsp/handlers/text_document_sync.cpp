// textDocument/didOpen, didChange, didSave, didClose: the client's text becomes the scheduler's.
#include <spdlog/spdlog.h>

#include <filesystem>

#include "lsp/handlers/handlers.h"

namespace graphmend::lsp::handlers {

using protocol::ProtocolError;
namespace errc = protocol::error_code;

void did_open(Session& session, const json& params) {
  const std::string uri = protocol::require_string(params, "/textDocument/uri");
  // Before anything changes: an unusable URI leaves what is open as it was.
  const std::optional<std::string> path = protocol::document_path(uri);
  const int64_t version = protocol::require_integer(params, "/textDocument/version");
  std::string text = protocol::require_string(params, "/textDocument/text");
  session.open_document(uri, path, version, std::move(text), nullptr);
}

void did_change(Session& session, const json& params) {
  OpenDocument& document = session.document_for(params);
  const int64_t version = protocol::require_integer(params, "/textDocument/version");
  const json& changes = protocol::require(params, "/contentChanges", json::value_t::array);
  if (version <= document.version) {
    session.log_message(protocol::message_type::kWarning, "ignored a change to " + document.uri + ": version " +
                                                              std::to_string(version) + " is not newer than " +
                                                              std::to_string(document.version));
    return;
  }
  // The tree's edits, given to the scheduler only once every change was accepted (all or nothing).
  std::vector<TreeEdit> tree_edits;
  std::shared_ptr<const TextSnapshot> text =
      apply_changes(session, document.uri, document.snapshot, changes, tree_edits);
  commit_change(session, document, version, std::move(text), std::move(tree_edits));
}

std::shared_ptr<const TextSnapshot> apply_changes(Session& session, const std::string& uri,
                                                  std::shared_ptr<const TextSnapshot> snapshot, const json& changes,
                                                  std::vector<TreeEdit>& tree_edits) {
  const PositionEncoding encoding = session.client.encoding;
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
      tree_edits.push_back({true, {}, {}, text});
      continue;
    }
    const protocol::Range range = protocol::range_from_json(change["range"], where + ".range");
    const LinePosition start{range.start.line, range.start.character};
    const LinePosition end{range.end.line, range.end.character};
    if (!snapshot->lines.is_valid(start, encoding) || !snapshot->lines.is_valid(end, encoding)) {
      session.log_message(protocol::message_type::kWarning,
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
    tree_edits.push_back({false, {start_offset, end_offset}, inserted, text});
  }
  return snapshot;
}

void commit_change(Session& session, OpenDocument& document, int64_t version, std::shared_ptr<const TextSnapshot> text,
                   std::vector<TreeEdit> tree_edits) {
  session.scheduler().change(document, version, std::move(text), std::move(tree_edits));
  session.make_stale(document.uri);
  if (session.settings.run == RunMode::OnType) {
    document.publish_pending = true;
    session.scheduler().schedule_after_pause(document, session.settings.debounce_ms);
  }
}

void did_save(Session& session, const json& params) {
  OpenDocument& document = session.document_for(params);
  if (std::filesystem::path(document.path).filename() == "__init__.py") session.package_changed(document.path);
  saved(session, document);
}

void did_close(Session& session, const json& params) {
  const std::string uri = protocol::require_string(params, "/textDocument/uri");
  if (session.find_document(uri) == nullptr) {
    throw Session::not_open(uri);
  }
  session.close_document(uri);
  if (!session.client.pull_mode) {
    session.notify("textDocument/publishDiagnostics", {{"uri", uri}, {"diagnostics", json::array()}});
  }
}

}  // namespace graphmend::lsp::handlers
