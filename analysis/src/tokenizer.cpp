// CPython's indentation rules (Parser/lexer.c, tok_get_normal_mode): each logical line's indentation
// is measured twice, a tab advancing to the next multiple of 8 and to the next multiple of 1, and both
// measures must order the line the same way against the indentation stack (else TabError). A dedent
// must land on a column of the stack; an indent is only valid after a line ending with `:`, and such a
// line must be followed by one (the parser's "unexpected indent" and "expected an indented block").
#include "graphmend/analysis/tokenizer.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace graphmend {
namespace {

constexpr int kTabSize = 8;              // TABSIZE
constexpr int kAltTabSize = 1;           // ALTTABSIZE
constexpr size_t kMaxIndent = 100;       // MAXINDENT: levels of indentation
constexpr int kMaxLevel = 200;           // MAXLEVEL: brackets open at once
constexpr int kMaxFStringNesting = 150;  // MAXFSTRINGLEVEL

bool is_eol(char c) { return c == '\n' || c == '\r'; }
bool is_name_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '_' || u >= 0x80;
}
bool is_open(char c) { return c == '(' || c == '[' || c == '{'; }
bool is_close(char c) { return c == ')' || c == ']' || c == '}'; }

// r, b, u, f, t and their pairs, in either case: what may stand before a quote.
bool is_string_prefix(std::string_view word, bool& formatted) {
  if (word.empty() || word.size() > 2) return false;
  formatted = false;
  for (char c : word) {
    const char l = static_cast<char>(c | 0x20);
    if (l == 'f' || l == 't')
      formatted = true;
    else if (l != 'r' && l != 'b' && l != 'u')
      return false;
  }
  return true;
}

// Where a keyword-led line that wants a block is named in CPython's message.
std::string block_owner(std::string_view keyword) {
  if (keyword == "def") return "function definition";
  if (keyword == "class") return "class definition";
  for (std::string_view k :
       {"if", "elif", "else", "for", "while", "try", "except", "finally", "with", "match", "case"}) {
    if (keyword == k) return "'" + std::string(k) + "' statement";
  }
  return "";
}

// Where the scan of TokenizerCheck records its resume points, and the old scan's points it may meet.
struct ResumePoints {
  std::vector<uint32_t>* found = nullptr;  // appended, ascending
  // The old text's points past the edit, moved by `delta` into the new text: reaching one of them,
  // the scan is where the old one was, with the same text ahead, so it stops.
  std::vector<uint32_t>::const_iterator old_next, old_end;
  int64_t delta = 0;
  std::vector<uint32_t>::const_iterator met;  // the old point reached; old_end when none was
};

class Scanner {
 public:
  // With `layout`, the scan also records comments and the line ends that are not code, and does not stop
  // at an error. A scan from `start` > 0 must start at a resume point (its state is the initial one).
  explicit Scanner(std::string_view text, CommentLayout* layout = nullptr, size_t start = 0,
                   ResumePoints* resume = nullptr)
      : t_(text), n_(text.size()), start_(start), layout_(layout), resume_(resume) {}

