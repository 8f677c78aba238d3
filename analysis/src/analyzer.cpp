#include "graphmend/analysis/analyzer.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

#include "graphmend/analysis/noqa.h"
#include "graphmend/analysis/phase_timing.h"
#include "graphmend/analysis/semantic.h"
#include "rule.h"

namespace graphmend {
namespace {

// Dispatch table: node type -> rules that inspect it.
using Dispatch = std::unordered_map<std::string_view, std::vector<const Rule*>>;

const Dispatch& dispatch() {
  static const Dispatch table = [] {
    Dispatch d;
    for (const Rule* r : registered_rules()) {
      for (auto t : r->node_types) d[t].push_back(r);
    }
    return d;
  }();
  return table;
}

// Walks one traced function body the way Dynamo sees it: branches it prunes at trace time
// (is_compiling() and friends) are skipped, nested definitions are separate functions.
class TracedWalker {
 public:
  TracedWalker(RuleContext& ctx, const FunctionInfo& fn) : ctx_(ctx), fn_(fn) {}

  void walk(TSNode node, TSNode loop) {
    auto t = type_of(node);
    visit(node, loop);
    if (t == "function_definition" || t == "lambda" || t == "class_definition" || t == "decorated_definition") return;
    path_.push_back(node);
    walk_children(node, t, loop);
    path_.pop_back();
  }

 private:
  void walk_children(TSNode node, std::string_view t, TSNode loop) {
    if (t == "if_statement" || t == "elif_clause") {
      walk_if(node, loop);
      return;
    }
    if (t == "conditional_expression" && named_child_count(node) >= 3) {
      // `a if is_compiling() else b`: only the taken alternative is traced.
      auto truth = ctx_.model.static_truth(named_child(node, 1), &fn_);
      if (truth) {
        walk(ts_node_named_child(node, *truth ? 0 : 2), loop);
        return;
      }
    }
    TSNode inner_loop = (t == "for_statement" || t == "while_statement") ? node : loop;
    TSNode right = t == "for_statement" ? field(node, "right") : TSNode{};
    for (TSNode child : named_children(node)) {
      // The iterable of a for loop is evaluated once, outside the loop's repetition.
      bool outside = t == "for_statement" && ts_node_eq(child, right);
      walk(child, outside ? loop : inner_loop);
      if (t == "block" && leaves_block_when_traced(child)) return;
    }
  }

 public:
  // `if is_tracing(x): return` (a test Dynamo decides true, whose body always leaves): the rest of the
  // block never runs under Dynamo. The same for raise, continue and break.
  bool leaves_block_when_traced(TSNode statement) const {
    if (!is_type(statement, "if_statement")) return false;
    if (ctx_.model.static_truth(field(statement, "condition"), &fn_) != true) return false;
    TSNode body = field(statement, "consequence");
    const uint32_t n = ts_node_named_child_count(body);
    for (uint32_t i = n; i > 0; --i) {
      TSNode last = ts_node_named_child(body, i - 1);
      if (is_type(last, "comment")) continue;
      auto lt = type_of(last);
      return lt == "return_statement" || lt == "raise_statement" || lt == "continue_statement" ||
             lt == "break_statement";
    }
    return false;
  }

 private:
  // Out of line: its locals would otherwise sit in every frame of the recursion.
  [[gnu::noinline]] void visit(TSNode node, TSNode loop) {
    auto it = dispatch().find(type_of(node));
    if (it == dispatch().end()) return;
    Visit v{node, fn_, loop, path_};
    for (const Rule* r : it->second) r->check(ctx_, v);
  }

  void walk_if(TSNode node, TSNode loop) {
    TSNode condition = field(node, "condition");
    auto truth = ctx_.model.static_truth(condition, &fn_);
    if (!truth) walk(condition, loop);
    if (truth != false) walk(field(node, "consequence"), loop);
    if (truth == true) return;  // alternatives never run under Dynamo
    for (TSNode child : named_children(node)) {
      if (is_type(child, "elif_clause")) {
        walk(child, loop);
        if (auto t = ctx_.model.static_truth(field(child, "condition"), &fn_); t == true) return;
      } else if (is_type(child, "else_clause")) {
        walk(child, loop);
      }
    }
  }

