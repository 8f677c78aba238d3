// Turning findings into fixes, and the fix loop (apply, re-analyse, repeat to a fixpoint).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/analysis/analyzer.h"

namespace graphmend {

// The engine's one entry: the analysis of `document` under `config`, each finding with its fix (or the
// reason it has none). `check` reports it, `--fix` starts its loop from it, the server publishes it.
Analysis check(const Document& document, const Config& config);

// Its incremental twin, for an editor: IncrementalAnalyzer::run, with fixes attached to the findings it
// computed afresh (the ones it carried through the edit keep theirs).
IncrementalAnalyzer::Result check_incremental(IncrementalAnalyzer& analyzer, Document& document, const Config& config,
                                              uint64_t generation);

// Fills `fix` (or `no_fix_reason`) of each finding in `analysis`, using the document's facts. None
// when a region of the file was too deeply nested to analyse. (check() does this.)
void attach_fixes(const Document& document, Analysis& analysis);

// The transforms that may fix findings of rule `code`, by name, in the order they are tried (each has
// its snapshot cases in tests/fixtures/transforms/<name>/).
std::vector<std::string_view> transforms_for(std::string_view code);

struct FixOptions {
  bool unsafe = false;  // also apply fixes whose applicability is Unsafe
  // Bound on the fix loop; 0: to the fixpoint. A fix may only become offerable once a later one is
  // applied (a log call deferred after the graph must come after every effect that follows it), so a
  // chain of N such fixes takes N passes: 0 bounds the loop by the first pass's findings plus 100.
  int max_passes = 0;
  // Byte ranges of the text no fix may touch (a notebook's cell separators and IPython lines): a fix
  // whose edits overlap one, insert strictly inside one or lie on both sides of one is not applied
  // (touches_protected). fix_all moves them with the text it edits (FixAllResult::protected_ranges).
  std::vector<ByteRange> protected_ranges = {};
};

// Whether `edits`, from the first to the last of them, overlap or insert strictly inside one of `ranges`
// (a fix with edits on both sides of a range spans it).
bool touches_protected(const std::vector<TextEdit>& edits, const std::vector<ByteRange>& ranges);

struct FixAllResult {
  std::string text;                            // the fixed text (== input when nothing applied)
  int applied = 0;                             // fixes applied across all passes
  std::map<std::string, int> applied_by_rule;  // the same, per rule code
  std::vector<Finding> remaining;              // findings left in `text`, fixes attached
  bool changed = false;
  bool converged = true;                    // false: the pass bound was reached with fixes still to apply
  std::vector<ByteRange> protected_ranges;  // FixOptions::protected_ranges, where they are in `text`
};

// Applies non-overlapping fixes, re-analyses and repeats; a pass that adds a syntax error is dropped.
// Never fixes a file that was not fully read to begin with (syntax errors, regions too deep).
FixAllResult fix_all(const std::string& path, const std::string& text, const Config& config, const FixOptions& options);
// The same, starting from `document` already checked under `config` (`analysis`: check()'s result),
// so the first pass does not parse and analyse the file again. `analysis` refers to `document`, which the
// loop then reuses: it ends as the document of the fixed text.
FixAllResult fix_all(Document& document, Analysis analysis, const Config& config, const FixOptions& fix_options);

}  // namespace graphmend