  std::optional<TokenizerError> run() {
    size_t i = start_ == 0 && t_.starts_with("\xEF\xBB\xBF") ? 3 : start_;
    bool line_start = true;  // a physical line that starts a logical line (not inside brackets or continued)
    while (true) {
      if (line_start) {
        line_start = false;
        if (auto error = indentation(i); error && !layout_) return error;
        if (resume_ && top_level_line_ && !gave_up_ && at_resume_point()) return std::nullopt;
      }
      if (gave_up_) return std::nullopt;
      if (i >= n_) break;
      const char c = t_[i];
      if (c == '#') {
        i = comment(i);
      } else if (is_eol(c)) {
        i = after_eol(i);
        if (level_ == 0 && tokens_ > 0) end_logical_line();
        line_start = level_ == 0;
      } else if (c == '\\' && i + 1 < n_ && is_eol(t_[i + 1])) {
        not_code(i + 1);
        i = after_eol(i + 1);  // continued: the next physical line has no indentation of its own
      } else if (c == ' ' || c == '\t' || c == '\f') {
        ++i;
      } else if (c == '"' || c == '\'') {
        i = string(i, false, 0);
        token(false);
      } else if (is_name_char(c)) {
        size_t j = i;
        while (j < n_ && is_name_char(t_[j])) ++j;
        const std::string_view word = t_.substr(i, j - i);
        bool formatted = false;
        if (j < n_ && (t_[j] == '"' || t_[j] == '\'') && is_string_prefix(word, formatted)) {
          i = string(j, formatted, 0);
        } else {
          if (tokens_ < 2) words_[tokens_] = word;
          i = j;
        }
        token(false);
      } else if (c == ':') {
        const bool walrus = i + 1 < n_ && t_[i + 1] == '=';
        i += walrus ? 2 : 1;
        token(!walrus);
      } else {
        if (is_open(c)) {
          if (level_ >= kMaxLevel && !layout_) return error_at(i, "SyntaxError: too many nested parentheses");
          ++level_;
        } else if (is_close(c) && level_ > 0) {
          --level_;
        }
        ++i;
        token(false);
      }
    }
    if (level_ == 0 && tokens_ > 0) end_logical_line();
    if (expect_block_) {
      // At the end of the text: on its last line, as CPython reports it.
      size_t at = n_;
      if (at > 0 && is_eol(t_[at - 1])) at = t_[at - 1] == '\n' && at > 1 && t_[at - 2] == '\r' ? at - 2 : at - 1;
      return TokenizerError{{static_cast<uint32_t>(at), static_cast<uint32_t>(at)}, expected_block_message()};
    }
    return std::nullopt;
  }

 private:
  size_t after_eol(size_t i) const { return t_[i] == '\r' && i + 1 < n_ && t_[i + 1] == '\n' ? i + 2 : i + 1; }

