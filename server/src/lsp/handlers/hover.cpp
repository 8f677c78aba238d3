// textDocument/hover: the findings under the cursor, in Dynamo's words, with a preview of the fix.
#include "lsp/handlers/handlers.h"

namespace graphmend::lsp::handlers {

void hover(Session& session, const json& id, const json& params) {
  OpenDocument& document = session.document_for(params);
  const protocol::Position position =
      protocol::position_from_json(protocol::require(params, "/position", json::value_t::object));
  session.scheduler().with_analysis(document, [&session, id, position](const AnalysisResult& result) {
    if (!session.is_pending(id)) return;
    const LineIndex& lines = result.snapshot->lines;
    const uint32_t offset = lines.to_offset({position.line, position.character}, session.client.encoding);
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
    if (first == nullptr) return session.reply(id, nullptr);
    json range = result.notebook ? result.notebook->cell_range(lines, first->range, session.client.encoding).second
                                 : protocol::to_json(to_lsp_range(lines, first->range, session.client.encoding));
    session.reply(id, {{"contents", {{"kind", "markdown"}, {"value", markdown}}}, {"range", std::move(range)}});
  });
}

}  // namespace graphmend::lsp::handlers
