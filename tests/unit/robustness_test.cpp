// Hostile and unusual syntax: nesting too deep to analyse, old Mac line ends, and the indentation
// CPython rejects although tree-sitter accepts it. tests/cli/test_check_cli.py checks the same files
// against CPython's own compile().
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "graphmend/analysis/analyzer.h"
#include "graphmend/analysis/semantic.h"
#include "graphmend/analysis/tokenizer.h"
#include "graphmend/transforms/fixer.h"
#include "lsp/features.h"

using namespace graphmend;

namespace {

const char* kModule = "import torch\nfrom torch import nn\n\n\nclass Deep(nn.Module):\n    def forward(self, x):\n";
const char* kOther = "\n\nclass Other(nn.Module):\n    def forward(self, x):\n        print(x)\n        return x\n";

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::string joined(const std::string& term, const std::string& op, int n) {
  std::string out = term;
  for (int i = 1; i < n; ++i) out += op + term;
  return out;
}

std::string deep_module(const std::string& expression) {
  return std::string(kModule) + "        return " + expression + "\n" + kOther;
}

std::vector<std::string> codes(const Analysis& a) {
  std::vector<std::string> out;
  for (const Finding& f : a.findings) out.emplace_back(f.rule->code);
  return out;
}

std::string tokenizer_message(const std::string& source) {
  auto error = find_tokenizer_error(source);
  return error ? error->message : "";
}

}  // namespace

TEST_CASE("syntax too deep to analyse is skipped whole and reported; the rest of the file is analysed") {
  const std::vector<std::pair<std::string, std::string>> shapes = {
      {"and", joined("x", " and ", 20000)},
      {"+", joined("x", " + ", 18000)},
      {".a", "x" + repeat(".a", 30000)},
      {"()", "x" + repeat("()", 30000)},
      {"[0]", "x" + repeat("[0]", 30000)},
      {"*", joined("x", " * ", 30000)},
      {"**", joined("x", " ** ", 30000)},
      {"not", repeat("not ", 30000) + "x"},
      {"parentheses", repeat("(", 3000) + "x" + repeat(")", 3000)},
  };
  for (const auto& [name, expression] : shapes) {
    CAPTURE(name);
    Document doc("m.py", deep_module(expression));
    Analysis a = analyze(doc, Config{});
    REQUIRE(a.model->skipped().size() == 1);
    const SkippedRegion& region = a.model->skipped()[0];
    CHECK(region.what == "function");
    CHECK(region.depth > kMaxSyntaxDepth);
    CHECK(doc.text().substr(region.range.start, 11) == "def forward");
    // 3,000 parentheses are also more than CPython's tokenizer takes (200).
    REQUIRE(a.problems.size() == (name == "parentheses" ? 2u : 1u));
    const Problem& p = a.problems.front();
    CHECK(p.kind == Problem::Kind::NotAnalysed);
    CHECK(p.message == "too deeply nested to analyse: " + std::to_string(region.depth) +
                           " levels (the limit is 1000); graphmend skips this function");
    CHECK(doc.lines().line_of(p.range.start) == 5);
    // The other class is still analysed, and no fix is offered anywhere in a file not fully read.
    CHECK(codes(a) == std::vector<std::string>{"GM201"});
    attach_fixes(doc, a);
    CHECK_FALSE(a.findings[0].fix);
    CHECK(a.findings[0].no_fix_reason.find("too deeply nested") != std::string::npos);
    CHECK_FALSE(fix_all("m.py", doc.text(), Config{}, FixOptions{}).changed);
  }
}