  // Past the comment starting at `i`, recorded.
  size_t comment(size_t i) {
    const size_t start = i;
    while (i < n_ && !is_eol(t_[i])) ++i;
    if (layout_) layout_->comments.push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(i)});
    return i;
  }

  // The line end at `i` (inside a string, or after a backslash) is not code.
  void not_code(size_t i) {
    if (layout_) layout_->non_code_line_ends.push_back(static_cast<uint32_t>(i));
  }

  void token(bool colon) {
    last_colon_ = colon;
    ++tokens_;
  }

  // Records the top-level line just measured; true when it is one the old scan also reached.
  bool at_resume_point() {
    const auto here = static_cast<uint32_t>(logical_start_);
    resume_->found->push_back(here);
    while (resume_->old_next != resume_->old_end && *resume_->old_next + resume_->delta < here) ++resume_->old_next;
    if (resume_->old_next == resume_->old_end || *resume_->old_next + resume_->delta != here) return false;
    resume_->met = resume_->old_next;
    return true;
  }

  void end_logical_line() {
    expect_block_ = last_colon_;
    if (expect_block_) {
      block_start_ = logical_start_;
      block_keyword_ = words_[0] == "async" ? words_[1] : words_[0];
    }
    last_colon_ = false;
    tokens_ = 0;
    words_[0] = words_[1] = {};
  }

  // The indentation of the logical line starting at `i` against the stack; moves `i` past it. Lines
  // holding only whitespace and a comment do not count.
  std::optional<TokenizerError> indentation(size_t& i) {
    const size_t line_begin = i;
    top_level_line_ = false;
    int col = 0, alt = 0, continued_col = 0;
    while (i < n_) {
      const char c = t_[i];
      if (c == ' ') {
        ++col, ++alt;
      } else if (c == '\t') {
        col = (col / kTabSize + 1) * kTabSize;
        alt = (alt / kAltTabSize + 1) * kAltTabSize;
      } else if (c == '\f') {
        col = alt = 0;
      } else if (c == '\\' && i + 1 < n_ && is_eol(t_[i + 1])) {
        // The first backslash in the indentation decides it (CPython 3.12).
        continued_col = continued_col ? continued_col : col;
        not_code(i + 1);
        i = after_eol(i + 1);
        continue;
      } else {
        break;
      }
      ++i;
    }
    if (i >= n_ || t_[i] == '#' || is_eol(t_[i])) return std::nullopt;
    logical_start_ = i;
    if (continued_col) col = alt = continued_col;
    const bool expect_block = std::exchange(expect_block_, false);
    auto [top, alt_top] = indents_.back();
    if (col == top) {
      if (alt != alt_top) return tab_error(i);
      if (expect_block) return error_at(i, expected_block_message());
    } else if (col > top) {
      if (indents_.size() >= kMaxIndent) return error_at(i, "IndentationError: too many levels of indentation");
      if (alt <= alt_top) return tab_error(i);
      if (!expect_block) return error_at(i, "IndentationError: unexpected indent");
      indents_.emplace_back(col, alt);
    } else {
      while (indents_.size() > 1 && col < indents_.back().first) indents_.pop_back();
      if (col != indents_.back().first)
        return error_at(i, "IndentationError: unindent does not match any outer indentation level");
      if (alt != indents_.back().second) return tab_error(i);
      if (expect_block) return error_at(i, expected_block_message());
    }
    // Not indented at all and accepted: the scanner's state is the initial one (a resume point).
    top_level_line_ = i == line_begin && indents_.size() == 1;
    return std::nullopt;
  }

  // Past the string whose opening quote is at `i` (a line break ends an unterminated one-line string:
  // tree-sitter reports that). Replacement fields of f-strings may hold strings with any quote (PEP 701).
  size_t string(size_t i, bool formatted, int nesting) {
    const char quote = t_[i];
    const bool triple = i + 2 < n_ && t_[i + 1] == quote && t_[i + 2] == quote;
    i += triple ? 3 : 1;
    while (i < n_) {
      const char c = t_[i];
      if (c == '\\') {
        if (i + 1 < n_ && is_eol(t_[i + 1])) {
          not_code(i + 1);
          i = after_eol(i + 1);
        } else {
          i += 2;
        }
      } else if (c == quote) {
        if (!triple) return i + 1;
        if (i + 2 < n_ && t_[i + 1] == quote && t_[i + 2] == quote) return i + 3;
        ++i;
      } else if (is_eol(c)) {
        if (!triple) return i;
        not_code(i);
        i = after_eol(i);
      } else if (formatted && c == '{') {
        if (i + 1 < n_ && t_[i + 1] == '{') {
          i += 2;
        } else {
          i = replacement_field(i + 1, quote, triple, nesting + 1);
        }
      } else {
        ++i;
      }
    }
    return n_;
  }

  // Past the `}` closing the replacement field whose expression starts at `i`.
  size_t replacement_field(size_t i, char quote, bool triple, int nesting) {
    if (nesting > kMaxFStringNesting) {
      gave_up_ = true;  // CPython refuses such nesting too; nothing after it is checked
      return n_;
    }
    int depth = 0;
    bool spec = false;  // in the format specification: literal text with nested fields
    while (i < n_) {
      const char c = t_[i];
      if (spec) {
        if (c == '}') return i + 1;
        if (c == '{') {
          i = replacement_field(i + 1, quote, triple, nesting + 1);
          continue;
        }
        if (c == quote || (!triple && is_eol(c))) return i;  // malformed: the string's end is found again
        if (is_eol(c)) not_code(i);
        ++i;
        continue;
      }
      if (c == '"' || c == '\'') {
        i = string(i, false, nesting);
      } else if (is_name_char(c)) {
        size_t j = i;
        while (j < n_ && is_name_char(t_[j])) ++j;
        bool formatted = false;
        if (j < n_ && (t_[j] == '"' || t_[j] == '\'') && is_string_prefix(t_.substr(i, j - i), formatted))
          j = string(j, formatted, nesting);
        i = j;
      } else if (c == '#') {
        i = comment(i);
      } else if (is_eol(c)) {
        not_code(i);  // a line of a replacement field: no comment is added there
        i = after_eol(i);
      } else {
        if (is_open(c)) {
          ++depth;
        } else if (is_close(c)) {
          if (depth == 0) return c == '}' ? i + 1 : i;
          --depth;
        } else if (c == ':' && depth == 0) {
          spec = true;
        }
        ++i;
      }
    }
    return n_;
  }

  std::string expected_block_message() const {
    const std::string owner = block_owner(block_keyword_);
    return "IndentationError: expected an indented block after " + (owner.empty() ? "" : owner + " on ") + "line " +
           std::to_string(line_number(block_start_));
  }

  TokenizerError tab_error(size_t i) const {
    return error_at(i, "TabError: inconsistent use of tabs and spaces in indentation");
  }

  TokenizerError error_at(size_t i, std::string message) const {
    size_t end = i;
    while (end < n_ && !is_eol(t_[end])) ++end;
    return {{static_cast<uint32_t>(i), static_cast<uint32_t>(end)}, std::move(message)};
  }

  // 1-based line of offset `at`, counting "\n", "\r\n" and a lone "\r" as line ends.
  uint32_t line_number(size_t at) const {
    uint32_t line = 1;
    for (size_t i = 0; i < at && i < n_; ++i) {
      if (t_[i] == '\n' || (t_[i] == '\r' && (i + 1 >= n_ || t_[i + 1] != '\n'))) ++line;
    }
    return line;
  }

  std::string_view t_;
  size_t n_;
  size_t start_;
  std::vector<std::pair<int, int>> indents_{{0, 0}};  // (column with tabs of 8, column with tabs of 1)
  int level_ = 0;                                     // brackets open
  size_t tokens_ = 0;                                 // tokens of the logical line so far
  std::string_view words_[2];                         // its first two tokens, when names
  size_t logical_start_ = 0;
  bool last_colon_ = false;    // its last token is `:`
  bool expect_block_ = false;  // the last logical line ended with `:`
  size_t block_start_ = 0;     // where that line starts (its number is counted only for a message)
  std::string_view block_keyword_;
  bool gave_up_ = false;
  bool top_level_line_ = false;  // the logical line just measured starts its physical line, unindented
  CommentLayout* layout_;
  ResumePoints* resume_;
};

}  // namespace

