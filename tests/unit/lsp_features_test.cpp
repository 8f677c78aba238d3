#include <doctest/doctest.h>

#include <string>

#include "lsp/debounce.h"
#include "lsp/features.h"
#include "lsp/settings.h"

using namespace graphmend;
using namespace graphmend::lsp;
using nlohmann::json;

namespace {

const RuleInfo kRule{.code = "GM201",
                     .name = "print-in-graph",
                     .family = "side effects",
                     .summary = "print",
                     .explanation = "Printing is a side effect.",
                     .registry_id = "GB0059",
                     .fix_summary = "defer",
                     .example_bad = "print(x)",
                     .example_good = "",
                     .fixable = true};

Finding print_finding(std::string_view text) {
  Finding finding;
  finding.rule = &kRule;
  finding.registry_id = kRule.registry_id;  // as the analyzer sets it
  finding.torch = {2, 14};
  const auto start = static_cast<uint32_t>(text.find("print"));
  finding.range = {start, static_cast<uint32_t>(text.find(')', start) + 1)};
  finding.message = "`print` breaks the graph";
  finding.related.push_back({{0, 5}, "traced as part of `forward`"});
  return finding;
}

}  // namespace

TEST_CASE("features: a finding becomes a diagnostic with code, link, related info and data") {
  const std::string text = "def forward(x):\n    print(\"é\", x)\n";
  const LineIndex lines(text);
  Finding finding = print_finding(text);
  finding.fix = Fix{"Defer the print", Applicability::Safe, {{{20, 25}, "defer"}}};
  const json d = to_diagnostic(finding, lines, PositionEncoding::Utf16, "file:///m.py", 3);
  CHECK(d["code"] == "GM201");
  CHECK(d["source"] == "graphmend");
  CHECK(d["severity"] == 2);
  if (rule_url(kRule).empty()) {
    CHECK_FALSE(d.contains("codeDescription"));  // no page anywhere: no link rather than a dead one
  } else {
    CHECK(d["codeDescription"]["href"] == rule_url(kRule));
  }
  CHECK(to_diagnostic(finding, lines, PositionEncoding::Utf16, "file:///m.py", 3,
                      "https://example.org/rules")["codeDescription"]["href"] == "https://example.org/rules/GM201.md");
  CHECK(d["range"]["start"] == json{{"line", 1}, {"character", 4}});
  // "é" is one UTF-16 unit but two bytes.
  CHECK(d["range"]["end"] == json{{"line", 1}, {"character", 17}});
  CHECK(to_diagnostic(finding, lines, PositionEncoding::Utf8, "file:///m.py", 3)["range"]["end"] ==
        json{{"line", 1}, {"character", 18}});
  CHECK(d["relatedInformation"][0]["location"]["uri"] == "file:///m.py");
  CHECK(d["relatedInformation"][0]["message"] == "traced as part of `forward`");
  CHECK(d["data"]["version"] == 3);
  CHECK(d["data"]["registryId"] == "GB0059");
  CHECK(d["data"]["fix"]["title"] == "Defer the print");
  CHECK(d["data"]["fix"]["applicability"] == std::string(to_string(Applicability::Safe)));
  CHECK(d["data"]["fix"]["edits"][0]["newText"] == "defer");
  CHECK_FALSE(d["data"].contains("noFixReason"));

  finding.fix.reset();
  finding.no_fix_reason = "the branch has a side effect";
  const json without = to_diagnostic(finding, lines, PositionEncoding::Utf16, "file:///m.py", 3);
  CHECK(without["data"]["noFixReason"] == "the branch has a side effect");
  CHECK_FALSE(without["data"].contains("fix"));
}

