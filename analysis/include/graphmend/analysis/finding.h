// What a rule reports: the finding, its rule's metadata, and (once transforms/ has looked) its fix.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/analysis/text.h"
#include "graphmend/analysis/torch_version.h"

namespace graphmend {

// One entry of torch/_dynamo/graph_break_registry.json (snapshot generated at build time).
struct RegistryEntry {
  std::string_view id;  // "GB0170"
  std::string_view gb_type;
  std::string_view context;
  std::string_view explanation;
  std::vector<std::string_view> hints;
  std::string_view since;  // the first supported torch release whose registry has the id ("2.13")
};
const RegistryEntry* find_registry_entry(std::string_view id);
std::string registry_url(std::string_view id);  // Dynamo's page for the id

// Static metadata of a rule: the single source for messages, `graphmend rule`, and docs/rules/.
struct RuleInfo {
  std::string_view code;         // "GM101"
  std::string_view name;         // "tensor-if"
  std::string_view family;       // "data-dependent control flow"
  std::string_view summary;      // one line
  std::string_view explanation;  // why Dynamo breaks here (Markdown)
  std::string_view registry_id;  // Dynamo graph-break id it predicts, e.g. "GB0170"
  // Where a later torch reports the break under another id: "2.15=GB9193" (space-separated, oldest first).
  std::string_view registry_id_since{};
  std::string_view fix_summary;  // what the fix does, or why there is none
  std::string_view example_bad;
  std::string_view example_good;
  bool fixable = false;  // some findings of this rule may carry a fix
  // What the fix keeps and what it may change (docs/fix-safety.md): required for fixable rules.
  std::string_view fix_safety{};
  // A branch on a tensor's value: torch.export (strict or not) cannot guard on it and fails with an error
  // where torch.compile breaks the graph; findings in a file that calls torch.export.export say so.
  bool export_fails = false;
};
// The id Dynamo gives the rule's break on `torch` (registry_id, or the newest registry_id_since entry
// that applies).
std::string_view registry_id_for(const RuleInfo& rule, TorchVersion torch);
const std::vector<const RuleInfo*>& all_rules();
const RuleInfo* find_rule(std::string_view code);
// The link to a rule's page (docs/check.md, "Rule links"), first that applies: `docs_url` (pyproject
// `docs-url`) joined with "GMxxx.md"; file:// of the page under $GRAPHMEND_DOCS_DIR; the base URL
// built in with -DGRAPHMEND_DOCS_URL; file:// of the page in docs_dir(); else "" (no link at all).
std::string rule_url(const RuleInfo& rule, std::string_view docs_url = {});
// The docs folder (holding rules/GMxxx.md) found at run time: $GRAPHMEND_DOCS_DIR, else
// <exe dir>/../share/graphmend/docs (the installed layout), else the source tree's docs/ for a binary
// running from its own build tree; nullopt when there is none.
std::optional<std::filesystem::path> docs_dir();
// `file://` URL of an absolute path, percent-encoding everything but unreserved characters and '/'.
std::string file_url(const std::filesystem::path& path);

// Safe fixes are applied by `--fix` and fix-all; Unsafe ones only on request (`--unsafe-fixes`, a quick fix
// the user picks). A finding with no fix that can be proven carries `no_fix_reason` instead.
enum class Applicability { Safe, Unsafe };
std::string_view to_string(Applicability applicability);

struct Fix {
  std::string title;
  Applicability applicability = Applicability::Safe;
  std::vector<TextEdit> edits;
};

struct RelatedLocation {
  ByteRange range;
  std::string message;
};

// What is reported beside the rules' findings: syntax CPython rejects, and code graphmend did not
// analyse. Not a rule: no code, no noqa, no fix.
struct Problem {
  enum class Kind { Syntax, NotAnalysed };
  Kind kind = Kind::Syntax;
  ByteRange range;
  std::string message;  // whole, with its class: "SyntaxError: invalid syntax", "TabError: ..."
  bool operator==(const Problem&) const = default;
};

struct Finding {
  const RuleInfo* rule = nullptr;
  std::string_view registry_id;  // registry_id_for(*rule, torch); empty for a rule with none
  TorchVersion torch{};          // the release whose facts applied (Config::torch)
  ByteRange range;
  std::string message;
  // The compiled entry that reaches this code, the loop that makes Dynamo skip the frame, ...
  std::vector<RelatedLocation> related;
  bool in_loop = false;
  std::optional<Fix> fix;     // filled by transforms/
  std::string no_fix_reason;  // why `fix` is empty, in plain words
};

}  // namespace graphmend
