#include "graphmend/analysis/text.h"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace graphmend;

TEST_CASE("line index maps offsets to UTF-8, UTF-16 and UTF-32 positions") {
  // "é" is 2 bytes / 1 UTF-16 unit; "😀" is 4 bytes / 2 UTF-16 units / 1 code point.
  std::string text = "a\xC3\xA9\xF0\x9F\x98\x80x\r\nsecond\rthird\n";
  LineIndex idx(text);
  CHECK(idx.line_count() == 4);
  uint32_t x = 7;  // byte offset of 'x'
  CHECK(idx.to_position(x, PositionEncoding::Utf8) == LinePosition{0, 7});
  CHECK(idx.to_position(x, PositionEncoding::Utf16) == LinePosition{0, 4});
  CHECK(idx.to_position(x, PositionEncoding::Utf32) == LinePosition{0, 3});
  CHECK(idx.to_offset({0, 4}, PositionEncoding::Utf16) == x);
  CHECK(idx.to_offset({0, 3}, PositionEncoding::Utf32) == x);
  // A position inside a surrogate pair stays before the character.
  CHECK(idx.to_offset({0, 3}, PositionEncoding::Utf16) == 3);
  CHECK(idx.line_start(1) == 10);
  CHECK(idx.line_end(0) == 8);
  CHECK(idx.line_start(2) == 17);                                             // lone \r ends a line
  CHECK(idx.to_offset({1, 99}, PositionEncoding::Utf16) == idx.line_end(1));  // clamps
  CHECK_FALSE(idx.is_valid({1, 99}, PositionEncoding::Utf16));
  CHECK(idx.to_offset({99, 0}, PositionEncoding::Utf8) == text.size());
}

TEST_CASE("apply_edits applies in any order and rejects overlaps") {
  std::string text = "hello world";
  CHECK(apply_edits(text, {{{6, 11}, "there"}, {{0, 5}, "HELLO"}}) == "HELLO there");
  CHECK(apply_edits(text, {{{5, 5}, ","}}) == "hello, world");
  CHECK_THROWS_AS(apply_edits(text, {{{0, 6}, "a"}, {{5, 8}, "b"}}), std::invalid_argument);
}

TEST_CASE("UTF-8 validation rejects overlong, surrogate and truncated sequences") {
  CHECK(is_valid_utf8("plain ascii"));
  CHECK(is_valid_utf8("\xC3\xA9\xF0\x9F\x98\x80"));
  CHECK_FALSE(is_valid_utf8("\xC0\xAF"));      // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xED\xA0\x80"));  // surrogate
  CHECK_FALSE(is_valid_utf8("\xE2\x82"));      // truncated
  CHECK_FALSE(is_valid_utf8("\xFF"));
  CHECK(detect_line_ending("a\r\nb\n") == "\r\n");
  CHECK(detect_line_ending("a\nb") == "\n");
}

TEST_CASE("line index starts lines after each line break, with and without carriage returns") {
  const auto starts = [](const std::string& text) {
    LineIndex idx(text);
    std::vector<uint32_t> out;
    for (uint32_t line = 0; line < idx.line_count(); ++line) out.push_back(idx.line_start(line));
    return out;
  };
  CHECK(starts("") == std::vector<uint32_t>{0});
  CHECK(starts("a\nbc\n\nd") == std::vector<uint32_t>{0, 2, 5, 6});
  CHECK(starts("a\n") == std::vector<uint32_t>{0, 2});
  CHECK(starts("a\r\nbc\rd\n") == std::vector<uint32_t>{0, 3, 6, 8});
  CHECK(starts("\r\r\n\n") == std::vector<uint32_t>{0, 1, 3, 4});
}
