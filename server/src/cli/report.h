// Output of `graphmend check`: text, concise, JSON (ruff's shape), SARIF 2.1.0, GitHub annotations.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graphmend/analysis/finding.h"
#include "graphmend/analysis/text.h"

namespace graphmend::cli {

// Everything the reporters need about one checked file (the text is the one findings refer to).
struct FileReport {
  std::string path;
  std::string text;
  std::vector<Finding> findings;
  std::vector<Problem> problems;  // syntax errors, regions not analysed: reported like findings, without a code
  int fixed = 0;  // fixes applied by --fix
  std::string docs_url;  // the file's configuration's `docs-url` (rule links), "" when not set
  // Notebooks: `text` is the code cells joined; cell_starts[i] is the 0-based line of `text` at which
  // code cell i (numbered 1.. in output) starts. Empty for a plain Python file.
  std::vector<uint32_t> cell_starts;
};

enum class OutputFormat { Text, Concise, Json, Sarif, Github };

struct Location {
  uint32_t row;       // 1-based (in a notebook: within the cell)
  uint32_t column;    // 1-based, in characters (code points)
  uint32_t cell = 0;  // 1-based notebook cell, 0 for a plain Python file
};
// Every reporter computes positions here, so that notebook cells are numbered the same in all formats.
Location location_of(const FileReport& file, const LineIndex& lines, uint32_t offset);

nlohmann::json finding_to_ruff_json(const FileReport& file, const LineIndex& lines, const Finding& finding);
// `errors`: paths that could not be checked or written (reported elsewhere); the summary says so and
// never claims that all checks passed then.
void write_report(std::ostream& out, OutputFormat format, const std::vector<FileReport>& files, bool show_fixes,
                  size_t errors = 0);
void write_statistics(std::ostream& out, const std::vector<FileReport>& files, bool json);

}  // namespace graphmend::cli
