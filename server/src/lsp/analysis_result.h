// What one analysis of an open document produced, with everything the request handlers need to answer
// about that version; and a notebook's layout (which cell document each part of its joined text is).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/notebook.h"
#include "graphmend/analysis/finding.h"
#include "graphmend/protocol/lsp.h"
#include "lsp/features.h"

namespace graphmend::lsp {

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
  std::chrono::steady_clock::duration elapsed{};
  bool incremental = false;  // only the edited function was analysed again
  bool held = false;         // the edit broke the syntax: the last analysis, moved (IncrementalAnalyzer)
  std::chrono::steady_clock::duration reparse_time{};  // applying the edits to the tree before it
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

}  // namespace graphmend::lsp