TEST_CASE("a region is the innermost definition, or the module-level statement") {
  const std::string deep = joined("x", " + ", 2000);
  SUBCASE("a method") {
    Document doc("m.py", std::string(kModule) +
                             "        return x\n\n    @property\n    def deep(self):\n        return " + deep + "\n" +
                             kOther);
    Analysis a = analyze(doc, Config{});
    REQUIRE(a.model->skipped().size() == 1);
    CHECK(doc.text().substr(a.model->skipped()[0].range.start, 9) == "@property");
    CHECK(a.model->find_class("Deep") != nullptr);
  }
  SUBCASE("a class body") {
    Document doc("m.py", "import torch\n\nclass A:\n    X = " + deep + "\n" + kOther);
    Analysis a = analyze(doc, Config{});
    REQUIRE(a.model->skipped().size() == 1);
    CHECK(a.model->skipped()[0].what == "class");
    CHECK(a.model->find_class("A") == nullptr);
    CHECK(codes(a) == std::vector<std::string>{"GM201"});
  }
  SUBCASE("a module-level statement") {
    Document doc("m.py", "import torch\nfrom torch import nn\nX = " + deep + "\n" + kOther);
    Analysis a = analyze(doc, Config{});
    REQUIRE(a.model->skipped().size() == 1);
    CHECK(a.model->skipped()[0].what == "statement");
    CHECK(codes(a) == std::vector<std::string>{"GM201"});
  }
  SUBCASE("just under the limit is analysed") {
    Document doc("m.py", deep_module(joined("x", " and ", 990)) + "\n");
    Analysis a = analyze(doc, Config{});
    CHECK(a.model->skipped().empty());
    CHECK(a.problems.empty());
    CHECK(codes(a) == std::vector<std::string>{"GM104", "GM201"});
  }
}

TEST_CASE("a syntax error deep in a long chain is found without recursion") {
  Document doc("m.py", deep_module(joined("x", " and ", 30000) + " and )"));
  CHECK(doc.has_syntax_errors());
  CHECK_FALSE(doc.error_ranges().empty());
  Analysis a = analyze(doc, Config{});
  CHECK_FALSE(a.fully_read());
}

TEST_CASE("the incremental path leaves out a function an edit makes too deep, and reads it again after") {
  const std::string source = std::string(kModule) + "        y = x\n        return y\n" + kOther;
  Document doc("m.py", source);
  IncrementalAnalyzer analyzer;
  Config config;
  auto first = analyzer.run(doc, config, 1);
  CHECK(first.analysis.problems.empty());
  CHECK(codes(first.analysis) == std::vector<std::string>{"GM201"});
  const auto at = static_cast<uint32_t>(source.find("y = x") + 4);
  const std::string deep = joined("x", " and ", 20000);
  doc.apply_edit({at, at + 1}, deep);
  auto second = analyzer.run(doc, config, 1);
  REQUIRE(second.analysis.problems.size() == 1);
  CHECK(second.analysis.problems[0].kind == Problem::Kind::NotAnalysed);
  CHECK(codes(second.analysis) == std::vector<std::string>{"GM201"});
  // An edit elsewhere is incremental and keeps the region.
  const auto print_at = static_cast<uint32_t>(doc.text().find("print(x)") + 6);
  doc.apply_edit({print_at, print_at + 1}, "x.sum()");
  auto third = analyzer.run(doc, config, 1);
  CHECK(third.reanalyzed);
  REQUIRE(third.analysis.problems.size() == 1);
  CHECK(third.analysis.problems == analyze(doc, config).problems);
  // Undone, the function is analysed again.
  doc.apply_edit({at, at + static_cast<uint32_t>(deep.size())}, "x");
  auto fourth = analyzer.run(doc, config, 1);
  CHECK(fourth.analysis.problems.empty());
  CHECK(codes(fourth.analysis) == codes(analyze(doc, config)));
}

