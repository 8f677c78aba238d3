// Pure conversions from the engine's findings and fixes to LSP values: diagnostics, hovers, edits.
// No state and no I/O, so unit tests can call them directly.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/analysis/finding.h"
#include "graphmend/analysis/text.h"
#include "graphmend/protocol/lsp.h"

namespace graphmend::lsp {

using nlohmann::json;

// One version of a document's text with its line index (the index points into `text`).
struct TextSnapshot {
  explicit TextSnapshot(std::shared_ptr<const std::string> contents) : text(std::move(contents)), lines(*text) {}
  std::shared_ptr<const std::string> text;
  LineIndex lines;
};

PositionEncoding encoding_from_name(std::string_view name);

protocol::Range to_lsp_range(const LineIndex& lines, ByteRange range, PositionEncoding encoding);
json to_lsp_edit(const LineIndex& lines, const TextEdit& edit, PositionEncoding encoding);
json to_lsp_edits(const LineIndex& lines, const std::vector<TextEdit>& edits, PositionEncoding encoding);

// The LSP Diagnostic of a finding: code, link to the rule's page, related information, and in
// `data` the Dynamo graph-break id and type plus the fix (edits in this version's positions).
// `docs_url`: the document's configuration's `docs-url` (rule_url); no link, no codeDescription.
json to_diagnostic(const Finding& finding, const LineIndex& lines, PositionEncoding encoding, const std::string& uri,
                   int64_t version, std::string_view docs_url = {});

// The LSP Diagnostic of a problem that is no finding (no code, no fix): an error for syntax CPython
// rejects, a warning for a region not analysed.
json to_diagnostic(const Problem& problem, const LineIndex& lines, PositionEncoding encoding);

// Markdown for a hover on a finding: the message, the rule's explanation, Dynamo's explanation
// and hints from its graph-break registry, and a preview of the fix or why there is none.
// `where` names the place of a related location ("line 12" by default; a notebook's cell and line).
std::string hover_markdown(const Finding& finding, std::string_view text, const LineIndex& lines,
                           std::string_view docs_url = {},
                           const std::function<std::string(uint32_t offset)>& where = {});

// The lines a fix changes, as a unified-diff-like block ("- old" / "+ new").
std::string fix_preview(const Fix& fix, std::string_view text, const LineIndex& lines);

// The edit that adds `# noqa: CODE` to the finding's first line (or appends the code to an
// existing `# noqa:` list there): noqa_insertion (graphmend/analysis/noqa.h), as `--add-noqa` has it.
// nullopt when that line cannot end in a comment (it ends inside a string or after a backslash).
std::optional<TextEdit> noqa_edit(const Finding& finding, std::string_view text, const LineIndex& lines);

// One edit turning `before` into `after` (common prefix and suffix kept, UTF-8 boundaries
// respected); nothing when they are equal.
std::optional<TextEdit> minimal_edit(std::string_view before, std::string_view after);

// Edits turning `before` into `after`, one per changed block of lines (dtl's line diff), so a
// client keeps cursors, folds and marks in the unchanged lines between fixes. Falls back to
// minimal_edit when the texts differ in more than `max_changes` lines.
std::vector<TextEdit> diff_edits(std::string_view before, std::string_view after, int max_changes = 2000);

}  // namespace graphmend::lsp
