// `# noqa` directives, with ruff's syntax and meaning (docs/check.md, "Suppressing findings"), read
// from real comments only: a `# noqa` inside a string is text. One parser for the analyzer (what is
// suppressed, GM001's unused directives), `--add-noqa` and the language server's quick fix.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/analysis/finding.h"
#include "graphmend/analysis/text.h"

namespace graphmend {

struct NoqaCode {
  std::string code;  // as written: upper-case letters, then digits ("GM101", "F401")
  ByteRange range;
};

struct NoqaDirective {
  bool file_level = false;      // `# graphmend: noqa[: CODES]` (the whole file) or `# noqa[: CODES]` (its line)
  uint32_t line = 0;            // 0-based line of its comment
  ByteRange range;              // from its `#` to the end of `noqa` (blanket) or of its last code
  std::vector<NoqaCode> codes;  // empty: every rule (a blanket directive)

  bool blanket() const { return codes.empty(); }
  // Whether it suppresses a finding of `code`: blanket, or `code` listed (whole codes, as ruff).
  bool suppresses(std::string_view code) const;
};

// The directive in one comment (`comment` from its `#` to the line's end, starting at `offset` in the
// file), or nullopt. The directive may follow other comment text (`# type: ignore # noqa: GM101`).
// Line level: `#`, optional spaces, `noqa` in any case; then nothing, `#`, or spaces and other text
// (blanket), or `:` (optionally after spaces) and codes separated by commas and/or spaces, up to the
// first item that is not a code (a trailing explanation). A malformed directive (`# noqa:` without
// codes, `#noqaGM101`, `# noqa: GM101x`) is none, and a later `#` in the comment is tried.
std::optional<NoqaDirective> parse_line_noqa(std::string_view comment, uint32_t offset = 0);
// File level, `# graphmend: noqa` and `# graphmend: noqa: CODES` (any case, spaces optional around the
// first `:`); whether its comment stands on a line of its own is the caller's to check.
std::optional<NoqaDirective> parse_file_noqa(std::string_view comment, uint32_t offset = 0);

// The directives of a whole file.
class NoqaDirectives {
 public:
  NoqaDirectives(std::string_view text, const LineIndex& lines);
  // The directives only, for the analyzer on every edit: a text without `noqa` in any case has none, and
  // is not scanned at all (the scan is linear in the whole file). takes_comment() is not available.
  static NoqaDirectives directives_only(std::string_view text, const LineIndex& lines);

  const std::vector<NoqaDirective>& line_directives() const { return line_; }  // by line, one at most each
  const std::vector<NoqaDirective>& file_directives() const { return file_; }
  const NoqaDirective* on_line(uint32_t line) const;
  // A blanket `# graphmend: noqa`: no rule looks at the file.
  bool file_exempt() const;
  // What suppresses a finding of `code` whose first line is `line`: a file-level directive listing it
  // (first), else the line's directive; `code_index` is the listed code's index (npos: blanket).
  struct Match {
    const NoqaDirective* directive = nullptr;
    size_t code_index = std::string::npos;
  };
  std::optional<Match> suppressing(std::string_view code, uint32_t line) const;
  // Whether a comment may be added at the end of `line`: it does not end inside a string or after a
  // backslash continuation.
  bool takes_comment(uint32_t line) const;  // (not after directives_only())

 private:
  NoqaDirectives() = default;
  std::vector<NoqaDirective> line_;
  std::vector<NoqaDirective> file_;
  std::vector<uint32_t> non_code_lines_;  // ascending
};

// The edit that makes `line` suppress `codes` too: they are appended to its `# noqa:` list, or
// `  # noqa: CODES` ends the line (after any comment there, trailing blanks dropped). nullopt when the
// line suppresses them all already (a blanket `# noqa` included) or cannot end in a comment.
std::optional<TextEdit> noqa_insertion(std::string_view text, const LineIndex& lines, const NoqaDirectives& directives,
                                       uint32_t line, std::vector<std::string> codes);

// `--add-noqa`: the edits making the first line of each finding suppress it, one per line; `refused`
// gets the lines that cannot end in a comment.
std::vector<TextEdit> noqa_insertions(std::string_view text, const LineIndex& lines,
                                      const std::vector<Finding>& findings, std::vector<uint32_t>* refused = nullptr);

// The edit that leaves only the codes of `directive` at the indices `keep` (ascending): the code list
// rewritten when some are kept; else the directive deleted with the blanks before it, keeping the rest
// of its comment, or its whole line when nothing else is on it (ruff's RUF100 fix).
TextEdit noqa_removal(std::string_view text, const LineIndex& lines, const NoqaDirective& directive,
                      const std::vector<size_t>& keep);

// GM001 unused-noqa (rules/GM001_unused_noqa.cpp): its findings come from the analyzer with their fix.
const RuleInfo& unused_noqa_rule();

// Whether `code` is graphmend's to judge: `GM` and digits. Other codes belong to other tools.
bool is_graphmend_code(std::string_view code);

}  // namespace graphmend
