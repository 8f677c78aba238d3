// Turning findings into fixes, and the fix loop (apply, re-analyse, repeat to a fixpoint).
#pragma once

#include <string>
#include <vector>

#include "graphmend/analysis/analyzer.h"

namespace graphmend {

// Fills `fix` (or `no_fix_reason`) of each finding in `analysis`, using the document's facts. None
// when a region of the file was too deeply nested to analyse.
void attach_fixes(const Document& document, Analysis& analysis);

struct FixOptions {
  bool unsafe = false;   // also apply fixes whose applicability is Unsafe
  int max_passes = 8;    // bound on the fix loop
};

struct FixAllResult {
  std::string text;                // the fixed text (== input when nothing applied)
  int applied = 0;                 // fixes applied across all passes
  std::vector<Finding> remaining;  // findings left in `text`, fixes attached
  bool changed = false;
};

// Applies non-overlapping fixes, re-analyses and repeats; a pass that adds a syntax error is dropped.
// Never fixes a file that was not fully read to begin with (syntax errors, regions too deep).
FixAllResult fix_all(const std::string& path, const std::string& text, const Config& config,
                     const FixOptions& options);

}  // namespace graphmend