TEST_CASE("a lone CR ends a line for the parser and the line index; offsets are the text's own") {
  // Two safe fixes far apart (kOther's print has only an unsafe fix in a forward).
  // `x + x` and `return x + 0`: same dtype for every x, and the input itself is never returned (aliasing).
  std::string lf = std::string(kModule) + "        if x.sum() > 0:\n            x = x + x\n        return x + 0\n" +
                   "\n\nclass Other(nn.Module):\n    def forward(self, x):\n        if x.sum() > 1:\n" +
                   "            x = x + x\n        return x + 0\n";
  std::string cr = lf;
  for (char& c : cr)
    if (c == '\n') c = '\r';
  Document a("m.py", lf), b("m.py", cr);
  CHECK_FALSE(b.has_syntax_errors());
  CHECK(b.lines().line_count() == a.lines().line_count());
  CHECK(b.text() == cr);
  Analysis fa = analyze(a, Config{}), fb = analyze(b, Config{});
  REQUIRE(codes(fb) == codes(fa));
  for (size_t i = 0; i < fa.findings.size(); ++i) CHECK(fb.findings[i].range == fa.findings[i].range);
  // Edits keep the tree in step: one that turns a lone CR into CRLF and back.
  const auto at = static_cast<uint32_t>(cr.find("return x + 0\r") + 13);
  b.apply_edit({at, at}, "\n");
  CHECK_FALSE(b.has_syntax_errors());
  b.apply_edit({at, at + 1}, "");
  CHECK_FALSE(b.has_syntax_errors());
  CHECK(codes(analyze(b, Config{})) == codes(fa));
  // Fixes keep the file's line ends, and the editor gets them as hunks, not as one edit of the file.
  FixAllResult fixed = fix_all("m.py", cr, Config{}, FixOptions{});
  CHECK(fixed.changed);
  CHECK(fixed.text.find('\n') == std::string::npos);
  const std::vector<TextEdit> hunks = lsp::diff_edits(cr, fixed.text);
  CHECK(hunks.size() >= 2);
  CHECK(hunks.front().range.start > 0);
  CHECK(apply_edits(cr, hunks) == fixed.text);
}

TEST_CASE("indentation CPython rejects is a syntax error; what it accepts is not") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"def f(x):\n    y = x\n        z = y\n    return z\n", "IndentationError: unexpected indent"},
      {"import torch\n  x = 1\n", "IndentationError: unexpected indent"},
      {"x = 1\nif x: y = 1\n    z = 2\n", "IndentationError: unexpected indent"},
      {"@decorator\n    def f(): pass\n", "IndentationError: unexpected indent"},
      {"def f(x):\n    if x:\n        y = x\n      z = 1\n    return x\n",
       "IndentationError: unindent does not match any outer indentation level"},
      {"if x:\n    y = 1\n\f  z = 2\n", "IndentationError: unindent does not match any outer indentation level"},
      {"def f(x):\n    if x:\n\ty = x\n    return x\n", "TabError: inconsistent use of tabs and spaces in indentation"},
      {"def f(x):\n        if x:\n\t    y = 1\n        return x\n",
       "TabError: inconsistent use of tabs and spaces in indentation"},
      {"if x:\n\ty = 1\n        z = 2\n", "TabError: inconsistent use of tabs and spaces in indentation"},
      {"def f():\nreturn 1\n", "IndentationError: expected an indented block after function definition on line 1"},
      {"if x:\n", "IndentationError: expected an indented block after 'if' statement on line 1"},
      {"class A:\n    # only a comment\n",
       "IndentationError: expected an indented block after class definition on line 1"},
      {"async def f():\npass\n", "IndentationError: expected an indented block after function definition on line 1"},
      {"x = 1\r  y = 2\r", "IndentationError: unexpected indent"},
      {"x = " + repeat("(", 201) + "1" + repeat(")", 201) + "\n", "SyntaxError: too many nested parentheses"},
      {[] {
         std::string s = "if x:\n";
         for (int i = 1; i < 100; ++i) s += std::string(i, ' ') + "if x:\n";
         return s + std::string(100, ' ') + "pass\n";
       }(),
       "IndentationError: too many levels of indentation"},
      // Accepted by CPython.
      {"def f(x):\n\tif x:\n        \ty = 1\n\treturn x\n", ""},
      {"def f(x):\n\tif x:\n\t\ty = 1\n\treturn x\n", ""},
      {"if x:\n  \f  y = 1\n", ""},
      {"def f(x):\n    y = (1 +\n  2)\n    z = 1 + \\\n 2\n    return '''\n  a\n'''\n", ""},
      {"def f(x):\n    y = 1\n        # comment\n  # comment\n            \n    return y\n", ""},
      {"def f(x):\n    y = 1\n\f    return y\n", ""},
      {"class A:\n    def f(self):\n        return {1: 2,\n  3: 4}[1:\n]\n", ""},
      {"if x: y = 1\nz = 2\n", ""},
      {"if (y := 1):\n    pass\n", ""},
      {"x = f'{a:{b}}' + f\"{d['k']!r:>{w}}\" + f'''{\n1}'''\nif x:\n    pass\n", ""},
      {"x = f\"{d[\"k\"]}\"\nif x:\n    pass\n", ""},  // PEP 701 (3.12)
      {"s = 'a:' # b:\nt = rb'\\':'\n", ""},
      {"if x:\r    y = 2\r", ""},
      {"\xEF\xBB\xBFx = 1\n", ""},
      {"x = " + repeat("(", 200) + "1" + repeat(")", 200) + "\n", ""},
  };
  for (const auto& [source, expected] : cases) {
    CAPTURE(source);
    CHECK(tokenizer_message(source) == expected);
    if (!expected.empty()) {
      Document doc("m.py", source);
      CHECK(doc.has_syntax_errors());
      const std::vector<Problem> errors = doc.syntax_errors();
      CHECK(std::any_of(errors.begin(), errors.end(), [&](const Problem& p) { return p.message == expected; }));
    }
  }
}

