#include "graphmend/transforms/fixer.h"

#include <algorithm>
#include <stdexcept>

#include "graphmend/analysis/noqa.h"
#include "graphmend/analysis/phase_timing.h"
#include "transform.h"

namespace graphmend {

std::vector<std::string_view> transforms_for(std::string_view code) {
  std::vector<std::string_view> names;
  for (const Transform* t : registered_transforms()) {
    if (std::find(t->codes.begin(), t->codes.end(), code) != t->codes.end()) names.push_back(t->name);
  }
  return names;
}

Analysis check(const Document& document, const Config& config) {
  Analysis analysis = analyze(document, config);
  attach_fixes(document, analysis);
  return analysis;
}

IncrementalAnalyzer::Result check_incremental(IncrementalAnalyzer& analyzer, Document& document, const Config& config,
                                              uint64_t generation) {
  auto attach = [](const Document& edited, Analysis& fresh) { attach_fixes(edited, fresh); };
  return analyzer.run(document, config, generation, attach);
}

namespace {

// A comment inside a range an edit replaces whose text the replacement leaves out: the fix would lose it (an
// expression written over several lines with a comment on one, rewritten on one line). Empty when none is lost.
std::string dropped_comment(const Document& document, const Fix& fix) {
  std::string dropped;
  for (const TextEdit& edit : fix.edits) {
    if (edit.range.start == edit.range.end) continue;
    walk_preorder(document.root(), [&](TSNode node) {
      if (ts_node_end_byte(node) <= edit.range.start || ts_node_start_byte(node) >= edit.range.end) return Walk::Skip;
      if (!is_type(node, "comment")) return Walk::Descend;
      const std::string_view comment = document.node_text(node);
      if (ts_node_start_byte(node) >= edit.range.start && ts_node_end_byte(node) <= edit.range.end &&
          edit.new_text.find(comment) == std::string::npos) {
        dropped = std::string(comment);
        return Walk::Stop;
      }
      return Walk::Skip;
    });
    if (!dropped.empty()) break;
  }
  return dropped;
}

}  // namespace

void attach_fixes(const Document& document, Analysis& analysis) {
  timing::Scope fixing(timing::Phase::Fixes);
  if (!analysis.model) return;
  // What a fix's proof reads (bindings, attributes, callees) may lie in a region left out.
  const bool partial = std::any_of(analysis.problems.begin(), analysis.problems.end(),
                                   [](const Problem& p) { return p.kind == Problem::Kind::NotAnalysed; });
  for (Finding& finding : analysis.findings) {
    if (finding.rule == &unused_noqa_rule()) continue;  // GM001's fix comes from the analyzer
    finding.fix.reset();
    finding.no_fix_reason.clear();
    if (partial) {
      finding.no_fix_reason = "part of this file is too deeply nested to analyse, and a fix's proof may depend on it";
      continue;
    }
    bool recognised = false;  // a transform recognised the finding's pattern and said why it refuses
    for (const Transform* t : registered_transforms()) {
      if (std::find(t->codes.begin(), t->codes.end(), finding.rule->code) == t->codes.end()) continue;
      TransformResult result = t->apply(TransformContext{document, *analysis.model, finding});
      if (auto* fix = std::get_if<Fix>(&result)) {
        if (std::string comment = dropped_comment(document, *fix); !comment.empty()) {
          finding.no_fix_reason = "the rewrite would drop the comment `" + comment +
                                  "` written inside what it replaces: move the comment out and fix again";
          recognised = true;
          continue;
        }
        finding.fix = std::move(*fix);
        finding.no_fix_reason.clear();
        break;
      }
      const Refusal& refusal = std::get<Refusal>(result);
      if (refusal.recognised ? !recognised : finding.no_fix_reason.empty()) finding.no_fix_reason = refusal.reason;
      recognised |= refusal.recognised;
    }
    if (!finding.fix && finding.no_fix_reason.empty()) finding.no_fix_reason = std::string(finding.rule->fix_summary);
  }
}

namespace {

// Picks fixes whose edits overlap no edit already chosen (earlier findings first).
std::vector<TextEdit> non_overlapping_edits(const std::vector<Finding>& findings, const FixOptions& options,
                                            std::vector<std::string>& chosen) {
  std::vector<TextEdit> edits;
  for (const Finding& f : findings) {
    if (!f.fix || f.fix->edits.empty()) continue;
    if (f.fix->applicability == Applicability::Unsafe && !options.unsafe) continue;
    if (touches_protected(f.fix->edits, options.protected_ranges)) continue;
    bool clash = false;
    std::vector<TextEdit> fresh;
    for (const TextEdit& e : f.fix->edits) {
      bool duplicate = false;
      for (const TextEdit& taken : edits) {
        bool insertions = e.range.start == e.range.end && taken.range.start == taken.range.end;
        if (insertions && e.range.start == taken.range.start) {
          // Two fixes adding the same line (`import torch`) add it once; different lines both go in.
          duplicate |= e.new_text == taken.new_text;
          continue;
        }
        // Overlapping or touching ranges clash (an insertion at the edge of a replacement included).
        if (e.range.start < taken.range.end + 1 && taken.range.start < e.range.end + 1) clash = true;
      }
      if (!duplicate) fresh.push_back(e);
    }
    if (clash) continue;
    edits.insert(edits.end(), fresh.begin(), fresh.end());
    chosen.emplace_back(f.rule->code);
  }
  return edits;
}

// Moves `ranges` through `edits` (none of which touches them): an insertion at a range's start goes before it.
void shift_protected(std::vector<ByteRange>& ranges, const std::vector<TextEdit>& edits) {
  for (ByteRange& r : ranges) {
    int64_t delta = 0;
    for (const TextEdit& e : edits) {
      if (e.range.end <= r.start) delta += static_cast<int64_t>(e.new_text.size()) - (e.range.end - e.range.start);
    }
    r.start = static_cast<uint32_t>(r.start + delta);
    r.end = static_cast<uint32_t>(r.end + delta);
  }
}

}  // namespace

bool touches_protected(const std::vector<TextEdit>& edits, const std::vector<ByteRange>& ranges) {
  if (edits.empty()) return false;
  // The span from the first edit to the last: a fix with edits on both sides of a range spans it.
  uint32_t lo = edits.front().range.start, hi = edits.front().range.end;
  for (const TextEdit& e : edits) {
    lo = std::min(lo, e.range.start);
    hi = std::max(hi, e.range.end);
  }
  for (const ByteRange& r : ranges) {
    if (lo < r.end && r.start < hi) return true;
    if (lo == hi && r.start < lo && lo < r.end) return true;  // an insertion strictly inside
  }
  return false;
}

FixAllResult fix_all(const std::string& path, const std::string& text, const Config& config,
                     const FixOptions& fix_options) {
  Document document(path, text);
  Analysis analysis = check(document, config);
  return fix_all(document, std::move(analysis), config, fix_options);
}

FixAllResult fix_all(Document& document, Analysis analysis, const Config& config, const FixOptions& fix_options) {
  timing::Scope fixing(timing::Phase::Fixes);
  FixOptions options = fix_options;  // protected_ranges move with the text
  FixAllResult result;
  const std::string path = document.path();
  const std::string text = document.text();
  result.text = text;
  result.protected_ranges = options.protected_ranges;
  if (!analysis.fully_read()) {
    result.remaining = std::move(analysis.findings);
    return result;  // never fix a file we could not fully read
  }
  const int limit = options.max_passes > 0 ? options.max_passes : static_cast<int>(analysis.findings.size()) + 100;
  for (int pass = 0;; ++pass) {
    std::vector<std::string> chosen;  // the rule of each fix this pass applies
    std::vector<TextEdit> edits = non_overlapping_edits(analysis.findings, options, chosen);
    if (edits.empty()) break;
    if (pass == limit) {
      result.converged = false;
      break;
    }
    std::string next = apply_edits(result.text, edits);
    std::vector<TextEdit> applied = edits;
    Document candidate(path, next);
    if (candidate.has_syntax_errors()) {
      // Some fix of this pass breaks the file: keep the others, one at a time, and drop the bad ones.
      chosen.clear();
      next = result.text;
      for (const Finding& f : analysis.findings) {
        std::vector<std::string> one;
        std::vector<TextEdit> single = non_overlapping_edits({f}, options, one);
        if (single.empty()) continue;
        std::string attempt;
        try {
          attempt = apply_edits(next, single);
        } catch (const std::invalid_argument&) {
          continue;
        }
        if (Document(path, attempt).has_syntax_errors()) continue;
        next = std::move(attempt);
        chosen = std::move(one);
        applied = std::move(single);
        break;  // offsets of the other fixes are stale now: re-analyse first
      }
      candidate.replace_text(next);
    }
    if (candidate.has_syntax_errors() || next == result.text) break;
    result.text = std::move(next);
    shift_protected(options.protected_ranges, applied);
    result.protected_ranges = options.protected_ranges;
    result.applied += static_cast<int>(chosen.size());
    for (const auto& code : chosen) ++result.applied_by_rule[code];
    document = std::move(candidate);
    analysis = check(document, config);
  }
  result.changed = result.text != text;
  result.remaining = std::move(analysis.findings);
  return result;
}

}  // namespace graphmend
