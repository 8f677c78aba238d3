#include "graphmend/analysis/noqa.h"

#include <algorithm>
#include <map>

#include "graphmend/analysis/tokenizer.h"

namespace graphmend {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

size_t skip_blanks(std::string_view s, size_t i) {
  while (i < s.size() && is_blank(s[i])) ++i;
  return i;
}

// `word` (lower case) at `i` of `s`, in any case.
bool word_at(std::string_view s, size_t i, std::string_view word) {
  if (i > s.size() || s.size() - i < word.size()) return false;
  for (size_t k = 0; k < word.size(); ++k) {
    if ((s[i + k] | 0x20) != word[k]) return false;
  }
  return true;
}

// The directive whose `#` is at `hash` of `comment` and whose `noqa` ends at `i`; nullopt when malformed
// (ruff's NoqaLexer::lex_directive).
std::optional<NoqaDirective> directive_after_noqa(std::string_view c, size_t hash, size_t i, uint32_t offset) {
  NoqaDirective d;
  d.range = {offset + static_cast<uint32_t>(hash), offset + static_cast<uint32_t>(i)};
  if (i == c.size() || c[i] == '#') return d;  // `# noqa`, `# noqa# more`
  if (is_blank(c[i])) {
    const size_t j = skip_blanks(c, i);
    if (j == c.size() || c[j] != ':') return d;  // `# noqa because ...`
    i = j;
  }
  if (c[i] != ':') return std::nullopt;  // `#noqaGM101`, `# noqa; GM101`
  ++i;
  bool joined = false;  // the last code ran into this one: `GM101GM201`
  while (i < c.size()) {
    i = skip_blanks(c, i);
    if (i == c.size()) break;
    if (c[i] == ',') {
      ++i;
      continue;
    }
    if (!is_upper(c[i])) break;  // an explanation, or the next comment
    size_t j = i;
    while (j < c.size() && is_upper(c[j])) ++j;
    if (j == c.size() || !is_digit(c[j])) {
      if (joined) return std::nullopt;  // `GM101Gx`
      break;                            // a word: the explanation starts
    }
    while (j < c.size() && is_digit(c[j])) ++j;
    d.codes.push_back(
        {std::string(c.substr(i, j - i)), {offset + static_cast<uint32_t>(i), offset + static_cast<uint32_t>(j)}});
    i = j;
    if (i == c.size()) break;
    if (c[i] == ',') {
      ++i;
      joined = false;
    } else if (is_blank(c[i]) || c[i] == '#') {
      joined = false;
    } else if (is_upper(c[i])) {
      joined = true;
    } else {
      return std::nullopt;  // `GM101x`
    }
  }
  if (d.codes.empty()) return std::nullopt;  // `# noqa:`, `# noqa: print-in-graph`
  d.range.end = d.codes.back().range.end;
  return d;
}

std::optional<NoqaDirective> parse(std::string_view c, uint32_t offset, bool file_level) {
  for (size_t hash = c.find('#'); hash != std::string_view::npos; hash = c.find('#', hash + 1)) {
    size_t i = skip_blanks(c, hash + 1);
    if (file_level) {
      if (!word_at(c, i, "graphmend")) continue;
      i = skip_blanks(c, i + 9);
      if (i == c.size() || c[i] != ':') continue;
      i = skip_blanks(c, i + 1);
    }
    if (!word_at(c, i, "noqa")) continue;
    if (auto d = directive_after_noqa(c, hash, i + 4, offset)) {
      d->file_level = file_level;
      return d;
    }
  }
  return std::nullopt;
}

std::string join(const std::vector<std::string>& codes) {
  std::string out;
  for (const std::string& code : codes) out += (out.empty() ? "" : ", ") + code;
  return out;
}

}  // namespace

bool NoqaDirective::suppresses(std::string_view code) const {
  return blanket() || std::any_of(codes.begin(), codes.end(), [&](const NoqaCode& c) { return c.code == code; });
}

std::optional<NoqaDirective> parse_line_noqa(std::string_view comment, uint32_t offset) {
  return parse(comment, offset, false);
}

std::optional<NoqaDirective> parse_file_noqa(std::string_view comment, uint32_t offset) {
  return parse(comment, offset, true);
}

NoqaDirectives::NoqaDirectives(std::string_view text, const LineIndex& lines) {
  const CommentLayout layout = find_comments(text);
  for (const ByteRange& range : layout.comments) {
    const std::string_view comment = text.substr(range.start, range.end - range.start);
    const uint32_t line = lines.line_of(range.start);
    if (auto d = parse_line_noqa(comment, range.start); d && (line_.empty() || line_.back().line != line)) {
      d->line = line;
      line_.push_back(std::move(*d));
    }
    // File level only on a line of its own (ruff ignores `x = 1  # ruff: noqa`).
    const uint32_t start = lines.line_start(line);
    const std::string_view before = text.substr(start, range.start - start);
    if (std::all_of(before.begin(), before.end(), is_blank)) {
      if (auto d = parse_file_noqa(comment, range.start)) {
        d->line = line;
        file_.push_back(std::move(*d));
      }
    }
  }
  for (uint32_t end : layout.non_code_line_ends) {
    const uint32_t line = lines.line_of(end);
    if (non_code_lines_.empty() || non_code_lines_.back() != line) non_code_lines_.push_back(line);
  }
}