TEST_CASE("features: hover shows the explanation, the registry entry and the fix or its absence") {
  const std::string text = "def forward(x):\n    print(x)\n    return x\n";
  const LineIndex lines(text);
  Finding finding = print_finding(text);
  finding.in_loop = true;
  finding.no_fix_reason = "no reason at all";
  std::string md = hover_markdown(finding, text, lines);
  CHECK(md.find("**GM201** `print-in-graph`") == 0);
  CHECK(md.find("Printing is a side effect.") != std::string::npos);
  CHECK(md.find("**Dynamo graph break** [GB0059]") != std::string::npos);
  CHECK(md.find(") on torch 2.14: ") != std::string::npos);
  CHECK(md.find("inside a loop") != std::string::npos);
  CHECK(md.find("**No automatic fix**: no reason at all") != std::string::npos);
  if (!rule_url(kRule).empty()) {
    CHECK(md.find("[GM201 documentation](" + rule_url(kRule) + ")") != std::string::npos);
  }
  CHECK(hover_markdown(finding, text, lines, "https://example.org/r/")
            .find("[GM201 documentation](https://example.org/r/GM201.md)") != std::string::npos);

  const auto start = static_cast<uint32_t>(text.find("print(x)"));
  finding.fix = Fix{"Defer it", Applicability::Unsafe, {{{start, start + 8}, "deferred(x)"}}};
  md = hover_markdown(finding, text, lines);
  CHECK(md.find("**Fix** (" + std::string(to_string(Applicability::Unsafe)) + "): Defer it") != std::string::npos);
  CHECK(md.find("```diff\n-     print(x)\n+     deferred(x)\n```") != std::string::npos);
}

TEST_CASE("features: fix preview covers every line an edit touches") {
  const std::string text = "a = 1\nif c:\n    b = 2\nelse:\n    b = 3\nz = 0\n";
  const LineIndex lines(text);
  const auto start = static_cast<uint32_t>(text.find("if c"));
  const auto end = static_cast<uint32_t>(text.find("z = 0"));
  const Fix fix{"predicate", Applicability::Safe, {{{start, end}, "b = where(c, 2, 3)\n"}}};
  CHECK(fix_preview(fix, text, lines) == "- if c:\n-     b = 2\n- else:\n-     b = 3\n+ b = where(c, 2, 3)\n");
}

TEST_CASE("features: noqa edits add a comment or extend an existing code list") {
  std::string text = "x = 1\n    print(x)   \ny = 2\n";
  LineIndex lines(text);
  Finding finding = print_finding(text);
  std::optional<TextEdit> edit = noqa_edit(finding, text, lines);
  REQUIRE(edit);
  CHECK(apply_edits(text, {*edit}) == "x = 1\n    print(x)  # noqa: GM201\ny = 2\n");

  text = "    print(x)  # noqa: GM101\n";
  lines = LineIndex(text);
  finding = print_finding(text);
  edit = noqa_edit(finding, text, lines);
  REQUIRE(edit);
  CHECK(apply_edits(text, {*edit}) == "    print(x)  # noqa: GM101, GM201\n");

  text = "    print(x)  # keep me\r\nz\r\n";
  lines = LineIndex(text);
  finding = print_finding(text);
  edit = noqa_edit(finding, text, lines);
  REQUIRE(edit);
  CHECK(apply_edits(text, {*edit}) == "    print(x)  # keep me  # noqa: GM201\r\nz\r\n");

  // A `# noqa` inside a string is no directive; a line ending inside a string takes no comment.
  text = "    print(x, \"# noqa: GM101\")\n";
  lines = LineIndex(text);
  finding = print_finding(text);
  edit = noqa_edit(finding, text, lines);
  REQUIRE(edit);
  CHECK(apply_edits(text, {*edit}) == "    print(x, \"# noqa: GM101\")  # noqa: GM201\n");
  text = "    print(x, \"\"\"a\nb\"\"\")\n";
  lines = LineIndex(text);
  finding = print_finding(text);
  CHECK_FALSE(noqa_edit(finding, text, lines));
}

