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
    if (c == '%') out += "%25";
    else if (c == '\r') out += "%0D";
    else if (c == '\n') out += "%0A";
    else if (property && c == ':') out += "%3A";
    else if (property && c == ',') out += "%2C";
    else out += c;
  }
  return out;
}

std::string file_uri(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return file_url(ec ? std::filesystem::path(path) : abs);
}

void write_text_snippet(std::ostream& out, const std::string& text, const LineIndex& lines, const Finding& f) {
  uint32_t line = lines.line_of(f.range.start);
  uint32_t start = lines.line_start(line), end = lines.line_end(line);
  std::string number = std::to_string(line + 1);
  std::string pad(number.size(), ' ');
  std::string content = text.substr(start, end - start);
  uint32_t col = utf32_length(std::string_view(text).substr(start, f.range.start - start));
  uint32_t span_end = std::min(f.range.end, end);
  uint32_t width = std::max<uint32_t>(1, utf32_length(std::string_view(text).substr(f.range.start, span_end - f.range.start)));
  out << pad << " |\n" << number << " | " << content << "\n" << pad << " | " << std::string(col, ' ')
      << std::string(width, '^') << " " << f.rule->code << "\n" << pad << " |\n";
}

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
    fix = {{"applicability", std::string(to_string(f.fix->applicability))}, {"message", f.fix->title}, {"edits", edits}};
  }
  std::error_code ec;
  auto abs = std::filesystem::absolute(file.path, ec);
  const RegistryEntry* entry = find_registry_entry(f.rule->registry_id);
  const std::string url = rule_url(*f.rule, file.docs_url);  // none: null, as for a syntax error
  json related = json::array();
  for (const auto& r : f.related) {
    related.push_back({{"message", r.message},
                       {"location", loc_json(location_of(file, lines, r.range.start))},
                       {"end_location", loc_json(location_of(file, lines, r.range.end))}});
  }
  return {{"cell", nullptr},
          {"code", std::string(f.rule->code)},
          {"message", f.message},
          {"filename", ec ? file.path : abs.string()},
          {"location", loc_json(location_of(file, lines, f.range.start))},
          {"end_location", loc_json(location_of(file, lines, f.range.end))},
          {"fix", fix},
          {"url", url.empty() ? json(nullptr) : json(url)},
          {"noqa_row", lines.line_of(f.range.start) + 1},
          {"graphmend",
           {{"rule", std::string(f.rule->name)},
            {"dynamo_registry_id", std::string(f.rule->registry_id)},
            {"dynamo_gb_type", entry ? std::string(entry->gb_type) : std::string()},
            {"dynamo_url", registry_url(f.rule->registry_id)},
            {"in_loop", f.in_loop},
            {"no_fix_reason", f.fix ? json(nullptr) : json(f.no_fix_reason)},
            {"related", related}}}};
}

void write_report(std::ostream& out, OutputFormat format, const std::vector<FileReport>& files, bool show_fixes,
                  size_t errors) {
  size_t breaks = 0, syntax = 0, skipped = 0, fixable = 0, fixed = 0;
  if (format == OutputFormat::Json) {
    json arr = json::array();
    for (const auto& file : files) {
      LineIndex lines(file.text);
      for (const auto& s : file.problems) {
        std::error_code ec;
        auto abs = std::filesystem::absolute(file.path, ec);
        arr.push_back({{"cell", nullptr}, {"code", nullptr}, {"message", s.message},
                       {"filename", ec ? file.path : abs.string()},
                       {"location", loc_json(location_of(file, lines, s.range.start))},
                       {"end_location", loc_json(location_of(file, lines, s.range.end))}, {"fix", nullptr},
                       {"url", nullptr}, {"noqa_row", nullptr}});
      }
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
        return json{{"startLine", a.row}, {"startColumn", a.column}, {"endLine", b.row}, {"endColumn", b.column}};
      };
      for (const auto& f : file.findings) {
        json result{{"ruleId", std::string(f.rule->code)},
                    {"level", "warning"},
                    {"message", {{"text", f.message}}},
                    {"locations", json::array({{{"physicalLocation",
                                                 {{"artifactLocation", {{"uri", file_uri(file.path)}}},
                                                  {"region", region(f.range)}}}}})}};
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
        results.push_back({{"level", s.kind == Problem::Kind::Syntax ? "error" : "warning"},
                           {"message", {{"text", s.message}}},
                           {"locations", json::array({{{"physicalLocation",
                                                        {{"artifactLocation", {{"uri", file_uri(file.path)}}},
                                                         {"region", region(s.range)}}}}})}});
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
    fixed += static_cast<size_t>(file.fixed);
    for (const auto& s : file.problems) {
      Location a = location_of(file, lines, s.range.start), b = location_of(file, lines, s.range.end);
      if (format == OutputFormat::Github) {
        // The title names the error's class ("SyntaxError", "TabError"), or that the code was skipped.
        std::string title = s.kind == Problem::Kind::Syntax ? s.message.substr(0, s.message.find(':')) : "not analysed";
        out << "::error title=graphmend (" << escape_github(title, true) << "),file=" << escape_github(file.path, true)
            << ",line=" << a.row << ",col=" << a.column << ",endLine=" << b.row << ",endColumn=" << b.column
            << "::" << escape_github(s.message, false) << "\n";
      } else {
        out << file.path << ":" << a.row << ":" << a.column << ": " << s.message << "\n";
      }
      ++(s.kind == Problem::Kind::Syntax ? syntax : skipped);
    }
    for (const auto& f : file.findings) {
      Location a = location_of(file, lines, f.range.start), b = location_of(file, lines, f.range.end);
      bool can_fix = f.fix && f.fix->applicability == Applicability::Safe;
      if (can_fix) ++fixable;
      ++breaks;
      if (format == OutputFormat::Github) {
        out << "::error title=graphmend (" << f.rule->code << "),file=" << escape_github(file.path, true)
            << ",line=" << a.row << ",col=" << a.column << ",endLine=" << b.row << ",endColumn=" << b.column
            << "::" << escape_github(std::string(f.rule->code) + " " + f.message, false) << "\n";
        continue;
      }
      out << file.path << ":" << a.row << ":" << a.column << ": " << f.rule->code << (can_fix ? " [*] " : " ")
          << f.message << "\n";
      if (format == OutputFormat::Text) {
        write_text_snippet(out, file.text, lines, f);
        if (show_fixes) {
          if (f.fix) out << "  = fix (" << to_string(f.fix->applicability) << "): " << f.fix->title << "\n";
          else if (!f.no_fix_reason.empty()) out << "  = no fix: " << f.no_fix_reason << "\n";
        }
        out << "\n";
      }
    }
  }
  if (format == OutputFormat::Github) return;
  auto count = [](size_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); };
  if (fixed > 0) out << "Fixed " << count(fixed, "graph break") << ".\n";
  if (breaks == 0 && syntax == 0 && skipped == 0 && errors == 0) {
    if (fixed == 0) out << "All checks passed!\n";
    return;
  }
  // A syntax error is not a graph break: problems are counted apart (and their file is never fixed).
  std::string found;
  if (breaks > 0) found = count(breaks, "graph break") + (fixed > 0 ? " remaining" : "");
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
      arr.push_back({{"code", std::string(code)}, {"name", std::string(r->name)}, {"count", c.first},
                     {"fixable", c.second > 0}, {"fixable_count", c.second}});
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