  RuleContext& ctx_;
  const FunctionInfo& fn_;
  std::vector<TSNode> path_;  // the nodes being walked, outermost first
};

// Nothing is invented inside a region the parser could not read.
bool in_error_range(const std::vector<ByteRange>& errors, ByteRange range) {
  return std::any_of(errors.begin(), errors.end(), [&](const ByteRange& e) {
    return e.overlaps(range) || (e.start <= range.start && range.start <= e.end);
  });
}

// Orders findings by position (then code) and drops duplicates.
void sort_findings(std::vector<Finding>& findings) {
  std::sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.range.start != b.range.start) return a.range.start < b.range.start;
    return a.rule->code < b.rule->code;
  });
  findings.erase(std::unique(findings.begin(), findings.end(),
                             [](const Finding& a, const Finding& b) { return a.range == b.range && a.rule == b.rule; }),
                 findings.end());
}

// Runs the rules over `functions` (compiled, not disabled) and keeps what config and parse errors let
// through, sorted by position; noqa directives are applied last (apply_noqa), over the whole file.
std::vector<Finding> run_rules(const Document& document, const Config& config, const SemanticModel& model,
                               const std::vector<const FunctionInfo*>& functions) {
  timing::Scope checking(timing::Phase::Rules);
  RuleContext ctx(document, model, config.torch);
  for (const FunctionInfo* fn : functions) {
    if (!fn->compiled || model.is_dynamo_disabled(*fn)) continue;
    TracedWalker walker(ctx, *fn);
    TSNode body = field(fn->node, "body");
    for (TSNode stmt : named_children(body)) {
      walker.walk(stmt, TSNode{});
      if (walker.leaves_block_when_traced(stmt)) break;
    }
  }

  std::vector<Finding> out;
  std::vector<ByteRange> errors = document.error_ranges();
  for (Finding& f : ctx.take()) {
    if (in_error_range(errors, f.range)) continue;
    if (!config.enabled(f.rule->code, document.path())) continue;
    if (f.registry_id.empty()) f.registry_id = registry_id_for(*f.rule, config.torch);
    f.torch = config.torch;
    out.push_back(std::move(f));
  }
  sort_findings(out);
  return out;
}

// The findings of `found` that no noqa directive suppresses (one on the finding's first line, or a
// file-level one), then GM001's on the directives that suppressed nothing, when it is enabled and the
// whole file was read: which directives were used is known only here.
std::vector<Finding> apply_noqa(const Document& document, const Config& config, const NoqaDirectives& noqa,
                                const std::vector<Finding>& found, bool fully_read) {
  std::set<std::pair<const NoqaDirective*, size_t>> used;
  auto suppressed = [&](const Finding& f) {
    auto match = noqa.suppressing(f.rule->code, document.lines().line_of(f.range.start));
    if (match) used.insert({match->directive, match->code_index});
    return match.has_value();
  };
  std::vector<Finding> out;
  for (const Finding& f : found) {
    if (!suppressed(f)) out.push_back(f);
  }
  if (fully_read && config.enabled(unused_noqa_rule().code, document.path())) {
    for (Finding& f : unused_noqa(document, config, noqa, used)) {
      if (!suppressed(f)) out.push_back(std::move(f));
    }
    sort_findings(out);
  }
  return out;
}

// The regions the model left out, reported on their first line.
std::vector<Problem> skipped_problems(const Document& document, const SemanticModel& model) {
  std::vector<Problem> out;
  for (const SkippedRegion& r : model.skipped()) {
    const uint32_t first_line_end = document.lines().line_end(document.lines().line_of(r.range.start));
    out.push_back({Problem::Kind::NotAnalysed,
                   {r.range.start, std::min(r.range.end, first_line_end)},
                   "too deeply nested to analyse: " + std::to_string(r.depth) + " levels (the limit is " +
                       std::to_string(kMaxSyntaxDepth) + "); graphmend skips this " + std::string(r.what)});
  }
  return out;
}