TEST_CASE("an IndentationError is reported at its line and the file is never fixed") {
  const std::string source = std::string(kModule) +
                             "        y = x * 2\n          z = y\n        if y.sum() > 0:\n"
                             "            y = y + 1\n        return y\n";
  Document doc("m.py", source);
  Analysis a = analyze(doc, Config{});
  REQUIRE(a.problems.size() >= 1);
  const auto it = std::find_if(a.problems.begin(), a.problems.end(),
                               [](const Problem& p) { return p.message == "IndentationError: unexpected indent"; });
  REQUIRE(it != a.problems.end());
  CHECK(doc.lines().line_of(it->range.start) == 7);
  CHECK(doc.text().substr(it->range.start, it->range.end - it->range.start) == "z = y");
  CHECK_FALSE(fix_all("m.py", source, Config{}, FixOptions{}).changed);
}

namespace {

std::string elif_chain(int tests) {
  std::string src = std::string(kModule) + "        s = x.float().sum()\n        if s > 0:\n            y = s * 0\n";
  for (int i = 1; i < tests; ++i)
    src += "        elif s > " + std::to_string(i) + ":\n            y = s * " + std::to_string(i) + "\n";
  return src + "        else:\n            y = s + 1\n        return y\n";
}

}  // namespace

TEST_CASE("an elif chain is predicated once, by the `if`'s fix; the elif findings point there") {
  // Each elif finding used to compute the whole chain's fix: quadratic (5,000 tests took over 100 s).
  const std::string src = elif_chain(40);
  Document doc("m.py", src);
  Analysis analysis = analyze(doc, Config{});
  attach_fixes(doc, analysis);
  REQUIRE(analysis.findings.size() == 40);
  CHECK(analysis.findings[0].fix);
  for (size_t i = 1; i < analysis.findings.size(); ++i) {
    CAPTURE(i);
    CHECK_FALSE(analysis.findings[i].fix);
    CHECK(analysis.findings[i].no_fix_reason.find("by the fix offered on its `if`") != std::string::npos);
  }
  FixAllResult fixed = fix_all("m.py", src, Config{}, FixOptions{});
  CHECK(fixed.applied == 1);
  CHECK(fixed.remaining.empty());
}

TEST_CASE("an elif chain too long for Python's parser once nested into torch.where is refused") {
  const std::string src = elif_chain(200);
  Document doc("m.py", src);
  Analysis analysis = analyze(doc, Config{});
  attach_fixes(doc, analysis);
  REQUIRE_FALSE(analysis.findings.empty());
  CHECK_FALSE(analysis.findings[0].fix);
  CHECK(analysis.findings[0].no_fix_reason.find("more than Python's parser accepts") != std::string::npos);
}

TEST_CASE("a class that names itself as its base does not stall call resolution") {
  // `class Block(Block)` (a same-name subclass): the base chain loops. Resolving `layer(x)` in a ModuleList
  // loop walked that chain without a bound.
  const std::string src =
      "import torch\nfrom torch import nn\n\n\nclass Block(Block):\n    def forward(self, x):\n"
      "        for layer in self.layers:\n            x = layer(x)\n        return x\n";
  Document doc("m.py", src);
  Analysis analysis = analyze(doc, Config{});
  CHECK(analysis.findings.empty());
}
