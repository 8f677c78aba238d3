// The rule interface: each rule lives in analysis/rules/GMxxx_name.cpp and sees every node of traced
// code whose type it asks for, with the facts of the function being traced.
#pragma once

#include <functional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graphmend/analysis/config.h"
#include "graphmend/analysis/document.h"
#include "graphmend/analysis/finding.h"
#include "graphmend/analysis/semantic.h"

namespace graphmend {

struct Visit {
  TSNode node;
  const FunctionInfo& function;  // the traced function whose body holds `node`
  TSNode loop;                   // innermost for/while around `node` in that function (null if none)
  // The walk's path from a statement of the function's body down to `node`'s parent, nearest last:
  // ts_node_parent rescans from the root at every call, which along a long chain is quadratic.
  std::span<const TSNode> ancestors{};
  // `node`'s ancestor `up` levels above it (0: its parent), from `ancestors` and then the tree.
  TSNode ancestor(size_t up) const;
};

class RuleContext {
 public:
  RuleContext(const Document& doc, const SemanticModel& facts, TorchVersion torch_version = {})
      : document(doc), model(facts), torch(torch_version) {}
  const Document& document;
  const SemanticModel& model;
  TorchVersion torch;  // the release whose facts apply (a few breaks differ between releases)

  // Records a finding at `range`, adding the compiled entry and the enclosing loop as related places.
  // `registry_id`: the break's id when it is not the rule's (registry_id_for) for this finding.
  void report(const RuleInfo& rule, ByteRange range, std::string message, const Visit& visit,
              std::string_view registry_id = {});
  std::string text(TSNode node) const { return std::string(document.node_text(node)); }
  std::vector<Finding> take() { return std::move(findings_); }

  // tensor_facts' surely_breaking_calls(fn), worked out once per function: rules ask at every node they
  // visit, and a scan of the body each time would be quadratic.
  const std::vector<uint32_t>& surely_breaking_calls(const FunctionInfo& fn);

 private:
  std::vector<Finding> findings_;
  std::unordered_map<const FunctionInfo*, std::vector<uint32_t>> surely_breaking_calls_;
};

struct Rule {
  const RuleInfo* info;
  std::vector<std::string_view> node_types;  // tree-sitter node types the rule inspects
  void (*check)(RuleContext&, const Visit&);
};

const std::vector<const Rule*>& registered_rules();

class NoqaDirectives;
struct NoqaDirective;
// GM001 (rules/GM001_unused_noqa.cpp) looks at the noqa directives, not at traced code: the analyzer
// runs it once the other rules' findings are known, with `used` holding each (directive, code index)
// that suppressed one (code index npos: a blanket directive). Its findings come with their fix.
std::vector<Finding> unused_noqa(const Document& document, const Config& config, const NoqaDirectives& directives,
                                 const std::set<std::pair<const NoqaDirective*, size_t>>& used);

// Helpers shared by rules.
// `call`'s callee is `receiver.method(...)` with a tensor receiver; returns the method name or "".
std::string tensor_method(const RuleContext& ctx, TSNode call, const FunctionInfo& fn);
// True when the visited node sits in the test of an if/elif/while/ternary/assert (possibly under
// and/or/not).
bool in_condition(const Visit& visit);
// The qualified name of a call's callee via imports ("torch.where"), or "".
std::string callee_qualified(const RuleContext& ctx, TSNode call);
// Logger objects: module-level `x = logging.getLogger(...)` / `logging.get_logger(...)`, or names like `logger`.
bool is_logger_expression(const RuleContext& ctx, TSNode expr);
// A boolean tensor: comparisons of tensors, ~, &, |, isnan/isfinite/logical_*, .bool(), names assigned from these.
bool is_bool_tensor(const RuleContext& ctx, TSNode expr, const FunctionInfo& fn, int depth = 0);
// The operand of a test where Dynamo breaks: the first tensor-valued operand that is evaluated, looking
// through `not` and parentheses and past `self.training`/constant conjuncts. Null when no break is
// provable (no tensor operand, or a static conjunct such as a dtype test may short-circuit it).
TSNode breaking_operand(const RuleContext& ctx, TSNode condition, const FunctionInfo& fn);
// bound_in_function (semantic.h): `name` is a parameter or local of `fn` or of a function around it.
// Whether the leftmost name of `call`'s callee (`random` of `random.choice(...)`) is bound in `fn` or a
// function around it, or the callee starts with something other than a name: then what
// callee_qualified() says of it does not hold.
bool callee_shadowed(const RuleContext& ctx, TSNode call, const FunctionInfo& fn);
// The first operand of a test that Dynamo jumps on (through parentheses and `not`, `and`/`or` left to right)
// for which `holds` is true; null when there is none.
TSNode first_tested_operand(TSNode test, const std::function<bool(TSNode)>& holds);
// How Dynamo of the release in use takes a call of Python's `random` module (measured on 2.13, 2.14, 2.15).
enum class RandomCall {
  None,     // not a function of the module (or the name is shadowed)
  Skipped,  // a function Dynamo marks as skipped: the call breaks (GB0007)
  Draw,     // traced as a graph input drawn at run time (randint, randrange, uniform; random from 2.14): no
            // break at the call, but the value is data-dependent (GM614)
  Traced,   // traced with no such value (shuffle, sample, seed from 2.14)
};
RandomCall random_call(const RuleContext& ctx, TSNode call, const FunctionInfo& fn);
// Whether the release in use defers a call of `callee` (registered in reorderable_logging_functions in this
// file) instead of tracing it: a function always; a bound logger method (`logger.info`) only from torch 2.14.
bool deferred_by_dynamo(const RuleContext& ctx, TSNode callee);
// Whether Dynamo inlines `fn`'s frame into a caller's rather than compiling it as the root: it is neither a
// compile entry nor a module's forward, or traced code of this file calls it (`helper(x)`, `self.block(x)`).
bool frame_inlined(const RuleContext& ctx, const FunctionInfo& fn);
// Whether `a` and `b` (`a` before `b`, in one function) lie in branches of which at most one runs: the
// arms of an if/elif/else (unless `a` is in an elif's test), of a conditional expression, two except
// clauses, an except clause and the else of a try, two cases of a match.
bool exclusive_branches(TSNode a, TSNode b);
// Whether no node before `node` in `fn`'s body (nested definitions and lambdas left out) that `is_site`
// holds for may run before it. Some breaks make Dynamo run the rest of the function eagerly (failing to
// wrap an RNN module, any break inside a try block): of their sites, only the first that runs breaks.
bool first_site_in_function(const FunctionInfo& fn, TSNode node, const std::function<bool(TSNode)>& is_site);
// `fn`'s function_definition in the current tree: FunctionInfo::node, or, for a function an incremental
// update did not re-read (its node dropped), the definition found at its range. Null if there is none.
TSNode definition_of(const RuleContext& ctx, const FunctionInfo& fn);
// Number of positional and keyword arguments of a call.
uint32_t argument_count(TSNode call);
// Whether the body of an if-statement (its consequence block) is a single `raise`.
bool body_is_raise(TSNode block);

}  // namespace graphmend
