// The formats other tools read, each as ruff writes it: grouped (a file's findings under its name),
// json-lines (one JSON object per line), JUnit XML, GitLab Code Quality and pylint's line format.
#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <map>
#include <sstream>

#include "cli/report.h"

namespace graphmend::cli {
using nlohmann::json;

namespace {

// One reported item of any kind, in file order, with what every format needs.
struct Item {
  Location begin, end;
  std::string code;  // a rule code, or "syntax-error" / "not-analysed" for problems
  std::string message;
  bool fixable = false;
  std::string line_text;  // the source line it starts on (for stable fingerprints)
};

std::vector<Item> items_of(const FileReport& file, const LineIndex& lines) {
  std::vector<Item> items;
  auto line_text = [&](uint32_t offset) {
    uint32_t line = lines.line_of(offset);
    return file.text.substr(lines.line_start(line), lines.line_end(line) - lines.line_start(line));
  };
  for (const auto& p : file.problems) {
    items.push_back({location_of(file, lines, p.range.start), location_of(file, lines, p.range.end),
                     p.kind == Problem::Kind::Syntax ? "syntax-error" : "not-analysed", p.message, false,
                     line_text(p.range.start)});
  }
  for (const auto& f : file.findings) {
    items.push_back({location_of(file, lines, f.range.start), location_of(file, lines, f.range.end),
                     std::string(f.rule->code), f.message, f.fix && f.fix->applicability == Applicability::Safe,
                     line_text(f.range.start)});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return std::tie(a.begin.cell, a.begin.row, a.begin.column) < std::tie(b.begin.cell, b.begin.row, b.begin.column);
  });
  return items;
}

std::string row_col(const Location& l) {
  return (l.cell ? "cell " + std::to_string(l.cell) + ":" : "") + std::to_string(l.row) + ":" +
         std::to_string(l.column);
}

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\n':
        out += "&#10;";
        break;
      default:
        // Control characters other than tab are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t')
          out += "?";
        else
          out += c;
    }
  }
  return out;
}

// 64-bit FNV-1a as 16 hex digits: a fingerprint that is the same on every machine and run.
std::string fingerprint(const std::string& key) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : key) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  std::ostringstream ss;
  ss << std::hex << std::setw(16) << std::setfill('0') << h;
  return ss.str();
}

void write_grouped(std::ostream& out, const std::vector<FileReport>& files, const ReportStyle& style) {
  const Paint paint{style.color};
  for (const auto& file : files) {
    LineIndex lines(file.text);
    auto items = items_of(file, lines);
    if (items.empty()) continue;
    size_t width = 0;
    for (const auto& i : items) width = std::max(width, row_col(i.begin).size());
    out << paint.bold(file.path) << paint.cyan(":") << "\n";
    for (const auto& i : items) {
      std::string at = row_col(i.begin);
      out << "  " << at << std::string(width - at.size(), ' ') << " " << paint.code(i.code)
          << (i.fixable ? " " + paint.cyan("[*]") : "") << " " << i.message << "\n";
    }
    out << "\n";
  }
  write_summary(out, files, style);
}

