// An edited Document's tree is the tree of its new text: the edit's points (rows and byte columns) are right
// across "\r\n" and lone "\r" line breaks, which tree-sitter-python reads differently from CPython.
#include <doctest/doctest.h>
#include <tree_sitter/api.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include "graphmend/analysis/document.h"

using namespace graphmend;

namespace {

std::string tree_of(const Document& document) {
  char* sexp = ts_node_string(document.root());
  std::string out(sexp);
  std::free(sexp);
  return out;
}

}  // namespace

TEST_CASE("an incrementally edited tree equals a fresh parse across CRLF and lone CR line breaks") {
  const std::string start = "def f(x):\r\n    if x:\r        return 1\n    y = [1,\r\n         2]\r\n    return y\r";
  const std::string pieces[] = {"\r", "\n", "\r\n", " ", "x", "(", ")", "z = 3\r\n", "    ", ""};
  std::mt19937 rng(7);
  Document edited("t.py", start);
  std::string text = start;
  for (int step = 0; step < 400; ++step) {
    const uint32_t size = static_cast<uint32_t>(text.size());
    const uint32_t from = size == 0 ? 0 : static_cast<uint32_t>(rng() % (size + 1));
    const uint32_t to = std::min<uint32_t>(size, from + static_cast<uint32_t>(rng() % 3));
    const std::string& inserted = pieces[rng() % std::size(pieces)];
    edited.apply_edit({from, to}, inserted);
    text.replace(from, to - from, inserted);
    REQUIRE(edited.text() == text);
    const Document fresh("t.py", text);
    REQUIRE_MESSAGE(tree_of(edited) == tree_of(fresh), "step " << step);
  }
}

TEST_CASE("a document shares the text it is given, and builds it only when the edit does not match") {
  const auto first = std::make_shared<const std::string>("x = 1\n");
  Document document("t.py", first);
  CHECK(document.shared_text() == first);
  const auto second = std::make_shared<const std::string>("x = 12\n");
  document.apply_edit({5, 5}, "2", second, std::chrono::microseconds{0});
  CHECK(document.shared_text() == second);  // one copy of the version: the caller's
  const auto wrong = std::make_shared<const std::string>("not the edit");
  document.apply_edit({0, 0}, "y", wrong, std::chrono::microseconds{0});
  CHECK(document.text() == "yx = 12\n");
  CHECK(document.shared_text() != wrong);
  Document moved(std::move(document));
  CHECK(moved.text() == "yx = 12\n");
  CHECK(moved.lines().line_count() == 2);  // the line index moved with the text it views
  CHECK(moved.lines().line_start(1) == 8);
}
