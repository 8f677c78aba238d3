// Text model shared by every layer: byte ranges, edits, and conversion between byte offsets and
// line/character positions in UTF-8, UTF-16 or UTF-32 code units (LSP position encodings).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graphmend {

// Half-open range of byte offsets into a document's UTF-8 text.
struct ByteRange {
  uint32_t start = 0;
  uint32_t end = 0;
  bool operator==(const ByteRange&) const = default;
  bool contains(const ByteRange& other) const { return start <= other.start && other.end <= end; }
  bool overlaps(const ByteRange& other) const { return start < other.end && other.start < end; }
};

struct TextEdit {
  ByteRange range;
  std::string new_text;
  bool operator==(const TextEdit&) const = default;
};

enum class PositionEncoding { Utf8, Utf16, Utf32 };

// Zero-based line and character, the character counted in the chosen encoding's code units.
struct LinePosition {
  uint32_t line = 0;
  uint32_t character = 0;
  bool operator==(const LinePosition&) const = default;
};

class LineIndex {
 public:
  LineIndex() = default;
  explicit LineIndex(std::string_view text);

  uint32_t line_count() const { return static_cast<uint32_t>(line_starts_.size()); }
  uint32_t line_start(uint32_t line) const;
  // End of the line's content, before its terminator ("\n", "\r\n" or "\r").
  uint32_t line_end(uint32_t line) const;
  uint32_t line_of(uint32_t offset) const;

  LinePosition to_position(uint32_t offset, PositionEncoding encoding) const;
  // Positions past the end of a line clamp to the line's end; past the last line, to the text's end.
  uint32_t to_offset(LinePosition position, PositionEncoding encoding) const;
  // True when `position` names a real place in the text (no clamping needed).
  bool is_valid(LinePosition position, PositionEncoding encoding) const;

 private:
  std::string_view text_;
  std::vector<uint32_t> line_starts_;
};

// Applies non-overlapping edits (any order) to `text`. Overlapping edits throw std::invalid_argument.
std::string apply_edits(std::string_view text, std::vector<TextEdit> edits);

// The candidate nearest to `word` by optimal string alignment distance (an edit, or a swap of two
// neighbours, counts one), when it is close enough to be a typo: the "did you mean" of every usage and
// configuration error.
std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates);

// "\r\n" when the text's first line ending is CRLF, "\r" for old Mac files, "\n" otherwise.
std::string_view detect_line_ending(std::string_view text);

// Number of UTF-16 code units / code points in a UTF-8 string (invalid bytes count as one each).
uint32_t utf16_length(std::string_view utf8);
uint32_t utf32_length(std::string_view utf8);
bool is_valid_utf8(std::string_view bytes);

}  // namespace graphmend
