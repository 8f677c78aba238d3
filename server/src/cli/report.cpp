#include "cli/report.h"

#include <algorithm>
#include <map>

#include "commands.h"

namespace graphmend::cli {
using nlohmann::json;

Location location_of(const FileReport& file, const LineIndex& lines, uint32_t offset) {
  LinePosition p = lines.to_position(offset, PositionEncoding::Utf32);
  Location loc{p.line + 1, p.character + 1};
  if (!file.cell_starts.empty()) {
    auto next = std::upper_bound(file.cell_starts.begin(), file.cell_starts.end(), p.line);
    if (next != file.cell_starts.begin()) {
      loc.cell = static_cast<uint32_t>(next - file.cell_starts.begin());
      if (loc.cell <= file.cell_numbers.size()) loc.cell = file.cell_numbers[loc.cell - 1];
      loc.row = p.line - *(next - 1) + 1;
    }
  }
  return loc;
}

namespace {

json loc_json(Location l) { return json{{"row", l.row}, {"column", l.column}}; }

std::string escape_github(std::string s, bool property) {
  std::string out;
  for (char c : s) {
    if (c == '%')
      out += "%25";
    else if (c == '\r')
      out += "%0D";
    else if (c == '\n')
      out += "%0A";
    else if (property && c == ':')
      out += "%3A";
    else if (property && c == ',')
      out += "%2C";
    else
      out += c;
  }
  return out;
}

std::string file_uri(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return file_url(ec ? std::filesystem::path(path) : abs);
}

// `row`: the line's number as reported (in a notebook, within its cell).
void write_text_snippet(std::ostream& out, const std::string& text, const LineIndex& lines, const Finding& f,
                        uint32_t row) {
  uint32_t line = lines.line_of(f.range.start);
  uint32_t start = lines.line_start(line), end = lines.line_end(line);
  std::string number = std::to_string(row);
  std::string pad(number.size(), ' ');
  std::string content = text.substr(start, end - start);
  uint32_t col = utf32_length(std::string_view(text).substr(start, f.range.start - start));
  uint32_t span_end = std::min(f.range.end, end);
  uint32_t width =
      std::max<uint32_t>(1, utf32_length(std::string_view(text).substr(f.range.start, span_end - f.range.start)));
  out << pad << " |\n"
      << number << " | " << content << "\n"
      << pad << " | " << std::string(col, ' ') << std::string(width, '^') << " " << f.rule->code << "\n"
      << pad << " |\n";
}

// GitHub places an annotation on lines of the file, and a notebook's cells are no lines of its JSON: a
// finding in a cell goes on line 1 (as ruff does), its message starting with where it is ("cell 2:3:5: ").
std::string github_where(Location a, Location b) {
  if (a.cell) return ",line=1,col=1,endLine=1,endColumn=1";
  return ",line=" + std::to_string(a.row) + ",col=" + std::to_string(a.column) + ",endLine=" + std::to_string(b.row) +
         ",endColumn=" + std::to_string(b.column);
}
std::string github_cell_prefix(Location a) {
  if (!a.cell) return "";
  return "cell " + std::to_string(a.cell) + ":" + std::to_string(a.row) + ":" + std::to_string(a.column) + ": ";
}

json cell_json(Location l) { return l.cell ? json(l.cell) : json(nullptr); }

}  // namespace

json finding_to_ruff_json(const FileReport& file, const LineIndex& lines, const Finding& f) {
  json fix = nullptr;
  if (f.fix) {
    json edits = json::array();
    for (const TextEdit& e : f.fix->edits) {
      edits.push_back({{"content", e.new_text},
                       {"location", loc_json(location_of(file, lines, e.range.start))},
                       {"end_location", loc_json(location_of(file, lines, e.range.end))}});
    }
    fix = {
        {"applicability", std::string(to_string(f.fix->applicability))}, {"message", f.fix->title}, {"edits", edits}};
  }
  std::error_code ec;
  auto abs = std::filesystem::absolute(file.path, ec);
  const RegistryEntry* entry = find_registry_entry(f.registry_id);
  const std::string url = rule_url(*f.rule, file.docs_url);  // none: null, as for a syntax error
  json related = json::array();
  for (const auto& r : f.related) {
    related.push_back({{"message", r.message},
                       {"location", loc_json(location_of(file, lines, r.range.start))},
                       {"end_location", loc_json(location_of(file, lines, r.range.end))}});
  }
  return {{"cell", cell_json(location_of(file, lines, f.range.start))},
          {"code", std::string(f.rule->code)},
          {"message", f.message},
          {"filename", ec ? file.path : abs.string()},
          {"location", loc_json(location_of(file, lines, f.range.start))},
          {"end_location", loc_json(location_of(file, lines, f.range.end))},
          {"fix", fix},
          {"url", url.empty() ? json(nullptr) : json(url)},
          {"noqa_row", location_of(file, lines, f.range.start).row},
          {"graphmend",
           {{"rule", std::string(f.rule->name)},
            {"dynamo_registry_id", std::string(f.registry_id)},
            {"dynamo_gb_type", entry ? std::string(entry->gb_type) : std::string()},
            {"dynamo_url", f.registry_id.empty() ? json(nullptr) : json(registry_url(f.registry_id))},
            {"torch_version", f.torch.str()},
            {"in_loop", f.in_loop},
            {"no_fix_reason", f.fix ? json(nullptr) : json(f.no_fix_reason)},
            {"related", related}}}};
}

std::string Paint::bold(std::string_view s) const {
  return on ? "\x1b[1m" + std::string(s) + "\x1b[0m" : std::string(s);
}
std::string Paint::code(std::string_view s) const {
  return on ? "\x1b[1;31m" + std::string(s) + "\x1b[0m" : std::string(s);
}
std::string Paint::cyan(std::string_view s) const {
  return on ? "\x1b[36m" + std::string(s) + "\x1b[0m" : std::string(s);
}

json problem_to_ruff_json(const FileReport& file, const LineIndex& lines, const Problem& s) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(file.path, ec);
  return {{"cell", cell_json(location_of(file, lines, s.range.start))},
          {"code", nullptr},
          {"message", s.message},
          {"filename", ec ? file.path : abs.string()},
          {"location", loc_json(location_of(file, lines, s.range.start))},
          {"end_location", loc_json(location_of(file, lines, s.range.end))},
          {"fix", nullptr},
          {"url", nullptr},
          {"noqa_row", nullptr}};
}