TEST_CASE("features: minimal edits keep the common prefix and suffix on character boundaries") {
  CHECK_FALSE(minimal_edit("same", "same"));
  auto edit = minimal_edit("a = 1\nb = 2\n", "a = 1\nb = 3\n");
  REQUIRE(edit);
  CHECK(edit->range == ByteRange{10, 11});
  CHECK(edit->new_text == "3");
  // "é" (C3 A9) vs "è" (C3 A8): the shared lead byte must not be split off.
  edit = minimal_edit("x = \"\xC3\xA9\"", "x = \"\xC3\xA8\"");
  REQUIRE(edit);
  CHECK(edit->range == ByteRange{5, 7});
  CHECK(edit->new_text == "\xC3\xA8");
  const std::string before = "abcabc";
  edit = minimal_edit(before, "abc");
  REQUIRE(edit);
  CHECK(apply_edits(before, {*edit}) == "abc");
  edit = minimal_edit("", "new");
  REQUIRE(edit);
  CHECK(apply_edits("", {*edit}) == "new");
}

TEST_CASE("settings: known keys are read, bad values reported, nesting under graphmend accepted") {
  std::vector<std::string> warnings;
  Settings settings = merge_settings(Settings{},
                                     {{"graphmend",
                                       {{"run", "onSave"},
                                        {"debounce", 0},
                                        {"select", {"GM1"}},
                                        {"ignore", "GM2"},
                                        {"scope", "all"},
                                        {"unsafeFixes", true},
                                        {"fixAll", "yes"},
                                        {"logLevel", "debug"},
                                        {"validate", {{"enable", true}}}}}},
                                     &warnings);
  CHECK(settings.run == RunMode::OnSave);
  CHECK(settings.debounce_ms == 0);
  CHECK(settings.select == std::vector<std::string>{"GM1"});
  CHECK_FALSE(settings.ignore);
  CHECK(settings.scope == Scope::All);
  CHECK(settings.unsafe_fixes);
  CHECK(settings.fix_all);
  CHECK(settings.log_level == "debug");
  REQUIRE(warnings.size() == 2);
  CHECK(warnings[0].find("ignore") != std::string::npos);
  CHECK(warnings[1].find("fixAll") != std::string::npos);

  settings = merge_settings(settings, {{"debounce", "auto"}}, nullptr);
  CHECK_FALSE(settings.debounce_ms);

  Config config;
  config.select = {"GM"};
  config.ignore = {"GM6"};
  const Config applied = apply_settings(config, settings);
  CHECK(applied.select == std::vector<std::string>{"GM1"});
  CHECK(applied.ignore == std::vector<std::string>{"GM6"});
  CHECK(applied.scope == Scope::All);
}

TEST_CASE("debounce: adaptive to the median of recent analysis times, clamped; fixed wins") {
  using std::chrono::milliseconds;
  DebouncePolicy policy(milliseconds(50), milliseconds(500));
  CHECK(policy.next(std::nullopt) == milliseconds(50));
  CHECK(policy.next(0) == milliseconds(0));
  CHECK(policy.next(120) == milliseconds(120));
  for (int ms : {100, 300, 200, 5000, 250}) policy.record(milliseconds(ms));
  CHECK(policy.next(std::nullopt) == milliseconds(250));
  for (int i = 0; i < 5; ++i) policy.record(milliseconds(2));
  CHECK(policy.next(std::nullopt) == milliseconds(50));
  for (int i = 0; i < 5; ++i) policy.record(milliseconds(4000));
  CHECK(policy.next(std::nullopt) == milliseconds(500));
}

TEST_CASE("features: diff_edits gives one edit per changed block and reproduces the text") {
  const std::string before =
      "import torch\n\nclass M:\n    def f(self, x):\n        if c:\n"
      "            y = 1\n        else:\n            y = 2\n        return y\n";
  const std::string after =
      "import torch\nimport x\n\nclass M:\n    def f(self, x):\n"
      "        y = where(c, 1, 2)\n        return y\n";
  const auto edits = diff_edits(before, after);
  REQUIRE(edits.size() == 2);
  CHECK(edits[0].range == ByteRange{13, 13});
  CHECK(edits[0].new_text == "import x\n");
  CHECK(edits[1].new_text == "        y = where(c, 1, 2)\n");
  CHECK(apply_edits(before, edits) == after);
  CHECK(diff_edits(before, before).empty());
  // Over the change budget: one edit.
  CHECK(diff_edits(before, after, 1).size() == 1);
  CHECK(apply_edits(before, diff_edits(before, after, 1)) == after);
  // No trailing newline, and an emptied text.
  CHECK(apply_edits("a\nb", diff_edits("a\nb", "a\nc")) == "a\nc");
  CHECK(apply_edits("a\nb\n", diff_edits("a\nb\n", "")) == "");
  CHECK(apply_edits("", diff_edits("", "x\ny\n")) == "x\ny\n");
}

