// `# noqa` directives (graphmend/analysis/noqa.h): ruff's syntax, real comments only, GM001, and the
// edits that add and remove codes.
#include "graphmend/analysis/noqa.h"

#include <doctest/doctest.h>

#include <string>

#include "graphmend/analysis/analyzer.h"
#include "graphmend/analysis/tokenizer.h"
#include "graphmend/transforms/fixer.h"

using namespace graphmend;

namespace {

// "GM101,GM2" for a directive with those codes, "*" for a blanket one, "-" for none.
std::string codes_of(const std::optional<NoqaDirective>& d) {
  if (!d) return "-";
  if (d->blanket()) return "*";
  std::string out;
  for (const NoqaCode& c : d->codes) out += (out.empty() ? "" : ",") + c.code;
  return out;
}

std::string line_noqa(std::string_view comment) { return codes_of(parse_line_noqa(comment)); }
std::string file_noqa(std::string_view comment) { return codes_of(parse_file_noqa(comment)); }

std::string range_text(std::string_view text, ByteRange r) {
  return std::string(text.substr(r.start, r.end - r.start));
}

// Findings as "CODE@row".
std::vector<std::string> found(const std::string& source, const Config& config = Config{}) {
  Document doc("m.py", source);
  Analysis a = analyze(doc, config);
  std::vector<std::string> out;
  for (const auto& f : a.findings)
    out.push_back(std::string(f.rule->code) + "@" + std::to_string(doc.lines().line_of(f.range.start) + 1));
  return out;
}

Config with_gm001() {
  Config c;
  c.extend_select = {"GM001"};
  return c;
}

const std::string kHead = "import torch\n\n\n@torch.compile\ndef f(x):\n";  // the body starts on line 6

}  // namespace

TEST_CASE("noqa: line directives as ruff lexes them") {
  CHECK(line_noqa("# noqa") == "*");
  CHECK(line_noqa("# NOQA") == "*");
  CHECK(line_noqa("#noqa") == "*");
  CHECK(line_noqa("# NoQa because it is fine") == "*");
  CHECK(line_noqa("# noqa# more") == "*");
  CHECK(line_noqa("# noqa: GM101") == "GM101");
  CHECK(line_noqa("# noqa:GM101,GM201") == "GM101,GM201");
  CHECK(line_noqa("# noqa: GM101, GM2 F401") == "GM101,GM2,F401");
  CHECK(line_noqa("# noqa : GM101") == "GM101");
  CHECK(line_noqa("# NOQA: GM101") == "GM101");
  CHECK(line_noqa("# noqa: GM101GM201") == "GM101,GM201");
  CHECK(line_noqa("# noqa: GM101 because of the mask") == "GM101");
  CHECK(line_noqa("# noqa: GM101  # expect: GM001") == "GM101");
  CHECK(line_noqa("# type: ignore # noqa: GM101") == "GM101");
  CHECK(line_noqa("# type: ignore  # noqa") == "*");
  // Malformed: no directive (a later `#` is still tried).
  CHECK(line_noqa("# noqa:") == "-");
  CHECK(line_noqa("# noqa: print-in-graph") == "-");
  CHECK(line_noqa("# noqa: gm101") == "-");
  CHECK(line_noqa("#noqaGM101") == "-");
  CHECK(line_noqa("# noqa; GM101") == "-");
  CHECK(line_noqa("# noqa: GM101x") == "-");
  CHECK(line_noqa("# noqa: # noqa: GM201") == "GM201");
  CHECK(line_noqa("# not a directive") == "-");
  CHECK(line_noqa("# graphmend: noqa") == "-");
  // Ranges: from the directive's `#` to the end of `noqa` or of its last code.
  const std::string comment = "# type: ignore # noqa: GM101, GM201 why";
  auto d = parse_line_noqa(comment, 100);
  REQUIRE(d);
  CHECK(d->range == ByteRange{115, 135});
  CHECK(d->codes[1].range == ByteRange{130, 135});
  d = parse_line_noqa("# NOQA here", 0);
  REQUIRE(d);
  CHECK(d->range == ByteRange{0, 6});
}