NoqaDirectives NoqaDirectives::directives_only(std::string_view text, const LineIndex& lines) {
  // Every directive spells `noqa` (any case): look for its `q`, then for the letters around it. Run on every
  // analysis in the server: one find per case of `q` (memchr), not find_first_of (a memchr per byte).
  for (const char q_letter : {'q', 'Q'}) {
    for (size_t q = text.find(q_letter); q != std::string_view::npos; q = text.find(q_letter, q + 1)) {
      if (q >= 2 && q + 1 < text.size() && (text[q - 2] | 0x20) == 'n' && (text[q - 1] | 0x20) == 'o' &&
          (text[q + 1] | 0x20) == 'a')
        return NoqaDirectives(text, lines);
    }
  }
  return NoqaDirectives();
}

const NoqaDirective* NoqaDirectives::on_line(uint32_t line) const {
  auto it =
      std::lower_bound(line_.begin(), line_.end(), line, [](const NoqaDirective& d, uint32_t l) { return d.line < l; });
  return it != line_.end() && it->line == line ? &*it : nullptr;
}

bool NoqaDirectives::file_exempt() const {
  return std::any_of(file_.begin(), file_.end(), [](const NoqaDirective& d) { return d.blanket(); });
}

std::optional<NoqaDirectives::Match> NoqaDirectives::suppressing(std::string_view code, uint32_t line) const {
  for (const NoqaDirective& d : file_) {
    if (d.blanket()) return Match{&d, std::string::npos};
    for (size_t k = 0; k < d.codes.size(); ++k) {
      if (d.codes[k].code == code) return Match{&d, k};
    }
  }
  const NoqaDirective* d = on_line(line);
  if (!d) return std::nullopt;
  if (d->blanket()) return Match{d, std::string::npos};
  for (size_t k = 0; k < d->codes.size(); ++k) {
    if (d->codes[k].code == code) return Match{d, k};
  }
  return std::nullopt;
}

bool NoqaDirectives::takes_comment(uint32_t line) const {
  return !std::binary_search(non_code_lines_.begin(), non_code_lines_.end(), line);
}

std::optional<TextEdit> noqa_insertion(std::string_view text, const LineIndex& lines, const NoqaDirectives& directives,
                                       uint32_t line, std::vector<std::string> codes) {
  std::sort(codes.begin(), codes.end());
  codes.erase(std::unique(codes.begin(), codes.end()), codes.end());
  if (const NoqaDirective* d = directives.on_line(line)) {
    std::erase_if(codes, [&](const std::string& code) { return d->suppresses(code); });
    if (codes.empty()) return std::nullopt;
    return TextEdit{{d->range.end, d->range.end}, ", " + join(codes)};
  }
  if (codes.empty() || line >= lines.line_count() || !directives.takes_comment(line)) return std::nullopt;
  const uint32_t start = lines.line_start(line);
  const uint32_t end = lines.line_end(line);
  uint32_t at = end;
  while (at > start && (text[at - 1] == ' ' || text[at - 1] == '\t')) --at;
  return TextEdit{{at, end}, "  # noqa: " + join(codes)};
}

std::vector<TextEdit> noqa_insertions(std::string_view text, const LineIndex& lines,
                                      const std::vector<Finding>& findings, std::vector<uint32_t>* refused) {
  std::map<uint32_t, std::vector<std::string>> codes_by_line;
  for (const Finding& f : findings) {
    if (f.rule) codes_by_line[lines.line_of(f.range.start)].emplace_back(f.rule->code);
  }
  const NoqaDirectives directives(text, lines);
  std::vector<TextEdit> edits;
  for (auto& [line, codes] : codes_by_line) {
    if (auto edit = noqa_insertion(text, lines, directives, line, std::move(codes))) {
      edits.push_back(std::move(*edit));
    } else if (refused) {
      refused->push_back(line);
    }
  }
  return edits;
}

TextEdit noqa_removal(std::string_view text, const LineIndex& lines, const NoqaDirective& directive,
                      const std::vector<size_t>& keep) {
  if (!keep.empty() && !directive.codes.empty()) {
    std::vector<std::string> kept;
    for (size_t k : keep) kept.push_back(directive.codes[k].code);
    return {{directive.codes.front().range.start, directive.codes.back().range.end}, join(kept)};
  }
  const uint32_t line_start = lines.line_start(directive.line);
  const uint32_t line_end = lines.line_end(directive.line);
  uint32_t before = directive.range.start;
  while (before > line_start && is_blank(text[before - 1])) --before;
  uint32_t after = directive.range.end;
  while (after < line_end && is_blank(text[after])) ++after;
  if (before == line_start && after == line_end) {
    // Nothing else on the line: the line goes, with its end.
    const uint32_t next = directive.line + 1 < lines.line_count() ? lines.line_start(directive.line + 1)
                                                                  : static_cast<uint32_t>(text.size());
    return {{line_start, next}, ""};
  }
  if (after == line_end) return {{before, line_end}, ""};               // `x = 1  # noqa: GM101`
  if (text[after] == '#') return {{directive.range.start, after}, ""};  // `x  # noqa: GM101  # keep`
  // An explanation follows (`# noqa: GM101 because`): it stays a comment.
  uint32_t from = directive.range.start + 1;
  while (from < directive.range.end && is_blank(text[from])) ++from;
  return {{from, after}, ""};
}

bool is_graphmend_code(std::string_view code) { return code.size() > 2 && code.starts_with("GM") && is_digit(code[2]); }

}  // namespace graphmend
