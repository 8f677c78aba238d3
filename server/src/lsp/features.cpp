#include "lsp/features.h"

#include <algorithm>
#include <cctype>
#include <dtl/dtl.hpp>
#include <functional>

#include "graphmend/analysis/noqa.h"

namespace graphmend::lsp {
namespace {

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

void append_lines(std::string& out, std::string_view block, std::string_view prefix, std::size_t max_lines) {
  if (!block.empty() && block.back() == '\n') block.remove_suffix(1);
  std::size_t count = 0;
  std::size_t pos = 0;
  while (pos <= block.size()) {
    std::size_t eol = block.find('\n', pos);
    if (eol == std::string_view::npos) eol = block.size();
    std::string_view line = block.substr(pos, eol - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (count == max_lines) {
      out += prefix;
      out += "...\n";
      return;
    }
    out += prefix;
    out += line;
    out += '\n';
    ++count;
    if (eol == block.size()) break;
    pos = eol + 1;
  }
}

}  // namespace

PositionEncoding encoding_from_name(std::string_view name) {
  if (name == "utf-8") return PositionEncoding::Utf8;
  if (name == "utf-32") return PositionEncoding::Utf32;
  return PositionEncoding::Utf16;
}

protocol::Range to_lsp_range(const LineIndex& lines, ByteRange range, PositionEncoding encoding) {
  const LinePosition start = lines.to_position(range.start, encoding);
  const LinePosition end = lines.to_position(range.end, encoding);
  return {{start.line, start.character}, {end.line, end.character}};
}

json to_lsp_edit(const LineIndex& lines, const TextEdit& edit, PositionEncoding encoding) {
  return {{"range", protocol::to_json(to_lsp_range(lines, edit.range, encoding))}, {"newText", edit.new_text}};
}

json to_lsp_edits(const LineIndex& lines, const std::vector<TextEdit>& edits, PositionEncoding encoding) {
  json out = json::array();
  for (const TextEdit& edit : edits) out.push_back(to_lsp_edit(lines, edit, encoding));
  return out;
}

json to_diagnostic(const Finding& finding, const LineIndex& lines, PositionEncoding encoding, const std::string& uri,
                   int64_t version, std::string_view docs_url) {
  json diagnostic = {
      {"range", protocol::to_json(to_lsp_range(lines, finding.range, encoding))},
      {"severity", protocol::severity::kWarning},
      {"source", "graphmend"},
      {"message", finding.message},
  };
  json data = {{"version", version}};
  if (finding.rule != nullptr) {
    diagnostic["code"] = finding.rule->code;
    if (std::string href = rule_url(*finding.rule, docs_url); !href.empty()) {
      diagnostic["codeDescription"] = {{"href", href}};
    }
    data["rule"] = finding.rule->name;
    if (!finding.registry_id.empty()) {
      data["registryId"] = finding.registry_id;
      data["registryUrl"] = registry_url(finding.registry_id);
      data["torchVersion"] = finding.torch.str();
      if (const RegistryEntry* entry = find_registry_entry(finding.registry_id)) {
        data["gbType"] = entry->gb_type;
      }
    }
  }
  if (!finding.related.empty()) {
    json related = json::array();
    for (const RelatedLocation& location : finding.related) {
      const protocol::Range range = to_lsp_range(lines, location.range, encoding);
      related.push_back(
          {{"location", {{"uri", uri}, {"range", protocol::to_json(range)}}}, {"message", location.message}});
    }
    diagnostic["relatedInformation"] = std::move(related);
  }
  data["inLoop"] = finding.in_loop;
  if (finding.fix) {
    data["fix"] = {{"title", finding.fix->title},
                   {"applicability", to_string(finding.fix->applicability)},
                   {"edits", to_lsp_edits(lines, finding.fix->edits, encoding)}};
  } else if (!finding.no_fix_reason.empty()) {
    data["noFixReason"] = finding.no_fix_reason;
  }
  diagnostic["data"] = std::move(data);
  return diagnostic;
}

json to_diagnostic(const Problem& problem, const LineIndex& lines, PositionEncoding encoding) {
  return {
      {"range", protocol::to_json(to_lsp_range(lines, problem.range, encoding))},
      {"severity", problem.kind == Problem::Kind::Syntax ? protocol::severity::kError : protocol::severity::kWarning},
      {"source", "graphmend"},
      {"message", problem.message}};
}

std::string fix_preview(const Fix& fix, std::string_view text, const LineIndex& lines) {
  if (fix.edits.empty()) return {};
  uint32_t first = fix.edits.front().range.start;
  uint32_t last = fix.edits.front().range.end;
  for (const TextEdit& edit : fix.edits) {
    first = std::min(first, edit.range.start);
    last = std::max(last, edit.range.end);
  }
  const uint32_t size = static_cast<uint32_t>(text.size());
  first = std::min(first, size);
  last = std::min(last, size);
  const uint32_t block_start = lines.line_start(lines.line_of(first));
  uint32_t last_line = lines.line_of(last);
  // An edit ending at the start of a line does not touch that line.
  if (last > first && last_line > 0 && last == lines.line_start(last_line)) --last_line;
  const uint32_t block_end = std::max(lines.line_end(last_line), last);
  const std::string_view old_block = text.substr(block_start, block_end - block_start);
  std::vector<TextEdit> shifted;
  for (const TextEdit& edit : fix.edits) {
    shifted.push_back({{std::min(edit.range.start, size) - block_start, std::min(edit.range.end, size) - block_start},
                       edit.new_text});
  }
  std::string new_block;
  try {
    new_block = apply_edits(old_block, std::move(shifted));
  } catch (const std::exception&) {
    return {};
  }
  std::string out;
  constexpr std::size_t kMaxLines = 40;
  append_lines(out, old_block, "- ", kMaxLines);
  append_lines(out, new_block, "+ ", kMaxLines);
  return out;
}

std::string hover_markdown(const Finding& finding, std::string_view text, const LineIndex& lines,
                           std::string_view docs_url, const std::function<std::string(uint32_t offset)>& where) {
  std::string md;
  const RuleInfo* rule = finding.rule;
  if (rule != nullptr) {
    md += "**" + std::string(rule->code) + "** `" + std::string(rule->name) + "`: ";
  }
  md += finding.message + "\n";
  if (finding.in_loop) {
    md += "\nThis break is inside a loop: Dynamo skips the whole frame, not just this statement.\n";
  }
  if (rule != nullptr && !rule->explanation.empty()) {
    md += "\n" + std::string(rule->explanation) + "\n";
  }
  if (rule != nullptr && !finding.registry_id.empty()) {
    md += "\n**Dynamo graph break** [" + std::string(finding.registry_id) + "](" + registry_url(finding.registry_id) +
          ") on torch " + finding.torch.str();
    if (const RegistryEntry* entry = find_registry_entry(finding.registry_id)) {
      md += ": " + std::string(entry->gb_type) + "\n";
      if (!entry->explanation.empty()) md += "\n" + std::string(entry->explanation) + "\n";
      if (!entry->hints.empty()) {
        md += "\nHints:\n";
        for (const std::string_view hint : entry->hints) md += "- " + std::string(hint) + "\n";
      }
    } else {
      md += "\n";
    }
  }
  if (finding.fix) {
    md += "\n**Fix** (" + std::string(to_string(finding.fix->applicability)) + "): " + finding.fix->title + "\n";
    const std::string preview = fix_preview(*finding.fix, text, lines);
    if (!preview.empty()) md += "\n```diff\n" + preview + "```\n";
  } else {
    md += "\n**No automatic fix**";
    if (!finding.no_fix_reason.empty()) md += ": " + finding.no_fix_reason;
    md += "\n";
  }
  if (!finding.related.empty()) {
    md += "\n";
    for (const RelatedLocation& location : finding.related) {
      const std::string place =
          where ? where(location.range.start) : "line " + std::to_string(lines.line_of(location.range.start) + 1);
      md += "- " + place + ": " + location.message + "\n";
    }
  }
  if (rule != nullptr) {
    if (std::string url = rule_url(*rule, docs_url); !url.empty()) {
      md += "\n[" + std::string(rule->code) + " documentation](" + url + ")\n";
    }
  }
  return md;
}

std::optional<TextEdit> noqa_edit(const Finding& finding, std::string_view text, const LineIndex& lines) {
  if (finding.rule == nullptr) return std::nullopt;
  const uint32_t line = lines.line_of(std::min(finding.range.start, static_cast<uint32_t>(text.size())));
  return noqa_insertion(text, lines, NoqaDirectives(text, lines), line, {std::string(finding.rule->code)});
}

std::optional<TextEdit> minimal_edit(std::string_view before, std::string_view after) {
  if (before == after) return std::nullopt;
  std::size_t prefix = 0;
  const std::size_t limit = std::min(before.size(), after.size());
  while (prefix < limit && before[prefix] == after[prefix]) ++prefix;
  while (prefix > 0 && prefix < before.size() && is_continuation(before[prefix])) --prefix;
  std::size_t suffix = 0;
  while (suffix < limit - prefix && before[before.size() - 1 - suffix] == after[after.size() - 1 - suffix]) {
    ++suffix;
  }
  // Keep the suffix starting on a character boundary.
  while (suffix > 0 && is_continuation(before[before.size() - suffix])) --suffix;
  TextEdit edit;
  edit.range = {static_cast<uint32_t>(prefix), static_cast<uint32_t>(before.size() - suffix)};
  edit.new_text = std::string(after.substr(prefix, after.size() - suffix - prefix));
  return edit;
}

namespace {

// Lines with their terminators ("\n", "\r\n" or a lone "\r"); the last may lack one.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find_first_of("\r\n", start);
    if (end == std::string_view::npos)
      end = text.size();
    else
      end += text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n' ? 2 : 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

}  // namespace

std::vector<TextEdit> diff_edits(std::string_view before, std::string_view after, int max_changes) {
  if (before == after) return {};
  const std::vector<std::string_view> a_all = split_lines(before);
  const std::vector<std::string_view> b_all = split_lines(after);
  // Common leading and trailing lines are not part of the search.
  std::size_t prefix = 0;
  while (prefix < a_all.size() && prefix < b_all.size() && a_all[prefix] == b_all[prefix]) {
    ++prefix;
  }
  std::size_t suffix = 0;
  while (suffix < a_all.size() - prefix && suffix < b_all.size() - prefix &&
         a_all[a_all.size() - 1 - suffix] == b_all[b_all.size() - 1 - suffix]) {
    ++suffix;
  }
  const auto b = [&](int j) { return b_all[prefix + static_cast<std::size_t>(j)]; };

  // The shortest edit script (dtl, the diff engine `check --diff` uses too).
  std::vector<std::string_view> a_mid(a_all.begin() + static_cast<std::ptrdiff_t>(prefix),
                                      a_all.end() - static_cast<std::ptrdiff_t>(suffix));
  std::vector<std::string_view> b_mid(b_all.begin() + static_cast<std::ptrdiff_t>(prefix),
                                      b_all.end() - static_cast<std::ptrdiff_t>(suffix));
  dtl::Diff<std::string_view, std::vector<std::string_view>> diff(a_mid, b_mid);
  diff.compose();
  if (diff.getEditDistance() > max_changes) {
    std::vector<TextEdit> single;
    if (auto edit = minimal_edit(before, after)) single.push_back(std::move(*edit));
    return single;
  }

  // Each step is a deleted line of `a` or an inserted line of `b`, at a position in `a`.
  struct Step {
    bool insert;
    int index;  // line in a (delete) or b (insert)
    int a_pos;  // position in a where it applies
  };
  std::vector<Step> steps;
  int a_pos = 0;
  for (const auto& [line, info] : diff.getSes().getSequence()) {
    (void)line;
    if (info.type == dtl::SES_ADD) {
      steps.push_back({true, static_cast<int>(info.afterIdx - 1), a_pos});
    } else if (info.type == dtl::SES_DELETE) {
      steps.push_back({false, static_cast<int>(info.beforeIdx - 1), a_pos});
      ++a_pos;
    } else {
      ++a_pos;
    }
  }

  // Byte offset of each line of `a` (within `before`).
  std::vector<uint32_t> a_offset(a_all.size() + 1, 0);
  for (std::size_t i = 0; i < a_all.size(); ++i) {
    a_offset[i + 1] = a_offset[i] + static_cast<uint32_t>(a_all[i].size());
  }
  std::vector<TextEdit> edits;
  std::size_t i = 0;
  while (i < steps.size()) {
    // A hunk: consecutive steps that touch the same stretch of `a`.
    const int start = steps[i].a_pos;
    int end = start;
    std::string inserted;
    while (i < steps.size() && steps[i].a_pos <= end) {
      if (steps[i].insert) {
        inserted.append(b(steps[i].index));
      } else {
        end = steps[i].index + 1;
      }
      ++i;
    }
    edits.push_back(
        {{a_offset[prefix + static_cast<std::size_t>(start)], a_offset[prefix + static_cast<std::size_t>(end)]},
         std::move(inserted)});
  }
  return edits;
}

}  // namespace graphmend::lsp
