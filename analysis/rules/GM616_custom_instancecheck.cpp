// GM616: `isinstance(tensor, C)` where C's metaclass defines `__instancecheck__` (torch 2.14 and later).
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM616",
    .name = "custom-instancecheck",
    .family = "unsupported Python",
    .summary = "`isinstance(tensor, C)` with a metaclass `__instancecheck__` in compiled code",
    .explanation =
        "From torch 2.14 Dynamo refuses to run a user-defined `__instancecheck__` on a tensor: "
        "`isinstance(x, C)` where `C`'s metaclass (or the metaclass of one of its bases) defines "
        "`__instancecheck__` breaks the graph (builtin isinstance() with custom type check on tensor, "
        "GB2736), also inside a tuple of classes. torch 2.13 traced it. Classes of `abc` (ABCMeta) and plain "
        "classes are traced. graphmend reads the classes and metaclasses of the checked file. Checked on "
        "torch 2.13, 2.14 and 2.15.",
    .registry_id = "GB2736",
    .fix_summary =
        "No automatic fix: what the custom check tests is the code's own choice. Test what it stands for "
        "directly (`isinstance(x, torch.Tensor)`, `hasattr`, a flag set in `__init__`), or decide outside the "
        "compiled region.",
    .example_bad = "class Shaped(metaclass=HasShape): ...\nif isinstance(x, Shaped):  # in forward",
    .example_good = "if isinstance(x, torch.Tensor):  # what HasShape.__instancecheck__ tested",
    .fixable = false,
};

// The module-level classes whose isinstance check runs a custom `__instancecheck__`, one name a line.
// Worked out once per file from class statements only (names, bases, metaclass keyword, the names of the
// methods their bodies define), so an edit inside a function body leaves it true.
const std::string& custom_check_classes(const RuleContext& ctx) {
  auto& memo = ctx.model.memo();
  auto [it, added] = memo.try_emplace("GM616:custom-check-classes");
  if (!added) return it->second;
  if (ctx.document.text().find("__instancecheck__") == std::string_view::npos) return it->second;
  struct ClassFacts {
    std::vector<std::string> bases;
    std::string metaclass;
    bool defines_check = false;
  };
  std::map<std::string, ClassFacts> classes;
  for (TSNode statement : named_children(ctx.document.root())) {
    TSNode cls = statement;
    if (is_type(cls, "decorated_definition")) cls = field(cls, "definition");
    if (!is_type(cls, "class_definition")) continue;
    ClassFacts facts;
    TSNode supers = field(cls, "superclasses");
    if (!ts_node_is_null(supers)) {
      for (TSNode arg : named_children(supers)) {
        if (is_type(arg, "identifier")) facts.bases.push_back(ctx.text(arg));
        if (is_type(arg, "keyword_argument") && ctx.text(field(arg, "name")) == "metaclass")
          facts.metaclass = ctx.text(field(arg, "value"));
      }
    }
    for (TSNode member : named_children(field(cls, "body"))) {
      if (is_type(member, "decorated_definition")) member = field(member, "definition");
      if (is_type(member, "function_definition") && ctx.text(field(member, "name")) == "__instancecheck__")
        facts.defines_check = true;
    }
    classes[ctx.text(field(cls, "name"))] = std::move(facts);
  }
  // A metaclass checks when it or a base (of this file) defines the method; a class checks when its
  // metaclass does or one of its bases checks.
  std::map<std::string, bool> meta_memo, class_memo;
  std::function<bool(const std::string&, int)> meta_checks = [&](const std::string& name, int depth) -> bool {
    auto found = classes.find(name);
    if (found == classes.end() || depth > 16) return false;
    if (auto m = meta_memo.find(name); m != meta_memo.end()) return m->second;
    bool result = found->second.defines_check;
    for (const auto& base : found->second.bases) result = result || meta_checks(base, depth + 1);
    return meta_memo[name] = result;
  };
  std::function<bool(const std::string&, int)> class_checks = [&](const std::string& name, int depth) -> bool {
    auto found = classes.find(name);
    if (found == classes.end() || depth > 16) return false;
    if (auto m = class_memo.find(name); m != class_memo.end()) return m->second;
    bool result = !found->second.metaclass.empty() && meta_checks(found->second.metaclass, 0);
    for (const auto& base : found->second.bases) result = result || class_checks(base, depth + 1);
    return class_memo[name] = result;
  };
  for (const auto& [name, _] : classes)
    if (class_checks(name, 0)) it->second += name + "\n";
  return it->second;
}

// The class of `type` (a name, or a tuple of them) whose check is custom, or "".
std::string custom_checked(const RuleContext& ctx, TSNode type, const FunctionInfo& fn) {
  type = unparenthesize(type);
  if (is_type(type, "tuple")) {
    for (TSNode element : named_children(type))
      if (auto name = custom_checked(ctx, element, fn); !name.empty()) return name;
    return "";
  }
  if (!is_type(type, "identifier")) return "";
  const std::string name = ctx.text(type);
  if (bound_in_function(fn, name)) return "";
  std::istringstream names(custom_check_classes(ctx));
  for (std::string line; std::getline(names, line);)
    if (line == name) return name;
  return "";
}

void check(RuleContext& ctx, const Visit& v) {
  if (ctx.torch < TorchVersion{2, 14}) return;
  TSNode callee = field(v.node, "function");
  if (!is_type(callee, "identifier") || ctx.text(callee) != "isinstance" || argument_count(v.node) != 2 ||
      bound_in_function(v.function, "isinstance"))
    return;
  TSNode args = field(v.node, "arguments");
  TSNode object = named_child(args, 0), type = named_child(args, 1);
  if (is_type(object, "keyword_argument") || is_type(type, "keyword_argument")) return;
  if (ctx.model.kind_of(object, v.function) != ValueKind::Tensor) return;
  const std::string cls = custom_checked(ctx, type, v.function);
  if (cls.empty()) return;
  ctx.report(kInfo, node_range(v.node),
             "`" + cls +
                 "` has a metaclass that defines `__instancecheck__`: from torch 2.14 Dynamo does not run it on a "
                 "tensor and breaks the graph here (builtin isinstance() with custom type check on tensor).",
             v);
}

}  // namespace

const Rule& rule_GM616() {
  static const Rule rule{&kInfo, {"call"}, check};
  return rule;
}

}  // namespace graphmend
