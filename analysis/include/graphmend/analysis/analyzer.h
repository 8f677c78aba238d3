// The engine's entry point: facts for one document, then the rules over them.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "graphmend/analysis/config.h"
#include "graphmend/analysis/document.h"
#include "graphmend/analysis/finding.h"

namespace graphmend {

class SemanticModel;   // semantic.h: scopes, imports, tensor-ness, compiled regions
class NoqaDirectives;  // noqa.h: the file's `# noqa` directives

struct Analysis {
  std::shared_ptr<const SemanticModel> model;
  std::vector<Finding> findings;  // sorted by range; noqa and config applied (GM001's findings included)
  // Syntax CPython rejects, and regions too deeply nested to analyse (none in an exempt file), by position.
  std::vector<Problem> problems;
  // Whether every part of the file was read: only then may it be fixed.
  bool fully_read() const { return problems.empty(); }
};

// Pure function of the document text and config: safe to call from any thread on distinct documents.
Analysis analyze(const Document& document, const Config& config);

// Analyses one Document again and again as it is edited (the language server's loop), re-reading only
// the edited function when an edit stays inside one function body and changes nothing other functions
// see; otherwise it analyses afresh. Its results equal `analyze`'s (tests/unit/incremental_test.cpp
// checks this on random edits of real files). Not thread safe: one per document, used in order.
class IncrementalAnalyzer {
 public:
  // Runs on the findings that are new in this analysis (all of them when afresh), before they are
  // kept for reuse and before noqa directives apply: the place to attach fixes.
  using Finish = std::function<void(const Document&, Analysis&)>;
  struct Result {
    Analysis analysis;
    // The part of the document whose findings were computed again; nullopt when all of it was.
    std::optional<ByteRange> reanalyzed;
    // The edits broke the syntax so that tree-sitter's recovery moved definitions (an unclosed bracket
    // swallowing the methods after it): the findings are the last analysis's, moved through the edits,
    // less those in the edited or unparsable part. The next edit that leaves the structure as it was is
    // analysed against that analysis; after kMaxHeld edits in a row, afresh.
    bool held = false;
    // Held because the document's reparse is not finished (Document::apply_edit with a budget):
    // finish_parse() and run again for the real analysis of the same text.
    bool provisional = false;
  };
  static constexpr int kMaxHeld = 64;

  // `generation` names the configuration: a different one means analysing afresh. The returned
  // model is shared with this analyzer and changes with the next call.
  Result run(Document& document, const Config& config, uint64_t generation, const Finish& finish = {});
  void reset();

 private:
  std::optional<Result> update(const Document& document, const Config& config, const NoqaDirectives& noqa,
                               const Document::Changes& changes, const Finish& finish);
  std::optional<Result> hold(const Document& document, const Document::Changes& changes);
  // `findings` (of the base text) moved through `changes`, less those reaching into them or into `errors`.
  std::vector<Finding> carried(const std::vector<Finding>& findings, const Document::Changes& changes,
                               const std::vector<ByteRange>& errors) const;
  // The last problems of `kind` moved through `changes`, less those reaching into them.
  std::vector<Problem> carried_problems(const Document::Changes& changes, Problem::Kind kind) const;

  std::shared_ptr<SemanticModel> model_;
  // The rules' findings, before noqa directives apply: those are read from the current text when the
  // findings are computed (what a directive suppresses, and whether one suppresses anything, depends on
  // the whole file). `reported_`: the last result, directives applied, which held analyses carry.
  std::vector<Finding> findings_;
  std::vector<Finding> reported_;
  std::vector<Problem> problems_;
  const Document* document_ = nullptr;
  uint64_t generation_ = 0;
  bool exempt_ = false;
  int held_ = 0;
};

}  // namespace graphmend