void write_junit(std::ostream& out, const std::vector<FileReport>& files, size_t errors) {
  std::vector<std::pair<const FileReport*, std::vector<Item>>> suites;
  size_t total = 0;
  for (const auto& file : files) {
    LineIndex lines(file.text);
    auto items = items_of(file, lines);
    total += items.size();
    if (!items.empty()) suites.emplace_back(&file, std::move(items));
  }
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  if (total == 0 && errors > 0) {
    // Paths that could not be checked (reported on stderr): an error, never a passing run.
    out << "<testsuites name=\"graphmend\" tests=\"1\" failures=\"0\" errors=\"" << errors << "\">\n"
        << "  <testsuite name=\"graphmend\" tests=\"1\" disabled=\"0\" errors=\"" << errors
        << "\" failures=\"0\" package=\"org.graphmend\">\n"
        << "    <testcase name=\"graphmend\" classname=\"graphmend\">\n      <error message=\"" << errors
        << " path(s) could not be checked or written\" />\n    </testcase>\n  </testsuite>\n</testsuites>\n";
    return;
  }
  if (total == 0) {
    // As ruff does: one passing test, so that a CI report shows the run.
    out << "<testsuites name=\"graphmend\" tests=\"1\" failures=\"0\" errors=\"0\">\n"
        << "  <testsuite name=\"graphmend\" tests=\"1\" disabled=\"0\" errors=\"0\" failures=\"0\" "
           "package=\"org.graphmend\">\n"
        << "    <testcase name=\"No graph breaks found\" classname=\"graphmend\" />\n"
        << "  </testsuite>\n</testsuites>\n";
    return;
  }
  out << "<testsuites name=\"graphmend\" tests=\"" << total << "\" failures=\"" << total << "\" errors=\"" << errors
      << "\">\n";
  for (const auto& [file, items] : suites) {
    const std::string path = xml_escape(file->path);
    out << "  <testsuite name=\"" << path << "\" tests=\"" << items.size()
        << "\" disabled=\"0\" errors=\"0\" failures=\"" << items.size() << "\" package=\"org.graphmend\">\n";
    for (const auto& i : items) {
      out << "    <testcase name=\"org.graphmend." << xml_escape(i.code) << "\" classname=\"" << path << "\" line=\""
          << i.begin.row << "\" column=\"" << i.begin.column << "\">\n"
          << "      <failure message=\"" << xml_escape(i.message) << "\">"
          << (i.begin.cell ? "cell " + std::to_string(i.begin.cell) + ", " : "") << "line " << i.begin.row << ", col "
          << i.begin.column << ", " << xml_escape(i.message) << "</failure>\n"
          << "    </testcase>\n";
    }
    out << "  </testsuite>\n";
  }
  out << "</testsuites>\n";
}

void write_gitlab(std::ostream& out, const std::vector<FileReport>& files) {
  json arr = json::array();
  for (const auto& file : files) {
    LineIndex lines(file.text);
    // GitLab matches issues across commits by fingerprint: built from what survives unrelated edits
    // (path, code, message, the line's text, which occurrence of those), never from line numbers.
    std::map<std::string, int> seen;
    for (const auto& i : items_of(file, lines)) {
      std::string key = file.path + "\n" + i.code + "\n" + i.message + "\n" + i.line_text;
      key += "\n" + std::to_string(seen[key]++);
      arr.push_back({{"check_name", i.code},
                     {"description", i.code + ": " + i.message},
                     {"severity", i.code == "syntax-error" ? "critical" : "major"},
                     {"fingerprint", fingerprint(key)},
                     {"location",
                      {{"path", file.path},
                       {"positions",
                        {{"begin", {{"line", i.begin.row}, {"column", i.begin.column}}},
                         {"end", {{"line", i.end.row}, {"column", i.end.column}}}}}}}});
    }
  }
  out << arr.dump(2) << "\n";
}

}  // namespace

void write_ci_report(std::ostream& out, OutputFormat format, const std::vector<FileReport>& files,
                     const ReportStyle& style) {
  switch (format) {
    case OutputFormat::Grouped:
      write_grouped(out, files, style);
      return;
    case OutputFormat::Junit:
      write_junit(out, files, style.errors);
      return;
    case OutputFormat::Gitlab:
      write_gitlab(out, files);
      return;
    case OutputFormat::JsonLines:
      for (const auto& file : files) {
        LineIndex lines(file.text);
        for (const auto& p : file.problems) out << problem_to_ruff_json(file, lines, p).dump() << "\n";
        for (const auto& f : file.findings) out << finding_to_ruff_json(file, lines, f).dump() << "\n";
      }
      return;
    case OutputFormat::Pylint:
      for (const auto& file : files) {
        LineIndex lines(file.text);
        for (const auto& i : items_of(file, lines)) {
          out << file.path << ":" << (i.begin.cell ? "cell " + std::to_string(i.begin.cell) + ":" : "") << i.begin.row
              << ": [" << i.code << "] " << i.message << "\n";
        }
      }
      return;
    default:
      return;
  }
}

}  // namespace graphmend::cli