TEST_CASE("features: diff_edits on random line edits always reproduces the target") {
  uint32_t seed = 12345;
  const auto next = [&seed](uint32_t bound) {
    seed = seed * 1664525u + 1013904223u;
    return (seed >> 8) % bound;
  };
  const char* pool[] = {"a\n", "b\n", "c\n", "def f():\n", "    return 1\n", "\n", "x = 1\n"};
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> lines;
    const uint32_t count = next(30);
    for (uint32_t i = 0; i < count; ++i) lines.push_back(pool[next(7)]);
    std::vector<std::string> changed = lines;
    const uint32_t mutations = next(6);
    for (uint32_t i = 0; i < mutations; ++i) {
      const uint32_t op = next(3);
      const auto size = static_cast<std::ptrdiff_t>(changed.size());
      const auto where = static_cast<std::ptrdiff_t>(next(static_cast<uint32_t>(size) + 1));
      if (op == 0) {
        changed.insert(changed.begin() + where, pool[next(7)]);
      } else if (op == 1 && where < size) {
        changed.erase(changed.begin() + where);
      } else if (where < size) {
        changed[static_cast<std::size_t>(where)] = pool[next(7)];
      }
    }
    std::string before;
    std::string after;
    for (const auto& line : lines) before += line;
    for (const auto& line : changed) after += line;
    if (next(4) == 0 && !after.empty()) after.pop_back();  // no final newline
    const auto edits = diff_edits(before, after);
    REQUIRE_MESSAGE(apply_edits(before, edits) == after, "round " << round);
    for (std::size_t i = 1; i < edits.size(); ++i) {
      CHECK(edits[i - 1].range.end < edits[i].range.start);
    }
  }
}

TEST_CASE("features: rule links join a configured base URL, with or without its trailing slash") {
  CHECK(rule_url(kRule, "https://example.org/graphmend/rules/") == "https://example.org/graphmend/rules/GM201.md");
  CHECK(rule_url(kRule, "https://example.org/graphmend/rules") == "https://example.org/graphmend/rules/GM201.md");
  // Without one: the page found at run time (this runner sits in the build tree), never a page that is not there.
  const std::string url = rule_url(kRule);
  if (!url.empty()) {
    CHECK(url.ends_with("/rules/GM201.md"));
    if (url.starts_with("file://")) CHECK(url == "file://" + (docs_dir()->generic_string() + "/rules/GM201.md"));
  }
}

TEST_CASE("torch versions: parsing, the nearest supported release, a rule's id per release") {
  using graphmend::parse_torch_version;
  using graphmend::TorchVersion;
  CHECK(parse_torch_version("2.15.0+cu132") == TorchVersion{2, 15});
  CHECK(parse_torch_version("2.14") == TorchVersion{2, 14});
  CHECK(parse_torch_version("2.16.0.dev20261201") == TorchVersion{2, 16});
  CHECK_FALSE(parse_torch_version("latest"));
  CHECK_FALSE(parse_torch_version("2"));
  CHECK(graphmend::nearest_supported({2, 9}) == TorchVersion{2, 13});
  CHECK(graphmend::nearest_supported({2, 16}) == TorchVersion{2, 15});
  const graphmend::RuleInfo* gm603 = graphmend::find_rule("GM603");
  REQUIRE(gm603 != nullptr);
  CHECK(graphmend::registry_id_for(*gm603, {2, 14}) == "GB0206");
  CHECK(graphmend::registry_id_for(*gm603, {2, 15}) == "GB8985");
  const graphmend::RegistryEntry* time_call = graphmend::find_registry_entry("GB9193");
  REQUIRE(time_call != nullptr);  // the registry is the union of the supported releases'
  CHECK(time_call->since == "2.15");
  CHECK(graphmend::find_registry_entry("GB0007")->since == "2.13");
}