TEST_CASE("noqa: file directives") {
  CHECK(file_noqa("# graphmend: noqa") == "*");
  CHECK(file_noqa("# GRAPHMEND: NOQA") == "*");
  CHECK(file_noqa("#graphmend:noqa") == "*");
  CHECK(file_noqa("# graphmend : noqa: GM401") == "GM401");
  CHECK(file_noqa("# graphmend: noqa: GM401, GM101") == "GM401,GM101");
  CHECK(file_noqa("# generated # graphmend: noqa: GM401") == "GM401");
  CHECK(file_noqa("# noqa") == "-");
  CHECK(file_noqa("# graphmend noqa") == "-");
  CHECK(file_noqa("# ruff: noqa") == "-");
}

TEST_CASE("noqa: only real comments hold directives") {
  const std::string text =
      "s = \"# noqa\"\n"                        // 0: a string
      "t = '''\n# noqa: GM101\n'''\n"           // 1-3: a docstring line
      "u = f\"{x!r} # noqa\"  # noqa: GM201\n"  // 4: the comment, not the f-string
      "x = 1  # graphmend: noqa\n"              // 5: not on a line of its own: no file directive
      "    # graphmend: noqa: GM401\n"          // 6: a file directive
      "v = (1,  # noqa: GM301\n"                // 7: inside brackets: a comment
      "     2)\n"
      "w = 1 + \\\n"  // 9: continued by a backslash
      "    2\n";
  const LineIndex lines(text);
  const NoqaDirectives d(text, lines);
  REQUIRE(d.line_directives().size() == 2);
  CHECK(d.line_directives()[0].line == 4);
  CHECK(codes_of(d.line_directives()[0]) == "GM201");
  CHECK(d.line_directives()[1].line == 7);
  REQUIRE(d.file_directives().size() == 1);
  CHECK(d.file_directives()[0].line == 6);
  CHECK_FALSE(d.file_exempt());
  CHECK(d.suppressing("GM401", 0));
  CHECK(d.suppressing("GM201", 4));
  CHECK_FALSE(d.suppressing("GM201", 0));
  CHECK_FALSE(d.suppressing("GM101", 2));
  // A comment may end the lines of code, not those inside a string or continued by a backslash.
  CHECK(d.takes_comment(0));
  CHECK_FALSE(d.takes_comment(1));
  CHECK_FALSE(d.takes_comment(2));
  CHECK(d.takes_comment(3));
  CHECK(d.takes_comment(7));
  CHECK_FALSE(d.takes_comment(9));
  CHECK(NoqaDirectives("# graphmend: noqa\r\nx = 1\r\n", LineIndex("# graphmend: noqa\r\nx = 1\r\n")).file_exempt());
}

TEST_CASE("noqa: the comment scan follows CPython past errors") {
  // A comment in a multi-line f-string's replacement field (PEP 701); an indentation error does not stop it.
  const std::string text = "x = f'''{\n  y # c1\n}'''\n  z = 1  # c2\n";
  CommentLayout layout = find_comments(text);
  REQUIRE(layout.comments.size() == 2);
  CHECK(range_text(text, layout.comments[0]) == "# c1");
  CHECK(range_text(text, layout.comments[1]) == "# c2");
}

