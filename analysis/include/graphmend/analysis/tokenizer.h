// What CPython's tokenizer rejects and tree-sitter's grammar accepts: indentation (IndentationError,
// TabError) and bracket nesting. tree-sitter recovers from a stray indent or an inconsistent tab
// silently, so a file CPython cannot compile would otherwise be analysed and "fixed".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/analysis/text.h"

namespace graphmend {

struct TokenizerError {
  ByteRange range;      // the offending line, from its first token to its end
  std::string message;  // as CPython words it: "IndentationError: unexpected indent"
};

// The first error CPython's tokenizer (or its parser, for an indent it does not expect or a block it
// misses) raises on `text` about indentation or bracket nesting; nullopt when there is none. Strings,
// comments, brackets and backslash continuations are followed as CPython does; "\n", "\r\n" and a lone
// "\r" all end a line.
std::optional<TokenizerError> find_tokenizer_error(std::string_view text);

// find_tokenizer_error kept up to date through edits, for the editor: the scanner's state where an
// unindented logical line starts is always its initial one, so an edit is rescanned only from the last
// such line before it to the first one after it that the old scan also reached (clangd's preamble idea,
// at statement grain). Equal to find_tokenizer_error on the new text after every edit.
class TokenizerCheck {
 public:
  TokenizerCheck() = default;
  explicit TokenizerCheck(std::string_view text);
  // `text` is the new text, in which [start, new_end) replaced [start, old_end) of the old one.
  void edited(std::string_view text, uint32_t start, uint32_t old_end, uint32_t new_end);
  const std::optional<TokenizerError>& error() const { return error_; }
  // What the last scan read at most: from its resume point to the old scan's point it met, or to the end.
  ByteRange last_scan() const { return last_scan_; }

 private:
  std::vector<uint32_t> resume_points_;  // where unindented logical lines start, before any error
  std::optional<TokenizerError> error_;
  ByteRange last_scan_;
};

// Where the comments are, as CPython's tokenizer finds them (a `#` inside a string is none), and which
// line ends are not code: inside a string (or an f-string's replacement field), or after a backslash
// continuation, where no comment can be added. Scanned the same way as above, past any error.
struct CommentLayout {
  std::vector<ByteRange> comments;           // from the `#` to the end of its line, in order
  std::vector<uint32_t> non_code_line_ends;  // offsets of such line ends ("\r" of a "\r\n"), ascending
};
CommentLayout find_comments(std::string_view text);

}  // namespace graphmend
