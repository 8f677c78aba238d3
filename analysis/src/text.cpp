#include "graphmend/analysis/text.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace graphmend {
namespace {

// Length of the UTF-8 sequence starting with `lead`, or 1 for an invalid lead byte.
uint32_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

// Walks code points of `text` from `begin` to `end`, counting units in `encoding`.
uint32_t count_units(std::string_view text, uint32_t begin, uint32_t end, PositionEncoding encoding) {
  if (encoding == PositionEncoding::Utf8) return end - begin;
  uint32_t units = 0;
  uint32_t i = begin;
  while (i < end) {
    uint32_t len = std::min(sequence_length(static_cast<unsigned char>(text[i])), end - i);
    units += (encoding == PositionEncoding::Utf16 && len == 4) ? 2 : 1;
    i += len;
  }
  return units;
}

}  // namespace

LineIndex::LineIndex(std::string_view text) : text_(text) {
  line_starts_.reserve(text.size() / 32 + 1);
  line_starts_.push_back(0);
  // Built on every keystroke in the server: memchr (vectorised) finds the "\n"s; only a text holding a
  // "\r" needs the byte-by-byte walk.
  if (std::memchr(text.data(), '\r', text.size()) == nullptr) {
    const char* begin = text.data();
    const char* end = begin + text.size();
    for (const char* at = begin; (at = static_cast<const char*>(std::memchr(at, '\n', end - at))) != nullptr;) {
      ++at;
      line_starts_.push_back(static_cast<uint32_t>(at - begin));
    }
    return;
  }
  for (uint32_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      line_starts_.push_back(i + 1);
    } else if (c == '\r') {
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
      line_starts_.push_back(i + 1);
    }
  }
}

uint32_t LineIndex::line_start(uint32_t line) const {
  if (line >= line_starts_.size()) return static_cast<uint32_t>(text_.size());
  return line_starts_[line];
}

uint32_t LineIndex::line_end(uint32_t line) const {
  if (line >= line_starts_.size()) return static_cast<uint32_t>(text_.size());
  uint32_t end = line + 1 < line_starts_.size() ? line_starts_[line + 1] : static_cast<uint32_t>(text_.size());
  while (end > line_starts_[line] && (text_[end - 1] == '\n' || text_[end - 1] == '\r')) --end;
  return end;
}

uint32_t LineIndex::line_of(uint32_t offset) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  return static_cast<uint32_t>(it - line_starts_.begin()) - 1;
}

LinePosition LineIndex::to_position(uint32_t offset, PositionEncoding encoding) const {
  offset = std::min(offset, static_cast<uint32_t>(text_.size()));
  uint32_t line = line_of(offset);
  uint32_t start = line_starts_[line];
  offset = std::min(offset, std::max(start, line_end(line)));
  return {line, count_units(text_, start, offset, encoding)};
}

uint32_t LineIndex::to_offset(LinePosition position, PositionEncoding encoding) const {
  if (position.line >= line_starts_.size()) return static_cast<uint32_t>(text_.size());
  uint32_t i = line_starts_[position.line];
  uint32_t end = line_end(position.line);
  if (encoding == PositionEncoding::Utf8) return std::min(i + position.character, end);
  uint32_t units = 0;
  while (i < end && units < position.character) {
    uint32_t len = std::min(sequence_length(static_cast<unsigned char>(text_[i])), end - i);
    uint32_t width = (encoding == PositionEncoding::Utf16 && len == 4) ? 2 : 1;
    if (units + width > position.character) break;  // inside a surrogate pair: stay before it
    units += width;
    i += len;
  }
  return i;
}

bool LineIndex::is_valid(LinePosition position, PositionEncoding encoding) const {
  if (position.line >= line_starts_.size()) return false;
  uint32_t start = line_starts_[position.line];
  return position.character <= count_units(text_, start, line_end(position.line), encoding);
}

std::string apply_edits(std::string_view text, std::vector<TextEdit> edits) {
  std::stable_sort(edits.begin(), edits.end(),
                   [](const TextEdit& a, const TextEdit& b) { return a.range.start < b.range.start; });
  std::string out;
  out.reserve(text.size());
  uint32_t cursor = 0;
  for (const TextEdit& edit : edits) {
    if (edit.range.start < cursor || edit.range.end < edit.range.start || edit.range.end > text.size())
      throw std::invalid_argument("overlapping or out-of-range text edits");
    out.append(text.substr(cursor, edit.range.start - cursor));
    out.append(edit.new_text);
    cursor = edit.range.end;
  }
  out.append(text.substr(cursor));
  return out;
}

std::string_view detect_line_ending(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') return "\n";
    if (text[i] == '\r') return (i + 1 < text.size() && text[i + 1] == '\n') ? "\r\n" : "\r";
  }
  return "\n";
}

uint32_t utf16_length(std::string_view utf8) {
  return count_units(utf8, 0, static_cast<uint32_t>(utf8.size()), PositionEncoding::Utf16);
}

uint32_t utf32_length(std::string_view utf8) {
  return count_units(utf8, 0, static_cast<uint32_t>(utf8.size()), PositionEncoding::Utf32);
}

bool is_valid_utf8(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    auto c = static_cast<unsigned char>(bytes[i]);
    uint32_t len = sequence_length(c);
    if (len == 1 && c >= 0x80) return false;
    if (i + len > bytes.size()) return false;
    uint32_t cp = len == 1 ? c : (c & (0x7F >> len));
    for (uint32_t k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(bytes[i + k]);
      if ((cc >> 6) != 0x2) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are invalid.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
    return d[a.size()][b.size()];
  };
  std::optional<std::string> best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const size_t d = distance(word, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace graphmend
