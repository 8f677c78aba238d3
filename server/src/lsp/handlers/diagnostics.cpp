// Diagnostics: what an analysis is given to clients as (push: textDocument/publishDiagnostics; pull:
// textDocument/diagnostic and the long-polling workspace/diagnostic), in a notebook's cells too.
#include "lsp/handlers/handlers.h"

namespace graphmend::lsp::handlers {

namespace {

// A notebook's diagnostics in the positions of their cells' documents (related locations and fix edits
// included, each in the cell it lies in).
void place_in_cells(AnalysisResult& result, PositionEncoding encoding) {
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

// Diagnostics for every analysed cell (none where there are none); cells no longer analysed are cleared.
void publish_cells(Session& session, const std::string& uri, const AnalysisResult& result) {
  const NotebookLayout& layout = *result.notebook;
  std::set<std::string> now;
  for (std::size_t cell = 0; cell < layout.uris.size(); ++cell) {
    session.notify("textDocument/publishDiagnostics", {{"uri", layout.uris[cell]},
                                                       {"version", layout.versions[cell]},
                                                       {"diagnostics", result.diagnostics_of_cell(cell)}});
    now.insert(layout.uris[cell]);
  }
  const auto it = session.notebooks.find(uri);
  if (it == session.notebooks.end()) return;
  for (const std::string& cell : it->second.published) {
    if (now.count(cell) == 0) {
      session.notify("textDocument/publishDiagnostics", {{"uri", cell}, {"diagnostics", json::array()}});
    }
  }
  it->second.published = std::move(now);
}

// What a pull answers with for this document: the published result in onSave mode, the
// current one otherwise; nothing while it is being computed.
std::shared_ptr<const AnalysisResult> report_result(Session& session, const OpenDocument& document) {
  if (session.settings.run == RunMode::OnSave && document.published &&
      document.published->generation == document.generation) {
    return document.published;
  }
  if (document.is_current()) return document.latest;
  return nullptr;
}

}  // namespace

void present_diagnostics(const std::string& uri, AnalysisResult& result, PositionEncoding encoding) {
  for (const Finding& finding : result.findings) {
    result.diagnostics.push_back(
        to_diagnostic(finding, result.snapshot->lines, encoding, uri, result.version, result.docs_url));
  }
  for (const Problem& problem : result.problems) {
    result.diagnostics.push_back(to_diagnostic(problem, result.snapshot->lines, encoding));
  }
  if (result.notebook) place_in_cells(result, encoding);
}

void saved(Session& session, OpenDocument& document) {
  if (session.settings.run != RunMode::OnSave) return;
  document.publish_pending = true;
  if (document.is_current()) {
    publish(session, document);
  } else {
    session.scheduler().schedule(document);
  }
}

void publish(Session& session, OpenDocument& document) {
  document.published = document.latest;
  document.publish_pending = false;
  if (session.client.pull_mode) return;
  if (document.published->notebook) return publish_cells(session, document.uri, *document.published);
  session.notify("textDocument/publishDiagnostics", {{"uri", document.uri},
                                                     {"version", document.published->version},
                                                     {"diagnostics", document.published->diagnostics}});
}

// `cell`: a notebook cell's document asks (params name its notebook): that cell's diagnostics.
void document_diagnostic(Session& session, const json& id, const json& params, const std::string& cell) {
  const std::string uri = protocol::require_string(params, "/textDocument/uri");
  std::string previous;
  if (const json* value = protocol::optional_member(params, "/previousResultId", json::value_t::string)) {
    previous = value->get<std::string>();
  }
  OpenDocument* document = session.find_document(uri);
  if (document == nullptr) {
    return session.reply(id, {{"kind", "full"}, {"items", json::array()}});
  }
  auto answer = [&session, id, previous, cell](const AnalysisResult& result) {
    if (!session.is_pending(id)) return;
    if (!previous.empty() && previous == result.result_id) {
      return session.reply(id, {{"kind", "unchanged"}, {"resultId", result.result_id}});
    }
    json items = result.diagnostics;
    if (result.notebook) {
      const auto index = result.notebook->find(cell);
      items = index ? result.diagnostics_of_cell(*index) : json::array();
    }
    session.reply(id, {{"kind", "full"}, {"resultId", result.result_id}, {"items", std::move(items)}});
  };
  if (auto result = report_result(session, *document)) return answer(*result);
  session.scheduler().with_analysis(*document, [&session, answer, uri](const AnalysisResult& result) {
    const OpenDocument* current = session.find_document(uri);
    const auto reported = current != nullptr ? report_result(session, *current) : nullptr;
    answer(reported ? *reported : result);
  });
}

void workspace_diagnostic(Session& session, const json& id, const json& params) {
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
  session.workspace_requests.push_back(std::move(request));
  answer_workspace_diagnostics(session);
}

// Answers the long-polling workspace/diagnostic requests that have something new to report.
void answer_workspace_diagnostics(Session& session) {
  if (session.workspace_requests.empty()) return;
  std::vector<WorkspaceRequest> waiting;
  for (WorkspaceRequest& request : session.workspace_requests) {
    if (!session.is_pending(request.id)) continue;
    json items = json::array();
    bool ready = true;
    bool changed = false;
    for (auto& [uri, document] : session.scheduler().documents()) {
      const auto result = report_result(session, *document);
      if (!result) {
        ready = false;
        session.scheduler().schedule(*document);
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
      if (session.find_document(uri) == nullptr && session.notebook_of_cell.count(uri) == 0 && !value.empty()) {
        // Closed since: clear what the client still shows for it.
        changed = true;
        items.push_back({{"kind", "full"}, {"uri", uri}, {"version", nullptr}, {"items", json::array()}});
      }
    }
    if (ready && changed) {
      session.reply(request.id, {{"items", std::move(items)}});
    } else {
      waiting.push_back(std::move(request));
    }
  }
  session.workspace_requests = std::move(waiting);
}

}  // namespace graphmend::lsp::handlers