std::optional<TokenizerError> find_tokenizer_error(std::string_view text) { return Scanner(text).run(); }

TokenizerCheck::TokenizerCheck(std::string_view text) {
  static const std::vector<uint32_t> kNoOldScan;
  ResumePoints resume{&resume_points_, kNoOldScan.cbegin(), kNoOldScan.cend(), 0, kNoOldScan.cend()};
  error_ = Scanner(text, nullptr, 0, &resume).run();
  last_scan_ = {0, static_cast<uint32_t>(text.size())};
}

void TokenizerCheck::edited(std::string_view text, uint32_t start, uint32_t old_end, uint32_t new_end) {
  const std::vector<uint32_t> old = std::move(resume_points_);
  const bool old_error = error_.has_value();
  resume_points_.clear();
  // The text before the edit is unchanged, and with it the scan up to the last resume point before the
  // edit (a point's place depends on the text up to and including its first character).
  auto after = std::lower_bound(old.begin(), old.end(), start);
  size_t from = 0;
  if (after != old.begin()) {
    --after;
    from = *after;
  }
  resume_points_.assign(old.begin(), after);
  // The old points at or past the old end of the edit have the same text ahead of them in both texts.
  const int64_t delta = static_cast<int64_t>(new_end) - static_cast<int64_t>(old_end);
  ResumePoints resume{&resume_points_, std::lower_bound(old.begin(), old.end(), old_end), old.end(), delta, old.end()};
  error_ = Scanner(text, nullptr, from, &resume).run();
  last_scan_ = {static_cast<uint32_t>(from), static_cast<uint32_t>(text.size())};
  if (resume.met == old.end()) return;
  last_scan_.end = static_cast<uint32_t>(*resume.met + delta);
  for (auto it = resume.met + 1; it != old.end(); ++it) resume_points_.push_back(static_cast<uint32_t>(*it + delta));
  // The old scan's error (after its last point, where it stopped) is found again from that point: its
  // message may name a line, whose number moved.
  if (old_error) error_ = Scanner(text, nullptr, resume_points_.back()).run();
}

CommentLayout find_comments(std::string_view text) {
  CommentLayout layout;
  Scanner(text, &layout).run();
  return layout;
}

}  // namespace graphmend
