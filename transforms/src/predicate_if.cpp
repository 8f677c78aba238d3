// GM101: predication of data-dependent `if`/`elif`/`else` into torch.where.
//
// Forms: assignments in every branch (one or several variables, else-less updates keep the old value),
// `return` in every branch, and `if c: return a` followed by `return b`.
#include <algorithm>
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
  if (!is_type(stmt, "expression_statement") || ts_node_named_child_count(stmt) != 1) return TSNode{};
  TSNode a = ts_node_named_child(stmt, 0);
  if (!is_type(a, "assignment") || !ts_node_is_null(field(a, "type"))) return TSNode{};
  if (!is_type(field(a, "left"), "identifier") || is_type(field(a, "right"), "assignment")) return TSNode{};
  return a;
}

TSNode single_return(TSNode block) {
  auto s = statements(block);
  if (s.size() != 1 || !is_type(s[0], "return_statement") || ts_node_named_child_count(s[0]) != 1) return TSNode{};
  TSNode value = ts_node_named_child(s[0], 0);
  if (is_type(value, "expression_list")) return TSNode{};  // tuples: not yet
  return value;
}

TSNode enclosing_if(TSNode node) {
  for (TSNode p = node; !ts_node_is_null(p); p = ts_node_parent(p)) {
    if (is_type(p, "if_statement")) return p;
  }
  return TSNode{};
}

std::string fresh_name(const Document& doc, const std::string& stem) {
  std::string name = stem;
  for (int i = 2; doc.text().find(name) != std::string::npos; ++i) name = stem + "_" + std::to_string(i);
  return name;
}

bool tensors(const SemanticModel& model, const FunctionInfo& fn, const std::vector<TSNode>& values) {
  return std::all_of(values.begin(), values.end(), [&](TSNode v) { return model.kind_of(v, fn) == ValueKind::Tensor; });
}

// When shapes cannot be proven equal statically, Dynamo can still check them at trace time (shapes and
// dtypes are static to it): select when they agree, keep the original branch otherwise.
//     graphmend_then = a
//     graphmend_else = b
//     if graphmend_then.shape == graphmend_else.shape and graphmend_then.dtype == graphmend_else.dtype:
//         <target>torch.where(c, graphmend_then, graphmend_else)
//     elif c:
//         <target>graphmend_then
//     else:
//         <target>graphmend_else
std::string guarded_select(const Document& doc, const std::string& target, const std::string& then_value,
                           const std::string& else_value, const std::string& predicate, const std::string& test,
                           const std::string& torch, const std::string& indent, const std::string& eol) {
  std::string a = "graphmend_then", b = "graphmend_else";
  std::string inner = indent + (indent.find('\t') != std::string::npos ? "\t" : "    ");
  (void)doc;
  return a + " = " + then_value + eol + indent + b + " = " + else_value + eol + indent + "if " + a + ".shape == " + b +
         ".shape and " + a + ".dtype == " + b + ".dtype:" + eol + inner + target + torch + ".where(" + predicate +
         ", " + a + ", " + b + ")" + eol + indent + "elif " + test + ":" + eol + inner + target + a + eol + indent +
         "else:" + eol + inner + target + b;
}