TEST_CASE("noqa: insertions add a directive or merge into one") {
  const std::string text =
      "a = 1   \n"                // 0
      "b = 2  # noqa: GM101\n"    // 1
      "c = 3  # noqa\n"           // 2
      "d = 4  # keep  # noqa:\n"  // 3: malformed, so a new directive follows it
      "e = '''\n'''\r\n";         // 4: ends inside a string
  const LineIndex lines(text);
  const NoqaDirectives d(text, lines);
  auto edit = [&](uint32_t line, std::vector<std::string> codes) {
    auto e = noqa_insertion(text, lines, d, line, std::move(codes));
    if (!e) return std::string("-");
    return apply_edits(text, {*e})
        .substr(lines.line_start(line), e->new_text.size() + (e->range.start - lines.line_start(line)));
  };
  CHECK(edit(0, {"GM401", "GM201", "GM401"}) == "a = 1  # noqa: GM201, GM401");
  CHECK(edit(1, {"GM201"}) == "b = 2  # noqa: GM101, GM201");
  CHECK(edit(1, {"GM101"}) == "-");
  CHECK(edit(2, {"GM201"}) == "-");
  CHECK(edit(3, {"GM201"}) == "d = 4  # keep  # noqa:  # noqa: GM201");
  CHECK(edit(4, {"GM201"}) == "-");
  // Once added, the directive is found again.
  std::string added = apply_edits(text, {*noqa_insertion(text, lines, d, 3, {"GM201"})});
  const LineIndex added_lines(added);
  CHECK(NoqaDirectives(added, added_lines).suppressing("GM201", 3));
}

TEST_CASE("noqa: removals keep the rest of the comment") {
  auto removed = [](const std::string& text, std::vector<size_t> keep) {
    const LineIndex lines(text);
    const NoqaDirectives d(text, lines);
    const NoqaDirective& directive = d.line_directives().empty() ? d.file_directives().at(0) : d.line_directives()[0];
    return apply_edits(text, {noqa_removal(text, lines, directive, keep)});
  };
  CHECK(removed("x = 1  # noqa: GM101\ny\n", {}) == "x = 1\ny\n");
  CHECK(removed("x = 1  # type: ignore # noqa: GM101\n", {}) == "x = 1  # type: ignore\n");
  CHECK(removed("x = 1  # noqa: GM101  # keep me\n", {}) == "x = 1  # keep me\n");
  CHECK(removed("x = 1  # noqa: GM101 because\n", {}) == "x = 1  # because\n");
  CHECK(removed("x = 1  # noqa: GM101, F401, GM201\n", {1}) == "x = 1  # noqa: F401\n");
  CHECK(removed("x = 1  # NOQA:GM101,F401,GM201 why\n", {0, 2}) == "x = 1  # NOQA:GM101, GM201 why\n");
  CHECK(removed("a\r\n# graphmend: noqa: GM401\r\nb\r\n", {}) == "a\r\nb\r\n");
  CHECK(removed("a\n    # noqa: GM101", {}) == "a\n");
}

TEST_CASE("noqa: what the analyzer suppresses") {
  const std::string item = kHead + "    return x.sum().item()";
  CHECK(found(item + "\n") == std::vector<std::string>{"GM401@6"});
  CHECK(found(item + "  # NOQA\n").empty());
  CHECK(found(item + "  #noqa:GM401\n").empty());
  CHECK(found(item + "  # noqa: GM4\n") == std::vector<std::string>{"GM401@6"});  // whole codes only
  CHECK(found(item + "  # noqa: GM101\n") == std::vector<std::string>{"GM401@6"});
  CHECK(found(item + "  # type: ignore # noqa: GM101, GM401\n").empty());
  CHECK(found(kHead + "    s = '# noqa'; return x.sum().item()\n") == std::vector<std::string>{"GM401@6"});
  // A finding over several lines: the directive goes on its first line.
  CHECK(found(kHead + "    return x.sum(  # noqa: GM401\n        0).item()\n").empty());
  // File level: everything, or the listed codes only.
  const std::string both = kHead + "    print(x)\n    return x.sum().item()\n";
  CHECK(found(both) == std::vector<std::string>{"GM201@6", "GM401@7"});
  CHECK(found("# graphmend: noqa\n" + both).empty());
  CHECK(found("# GRAPHMEND: NOQA: GM401\n" + both) == std::vector<std::string>{"GM201@7"});
  CHECK(found("x = 1  # graphmend: noqa\n" + both) == std::vector<std::string>{"GM201@7", "GM401@8"});
}

