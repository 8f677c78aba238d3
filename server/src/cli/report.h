// Output of `graphmend check`: text, concise, JSON (ruff's shape), SARIF 2.1.0, GitHub annotations.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "graphmend/analysis/finding.h"
#include "graphmend/analysis/text.h"

namespace graphmend::cli {

// Everything the reporters need about one checked file (the text is the one findings refer to).
struct FileReport {
  std::string path;
  std::string text;
  std::vector<Finding> findings;
  std::vector<Problem> problems;  // syntax errors, regions not analysed: reported like findings, without a code
  int fixed = 0;                  // fixes applied by --fix
  std::map<std::string, int> fixed_by_rule;  // the same, per rule code (for --show-fixes)
  std::string docs_url;                      // the file's configuration's `docs-url` (rule links), "" when not set
  // Notebooks: `text` is the code cells joined; cell_starts[i] is the 0-based line of `text` at which
  // code cell i (numbered 1.. in output) starts. Empty for a plain Python file.
  std::vector<uint32_t> cell_starts;
  // The number shown for each entry of cell_starts: the cell's position in the notebook, every cell
  // counted (as Jupyter and ruff number them). Empty: 1, 2, ...
  std::vector<uint32_t> cell_numbers;
};

enum class OutputFormat { Text, Concise, Grouped, Json, JsonLines, Junit, Sarif, Github, Gitlab, Pylint };

struct Location {
  uint32_t row;       // 1-based (in a notebook: within the cell)
  uint32_t column;    // 1-based, in characters (code points)
  uint32_t cell = 0;  // 1-based notebook cell, 0 for a plain Python file
};
// Every reporter computes positions here, so that notebook cells are numbered the same in all formats.
Location location_of(const FileReport& file, const LineIndex& lines, uint32_t offset);

nlohmann::json finding_to_ruff_json(const FileReport& file, const LineIndex& lines, const Finding& finding);
// A syntax error or a region not analysed, in the same shape with `"code": null`.
nlohmann::json problem_to_ruff_json(const FileReport& file, const LineIndex& lines, const Problem& problem);
struct ReportStyle {
  bool show_fixes = true;  // text: each finding's fix, or why there is none
  bool color = false;      // ANSI colours in text, concise and grouped output
  bool summary = true;     // the closing counts ("Found 3 graph breaks."); `-q` turns them off
  // Paths that could not be checked or written (reported elsewhere): the summary says so and never
  // claims that all checks passed then.
  size_t errors = 0;
};

void write_report(std::ostream& out, OutputFormat format, const std::vector<FileReport>& files,
                  const ReportStyle& style);
// The line-per-finding and CI formats (report_formats.cpp): grouped, json-lines, junit, gitlab, pylint.
void write_ci_report(std::ostream& out, OutputFormat format, const std::vector<FileReport>& files,
                     const ReportStyle& style);
// The closing counts of the text formats; `fixable` counts findings with a safe fix.
void write_summary(std::ostream& out, const std::vector<FileReport>& files, const ReportStyle& style);
// ANSI styles, or nothing when colour is off.
struct Paint {
  bool on = false;
  std::string bold(std::string_view s) const;
  std::string code(std::string_view s) const;  // a rule code: bold red
  std::string cyan(std::string_view s) const;  // separators and the fix marker
};
void write_statistics(std::ostream& out, const std::vector<FileReport>& files, bool json);

}  // namespace graphmend::cli
