// GM101: predication of data-dependent `if`/`elif`/`else` into torch.where.
//
// Forms: assignments in every branch (one or several variables, else-less updates keep the old value),
// `return` in every branch, and `if c: return a` followed by `return b`.
#include <algorithm>
#include <cctype>
#include <map>

#include "predicate.h"
#include "transform.h"

namespace graphmend {
namespace {
using namespace fixes;

struct Branch {
  TSNode condition{};  // null for else
  TSNode block{};
};

// Statements of a block, comments and `pass` left out.
std::vector<TSNode> statements(TSNode block) {
  std::vector<TSNode> out;
  uint32_t n = ts_node_named_child_count(block);
  for (uint32_t i = 0; i < n; ++i) {
    TSNode s = ts_node_named_child(block, i);
    if (is_type(s, "comment") || is_type(s, "pass_statement")) continue;
    out.push_back(s);
  }
  return out;
}

// `name = expr` as a statement: the assignment node, or null.
TSNode simple_assignment(TSNode stmt) {
  if (!is_type(stmt, "expression_statement") || named_child_count(stmt) != 1) return TSNode{};
  TSNode a = named_child(stmt, 0);
  if (!is_type(a, "assignment") || !ts_node_is_null(field(a, "type"))) return TSNode{};
  if (!is_type(field(a, "left"), "identifier") || is_type(field(a, "right"), "assignment")) return TSNode{};
  return a;
}

TSNode single_return(TSNode block) {
  auto s = statements(block);
  if (s.size() != 1 || !is_type(s[0], "return_statement") || named_child_count(s[0]) != 1) return TSNode{};
  TSNode value = named_child(s[0], 0);
  if (is_type(value, "expression_list")) return TSNode{};  // tuples: not yet
  return value;
}

bool tensors(const SemanticModel& model, const FunctionInfo& fn, const std::vector<TSNode>& values) {
  return std::all_of(values.begin(), values.end(), [&](TSNode v) { return model.kind_of(v, fn) == ValueKind::Tensor; });
}

// Every occurrence of `name` in `fn` lies inside `block`.
// `node` (a use of `name`) lies in a block whose first statement mentioning `name` is `name = <expr without
// name>`, at or before the use: that block rebinds the name before reading it, so a value computed
// elsewhere never reaches it (transformers' encoders repeat `clamp_value = ...` in several fp16 clamps).
bool rebound_before_use(const Document& doc, TSNode node, const std::string& name) {
  TSNode stmt = statement_of(node);
  if (ts_node_is_null(stmt)) return false;
  TSNode block = ts_node_parent(stmt);
  if (is_type(ts_node_parent(block), "function_definition")) return false;  // the function's own body
  auto mentions = [&](TSNode n) {
    bool found = false;
    walk_preorder(n, [&](TSNode m) {
      if (is_type(m, "identifier") && doc.node_text(m) == name) {
        found = true;
        return Walk::Stop;
      }
      return Walk::Descend;
    });
    return found;
  };
  for (TSNode s : statements(block)) {
    if (!mentions(s)) continue;
    TSNode a = simple_assignment(s);
    return !ts_node_is_null(a) && text(doc, field(a, "left")) == name && !mentions(field(a, "right")) &&
           ts_node_start_byte(s) <= ts_node_start_byte(node);
  }
  return false;
}

bool only_within(const Document& doc, const FunctionInfo& fn, const std::string& name, TSNode block) {
  bool outside = false;
  walk_preorder(fn.node, [&](TSNode node) {
    if (ts_node_start_byte(node) >= ts_node_start_byte(block) && ts_node_end_byte(node) <= ts_node_end_byte(block))
      return Walk::Skip;
    if (is_type(node, "identifier") && doc.node_text(node) == name) {
      TSNode parent = ts_node_parent(node);
      bool attribute_name = is_type(parent, "attribute") && ts_node_eq(field(parent, "attribute"), node);
      bool keyword = is_type(parent, "keyword_argument") && ts_node_eq(field(parent, "name"), node);
      if (!attribute_name && !keyword && !rebound_before_use(doc, node, name)) {
        outside = true;
        return Walk::Stop;
      }
    }
    return Walk::Descend;
  });
  return !outside;
}

struct Target {
  std::string lhs;        // "x = " or "return "
  std::string then_text;  // value when the test holds
  std::string else_text;  // value otherwise
  // What torch.where selects between, when it differs from the values themselves: values whose untaken side
  // is fed ones (#28 technique 1), computed from the guard lines' names.
  std::string select_then = "", select_else = "";
  const std::string& then_selected() const { return select_then.empty() ? then_text : select_then; }
  const std::string& else_selected() const { return select_else.empty() ? else_text : select_else; }
};

// When the test's size or the values' shapes cannot be proven statically, Dynamo can still check them
// at trace time (sizes, shapes and dtypes are static to it): select when they agree, otherwise run the
// original branch, which behaves (and raises) exactly as before.
//     graphmend_cond = <test>
//     graphmend_then = a                       (only when shapes are checked)
//     graphmend_else = b
//     if graphmend_cond.numel() == 1 and graphmend_then.shape == graphmend_else.shape and ...dtype...:
//         x = torch.where(graphmend_cond, graphmend_then, graphmend_else)
//     elif graphmend_cond:
//         x = graphmend_then
//     else:
//         x = graphmend_else
//
// Checks that a value can be computed at all (`x.dtype != torch.bool` for `x - 1`, `x.dim() >= 2` for
// `x[:, :1]`) come first, before either value is evaluated; the shape check is nested inside them:
//     graphmend_cond = <test>
//     if x.dtype != torch.bool:
//         graphmend_then = a
//         ...the block above...
//     elif graphmend_cond:
//         x = a
//     else:
//         x = b
// Branch-local temporaries of static metadata, as `name = value` lines, by the branch that assigned them.
struct Temporaries {
  std::vector<std::string> then_lines, else_lines;
  bool empty() const { return then_lines.empty() && else_lines.empty(); }
  std::string emit(bool then_side, bool else_side, const std::string& indent, const std::string& eol) const {
    std::string out;
    if (then_side)
      for (const auto& l : then_lines) out += eol + indent + l;
    if (else_side)
      for (const auto& l : else_lines) out += eol + indent + l;
    return out;
  }
};

// `guards`: lines binding the values' guarded inputs (#28 technique 1), which read graphmend_cond; they run
// where the values do, after the checks.
std::string guarded_select(std::vector<Target> targets, const std::string& predicate, bool check_numel,
                           bool check_shapes, const std::vector<std::string>& prechecks, const Temporaries& temps,
                           const std::vector<std::string>& guards, const std::string& torch, const std::string& indent,
                           const std::string& eol) {
  std::string out = "graphmend_cond = " + predicate + eol + indent;
  // The original branch, selected by the test: what runs when a check fails.
  bool keeps_all =
      std::all_of(targets.begin(), targets.end(), [](const Target& t) { return t.lhs == t.else_text + " = "; });
  auto fallback = [&](const std::vector<Target>& ts, const std::string& at, bool with_temps) {
    std::string f = eol + at + "elif graphmend_cond:" + temps.emit(with_temps, false, indent_step(at), eol);
    for (const auto& t : ts) f += eol + indent_step(at) + t.lhs + t.then_text;
    // An else that would only reassign each variable to itself is left out.
    if (keeps_all) return f;
    f += eol + at + "else:" + temps.emit(false, with_temps, indent_step(at), eol);
    for (const auto& t : ts) f += eol + indent_step(at) + t.lhs + t.else_text;
    return f;
  };
  auto join = [](const std::vector<std::string>& checks) {
    std::string test;
    for (const auto& c : checks) test += (test.empty() ? "" : " and ") + c;
    return test;
  };
  std::vector<std::string> checks = prechecks;
  if (check_numel) checks.push_back("graphmend_cond.numel() == 1");
  // Checked to be one element, the test is made 0-dim for the select (see zero_dim in predicate.cpp).
  const std::string cond = check_numel ? "graphmend_cond.reshape(())" : "graphmend_cond";
  if (!check_shapes) {
    out += "if " + join(checks) + ":" + temps.emit(true, true, indent_step(indent), eol);
    for (const auto& g : guards) out += eol + indent_step(indent) + g;
    for (const auto& t : targets)
      out += eol + indent_step(indent) + t.lhs + torch + ".where(" + cond + ", " + t.then_selected() + ", " +
             t.else_selected() + ")";
    return out + fallback(targets, indent, true);
  }
  // Only one target is ever shape-checked (the caller refuses several).
  const std::vector<Target> original = targets;
  std::string at = indent;
  if (!prechecks.empty()) {
    out += "if " + join(prechecks) + ":" + eol;
    at = indent_step(indent);
    out += at;
  }
  std::string inner = indent_step(at);
  if (!temps.empty()) out += temps.emit(true, true, at, eol).substr(eol.size() + at.size()) + eol + at;
  for (const auto& g : guards) out += g + eol + at;
  out += "graphmend_then = " + targets[0].then_selected() + eol + at +
         "graphmend_else = " + targets[0].else_selected() + eol + at;
  targets[0].then_text = "graphmend_then";
  targets[0].else_text = "graphmend_else";
  targets[0].select_then = targets[0].select_else = "";
  std::vector<std::string> late;
  if (check_numel) late.push_back("graphmend_cond.numel() == 1");
  late.push_back("graphmend_then.shape == graphmend_else.shape and graphmend_then.dtype == graphmend_else.dtype");
  out += "if " + join(late) + ":";
  for (const auto& t : targets)
    out += eol + inner + t.lhs + torch + ".where(" + cond + ", " + t.then_text + ", " + t.else_text + ")";
  out += fallback(targets, at, false);
  if (!prechecks.empty()) out += fallback(original, indent, true);
  return out;
}

TransformResult apply(const TransformContext& ctx) {
  const Document& doc = ctx.document;
  const SemanticModel& model = ctx.model;
  TSNode stmt = enclosing(doc, ctx.finding.range, {"if_statement"});
  if (ts_node_is_null(stmt)) return Refusal{"no if statement around the test"};
  const FunctionInfo* fn = model.function_containing(stmt);
  if (!fn) return Refusal{"the if statement is not inside a function"};
  // An elif chain is predicated as a whole: when the `if` itself tests a tensor, its finding carries the
  // fix, and each elif's finding points there (computing the chain's fix once per elif would be
  // quadratic in the chain's length).
  TSNode own_test = field(stmt, "condition");
  if (ctx.finding.rule->code == "GM401") {
    // `.item()` in a test: predicated when the test is an exact comparison (#28 technique 4, predicate_text);
    // an `.item()` elsewhere is not this transform's.
    bool in_test = node_range(own_test).contains(ctx.finding.range);
    for (TSNode c : named_children(stmt)) {
      if (is_type(c, "elif_clause")) {
        in_test |= node_range(field(c, "condition")).contains(ctx.finding.range);
      }
    }
    if (!in_test) return Refusal{"the `.item()` is not in the if's test", false};
  }
  if (ctx.finding.range.start >= ts_node_end_byte(own_test) && model.kind_of(own_test, *fn) == ValueKind::Tensor) {
    // No line number: a finding carried through edits elsewhere keeps its reason.
    return Refusal{"the whole if/elif chain is predicated by the fix offered on its `if`"};
  }

  std::vector<Branch> branches{{field(stmt, "condition"), field(stmt, "consequence")}};
  bool has_else = false;
  uint32_t n = ts_node_named_child_count(stmt);
  for (uint32_t i = 0; i < n; ++i) {
    TSNode c = ts_node_named_child(stmt, i);
    if (is_type(c, "elif_clause")) branches.push_back({field(c, "condition"), field(c, "consequence")});
    if (is_type(c, "else_clause")) {
      branches.push_back({TSNode{}, field(c, "body")});
      has_else = true;
    }
  }
  // `if S and T:` with S not a tensor (Dynamo decides it at trace time): keep `if S:` and predicate `if T:`
  // inside it. Python evaluates S once and T only when S holds, in both forms, so this step alone changes
  // nothing; it lets the fp16 clamp (`h.dtype == torch.float16 and (torch.isinf(h).any() or ...)`) be
  // predicated. Only for an if without elif/else whose branch assigns (a returning branch has a `return`
  // after the if to select against, which the static test must not cover).
  std::string static_test;
  if (branches.size() == 1 && ts_node_is_null(single_return(branches[0].block))) {
    TSNode test = unparenthesize(branches[0].condition);
    if (is_type(test, "boolean_operator") && text(doc, field(test, "operator")) == "and" &&
        model.kind_of(field(test, "left"), *fn) == ValueKind::Static && [&] {
          TSNode right = unparenthesize(field(test, "right"));  // `not t.all()` tests a tensor too
          if (is_type(right, "not_operator")) right = field(right, "argument");
          return model.kind_of(right, *fn) == ValueKind::Tensor;
        }()) {
      static_test = text(doc, field(test, "left"));
      branches[0].condition = field(test, "right");
    }
  }
  TorchName torch = torch_name(doc, model);
  if (auto why = why_torch_unusable(doc, model, fn, torch); !why.empty()) return Refusal{why};
  if (auto why = why_locals_unaddable(doc, *fn); !why.empty()) return Refusal{why};
  // What the original has established once its first test ran without raising (the fixed code evaluates
  // that test first too): shapes that broadcast, dtypes an operation accepted.
  const std::vector<RaiseCondition> established = established_by(doc, model, branches[0].condition, *fn);
  std::vector<std::string> predicates;
  bool numel_unproven = false;  // a test not provably one element: checked at trace time instead
  for (size_t i = 0; i < branches.size(); ++i) {
    if (ts_node_is_null(branches[i].condition)) continue;
    std::string why;
    std::string p = predicate_text(doc, model, branches[i].condition, *fn, torch.name, why, &numel_unproven);
    if (p.empty()) return Refusal{why};
    if (i > 0) {
      // Later tests run only when earlier ones fail; predication evaluates them always.
      if (auto w = why_not_total(doc, model, branches[i].condition, *fn, established); !w.empty()) return Refusal{w};
    }
    predicates.push_back(p);
  }
  // Each test of the chain nests one more torch.where(: CPython's parser refuses more than 200 levels of
  // parentheses (3.11, "too many nested parentheses").
  constexpr size_t kMaxChain = 150;
  if (predicates.size() > kMaxChain)
    return Refusal{"this chain of " + std::to_string(predicates.size()) + " tests would nest as many torch.where " +
                   "calls, more than Python's parser accepts"};
  if (numel_unproven && predicates.size() > 1)
    return Refusal{
        "the tests of this elif chain are not provably single elements (torch.where would select "
        "element-wise where the original raises)"};

  // #28 techniques 1 and 2 need the test bound to a name, and a value's untaken side is where that one test
  // fails: single tests only.
  const bool single_test = predicates.size() == 1;
  // A guard `torch.where(c, x, ...)` keeps `x`'s shape only for a 0-dim `c`: predicate_text makes a one-element
  // test 0-dim, a test whose size is checked at trace time is not.
  const std::string no_guards =
      !single_test     ? "not generated for elif chains, where a value is untaken when any earlier test holds too"
      : numel_unproven ? "the test is not provably one element, and a guard would broadcast the inputs to its shape"
                       : "";
  // Technique 2: a part of the test the values repeat, bound once as graphmend_shared.
  SharedTestValue shared;
  std::vector<std::pair<ByteRange, std::string>> renamed;  // its repeats in the values, by that name
  std::string shared_line;
  auto share = [&](const std::vector<TSNode>& values) {
    shared = shared_test_value(doc, model, *fn, branches[0].condition, values);
    if (ts_node_is_null(shared.in_test)) return;
    const std::string s = text(doc, shared.in_test);
    const size_t at = predicates[0].find(s);
    if (!single_test || at == std::string::npos || at != predicates[0].find_first_not_of('(')) {
      shared =
          SharedTestValue{{}, {}, "a value repeats the test's `" + s + "`, which is shared for a single test only"};
      return;
    }
    predicates[0].replace(at, s.size(), "graphmend_shared");
    for (ByteRange r : shared.in_values) renamed.push_back({r, "graphmend_shared"});
    shared_line = "graphmend_shared = " + s;
  };
  auto refused = [&](std::string why) {
    if (!shared.missing.empty()) why += " (shared test subexpression: " + shared.missing + ")";
    return Refusal{why};
  };
  // A value's text with the shared part renamed (what the original branch computes, in the fallbacks).
  auto plain = [&](TSNode v) { return rewritten_value(doc, v, {}, renamed, nullptr); };
  // Technique 1: the value with its inputs fed ones where it is not selected; the guard lines go to `guards`.
  std::vector<std::string> guards;
  std::map<std::string, std::string> guard_sources;  // guard name -> what it guards
  auto guarded = [&](TSNode v, const std::vector<TSNode>& leaves, bool then_side) {
    return rewritten_value(doc, v, leaves, renamed, [&](const std::string& source) {
      std::string id;
      for (char c : source) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      if (id.rfind("graphmend_", 0) == 0) id = id.substr(10);
      std::string name = std::string(then_side ? "graphmend_then_" : "graphmend_else_") + id;
      while (guard_sources.count(name) && guard_sources[name] != source) name += "_";
      if (!guard_sources.count(name)) {
        guard_sources[name] = source;
        std::string ones = torch.name + ".ones_like(" + source + ")";
        guards.push_back(name + " = " + torch.name + ".where(graphmend_cond, " +
                         (then_side ? source + ", " + ones : ones + ", " + source) + ")");
      }
      return name;
    });
  };
  auto any_guards = [](const SelectCheck& c) {
    return std::any_of(c.untaken_guards.begin(), c.untaken_guards.end(), [](const auto& g) { return !g.empty(); });
  };

  std::string indent = indentation_of(doc, stmt);
  std::string eol(detect_line_ending(doc.text()));
  std::string replacement;
  if (!static_test.empty()) {
    replacement = "if " + static_test + ":" + eol;
    indent = indent_step(indent);
    replacement += indent;
  }
  for (const std::string& c : comments_in(doc, stmt)) replacement += c + eol + indent;
  ByteRange range = node_range(stmt);
  std::string hazard;

  // Nested select over the chain: where(c1, v1, where(c2, v2, v_else)).
  auto select = [&](const std::vector<std::string>& values, const std::string& fallback) {
    std::string out = fallback;
    for (size_t i = predicates.size(); i-- > 0;)
      out = torch.name + ".where(" + predicates[i] + ", " + values[i] + ", " + out + ")";
    return out;
  };

  // Form: returns.
  std::vector<TSNode> returns;
  for (const Branch& b : branches) returns.push_back(single_return(b.block));
  bool all_return = std::all_of(returns.begin(), returns.end(), [](TSNode r) { return !ts_node_is_null(r); });
  if (all_return) {
    TSNode fallback{};
    if (has_else) {
      fallback = returns.back();
      returns.pop_back();
    } else {
      TSNode next = ts_node_next_named_sibling(stmt);
      while (!ts_node_is_null(next) && is_type(next, "comment")) {
        replacement += text(doc, next) + eol + indent;  // comments between the if and the return are kept
        next = ts_node_next_named_sibling(next);
      }
      if (ts_node_is_null(next) || !is_type(next, "return_statement") || named_child_count(next) != 1)
        return Refusal{"the branch returns, but no `return` follows the if to select against"};
      fallback = named_child(next, 0);
      if (is_type(fallback, "expression_list")) return Refusal{"returns of tuples are not predicated yet"};
      range.end = ts_node_end_byte(next);
    }
    std::vector<TSNode> all = returns;
    all.push_back(fallback);
    share(all);
    SelectCheck check =
        check_select(doc, model, *fn, all, stmt, established, false, torch.name, "", shared.in_values, no_guards);
    if (!check.refusal.empty()) return refused(check.refusal);
    hazard = check.hazard;
    if (hazard.empty()) hazard = why_alias_observable(doc, model, *fn, all, "", "", fallback);
    std::vector<std::string> values;
    for (TSNode r : returns) values.push_back(plain(r));
    Target target{"return ", values[0], plain(fallback)};
    if (any_guards(check)) {
      target.select_then = guarded(returns[0], check.untaken_guards[0], true);
      target.select_else = guarded(fallback, check.untaken_guards[1], false);
    }
    if (!shared_line.empty()) replacement += shared_line + eol + indent;
    bool shapes = !check.shape_unproven.empty();
    if (shapes || numel_unproven || !check.prechecks.empty()) {
      if (predicates.size() != 1 || (shapes && !tensors(model, *fn, all)))
        return Refusal{shapes ? check.shape_unproven
                              : "the values of this elif chain need trace-time checks (" + check.prechecks[0] +
                                    "), which are not generated for chains yet"};
      replacement += guarded_select({target}, predicates[0], numel_unproven, shapes, check.prechecks, Temporaries{},
                                    guards, torch.name, indent, eol);
    } else if (!guards.empty()) {
      replacement += "graphmend_cond = " + predicates[0] + eol + indent;
      for (const auto& g : guards) replacement += g + eol + indent;
      replacement += "return " + torch.name + ".where(graphmend_cond, " + target.then_selected() + ", " +
                     target.else_selected() + ")";
    } else {
      replacement += "return " + select(values, target.else_text);
    }
  } else {
    // Form: assignments.
    std::vector<std::string> order;                                        // variables in first-assignment order
    std::vector<std::map<std::string, TSNode>> assigned(branches.size());  // per branch: var -> value
    for (size_t i = 0; i < branches.size(); ++i) {
      for (TSNode s : statements(branches[i].block)) {
        TSNode a = simple_assignment(s);
        if (ts_node_is_null(a)) {
          if (is_type(s, "continue_statement") || is_type(s, "break_statement"))
            return Refusal{"`" + text(doc, s) + "` changes which code runs, and torch.where can only select values"};
          return Refusal{"the branch does more than assign variables (`" + std::string(doc.node_text(s).substr(0, 60)) +
                         "`)"};
        }
        std::string name = text(doc, field(a, "left"));
        if (assigned[i].count(name)) return Refusal{"`" + name + "` is assigned twice in one branch"};
        assigned[i][name] = field(a, "right");
        if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
      }
    }
    if (order.empty()) return Refusal{"the branches assign nothing"};
    // Branch-local temporaries of static metadata (`c = torch.finfo(h.dtype).max - 1000`, then `h =
    // torch.clamp(h, -c, c)`) are computed in front of the select instead: a static value depends on no
    // tensor's data, so computing it on the other path changes nothing a program can see, provided it is
    // total, assigned in one branch only, and its name appears nowhere else in the function (not before,
    // not after, not in a loop's next iteration).
    Temporaries temps;
    std::vector<std::string> hoisted;      // their names
    std::vector<std::string> temp_checks;  // trace-time checks the temporaries need (torch.finfo(h.dtype): floating h)
    for (size_t i = 0; i < branches.size(); ++i) {
      for (TSNode s : statements(branches[i].block)) {
        TSNode a = simple_assignment(s);
        std::string name = text(doc, field(a, "left"));
        TSNode rhs = field(a, "right");
        if (model.kind_of(rhs, *fn) != ValueKind::Static) continue;
        bool elsewhere = false;
        for (size_t j = 0; j < branches.size(); ++j) elsewhere |= j != i && assigned[j].count(name) > 0;
        if (elsewhere || std::find(fn->params.begin(), fn->params.end(), name) != fn->params.end()) continue;
        if (!only_within(doc, *fn, name, branches[i].block)) continue;
        Selectability sel = selectability(doc, model, *fn, {rhs}, {}, true);
        if (!sel.refusal.empty()) continue;
        for (const RaiseCondition& c : sel.checks) {
          std::string t = check_text(doc, c, torch.name);
          if (std::find(temp_checks.begin(), temp_checks.end(), t) == temp_checks.end()) temp_checks.push_back(t);
        }
        (i == 0 ? temps.then_lines : temps.else_lines).push_back(name + " = " + text(doc, rhs));
        hoisted.push_back(name);
        order.erase(std::find(order.begin(), order.end(), name));
        assigned[i].erase(name);
      }
    }
    if (!temps.empty() && predicates.size() > 1) return Refusal{"temporaries in an elif chain are not predicated yet"};
    if (order.empty()) return Refusal{"the branches assign only temporaries"};
    // Every value may read its own variable's old value, but no other variable the if assigns; and every
    // local it reads must exist on all paths (predication evaluates it even when the test is false).
    for (size_t i = 0; i < branches.size(); ++i) {
      for (auto& [name, value] : assigned[i]) {
        for (const std::string& read : names_read(doc, value)) {
          if (read != name && std::find(order.begin(), order.end(), read) != order.end())
            return Refusal{"`" + name + "` is computed from `" + read + "`, which the same if assigns"};
          bool local = fn->locals.count(read) > 0;
          bool temporary = std::find(hoisted.begin(), hoisted.end(), read) != hoisted.end();
          if (local && !temporary && !defined_before(doc, *fn, read, stmt))
            return Refusal{"`" + read + "` is only defined on some paths before the if"};
        }
      }
    }
    if (order.size() > 1 && predicates.size() > 1)
      return Refusal{"elif chains that assign several variables are not predicated yet"};
    std::vector<TSNode> every_value;
    for (const auto& per_branch : assigned)
      for (const auto& [name, value] : per_branch) every_value.push_back(value);
    share(every_value);
    std::vector<Target> targets;
    std::vector<std::string> prechecks;  // trace-time checks every value needs before it may be evaluated
    std::vector<std::vector<std::string>> chain_values;  // per variable: the values of the conditional branches
    bool shapes = false;
    std::string shape_reason;
    for (const std::string& name : order) {
      std::vector<TSNode> values;
      std::vector<size_t> value_branch;  // the branch each value belongs to
      std::vector<std::string> texts;
      bool defined = defined_before(doc, *fn, name, stmt);
      size_t conditional = has_else ? branches.size() - 1 : branches.size();
      for (size_t i = 0; i < branches.size(); ++i) {
        auto it = assigned[i].find(name);
        if (it != assigned[i].end()) {
          values.push_back(it->second);
          value_branch.push_back(i);
          if (i < conditional) texts.push_back(plain(it->second));
        } else {
          if (!defined) return Refusal{"`" + name + "` is only defined on some paths of the if"};
          if (i < conditional) texts.push_back(name);
        }
      }
      std::string fallback = name;
      if (has_else) {
        auto it = assigned.back().find(name);
        if (it != assigned.back().end()) fallback = plain(it->second);
      } else if (!defined) {
        return Refusal{"`" + name + "` is only defined when the test is true"};
      }
      const bool keeps_old_value = values.size() < branches.size() + (has_else ? 0 : 1);
      if (auto why = why_written_in_place_after(doc, *fn, name, stmt); !why.empty()) return Refusal{why};
      SelectCheck check = check_select(doc, model, *fn, values, stmt, established, keeps_old_value, torch.name,
                                       keeps_old_value ? name : "", shared.in_values, no_guards);
      if (!check.refusal.empty()) return refused(check.refusal);
      for (const std::string& c : check.prechecks) {
        if (std::find(prechecks.begin(), prechecks.end(), c) == prechecks.end()) prechecks.push_back(c);
      }
      std::string unproven = check.shape_unproven;
      if (unproven.empty() && values.size() < branches.size() + (has_else ? 0 : 1)) {
        // Some path keeps the old value: each value must be shaped like the variable itself.
        for (TSNode v : values) {
          if (shape_of(doc, model, v, *fn).base != name)
            unproven = "cannot prove that `" + text(doc, v) + "` has the shape of `" + name + "`";
        }
      }
      if (!unproven.empty()) {
        shapes = true;
        shape_reason = unproven;
        if (!tensors(model, *fn, values) || model.kind_of(branches[0].condition, *fn) != ValueKind::Tensor)
          return Refusal{unproven};
        if (values.size() < branches.size() + (has_else ? 0 : 1)) {
          // The old value takes part in the trace-time shape check: it must be a tensor too.
          auto it = fn->locals.find(name);
          if (it == fn->locals.end() || it->second != ValueKind::Tensor) return Refusal{unproven};
        }
      }
      if (hazard.empty()) hazard = check.hazard;
      if (hazard.empty())
        hazard = why_alias_observable(doc, model, *fn, values, keeps_old_value ? name : "", name, stmt);
      targets.push_back({name + " = ", texts.empty() ? name : texts[0], fallback});
      for (size_t j = 0; j < values.size() && any_guards(check); ++j) {
        if (check.untaken_guards[j].empty()) continue;
        if (value_branch[j] == 0)
          targets.back().select_then = guarded(values[j], check.untaken_guards[j], true);
        else
          targets.back().select_else = guarded(values[j], check.untaken_guards[j], false);
      }
      chain_values.push_back(texts);
    }
    for (const std::string& c : temp_checks) {
      if (std::find(prechecks.begin(), prechecks.end(), c) == prechecks.end()) prechecks.insert(prechecks.begin(), c);
    }
    if (shapes && (targets.size() != 1 || predicates.size() != 1)) return Refusal{shape_reason};
    if (!prechecks.empty() && predicates.size() != 1)
      return Refusal{"the values of this elif chain need trace-time checks (" + prechecks[0] +
                     "), which are not generated for chains yet"};
    if (!shared_line.empty()) replacement += shared_line + eol + indent;
    if (shapes || numel_unproven || !prechecks.empty()) {
      replacement += guarded_select(targets, predicates[0], numel_unproven, shapes, prechecks, temps, guards,
                                    torch.name, indent, eol);
    } else {
      // Temporaries without checks are total: computed first, in their own order.
      for (const std::string& l : temps.then_lines) replacement += l + eol + indent;
      for (const std::string& l : temps.else_lines) replacement += l + eol + indent;
      bool hoist =
          (targets.size() > 1 && !is_type(unparenthesize(branches[0].condition), "identifier")) || !guards.empty();
      if (hoist) {
        replacement += "graphmend_cond = " + predicates[0] + eol + indent;
        predicates[0] = "graphmend_cond";
      }
      for (const auto& g : guards) replacement += g + eol + indent;
      for (size_t k = 0; k < targets.size(); ++k) {
        if (k) replacement += eol + indent;
        if (!targets[k].select_then.empty() || !targets[k].select_else.empty())
          replacement += targets[k].lhs + torch.name + ".where(graphmend_cond, " + targets[k].then_selected() + ", " +
                         targets[k].else_selected() + ")";
        else
          replacement += targets[k].lhs + select(chain_values[k], targets[k].else_text);
      }
    }
  }

  Fix fix;
  fix.title = "Predicate the branch with torch.where: both sides are computed and one is selected in the graph";
  fix.applicability = Applicability::Safe;
  if (!hazard.empty()) {
    fix.applicability = Applicability::Unsafe;
    fix.title += " (unsafe: " + hazard + ")";
  }
  fix.edits.push_back(TextEdit{range, replacement});
  if (torch.import_edit) fix.edits.push_back(*torch.import_edit);
  return fix;
}

}  // namespace

const Transform& transform_predicate_if() {
  static const Transform t{"predicate-if", {"GM101", "GM401"}, apply};
  return t;
}

}  // namespace graphmend