TEST_CASE("noqa: GM001 reports what suppressed nothing, only when selected") {
  const std::string src = kHead +
                          "    a = x.sum().item()  # noqa: GM401, GM101, F401\n"  // 6: GM101 unused
                          "    b = x + 1  # noqa: GM201, GM999\n"                 // 7: all unused
                          "    c = x + 2  # noqa\n"                               // 8: blanket: left alone
                          "    d = x + 3  # noqa: E501\n"                         // 9: another tool's
                          "    e = x + 4  # noqa: GM401, GM001\n"                 // 10: lists GM001
                          "    return (a + b + c + d + e).sum().item()  # noqa: GM401, GM401\n";  // 11: duplicated
  CHECK(found(src).empty());
  Config gm;
  gm.select = {"GM"};
  CHECK(found(src, gm).empty());
  Config all;
  all.select = {"ALL"};
  CHECK(found(src, all).empty());
  const std::vector<std::string> expected{"GM001@6", "GM001@7", "GM001@11"};
  CHECK(found(src, with_gm001()) == expected);
  Config family;
  family.select = {"GM0", "GM4"};
  CHECK(found(src, family) == expected);
  Config ignored = with_gm001();
  ignored.ignore = {"GM0"};
  CHECK(found(src, ignored).empty());

  Document doc("m.py", src);
  Analysis a = analyze(doc, with_gm001());
  attach_fixes(doc, a);  // GM001's fixes come from the analyzer and stay
  REQUIRE(a.findings.size() == 3);
  CHECK(a.findings[0].message == "Unused `noqa` directive (unused: `GM101`)");
  CHECK(a.findings[1].message == "Unused `noqa` directive (unused: `GM201`; unknown: `GM999`)");
  CHECK(a.findings[2].message == "Unused `noqa` directive (duplicated: `GM401`)");
  CHECK(range_text(src, a.findings[0].range) == "# noqa: GM401, GM101, F401");
  FixAllResult fixed = fix_all("m.py", src, with_gm001(), FixOptions{});
  CHECK(fixed.remaining.empty());
  CHECK(fixed.text == kHead +
                          "    a = x.sum().item()  # noqa: GM401, F401\n"
                          "    b = x + 1\n"
                          "    c = x + 2  # noqa\n"
                          "    d = x + 3  # noqa: E501\n"
                          "    e = x + 4  # noqa: GM401, GM001\n"
                          "    return (a + b + c + d + e).sum().item()  # noqa: GM401\n");

  // A code whose rule is not enabled here is "non-enabled"; a file directive unused in the whole file.
  Config no_print = with_gm001();
  no_print.ignore = {"GM201"};
  CHECK(found(kHead + "    print(x)  # noqa: GM201\n    return x\n", no_print) == std::vector<std::string>{"GM001@6"});
  Document file_doc("m.py", "# graphmend: noqa: GM401, GM201\n" + kHead + "    print(x)\n    return x\n");
  Analysis file_level = analyze(file_doc, with_gm001());
  REQUIRE(file_level.findings.size() == 1);
  CHECK(file_level.findings[0].message == "Unused `graphmend: noqa` directive (unused: `GM401`)");
  CHECK(found("# graphmend: noqa: GM001, GM401\n" + kHead + "    return x\n", with_gm001()).empty());
  CHECK(found("# graphmend: noqa\n" + kHead + "    return x  # noqa: GM401\n", with_gm001()).empty());
  // Not in a file graphmend could not fully read.
  CHECK(found(kHead + "    return x  # noqa: GM401\n  y = (\n", with_gm001()).empty());
}

TEST_CASE("noqa: GM0 rules are opt-in in the selection") {
  Config c;
  CHECK(c.enabled("GM401", "m.py"));
  CHECK_FALSE(c.enabled("GM001", "m.py"));
  c.select = {"ALL"};
  CHECK_FALSE(c.enabled("GM001", "m.py"));
  c.extend_select = {"GM00"};
  CHECK(c.enabled("GM001", "m.py"));
  c.ignore = {"GM"};
  CHECK_FALSE(c.enabled("GM001", "m.py"));
}