TransformResult apply(const TransformContext& ctx) {
  const Document& doc = ctx.document;
  const SemanticModel& model = ctx.model;
  TSNode at = ts_node_descendant_for_byte_range(doc.root(), ctx.finding.range.start, ctx.finding.range.end);
  TSNode stmt = enclosing_if(at);
  if (ts_node_is_null(stmt)) return Refusal{"no if statement around the test"};
  const FunctionInfo* fn = model.function_containing(stmt);
  if (!fn) return Refusal{"the if statement is not inside a function"};

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
  TorchName torch = torch_name(doc, model);
  std::vector<std::string> predicates;
  for (size_t i = 0; i < branches.size(); ++i) {
    if (ts_node_is_null(branches[i].condition)) continue;
    std::string why;
    std::string p = predicate_text(doc, model, branches[i].condition, *fn, torch.name, why);
    if (p.empty()) return Refusal{why};
    if (i > 0) {
      // Later tests run only when earlier ones fail; predication evaluates them always.
      if (auto w = why_impure(doc, model, branches[i].condition, *fn); !w.empty()) return Refusal{w};
    }
    predicates.push_back(p);
  }

  std::string indent = indentation_of(doc, stmt);
  std::string eol(detect_line_ending(doc.text()));
  std::string replacement;
  for (const std::string& c : comments_in(doc, stmt)) {
    if (c.find("expect:") == std::string::npos) replacement += c + eol + indent;
  }
  ByteRange range = node_range(stmt);
  std::string hazard;

  // Nested select over the chain: where(c1, v1, where(c2, v2, v_else)).
  auto select = [&](const std::vector<std::string>& values, const std::string& fallback) {
    std::string out = fallback;
    for (size_t i = predicates.size(); i-- > 0;) out = torch.name + ".where(" + predicates[i] + ", " + values[i] + ", " + out + ")";
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
      while (!ts_node_is_null(next) && is_type(next, "comment")) next = ts_node_next_named_sibling(next);
      if (ts_node_is_null(next) || !is_type(next, "return_statement") || ts_node_named_child_count(next) != 1)
        return Refusal{"the branch returns, but no `return` follows the if to select against"};
      fallback = ts_node_named_child(next, 0);
      if (is_type(fallback, "expression_list")) return Refusal{"returns of tuples are not predicated yet"};
      range.end = ts_node_end_byte(next);
    }
    std::vector<TSNode> all = returns;
    all.push_back(fallback);
    SelectCheck check = check_select(doc, model, *fn, all, stmt);
    if (!check.refusal.empty()) return Refusal{check.refusal};
    hazard = check.hazard;
    std::vector<std::string> values;
    for (TSNode r : returns) values.push_back(text(doc, r));
    if (!check.shape_unproven.empty()) {
      if (predicates.size() != 1 || !tensors(model, *fn, all)) return Refusal{check.shape_unproven};
      replacement += guarded_select(doc, "return ", values[0], text(doc, fallback), predicates[0],
                                    text(doc, branches[0].condition), torch.name, indent, eol);
    } else {
      replacement += "return " + select(values, text(doc, fallback));
    }
  } else {
    // Form: assignments.
    std::vector<std::string> order;                          // variables in first-assignment order
    std::vector<std::map<std::string, TSNode>> assigned(branches.size());  // per branch: var -> value
    for (size_t i = 0; i < branches.size(); ++i) {
      for (TSNode s : statements(branches[i].block)) {
        TSNode a = simple_assignment(s);
        if (ts_node_is_null(a)) {
          if (is_type(s, "continue_statement") || is_type(s, "break_statement"))
            return Refusal{"`" + text(doc, s) + "` changes which code runs, and torch.where can only select values"};
          return Refusal{"the branch does more than assign variables (`" +
                         std::string(doc.node_text(s).substr(0, 60)) + "`)"};
        }
        std::string name = text(doc, field(a, "left"));
        if (assigned[i].count(name)) return Refusal{"`" + name + "` is assigned twice in one branch"};
        assigned[i][name] = field(a, "right");
        if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
      }
    }
    if (order.empty()) return Refusal{"the branches assign nothing"};
    // Every value may read its own variable's old value, but no other variable the if assigns.
    for (size_t i = 0; i < branches.size(); ++i) {
      for (auto& [name, value] : assigned[i]) {
        for (const std::string& read : names_read(doc, value)) {
          if (read != name && std::find(order.begin(), order.end(), read) != order.end())
            return Refusal{"`" + name + "` is computed from `" + read + "`, which the same if assigns"};
        }
      }
    }
    std::string cond_name;
    bool hoist = order.size() > 1 && predicates.size() == 1 &&
                 !is_type(unparenthesize(branches[0].condition), "identifier");
    if (hoist) {
      cond_name = fresh_name(doc, "graphmend_cond");
      replacement += cond_name + " = " + predicates[0] + eol + indent;
      predicates[0] = cond_name;
    }
    if (order.size() > 1 && predicates.size() > 1) return Refusal{"elif chains that assign several variables are not predicated yet"};
    bool first = true;
    for (const std::string& name : order) {
      std::vector<TSNode> values;
      std::vector<std::string> texts;
      bool defined = defined_before(doc, *fn, name, stmt);
      size_t conditional = has_else ? branches.size() - 1 : branches.size();
      for (size_t i = 0; i < branches.size(); ++i) {
        auto it = assigned[i].find(name);
        if (it != assigned[i].end()) {
          values.push_back(it->second);
          if (i < conditional) texts.push_back(text(doc, it->second));
        } else {
          if (!defined) return Refusal{"`" + name + "` is only defined on some paths of the if"};
          if (i < conditional) texts.push_back(name);
        }
      }
      std::string fallback = name;
      if (has_else) {
        auto it = assigned.back().find(name);
        if (it != assigned.back().end()) fallback = text(doc, it->second);
      } else if (!defined) {
        return Refusal{"`" + name + "` is only defined when the test is true"};
      }
      SelectCheck check = check_select(doc, model, *fn, values, stmt);
      if (!check.refusal.empty()) return Refusal{check.refusal};
      if (!check.shape_unproven.empty()) {
        // One variable, one test: select behind a trace-time shape and dtype check.
        if (order.size() != 1 || predicates.size() != 1 || !tensors(model, *fn, values)) return Refusal{check.shape_unproven};
        if (values.size() < 2 && model.kind_of(field(stmt, "condition"), *fn) != ValueKind::Tensor)
          return Refusal{check.shape_unproven};
        hazard = check.hazard;
        replacement += guarded_select(doc, name + " = ", texts[0], fallback, predicates[0],
                                      text(doc, branches[0].condition), torch.name, indent, eol);
        continue;
      }
      if (values.size() < branches.size() + (has_else ? 0 : 1)) {
        // Some path keeps the old value: each value must be shaped like the variable itself.
        for (TSNode v : values) {
          ValueShape s = shape_of(doc, model, v, *fn);
          if (s.base != name) return Refusal{"cannot prove that `" + text(doc, v) + "` has the shape of `" + name + "`"};
        }
      }
      if (hazard.empty()) hazard = check.hazard;
      if (!first) replacement += eol + indent;
      first = false;
      replacement += name + " = " + select(texts, fallback);
    }
  }

  Fix fix;
  fix.title = "Predicate the branch with torch.where: both sides are computed and one is selected in the graph";
  fix.applicability = Applicability::Safe;
  if (!hazard.empty()) {
    fix.applicability = Applicability::Unsafe;
    fix.title += " (unsafe under autograd: `" + hazard + "` may be inf/NaN on the untaken side, which makes "
                 "gradients NaN)";
  }
  fix.edits.push_back(TextEdit{range, replacement});
  if (torch.import_edit) fix.edits.push_back(*torch.import_edit);
  return fix;
}

}  // namespace

const Transform& transform_predicate_if() {
  static const Transform t{"predicate-if", {"GM101"}, apply};
  return t;
}

}  // namespace graphmend
