// TokenizerCheck, rescanning only around each edit, must give what a scan of the whole new text gives:
// random edits of code with strings, f-strings, brackets, tabs, continuations and every line break.
#include <doctest/doctest.h>

#include <optional>
#include <random>
#include <string>

#include "graphmend/analysis/document.h"
#include "graphmend/analysis/tokenizer.h"

using namespace graphmend;

namespace {

std::string describe(const std::optional<TokenizerError>& error) {
  if (!error) return "none";
  return std::to_string(error->range.start) + "-" + std::to_string(error->range.end) + " " + error->message;
}

const char* kStart =
    "import torch\n\n"
    "class A:\n    def f(self, x):\n        if x:\n            return (1,\n  2)\n        return '''a\nb'''\n\n"
    "def g(y):\n\ty = f'{y:{3}}'\n\treturn y\n\n"
    "x = [1,\n2]\n"
    "if x:\n    pass\n"
    "z = 1 \\\n  + 2\n"
    "class B:\n    pass\n";

// Pieces that open or close what the scanner follows (strings, brackets, blocks), or change indentation.
const char* kPieces[] = {"\n",         "\r\n",       "\r",  " ",      "    ",         "\t",  "(",  ")", "[", "]",
                         "'",          "\"",         "'''", "#",      "\\\n",         "f'{", "}'", ":", "x", "if x:\n",
                         "def h():\n", "class C:\n", "\f",  "pass\n", "\xEF\xBB\xBF", ""};

}  // namespace

TEST_CASE("an edited TokenizerCheck equals a scan of the whole new text") {
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    std::string text = kStart;
    TokenizerCheck check(text);
    REQUIRE(describe(check.error()) == describe(find_tokenizer_error(text)));
    for (int step = 0; step < 150; ++step) {
      const auto size = static_cast<uint32_t>(text.size());
      const uint32_t from = size == 0 ? 0 : static_cast<uint32_t>(rng() % (size + 1));
      const uint32_t to = std::min<uint32_t>(size, from + static_cast<uint32_t>(rng() % 6));
      const std::string inserted = kPieces[rng() % std::size(kPieces)];
      text.replace(from, to - from, inserted);
      check.edited(text, from, to, from + static_cast<uint32_t>(inserted.size()));
      INFO("seed " << seed << " step " << step << " text:\n" << text);
      REQUIRE(describe(check.error()) == describe(find_tokenizer_error(text)));
    }
  }
}

TEST_CASE("an edit inside one top-level statement rescans that statement only") {
  std::string text;
  for (int i = 0; i < 50; ++i) text += "def f" + std::to_string(i) + "(x):\n    return (x,\n  '''a\nb''')\n\n";
  TokenizerCheck check(text);
  const auto at = static_cast<uint32_t>(text.find("def f20"));
  const auto next = static_cast<uint32_t>(text.find("def f21"));
  const uint32_t inside = at + 22;  // in "return", on the block's first line
  text.insert(inside, "y");
  check.edited(text, inside, inside, inside + 1);
  CHECK_FALSE(check.error());
  CHECK(check.last_scan().start == at);
  CHECK(check.last_scan().end == next + 1);
  // An unclosed bracket reads on to the end of the text.
  text.insert(inside, "(");
  check.edited(text, inside, inside, inside + 1);
  CHECK(check.last_scan().start == at);
  CHECK(check.last_scan().end == text.size());
  CHECK(describe(check.error()) == describe(find_tokenizer_error(text)));
}

TEST_CASE("an error past the edit keeps its line number right once the scan meets the old one") {
  // The edit adds lines before an "expected an indented block" error two top-level statements later: the
  // scan meets the old scan at `y = 2`, and the message must name the moved line.
  std::string text = "x = 1\n\ny = 2\n\nif y:\nz = 3\n";
  TokenizerCheck check(text);
  REQUIRE(check.error());
  CHECK(check.error()->message == "IndentationError: expected an indented block after 'if' statement on line 5");
  text.insert(0, "a = 0\nb = 0\n");
  check.edited(text, 0, 0, 12);
  REQUIRE(check.error());
  CHECK(check.error()->message == "IndentationError: expected an indented block after 'if' statement on line 7");
  CHECK(describe(check.error()) == describe(find_tokenizer_error(text)));
}

TEST_CASE("a Document's tokenizer error follows its edits") {
  const std::string start = "def f(x):\n    return x\n\nclass A:\n    pass\n";
  Document document("t.py", start);
  CHECK_FALSE(document.has_syntax_errors());
  // "class A:\n  y = 1\n    pass": the block's second line is indented more than its first.
  const auto at = static_cast<uint32_t>(start.find("class A:") + 8);
  document.apply_edit({at, at}, "\n  y = 1");
  REQUIRE(document.has_syntax_errors());
  CHECK(document.syntax_errors().front().message == "IndentationError: unexpected indent");
  document.apply_edit({at, at + 8}, "");
  CHECK_FALSE(document.has_syntax_errors());
}
