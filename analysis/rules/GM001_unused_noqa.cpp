// GM001: a `# noqa` directive, or codes in one, that suppressed nothing (ruff's RUF100). Not a rule over
// traced code: the analyzer runs it on the noqa directives once the other rules' findings are known.
#include "graphmend/analysis/noqa.h"
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM001",
    .name = "unused-noqa",
    .family = "noqa directives",
    .summary = "`# noqa` directive, or code in one, that suppresses nothing",
    .explanation =
        "Not a graph break: a suppression that no longer suppresses anything. A `# noqa: GM401` left on a "
        "line after its `.item()` was fixed or moved would silently hide the next graph break written there. "
        "Like ruff's RUF100, GM001 reports the graphmend codes of a line directive (`# noqa: GM101`) or a "
        "file directive (`# graphmend: noqa: GM401`) that suppressed no finding: *unused* (the rule found "
        "nothing on that line, or in that file), *non-enabled* (the rule is not selected for the file), "
        "*duplicated*, or *unknown* (no such rule). Codes of other tools (`F401`, `E501`) and blanket "
        "directives (`# noqa`, which other linters read too, and `# graphmend: noqa`, which exempts GM001 "
        "as well) are left alone; a directive listing `GM001` is never reported, and a file graphmend could "
        "not fully read (syntax errors, regions too deep) is not checked.\n\n"
        "GM001 is not enabled by default, and selecting `GM` or `ALL` does not enable it: select it by its "
        "code (`--extend-select GM001`, or `extend-select = [\"GM001\"]` under `[tool.graphmend]`) or as "
        "`GM0`.",
    .registry_id = "",
    .fix_summary =
        "The codes that suppressed nothing are removed from the directive; when none is left, the directive "
        "goes with the blanks before it (the rest of its comment stays; a line that held only the directive "
        "is deleted).",
    .example_bad = "n = x.shape[0]  # noqa: GM401, E501",
    .example_good = "n = x.shape[0]  # noqa: E501",
    .fixable = true,
    .fix_safety =
        "Only comments change: the codes that suppressed nothing, or the whole directive. Kept: the codes that "
        "suppressed a finding, other tools' codes, the comment's other text, the code on the line. A line "
        "that held only the directive is removed. Nothing runs differently.",
};

void check(RuleContext&, const Visit&) {}

std::string quoted(const std::vector<std::string>& codes) {
  std::string out;
  for (const std::string& c : codes) out += (out.empty() ? "`" : ", `") + c + "`";
  return out;
}

}  // namespace

const RuleInfo& unused_noqa_rule() { return kInfo; }

std::vector<Finding> unused_noqa(const Document& document, const Config& config, const NoqaDirectives& directives,
                                 const std::set<std::pair<const NoqaDirective*, size_t>>& used) {
  std::vector<Finding> out;
  auto judge = [&](const NoqaDirective& d) {
    // Blanket: `# noqa` is other linters' too; `# graphmend: noqa` exempts the file from GM001 as well.
    if (d.blanket() || d.suppresses(kInfo.code)) return;
    std::vector<size_t> keep;
    std::vector<std::string> unused, disabled, duplicated, unknown;
    std::set<std::string_view> seen;
    for (size_t k = 0; k < d.codes.size(); ++k) {
      const std::string& code = d.codes[k].code;
      if (!seen.insert(code).second) {
        duplicated.push_back(code);
      } else if (used.contains({&d, k}) || !is_graphmend_code(code)) {
        keep.push_back(k);
      } else if (!find_rule(code)) {
        unknown.push_back(code);
      } else if (config.enabled(code, document.path())) {
        unused.push_back(code);
      } else {
        disabled.push_back(code);
      }
    }
    if (keep.size() == d.codes.size()) return;
    std::string why;
    auto add = [&](const char* what, const std::vector<std::string>& codes) {
      if (!codes.empty()) why += (why.empty() ? "" : "; ") + std::string(what) + ": " + quoted(codes);
    };
    add("unused", unused);
    add("non-enabled", disabled);
    add("duplicated", duplicated);
    add("unknown", unknown);
    Finding f;
    f.rule = &kInfo;
    f.range = d.range;
    f.message =
        std::string(d.file_level ? "Unused `graphmend: noqa` directive" : "Unused `noqa` directive") + " (" + why + ")";
    f.fix = Fix{keep.empty() ? "Remove unused `noqa` directive" : "Remove unused codes from `noqa` directive",
                Applicability::Safe,
                {noqa_removal(document.text(), document.lines(), d, keep)}};
    out.push_back(std::move(f));
  };
  for (const NoqaDirective& d : directives.line_directives()) judge(d);
  for (const NoqaDirective& d : directives.file_directives()) judge(d);
  return out;
}

const Rule& rule_GM001() {
  static const Rule rule{&kInfo, {}, check};
  return rule;
}

}  // namespace graphmend