void sort_problems(std::vector<Problem>& problems) {
  std::stable_sort(problems.begin(), problems.end(),
                   [](const Problem& a, const Problem& b) { return a.range.start < b.range.start; });
}

std::vector<Problem> problems_of(const Document& document, const SemanticModel& model, bool exempt) {
  std::vector<Problem> out = document.syntax_errors();
  if (!exempt) {
    std::vector<Problem> skipped = skipped_problems(document, model);
    out.insert(out.end(), skipped.begin(), skipped.end());
  }
  sort_problems(out);
  return out;
}

// The whole-file analysis with `model` (already built for `document`), before noqa directives apply.
Analysis analyze_whole(const Document& document, const Config& config, std::shared_ptr<SemanticModel> model,
                       bool exempt) {
  Analysis result{model, {}, problems_of(document, *model, exempt)};
  if (exempt) return result;
  std::vector<const FunctionInfo*> functions;
  for (const auto& fn : model->functions()) functions.push_back(fn.get());
  result.findings = run_rules(document, config, *model, functions);
  return result;
}

// Moves a finding (its range, related places and fix) past `changes`; false when any of them reaches
// into the changed region.
bool shift_outside(Finding& finding, const Document::Changes& changes) {
  const ByteRange old_region = changes.old_region();
  auto shift = [&](ByteRange& r) {
    if (r.end >= old_region.start && r.start <= old_region.end) return false;
    r = {changes.moved(r.start), changes.moved(r.end)};
    return true;
  };
  bool ok = shift(finding.range);
  for (RelatedLocation& r : finding.related) ok = ok && shift(r.range);
  if (finding.fix) {
    for (TextEdit& e : finding.fix->edits) ok = ok && shift(e.range);
  }
  return ok;
}

}  // namespace

Analysis analyze(const Document& document, const Config& config) {
  const NoqaDirectives noqa = NoqaDirectives::directives_only(document.text(), document.lines());
  auto model = std::make_shared<SemanticModel>(document, config.scope, config.traced_from_workspace);
  Analysis analysis = analyze_whole(document, config, model, noqa.file_exempt());
  analysis.findings = apply_noqa(document, config, noqa, analysis.findings, analysis.fully_read());
  return analysis;
}

IncrementalAnalyzer::Result IncrementalAnalyzer::run(Document& document, const Config& config, uint64_t generation,
                                                     const Finish& finish) {
  const NoqaDirectives noqa = NoqaDirectives::directives_only(document.text(), document.lines());
  const bool exempt = noqa.file_exempt();
  const bool reusable = model_ && document_ == &document && generation_ == generation && exempt == exempt_ && !exempt;
  if (document.parse_pending()) {
    // The reparse ran out of its budget (error recovery): the last analysis, moved through the edits,
    // stands in until the parse is finished and the document analysed again.
    if (auto edits = document.text_changes_since_base(); reusable && edits) {
      std::vector<Problem> problems = carried_problems(*edits, Problem::Kind::Syntax);
      std::vector<Problem> skipped = carried_problems(*edits, Problem::Kind::NotAnalysed);
      problems.insert(problems.end(), skipped.begin(), skipped.end());
      sort_problems(problems);
      return Result{{model_, carried(reported_, *edits, {}), std::move(problems)}, ByteRange{}, true, true};
    }
    document.finish_parse();
  }
  // Changes since the text the model describes (the document's base; several edits when held).
  std::optional<Document::Changes> changes = document.changes_since_base();
  if (reusable && changes) {
    if (changes->unchanged) return {{model_, reported_, problems_}, ByteRange{}, false, false};
    if (auto updated = update(document, config, noqa, *changes, finish)) {
      document.rebase();
      held_ = 0;
      return *updated;
    }
    if (auto held = hold(document, *changes)) return *held;
  }
  // Afresh.
  document.rebase();
  held_ = 0;
  model_.reset();
  findings_.clear();
  reported_.clear();
  problems_.clear();
  model_ = std::make_shared<SemanticModel>(document, config.scope, config.traced_from_workspace);
  document_ = &document;
  generation_ = generation;
  exempt_ = exempt;
  Analysis analysis = analyze_whole(document, config, model_, exempt);
  if (finish) finish(document, analysis);
  findings_ = analysis.findings;
  problems_ = analysis.problems;
  analysis.findings = reported_ = apply_noqa(document, config, noqa, findings_, analysis.fully_read());
  return {std::move(analysis), std::nullopt, false, false};
}

