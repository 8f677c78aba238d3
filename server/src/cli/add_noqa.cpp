#include "cli/add_noqa.h"

#include <variant>

#include "cli/source_file.h"
#include "graphmend/analysis/noqa.h"

namespace graphmend::cli {

int add_noqa(const std::vector<FileReport>& reports, size_t check_errors, std::ostream& err) {
  size_t added = 0, errors = check_errors;
  for (const FileReport& report : reports) {
    if (report.findings.empty()) continue;
    if (!report.cell_starts.empty() || std::filesystem::path(report.path).extension() == ".ipynb") {
      err << "warning: " << report.path << ": --add-noqa does not edit notebooks\n";
      continue;
    }
    if (!report.problems.empty()) {
      err << "warning: " << report.path
          << ": not fully read (syntax errors or regions too deep): no noqa directives added\n";
      continue;
    }
    auto read = read_source(report.path);
    if (auto* e = std::get_if<ReadError>(&read)) {
      err << "error: " << e->message << "\n";
      ++errors;
      continue;
    }
    const SourceFile& source = std::get<SourceFile>(read);
    if (source.text != report.text) {
      err << "error: " << report.path << ": changed since it was checked; no noqa directives added\n";
      ++errors;
      continue;
    }
    const LineIndex lines(source.text);
    std::vector<uint32_t> refused;
    std::vector<TextEdit> edits = noqa_insertions(source.text, lines, report.findings, &refused);
    for (uint32_t line : refused) {
      err << "warning: " << report.path << ":" << line + 1
          << ": no noqa directive added: the line ends inside a string or after a backslash\n";
    }
    if (edits.empty()) continue;
    if (auto e = write_source(source, apply_edits(source.text, edits))) {
      err << "error: " << *e << "\n";
      ++errors;
      continue;
    }
    added += edits.size();
  }
  if (added > 0) err << "Added " << added << " noqa directive" << (added == 1 ? "" : "s") << ".\n";
  return errors > 0 ? 2 : 0;
}

}  // namespace graphmend::cli
