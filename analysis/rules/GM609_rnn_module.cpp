// GM609: an nn.LSTM, nn.GRU or nn.RNN module used inside traced code.
#include <algorithm>
#include <array>
#include <sstream>
#include <string_view>
#include <vector>

#include "graphmend/analysis/module_bindings.h"
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM609",
    .name = "rnn-module",
    .family = "unsupported torch features",
    .summary = "`nn.LSTM`/`nn.GRU`/`nn.RNN` module used inside compiled code",
    .explanation =
        "Dynamo refuses to wrap an `nn.LSTM`, `nn.GRU` or `nn.RNN` module (Attempted to wrap RNN, GRU, or "
        "LSTM): the first time compiled code touches one (calling it, `.flatten_parameters()`, reading "
        "`.hidden_size`) the graph breaks, and Dynamo runs the rest of that function eagerly. From torch 2.15 "
        "each call breaks (Unsupported function call (delayed), GB0148), and each method call and use of an "
        "attribute (Unsupported python_type() call, GB4841), with Dynamo resuming after each. The cells "
        "(`nn.LSTMCell`, `nn.GRUCell`, `nn.RNNCell`) are traced. Checked on torch 2.13, 2.14 and 2.15. Setting "
        "`torch._dynamo.config.allow_rnn = True` before compiling turns on Dynamo's experimental support "
        "for these modules: a setup choice, not a change to the model code.",
    .registry_id = "GB0014",
    .fix_summary =
        "No automatic fix: run the recurrent layer outside the compiled region (compile the parts before and "
        "after it), write the recurrence with the cell modules (`nn.LSTMCell` in a loop, which Dynamo "
        "unrolls), or opt in to `torch._dynamo.config.allow_rnn = True`.",
    .example_bad = "self.lstm = nn.LSTM(d, d, batch_first=True)\n...\nout, _ = self.lstm(x)  # in forward",
    .example_good =
        "self.cell = nn.LSTMCell(d, d)\n...\nfor t in range(x.shape[1]):  # in forward: unrolled\n"
        "    h, c = self.cell(x[:, t], (h, c))",
    .fixable = false,
};

constexpr std::array<std::string_view, 6> kModules{
    "torch.nn.LSTM",
    "torch.nn.GRU",
    "torch.nn.RNN",
    "torch.nn.modules.rnn.LSTM",
    "torch.nn.modules.rnn.GRU",
    "torch.nn.modules.rnn.RNN",
};

bool is_rnn_class(std::string_view qualified) {
  return std::find(kModules.begin(), kModules.end(), qualified) != kModules.end();
}

// "LSTM" when `value` is a call of nn.LSTM (through any import), else "".
std::string rnn_constructed(const RuleContext& ctx, TSNode value) {
  value = unparenthesize(value);
  if (!is_type(value, "call")) return "";
  auto q = ctx.model.qualified_name(field(value, "function"));
  return q && is_rnn_class(*q) ? q->substr(q->rfind('.') + 1) : "";
}

// Whether the file mentions an RNN class at all (and does not opt in to allow_rnn), and its module-level
// names bound only to an RNN module: "-" (nothing to report), or "+" then one `name=class` a line. Worked
// out once per file (the model's memo, cleared when the model is updated).
const std::string& module_facts(const RuleContext& ctx) {
  auto& memo = ctx.model.memo();
  auto [it, added] = memo.try_emplace("GM609:rnn-globals");
  if (!added) return it->second;
  const std::string& text = ctx.document.text();
  if (text.find("LSTM") == std::string::npos && text.find("GRU") == std::string::npos &&
      text.find("RNN") == std::string::npos) {
    it->second = "-";
    return it->second;
  }
  // `torch._dynamo.config.allow_rnn = True` (or a config.patch of it) in the module's own code opts in to
  // Dynamo's experimental support. Function bodies are not read: an edit inside one (which the model may
  // take incrementally) must not change the findings of the others.
  bool opted_in = false;
  walk_preorder(ctx.document.root(), [&](TSNode n) {
    auto t = type_of(n);
    if (t == "function_definition" || t == "class_definition") return Walk::Skip;
    if ((t == "identifier" || t == "string_content") && ctx.document.node_text(n) == "allow_rnn") {
      opted_in = true;
      return Walk::Stop;
    }
    return Walk::Descend;
  });
  if (opted_in) {
    it->second = "-";
    return it->second;
  }
  std::string facts = "+";
  for (const auto& [name, values] : module_bindings(ctx.document)) {
    bool all = !values.empty();
    for (TSNode value : values) all = all && !ts_node_is_null(value) && !rnn_constructed(ctx, value).empty();
    if (all) facts += "\n" + name + "=" + rnn_constructed(ctx, values.front());
  }
  it->second = std::move(facts);
  return it->second;
}

std::string rnn_global(const RuleContext& ctx, std::string_view name) {
  std::istringstream lines(module_facts(ctx));
  for (std::string line; std::getline(lines, line);) {
    auto eq = line.find('=');
    if (eq != std::string::npos && std::string_view(line).substr(0, eq) == name) return line.substr(eq + 1);
  }
  return "";
}

// A name bound to an RNN module: a local (or a local of an enclosing function) every assignment of which
// constructs one, or a module-level name only ever bound to one.
std::string rnn_name(const RuleContext& ctx, TSNode name, const FunctionInfo& fn) {
  const std::string text = ctx.text(name);
  for (const FunctionInfo* f = &fn; f; f = f->parent) {
    const bool param = std::find(f->params.begin(), f->params.end(), text) != f->params.end();
    if (!param && !f->assignments.count(text) && !f->locals.count(text)) continue;
    auto it = f->assignments.find(text);
    if (param || it == f->assignments.end() || it->second.empty()) return "";
    std::string cls;
    for (TSNode value : it->second) {
      std::string c = rnn_constructed(ctx, value);
      if (c.empty()) return "";
      cls = c;
    }
    return cls;
  }
  if (ctx.model.qualified_name(name)) return "";
  return rnn_global(ctx, text);
}