std::vector<Finding> IncrementalAnalyzer::carried(const std::vector<Finding>& findings,
                                                  const Document::Changes& changes,
                                                  const std::vector<ByteRange>& errors) const {
  std::vector<Finding> out;
  for (const Finding& f : findings) {
    Finding moved = f;
    if (shift_outside(moved, changes) && !in_error_range(errors, moved.range)) out.push_back(std::move(moved));
  }
  return out;
}

std::optional<IncrementalAnalyzer::Result> IncrementalAnalyzer::hold(const Document& document,
                                                                     const Document::Changes& changes) {
  // Only while the edits broke the syntax around them, and not forever.
  if (++held_ > kMaxHeld || !document.has_syntax_errors()) return std::nullopt;
  const ByteRange region = changes.region;
  std::vector<ByteRange> errors = document.error_ranges();
  const bool broken_here = std::any_of(
      errors.begin(), errors.end(), [&](const ByteRange& e) { return e.start <= region.end && region.start <= e.end; });
  if (!broken_here) return std::nullopt;
  // The syntax errors are the document's; the regions left out are the model's, which is behind.
  std::vector<Problem> problems = document.syntax_errors();
  std::vector<Problem> skipped = carried_problems(changes, Problem::Kind::NotAnalysed);
  problems.insert(problems.end(), skipped.begin(), skipped.end());
  sort_problems(problems);
  return Result{{model_, carried(reported_, changes, errors), std::move(problems)}, ByteRange{}, true, false};
}

std::vector<Problem> IncrementalAnalyzer::carried_problems(const Document::Changes& changes, Problem::Kind kind) const {
  const ByteRange old_region = changes.old_region();
  std::vector<Problem> out;
  for (const Problem& p : problems_) {
    if (p.kind != kind || (p.range.end >= old_region.start && p.range.start <= old_region.end)) continue;
    Problem moved = p;
    moved.range = {changes.moved(p.range.start), changes.moved(p.range.end)};
    out.push_back(std::move(moved));
  }
  return out;
}

std::optional<IncrementalAnalyzer::Result> IncrementalAnalyzer::update(const Document& document, const Config& config,
                                                                       const NoqaDirectives& noqa,
                                                                       const Document::Changes& changes,
                                                                       const Finish& finish) {
  // Where the edited function was before the edit: its findings are replaced, the others carried.
  const FunctionInfo* edited = model_->function_holding(changes.old_region());
  if (!edited) return std::nullopt;
  const ByteRange old_function = edited->range;
  std::vector<Finding> kept;
  for (const Finding& f : findings_) {
    if (old_function.contains(f.range)) continue;
    Finding moved = f;
    if (!shift_outside(moved, changes)) return std::nullopt;
    kept.push_back(std::move(moved));
  }

  const FunctionInfo* function = model_->update_after_edit(changes);
  if (!function) return std::nullopt;
  Analysis fresh{model_, run_rules(document, config, *model_, {function}), problems_of(document, *model_, false)};
  if (finish) finish(document, fresh);
  findings_ = std::move(kept);
  for (Finding& f : fresh.findings) findings_.push_back(std::move(f));
  sort_findings(findings_);
  problems_ = std::move(fresh.problems);
  reported_ = apply_noqa(document, config, noqa, findings_, problems_.empty());
  return Result{{model_, reported_, problems_}, function->range, false, false};
}

void IncrementalAnalyzer::reset() {
  held_ = 0;
  model_.reset();
  findings_.clear();
  reported_.clear();
  problems_.clear();
  document_ = nullptr;
}

}  // namespace graphmend
