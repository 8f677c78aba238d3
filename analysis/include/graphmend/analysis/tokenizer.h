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

// Where the comments are, as CPython's tokenizer finds them (a `#` inside a string is none), and which
// line ends are not code: inside a string (or an f-string's replacement field), or after a backslash
// continuation, where no comment can be added. Scanned the same way as above, past any error.
struct CommentLayout {
  std::vector<ByteRange> comments;           // from the `#` to the end of its line, in order
  std::vector<uint32_t> non_code_line_ends;  // offsets of such line ends ("\r" of a "\r\n"), ascending
};
CommentLayout find_comments(std::string_view text);

}  // namespace graphmend
