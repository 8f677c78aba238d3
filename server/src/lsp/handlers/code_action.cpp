// textDocument/codeAction and codeAction/resolve: a quick fix and a noqa per finding, and fix-all.
#include "lsp/handlers/handlers.h"

using graphmend::protocol::ProtocolError;

namespace graphmend::lsp::handlers {

namespace errc = protocol::error_code;

json workspace_edit(const Session& session, const std::string& uri, int64_t version, json edits) {
  if (session.client.document_changes) {
    json change = {{"textDocument", {{"uri", uri}, {"version", version}}}, {"edits", std::move(edits)}};
    return {{"documentChanges", json::array({std::move(change)})}};
  }
  return {{"changes", {{uri, std::move(edits)}}}};
}

json cells_edit(const Session& session, const NotebookLayout& layout,
                const std::vector<std::pair<std::size_t, json>>& cells) {
  if (session.client.document_changes) {
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

// Runs the fix loop on the pool over the current version; `then` gets the WorkspaceEdit and whether

namespace {

// The WorkspaceEdit applying `edits` of the analysed text: to the document, or to a notebook's cell
// documents (nothing when an edit spans two cells).
std::optional<json> edit_for(const Session& session, const AnalysisResult& result, const std::string& uri,
                             const std::vector<TextEdit>& edits) {
  const LineIndex& lines = result.snapshot->lines;
  if (!result.notebook)
    return workspace_edit(session, uri, result.version, to_lsp_edits(lines, edits, session.client.encoding));
  const NotebookLayout& layout = *result.notebook;
  if (layout.virt.cells.empty()) return std::nullopt;
  std::vector<std::pair<std::size_t, json>> cells;  // (cell, its edits)
  for (const TextEdit& edit : edits) {
    const std::size_t cell = layout.cell_at(edit.range.start);
    if (edit.range.end > layout.end_of(cell)) return std::nullopt;
    json lsp = {{"range", layout.cell_range(lines, edit.range, session.client.encoding).second},
                {"newText", edit.new_text}};
    auto it = std::find_if(cells.begin(), cells.end(), [&](const auto& entry) { return entry.first == cell; });
    if (it == cells.end()) it = cells.insert(cells.end(), {cell, json::array()});
    it->second.push_back(std::move(lsp));
  }
  return cells_edit(session, layout, cells);
}

bool applicable(const Session& session, const Fix& fix) {
  return fix.applicability == Applicability::Safe ||
         (fix.applicability == Applicability::Unsafe && session.settings.unsafe_fixes);
}

void build_code_actions(Session& session, OpenDocument& document, const json& id, const protocol::Range& range,
                        const std::vector<std::string>& only, const AnalysisResult& result) {
  const LineIndex& lines = result.snapshot->lines;
  const std::string& text = *result.snapshot->text;
  const uint32_t start = lines.to_offset({range.start.line, range.start.character}, session.client.encoding);
  const uint32_t end = lines.to_offset({range.end.line, range.end.character}, session.client.encoding);
  json actions = json::array();
  const bool quickfix = protocol::code_action_kind_requested(only, protocol::code_action_kind::kQuickFix);
  bool any_fixable = false;
  for (std::size_t i = 0; i < result.findings.size(); ++i) {
    const Finding& finding = result.findings[i];
    if (finding.fix && applicable(session, *finding.fix)) any_fixable = true;
    const bool touches = finding.range.start <= end && start <= finding.range.end;
    if (!quickfix || !touches) continue;
    const json& diagnostic = result.diagnostic(i);
    const std::string code = finding.rule != nullptr ? std::string(finding.rule->code) : "GM";
    if (finding.fix) {
      std::string title = code + ": " + finding.fix->title;
      if (finding.fix->applicability == Applicability::Unsafe) title += " (unsafe)";
      if (std::optional<json> edit = edit_for(session, result, document.uri, finding.fix->edits)) {
        actions.push_back({{"title", title},
                           {"kind", protocol::code_action_kind::kQuickFix},
                           {"diagnostics", {diagnostic}},
                           {"isPreferred", finding.fix->applicability == Applicability::Safe},
                           {"edit", std::move(*edit)}});
      }
    }
    if (const std::optional<TextEdit> suppress = noqa_edit(finding, text, lines)) {
      if (std::optional<json> edit = edit_for(session, result, document.uri, {*suppress})) {
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
      session.settings.fix_all && any_fixable && protocol::code_action_kind_requested(only, fix_all_kind);
  if (!fix_all_requested) return session.reply(id, std::move(actions));
  json fix_all_action = {{"title", "graphmend: fix all graph breaks"},
                         {"kind", fix_all_kind},
                         {"data", {{"uri", document.uri}, {"version", result.version}, {"type", "fixAll"}}}};
  if (session.client.resolve_edits) {
    actions.push_back(std::move(fix_all_action));
    return session.reply(id, std::move(actions));
  }
  compute_fix_all(session, document,
                  [&session, id, actions = std::move(actions), fix_all_action = std::move(fix_all_action)](
                      json edit, bool) mutable {
                    if (!session.is_pending(id)) return;
                    fix_all_action["edit"] = std::move(edit);
                    actions.push_back(std::move(fix_all_action));
                    session.reply(id, std::move(actions));
                  });
}

}  // namespace

void code_action(Session& session, const json& id, const json& params) {
  OpenDocument& document = session.document_for(params);
  const protocol::Range range = protocol::range_from_json(protocol::require(params, "/range", json::value_t::object));
  std::vector<std::string> only;
  if (const json* kinds = protocol::optional_member(params, "/context/only", json::value_t::array)) {
    for (const json& kind : *kinds) {
      if (kind.is_string()) only.push_back(kind.get<std::string>());
    }
  }
  session.scheduler().with_analysis(document, [&session, id, range, only](const AnalysisResult& result) {
    if (!session.is_pending(id)) return;
    OpenDocument* current = session.find_document(session.request_document(id));
    if (current == nullptr) return;
    build_code_actions(session, *current, id, range, only, result);
  });
}

void resolve_code_action(Session& session, const json& id, const json& params) {
  if (!params.is_object()) {
    throw ProtocolError(errc::kInvalidParams, "params must be a CodeAction");
  }
  const json* type = protocol::optional_member(params, "/data/type", json::value_t::string);
  if (type == nullptr || *type != "fixAll" || params.contains("edit")) return session.reply(id, params);
  const std::string uri = protocol::require_string(params, "/data/uri");
  const int64_t version = protocol::require_integer(params, "/data/version");
  OpenDocument* document = session.find_document(uri);
  if (document == nullptr || document->version != version) {
    return session.reply_error(id, errc::kContentModified, "the document changed since the action was offered");
  }
  compute_fix_all(session, *document, [&session, id, action = params](json edit, bool) mutable {
    if (!session.is_pending(id)) return;
    action["edit"] = std::move(edit);
    session.reply(id, std::move(action));
  });
}

}  // namespace graphmend::lsp::handlers