void write_report(std::ostream& out, OutputFormat format, const std::vector<FileReport>& files,
                  const ReportStyle& style) {
  if (format == OutputFormat::Grouped || format == OutputFormat::JsonLines || format == OutputFormat::Junit ||
      format == OutputFormat::Gitlab || format == OutputFormat::Pylint) {
    write_ci_report(out, format, files, style);
    return;
  }
  const Paint paint{style.color};
  if (format == OutputFormat::Json) {
    json arr = json::array();
    for (const auto& file : files) {
      LineIndex lines(file.text);
      for (const auto& s : file.problems) arr.push_back(problem_to_ruff_json(file, lines, s));
      for (const auto& f : file.findings) arr.push_back(finding_to_ruff_json(file, lines, f));
    }
    out << arr.dump(2) << "\n";
    return;
  }
  if (format == OutputFormat::Sarif) {
    // One rules table for the run: links follow the first checked file's `docs-url`, if any.
    std::string docs_url;
    for (const auto& file : files) {
      if (!file.docs_url.empty()) {
        docs_url = file.docs_url;
        break;
      }
    }
    json rules = json::array();
    for (const RuleInfo* r : all_rules()) {
      json rule{
          {"id", std::string(r->code)},
          {"name", std::string(r->name)},
          {"shortDescription", {{"text", std::string(r->summary)}}},
          {"fullDescription", {{"text", std::string(r->explanation)}}},
          // The rule's page (as ruff does): readable in a SARIF viewer without any link.
          {"help", {{"text", std::string(r->summary)}, {"markdown", rule_markdown(*r)}}},
          {"properties", {{"dynamo_registry_id", std::string(r->registry_id)}, {"family", std::string(r->family)}}}};
      if (std::string url = rule_url(*r, docs_url); !url.empty()) rule["helpUri"] = url;
      rules.push_back(std::move(rule));
    }
    json results = json::array();
    for (const auto& file : files) {
      LineIndex lines(file.text);
      auto region = [&](ByteRange r) {
        Location a = location_of(file, lines, r.start), b = location_of(file, lines, r.end);
        json place{{"startLine", a.row}, {"startColumn", a.column}, {"endLine", b.row}, {"endColumn", b.column}};
        // A notebook: lines and columns are the cell's, the cell's number a property of the region.
        if (a.cell) place["properties"] = {{"cell", a.cell}};
        return place;
      };
      for (const auto& f : file.findings) {
        json result{
            {"ruleId", std::string(f.rule->code)},
            {"level", "warning"},
            {"message", {{"text", f.message}}},
            {"locations",
             json::array({{{"physicalLocation",
                            {{"artifactLocation", {{"uri", file_uri(file.path)}}}, {"region", region(f.range)}}}}})}};
        if (!f.related.empty()) {
          json rel = json::array();
          int id = 0;
          for (const auto& r : f.related) {
            rel.push_back({{"id", id++},
                           {"message", {{"text", r.message}}},
                           {"physicalLocation",
                            {{"artifactLocation", {{"uri", file_uri(file.path)}}}, {"region", region(r.range)}}}});
          }
          result["relatedLocations"] = rel;
        }
        results.push_back(result);
      }
      for (const auto& s : file.problems) {
        results.push_back(
            {{"level", s.kind == Problem::Kind::Syntax ? "error" : "warning"},
             {"message", {{"text", s.message}}},
             {"locations",
              json::array({{{"physicalLocation",
                             {{"artifactLocation", {{"uri", file_uri(file.path)}}}, {"region", region(s.range)}}}}})}});
      }
    }
    json sarif{{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
               {"version", "2.1.0"},
               {"runs", json::array({{{"tool",
                                       {{"driver",
                                         {{"name", "graphmend"},
                                          {"version", GRAPHMEND_VERSION},
                                          {"informationUri", "https://arxiv.org/abs/2509.16248"},
                                          {"rules", rules}}}}},
                                      {"results", results}}})}};
    out << sarif.dump(2) << "\n";
    return;
  }
  for (const auto& file : files) {
    LineIndex lines(file.text);
    auto where = [&](Location a) {
      std::string cell = a.cell ? "cell " + std::to_string(a.cell) + paint.cyan(":") : "";
      return paint.bold(file.path) + paint.cyan(":") + cell + std::to_string(a.row) + paint.cyan(":") +
             std::to_string(a.column) + paint.cyan(":");
    };
    for (const auto& s : file.problems) {
      Location a = location_of(file, lines, s.range.start), b = location_of(file, lines, s.range.end);
      if (format == OutputFormat::Github) {
        // The title names the error's class ("SyntaxError", "TabError"), or that the code was skipped.
        std::string title = s.kind == Problem::Kind::Syntax ? s.message.substr(0, s.message.find(':')) : "not analysed";
        out << "::error title=graphmend (" << escape_github(title, true) << "),file=" << escape_github(file.path, true)
            << github_where(a, b) << "::" << escape_github(github_cell_prefix(a) + s.message, false) << "\n";
      } else {
        out << where(a) << " " << s.message << "\n";
      }
    }
    for (const auto& f : file.findings) {
      Location a = location_of(file, lines, f.range.start), b = location_of(file, lines, f.range.end);
      bool can_fix = f.fix && f.fix->applicability == Applicability::Safe;
      if (format == OutputFormat::Github) {
        out << "::error title=graphmend (" << f.rule->code << "),file=" << escape_github(file.path, true)
            << github_where(a, b)
            << "::" << escape_github(github_cell_prefix(a) + std::string(f.rule->code) + " " + f.message, false)
            << "\n";
        continue;
      }
      out << where(a) << " " << paint.code(f.rule->code) << (can_fix ? " " + paint.cyan("[*]") + " " : " ") << f.message
          << "\n";
      if (format == OutputFormat::Text) {
        write_text_snippet(out, file.text, lines, f, a.row);
        if (style.show_fixes) {
          if (f.fix)
            out << "  = fix (" << to_string(f.fix->applicability) << "): " << f.fix->title << "\n";
          else if (!f.no_fix_reason.empty())
            out << "  = no fix: " << f.no_fix_reason << "\n";
        }
        out << "\n";
      }
    }
  }
  if (format == OutputFormat::Github) return;
  write_summary(out, files, style);
}

void write_summary(std::ostream& out, const std::vector<FileReport>& files, const ReportStyle& style) {
  if (!style.summary) return;
  // Findings of a rule without a Dynamo registry id (GM001 unused-noqa, GM205 deferred-call-dropped) are no
  // graph breaks: counted apart.
  auto no_break = [](std::string_view code) {
    const RuleInfo* rule = find_rule(code);
    return rule && rule->registry_id.empty();
  };
  size_t breaks = 0, noqa = 0, dropped = 0, syntax = 0, skipped = 0, fixable = 0, fixed = 0, fixed_noqa = 0;
  for (const auto& file : files) {
    fixed += static_cast<size_t>(file.fixed);
    for (const auto& [code, n] : file.fixed_by_rule) {
      if (no_break(code)) fixed_noqa += static_cast<size_t>(n);
    }
    for (const auto& s : file.problems) ++(s.kind == Problem::Kind::Syntax ? syntax : skipped);
    for (const auto& f : file.findings) {
      // GM205: a deferred call that torch.compile drops; GM001: a noqa directive that suppresses nothing.
      ++(!no_break(f.rule->code) ? breaks : f.rule->code == "GM205" ? dropped : noqa);
      if (f.fix && f.fix->applicability == Applicability::Safe) ++fixable;
    }
  }
  fixed_noqa = std::min(fixed_noqa, fixed);
  const size_t errors = style.errors;
  auto count = [](size_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); };
  if (fixed > 0) {
    std::string what = fixed > fixed_noqa ? count(fixed - fixed_noqa, "graph break") : "";
    if (fixed_noqa > 0) what += (what.empty() ? "" : ", ") + count(fixed_noqa, "unused noqa directive");
    out << "Fixed " << what << ".\n";
  }
  if (breaks == 0 && noqa == 0 && dropped == 0 && syntax == 0 && skipped == 0 && errors == 0) {
    if (fixed == 0) out << "All checks passed!\n";
    return;
  }
  // A syntax error is not a graph break: problems are counted apart (and their file is never fixed).
  std::string found;
  if (breaks > 0) found = count(breaks, "graph break") + (fixed > 0 ? " remaining" : "");
  if (dropped > 0) found += (found.empty() ? "" : ", ") + count(dropped, "dropped deferred call");
  if (noqa > 0) found += (found.empty() ? "" : ", ") + count(noqa, "unused noqa directive");
  if (syntax > 0) found += (found.empty() ? "" : ", ") + count(syntax, "syntax error");
  if (skipped > 0) found += (found.empty() ? "" : ", ") + count(skipped, "region") + " not analysed";
  if (!found.empty()) out << "Found " << found << ".\n";
  if (fixable > 0) out << "[*] " << fixable << " fixable with the `--fix` option.\n";
  if (errors > 0) out << count(errors, "error") << " (reported above): not every file was checked or written.\n";
}

void write_statistics(std::ostream& out, const std::vector<FileReport>& files, bool as_json) {
  std::map<std::string_view, std::pair<size_t, size_t>> counts;  // code -> (count, fixable)
  for (const auto& file : files) {
    for (const auto& f : file.findings) {
      auto& c = counts[f.rule->code];
      ++c.first;
      if (f.fix && f.fix->applicability == Applicability::Safe) ++c.second;
    }
  }
  std::vector<std::pair<std::string_view, std::pair<size_t, size_t>>> rows(counts.begin(), counts.end());
  std::stable_sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
  if (as_json) {
    json arr = json::array();
    for (auto& [code, c] : rows) {
      const RuleInfo* r = find_rule(code);
      arr.push_back({{"code", std::string(code)},
                     {"name", std::string(r->name)},
                     {"count", c.first},
                     {"fixable", c.second > 0},
                     {"fixable_count", c.second}});
    }
    out << arr.dump(2) << "\n";
    return;
  }
  for (auto& [code, c] : rows) {
    const RuleInfo* r = find_rule(code);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%5zu", c.first);
    out << buf << "\t" << code << "\t" << (c.second > 0 ? "[*] " : "[ ] ") << r->name << "\n";
  }
}

}  // namespace graphmend::cli