const ClassInfo* base_class(const RuleContext& ctx, const std::string& base) {
  std::string_view name = base;
  if (auto dot = name.rfind('.'); dot != std::string_view::npos) name = name.substr(dot + 1);
  return ctx.model.find_class(name);
}

// `cls` is `ancestor` or derives from it through classes of this file.
bool derives_from(const RuleContext& ctx, const ClassInfo* cls, const ClassInfo* ancestor, int depth = 0) {
  if (!cls || depth > 16) return false;
  if (cls == ancestor) return true;
  return std::any_of(cls->bases.begin(), cls->bases.end(),
                     [&](const std::string& b) { return derives_from(ctx, base_class(ctx, b), ancestor, depth + 1); });
}

// `self.<name>` of the class owning `fn` holds an RNN module: its constructor is one, and every write to
// it in the class, its bases and its subclasses of this file constructs one (or is a falsy literal).
std::string rnn_attribute(const RuleContext& ctx, const std::string& name, const FunctionInfo& fn) {
  const FunctionInfo* top = &fn;
  while (top->parent) top = top->parent;
  const ClassInfo* cls = top->owner;
  if (!cls) return "";
  const std::string ctor = ctx.model.attribute_constructor(cls, name);
  if (!is_rnn_class(ctor)) return "";
  for (const auto& other : ctx.model.classes()) {
    if (!derives_from(ctx, cls, other.get()) && !derives_from(ctx, other.get(), cls)) continue;
    for (const auto& [_, method] : other->methods) {
      for (const AttributeEffect& effect : method->attribute_effects) {
        if (effect.name != name) continue;
        if (effect.buffer) return "";
        if (effect.constructor ? !is_rnn_class(*effect.constructor) : effect.truth != false) return "";
      }
    }
  }
  return ctor.substr(ctor.rfind('.') + 1);
}

bool is_assignment_target(TSNode node, TSNode parent) {
  return (is_type(parent, "assignment") || is_type(parent, "augmented_assignment")) &&
         ts_node_eq(field(parent, "left"), node);
}

// The RNN class a reference evaluates: `self.lstm` (an attribute read), `lstm(...)` (a call of a name)
// or `lstm.forward` (an attribute of a name); "" for anything else.
std::string rnn_reference(const RuleContext& ctx, TSNode node, TSNode parent, const FunctionInfo& fn) {
  if (is_type(node, "attribute")) {
    if (is_assignment_target(node, parent)) return "";
    TSNode object = field(node, "object");
    if (is_type(object, "identifier")) {
      if (ctx.text(object) == "self") return rnn_attribute(ctx, ctx.text(field(node, "attribute")), fn);
      return rnn_name(ctx, object, fn);
    }
    return "";
  }
  if (is_type(node, "call")) {
    TSNode callee = field(node, "function");
    if (is_type(callee, "identifier")) return rnn_name(ctx, callee, fn);
  }
  return "";
}

void check(RuleContext& ctx, const Visit& v) {
  if (module_facts(ctx) == "-") return;
  TSNode parent = v.ancestor(0);
  const std::string cls = rnn_reference(ctx, v.node, parent, v.function);
  if (cls.empty()) return;
  // Before 2.15 Dynamo runs the rest of the function eagerly once wrapping an RNN module failed there; from
  // 2.15 it resumes after each use.
  const bool delayed = ctx.torch >= TorchVersion{2, 15};
  if (!delayed && !first_site_in_function(v.function, v.node, [&](TSNode n) {
        return (is_type(n, "attribute") || is_type(n, "call")) &&
               !rnn_reference(ctx, n, ts_node_parent(n), v.function).empty();
      }))
    return;
  // `self.lstm(x)`: the call; `self.lstm.hidden_size`: the attribute read.
  const bool callee = is_type(parent, "call") && ts_node_eq(field(parent, "function"), v.node);
  TSNode site = callee ? parent : v.node;
  const std::string what = is_type(v.node, "call") ? ctx.text(field(v.node, "function")) : ctx.text(v.node);
  const bool called = callee || is_type(v.node, "call");
  if (!delayed) {
    ctx.report(kInfo, node_range(site),
               "`" + what + "` is an nn." + cls +
                   " module, which Dynamo does not wrap (Attempted to wrap RNN, GRU, or LSTM): the graph breaks "
                   "here and the rest of this function runs eagerly. torch._dynamo.config.allow_rnn = True opts in "
                   "to experimental support.",
               v);
    return;
  }
  // From 2.15 the module is a delayed unsupported value: calling it breaks (GB0148), and so do its methods
  // and a use of its attributes (GB4841; reported at the read, the use is usually the same expression).
  ctx.report(kInfo, node_range(site),
             "`" + what + "` is an nn." + cls + " module, which Dynamo does not trace: " +
                 (called ? "calling it breaks the graph here (Unsupported function call (delayed))."
                         : "its methods and attributes are unsupported values (Unsupported python_type() call): "
                           "the graph breaks here, or where the value read here is used.") +
                 " torch._dynamo.config.allow_rnn = True opts in to experimental support.",
             v, called ? "GB0148" : "GB4841");
}

}  // namespace

const Rule& rule_GM609() {
  static const Rule rule{&kInfo, {"attribute", "call"}, check};
  return rule;
}

}  // namespace graphmend
