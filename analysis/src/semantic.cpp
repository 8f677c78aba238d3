#include "graphmend/analysis/semantic.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <functional>
#include <set>
#include <unordered_set>

#include "graphmend/analysis/annotations.h"
#include "graphmend/analysis/module_bindings.h"
#include "graphmend/analysis/phase_timing.h"

extern "C" const TSLanguage* tree_sitter_python(void);

namespace graphmend {

TSNode field(TSNode node, const char* name) {
  // Field names are string literals: cache their ids (the name lookup scans every field name).
  thread_local std::unordered_map<const char*, TSFieldId> ids;
  auto it = ids.find(name);
  if (it == ids.end()) {
    TSFieldId id = ts_language_field_id_for_name(tree_sitter_python(), name, static_cast<uint32_t>(std::strlen(name)));
    it = ids.emplace(name, id).first;
  }
  if (it->second == 0 || ts_node_is_null(node)) return TSNode{};
  return ts_node_child_by_field_id(node, it->second);
}
std::string_view type_of(TSNode node) {
  // Symbol names with their lengths, once: ts_node_type plus strlen on every call was a tenth of the
  // analysis time.
  static const std::vector<std::string_view> names = [] {
    const TSLanguage* language = tree_sitter_python();
    std::vector<std::string_view> out(ts_language_symbol_count(language));
    for (uint32_t i = 0; i < out.size(); ++i) out[i] = ts_language_symbol_name(language, static_cast<TSSymbol>(i));
    return out;
  }();
  if (ts_node_is_null(node)) return {};
  TSSymbol symbol = ts_node_symbol(node);
  return symbol < names.size() ? names[symbol] : std::string_view(ts_node_type(node));
}
bool is_type(TSNode node, std::string_view type) { return !ts_node_is_null(node) && type_of(node) == type; }
TSNode unparenthesize(TSNode node) {
  while (is_type(node, "parenthesized_expression")) {
    // Comments inside the parentheses are named children too: look past them.
    TSNode inner{};
    uint32_t n = ts_node_named_child_count(node), exprs = 0;
    for (uint32_t i = 0; i < n; ++i) {
      TSNode c = ts_node_named_child(node, i);
      if (is_type(c, "comment")) continue;
      inner = c;
      ++exprs;
    }
    if (exprs != 1) break;
    node = inner;
  }
  return node;
}

uint32_t deepest_level(TSNode node, uint32_t depth) {
  TSTreeCursor cursor = ts_tree_cursor_new(node);
  uint32_t level = depth, deepest = depth;
  for (bool more = true; more;) {
    deepest = std::max(deepest, level);
    if (ts_tree_cursor_goto_first_child(&cursor)) {
      ++level;
      continue;
    }
    while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
      if (!ts_tree_cursor_goto_parent(&cursor)) {
        more = false;
        break;
      }
      --level;
    }
  }
  ts_tree_cursor_delete(&cursor);
  return deepest;
}

namespace {
// Calls `visit(child)` on each named child that is not an extra, in order, until it returns true.
template <class Visit>
void for_each_grammar_child(TSNode node, Visit&& visit) {
  if (ts_node_is_null(node)) return;
  const uint32_t count = ts_node_child_count(node);
  if (count <= 8) {
    // Few children: direct access is cheaper than a cursor.
    for (uint32_t i = 0; i < count; ++i) {
      TSNode c = ts_node_child(node, i);
      if (ts_node_is_named(c) && !ts_node_is_extra(c) && visit(c)) return;
    }
    return;
  }
  TSTreeCursor cursor = ts_tree_cursor_new(node);
  if (ts_tree_cursor_goto_first_child(&cursor)) {
    do {
      TSNode c = ts_tree_cursor_current_node(&cursor);
      if (ts_node_is_named(c) && !ts_node_is_extra(c) && visit(c)) break;
    } while (ts_tree_cursor_goto_next_sibling(&cursor));
  }
  ts_tree_cursor_delete(&cursor);
}
}  // namespace

TSNode named_child(TSNode node, uint32_t index) {
  TSNode found{};
  for_each_grammar_child(node, [&](TSNode c) {
    if (index-- != 0) return false;
    found = c;
    return true;
  });
  return found;
}

uint32_t named_child_count(TSNode node) {
  uint32_t count = 0;
  for_each_grammar_child(node, [&](TSNode) {
    ++count;
    return false;
  });
  return count;
}

// A `\` at a line's end: an extra the grammar keeps as a named node. Comments stay in named_children (some
// callers read them); continuations carry nothing.
bool is_line_continuation(TSNode node) { return ts_node_is_extra(node) && type_of(node) == "line_continuation"; }

std::vector<TSNode> named_children(TSNode node) {
  std::vector<TSNode> out;
  if (ts_node_is_null(node)) return out;
  uint32_t count = ts_node_child_count(node);
  if (count == 0) return out;
  if (count <= 6) {
    // Few children: direct access is cheaper than a cursor.
    for (uint32_t i = 0; i < count; ++i) {
      TSNode c = ts_node_child(node, i);
      if (ts_node_is_named(c) && !is_line_continuation(c)) out.push_back(c);
    }
    return out;
  }
  TSTreeCursor cursor = ts_tree_cursor_new(node);
  if (ts_tree_cursor_goto_first_child(&cursor)) {
    do {
      TSNode c = ts_tree_cursor_current_node(&cursor);
      if (ts_node_is_named(c) && !is_line_continuation(c)) out.push_back(c);
    } while (ts_tree_cursor_goto_next_sibling(&cursor));
  }
  ts_tree_cursor_delete(&cursor);
  return out;
}

std::string_view to_string(ValueKind kind) {
  switch (kind) {
    case ValueKind::Unknown:
      return "unknown";
    case ValueKind::Tensor:
      return "tensor";
    case ValueKind::DataScalar:
      return "data-dependent Python value";
    case ValueKind::Static:
      return "static";
    case ValueKind::None:
      return "None";
    case ValueKind::Module:
      return "module";
    case ValueKind::TensorSequence:
      return "list of tensors";
    case ValueKind::TensorMapping:
      return "dict of tensors";
  }
  return "unknown";
}

namespace {

// The names of a workspace entry's comma-separated list ("make_params,transform"), empty ones left out.
std::vector<std::string_view> listed_names(std::string_view list) {
  std::vector<std::string_view> out;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (comma != 0) out.push_back(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return out;
}

// The reverse of listed_names, in the order given.
template <class Names>
std::string joined_names(const Names& names) {
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out += ',';
    out += name;
  }
  return out;
}

template <size_t N>
bool one_of(std::string_view s, const std::array<std::string_view, N>& set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

// Tensor attributes that are metadata Dynamo knows at trace time.
constexpr std::array<std::string_view, 16> kMetadataAttributes{
    "shape",   "dtype",   "device",       "ndim",  "is_cuda",   "requires_grad", "is_sparse", "layout",
    "is_leaf", "is_meta", "is_quantized", "names", "is_nested", "is_mps",        "is_cpu",    "itemsize"};
// Tensor methods that return metadata, not tensor data.
constexpr std::array<std::string_view, 16> kMetadataMethods{
    "size",       "dim",      "numel",      "element_size",   "stride",   "is_contiguous", "is_floating_point",
    "is_complex", "data_ptr", "get_device", "storage_offset", "nelement", "ndimension",    "type",
    "is_signed",  "has_names"};
// Tensor methods that move data to Python (rules GM4xx) or to NumPy.
constexpr std::array<std::string_view, 2> kDataMethods{"item", "tolist"};
// torch.* callables that return Python values known at trace time.
// Methods that only tensors have: not numpy arrays, PIL images, Python numbers or sequences, nor nn.Module
// (which has cpu/cuda/float/half/to of its own). A parameter the body calls one of these on is a tensor.
constexpr std::array<std::string_view, 33> kTensorOnlyMethods{
    "numel",        "dim",       "size",     "unsqueeze",         "unsqueeze_",    "flip",       "masked_fill",
    "masked_fill_", "new_zeros", "new_ones", "new_full",          "new_empty",     "new_tensor", "detach",
    "contiguous",   "permute",   "type_as",  "is_floating_point", "element_size",  "mul_",       "add_",
    "sub_",         "div_",      "clamp_",   "index_select",      "masked_select", "expand_as",  "view_as",
    "reshape_as",   "unbind",    "narrow",   "scatter_add_",      "index_add_"};

constexpr std::array<std::string_view, 24> kStaticTorchFunctions{"torch.is_tensor",
                                                                 "torch.is_floating_point",
                                                                 "torch.is_complex",
                                                                 "torch.numel",
                                                                 "torch.is_grad_enabled",
                                                                 "torch.get_default_dtype",
                                                                 "torch.is_autocast_enabled",
                                                                 "torch.finfo",
                                                                 "torch.iinfo",
                                                                 "torch.device",
                                                                 "torch.Size",
                                                                 "torch.compiler.is_compiling",
                                                                 "torch.jit.is_scripting",
                                                                 "torch.jit.is_tracing",
                                                                 "torch.cuda.is_available",
                                                                 "torch._dynamo.is_compiling",
                                                                 "torch.is_inference_mode_enabled",
                                                                 "torch.cuda.device_count",
                                                                 "torch.get_autocast_dtype",
                                                                 "torch.are_deterministic_algorithms_enabled",
                                                                 "torch.compiler.is_dynamo_compiling",
                                                                 "torch.dtype",
                                                                 "torch.promote_types",
                                                                 "torch.result_type"};
// torch.* callables that return a Python bool computed from tensor data.
constexpr std::array<std::string_view, 2> kDataTorchFunctions{"torch.equal", "torch.allclose"};
// Calls that Dynamo treats as constant True while tracing.
constexpr std::array<std::string_view, 3> kCompilingChecks{"is_compiling", "is_torchdynamo_compiling",
                                                           "is_dynamo_compiling"};
std::string text_of(const Document& doc, TSNode node) { return std::string(doc.node_text(node)); }

// `x[:, 0]`, `x[..., None]`: a subscript with several indices, one of them a slice, `...` or None, which a
// list or tuple cannot take.
bool indexes_in_several_dimensions(TSNode subscript) {
  const uint32_t n = ts_node_named_child_count(subscript);  // the value, then the indices
  bool several = n > 2, slice = false;
  for (uint32_t i = 1; i < n; ++i) {
    TSNode index = ts_node_named_child(subscript, i);
    const bool special = is_type(index, "ellipsis") || is_type(index, "none");
    several |= special;
    slice |= special || is_type(index, "slice");
  }
  return several && slice;
}

// Parameter names that read as switches (`output_hidden_states`, `use_cache`, `return_dict`): Python
// values, whatever their default.
bool looks_like_flag(std::string_view name) {
  for (std::string_view prefix : {"output_", "use_", "return_", "is_", "has_", "do_", "should_", "enable_", "disable_",
                                  "with_", "apply_", "interpolate_", "skip_", "need_", "keep_"}) {
    if (name.starts_with(prefix)) return true;
  }
  return name.ends_with("_flag") || name == "training" || name == "verbose" || name == "debug" || name == "causal";
}

// A tensor, or a list or dict of them.
bool tensor_valued(ValueKind k) {
  return k == ValueKind::Tensor || k == ValueKind::TensorSequence || k == ValueKind::TensorMapping;
}

ValueKind merge(ValueKind a, ValueKind b) {
  if (a == b) return a;
  // A container of tensors stays one when the other value is None (`Optional[List[Tensor]]`); mixed with
  // anything else it proves nothing.
  auto container = [](ValueKind k) { return k == ValueKind::TensorSequence || k == ValueKind::TensorMapping; };
  if (container(a) || container(b)) {
    // Like a tensor, a container proven on one path dominates what is not known on another.
    if (a == ValueKind::None || a == ValueKind::Unknown) return b;
    if (b == ValueKind::None || b == ValueKind::Unknown) return a;
    return ValueKind::Unknown;
  }
  // Tensor dominates (an Optional[Tensor] is a tensor where it is used), then data-dependent values.
  if (a == ValueKind::Tensor || b == ValueKind::Tensor) return ValueKind::Tensor;
  if (a == ValueKind::DataScalar || b == ValueKind::DataScalar) return ValueKind::DataScalar;
  if (a == ValueKind::Module || b == ValueKind::Module) return ValueKind::Module;
  if (a == ValueKind::Unknown || b == ValueKind::Unknown) return ValueKind::Unknown;
  if (a == ValueKind::None) return b;
  if (b == ValueKind::None) return a;
  return ValueKind::Static;
}

// Kind implied by a parameter or variable annotation (annotations.h).
ValueKind annotation_kind(std::string_view annotation) { return read_annotation(annotation).kind; }

// One letter per kind, for the argument kinds the workspace pass carries between files as text.
char kind_code(ValueKind kind) {
  switch (kind) {
    case ValueKind::Tensor:
      return 'T';
    case ValueKind::DataScalar:
      return 'D';
    case ValueKind::Static:
      return 'S';
    case ValueKind::None:
      return 'N';
    case ValueKind::Module:
      return 'M';
    case ValueKind::TensorSequence:
      return 'L';
    case ValueKind::TensorMapping:
      return 'K';
    case ValueKind::Unknown:
      break;
  }
  return 'U';
}
ValueKind kind_from_code(char c) {
  for (ValueKind k : {ValueKind::Tensor, ValueKind::DataScalar, ValueKind::Static, ValueKind::None, ValueKind::Module,
                      ValueKind::TensorSequence, ValueKind::TensorMapping}) {
    if (kind_code(k) == c) return k;
  }
  return ValueKind::Unknown;
}

// Positional and keyword arguments of a call, comments left out.
size_t argument_count_of(TSNode call) {
  size_t n = 0;
  for (TSNode a : named_children(field(call, "arguments"))) n += !is_type(a, "comment");
  return n;
}

void for_each_named_child(TSNode node, const std::function<void(TSNode)>& fn) {
  for (TSNode c : named_children(node)) fn(c);
}

// Statements that cannot hold a definition (a `def` or `class` is a statement of its own, never part
// of an expression): collect_definitions need not look inside them.
bool is_simple_statement(std::string_view t) {
  return t == "expression_statement" || t == "return_statement" || t == "pass_statement" || t == "break_statement" ||
         t == "continue_statement" || t == "raise_statement" || t == "assert_statement" || t == "delete_statement" ||
         t == "import_statement" || t == "import_from_statement" || t == "future_import_statement" ||
         t == "global_statement" || t == "nonlocal_statement" || t == "type_alias_statement" || t == "comment";
}

// The variables of the comprehensions kind_of is reading, innermost last (per thread: models are read
// by several threads at once).
thread_local std::vector<std::pair<std::string, ValueKind>> comprehension_scope;

bool is_pattern(TSNode node) {
  return is_type(node, "pattern_list") || is_type(node, "tuple_pattern") || is_type(node, "list_pattern") ||
         is_type(node, "expression_list") || is_type(node, "tuple") || is_type(node, "list");
}

// The targets of a pattern, comments left out.
std::vector<TSNode> pattern_parts(TSNode pattern) {
  std::vector<TSNode> parts;
  for (TSNode t : named_children(pattern)) {
    if (!is_type(t, "comment")) parts.push_back(t);
  }
  return parts;
}

bool is_comprehension(std::string_view t) {
  return t == "list_comprehension" || t == "generator_expression" || t == "set_comprehension" ||
         t == "dictionary_comprehension";
}

// The names a target binds: identifiers of a pattern, nested and starred ones included (not attributes
// or subscripts).
void target_names(const Document& document, TSNode target, std::vector<std::string>& names) {
  target = unparenthesize(target);
  if (is_type(target, "identifier")) {
    names.push_back(std::string(document.node_text(target)));
  } else if (is_pattern(target) || is_type(target, "list_splat_pattern") || is_type(target, "list_splat")) {
    for (TSNode part : named_children(target)) target_names(document, part, names);
  }
}

// `feats.append(x)`, `feats.extend(xs)`, `feats.insert(i, x)`: a call that adds to a list local.
bool grows_list(std::string_view method) { return method == "append" || method == "extend" || method == "insert"; }

// Records under each name it binds the body node that binds it (see FunctionInfo::binding_nodes).
void record_bindings(const Document& document, TSNode node,
                     std::unordered_map<std::string, std::vector<TSNode>>& bindings) {
  const std::string_view t = type_of(node);
  std::vector<std::string> names;
  if (t == "assignment" || t == "augmented_assignment") {
    target_names(document, field(node, "left"), names);
    // `a = b = expr`: the inner assignment is a body node of its own.
  } else if (t == "for_statement") {
    target_names(document, field(node, "left"), names);
  } else if (is_comprehension(t)) {
    for (TSNode clause : named_children(node)) {
      if (is_type(clause, "for_in_clause")) target_names(document, field(clause, "left"), names);
    }
  } else if (t == "call") {
    TSNode callee = unparenthesize(field(node, "function"));
    if (!is_type(callee, "attribute") || !is_type(field(callee, "object"), "identifier")) return;
    const std::string_view method = document.node_text(field(callee, "attribute"));
    if (grows_list(method)) names.push_back(std::string(document.node_text(field(callee, "object"))));
  }
  for (const std::string& name : names) {
    std::vector<TSNode>& nodes = bindings[name];
    if (nodes.empty() || !ts_node_eq(nodes.back(), node)) nodes.push_back(node);
  }
}

// A PEP 484 function type comment, `# type: (A, B) -> R`, on the line after the header: the top-level
// comma-separated annotations inside the parentheses (`*args` and `**kwargs` marks dropped) and R.
void read_type_comment(const Document& document, TSNode definition, std::vector<std::string>& params,
                       std::string& returns) {
  params.clear();
  returns.clear();
  const TSNode body = field(definition, "body");
  if (ts_node_is_null(body)) return;
  TSNode comment{};
  for (TSNode c : named_children(body)) {
    if (is_type(c, "comment")) comment = c;
    break;
  }
  if (ts_node_is_null(comment)) {
    // tree-sitter may hang the comment before the block on the definition itself.
    for (TSNode c : named_children(definition)) {
      if (is_type(c, "comment") && ts_node_start_byte(c) < ts_node_start_byte(body)) comment = c;
    }
  }
  if (ts_node_is_null(comment)) return;
  std::string_view text = document.node_text(comment);
  text.remove_prefix(1);  // '#'
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  if (!text.starts_with("type:")) return;
  text.remove_prefix(5);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  if (text.empty() || text.front() != '(') return;
  int depth = 0;
  size_t start = 1, close = std::string_view::npos;
  std::vector<std::string> parts;
  auto add = [&](size_t from, size_t to) {
    std::string_view part = text.substr(from, to - from);
    while (!part.empty() && (part.front() == ' ' || part.front() == '*')) part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (!part.empty()) parts.emplace_back(part);
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '(' || ch == '[') ++depth;
    if (ch == ')' || ch == ']') --depth;
    if (depth == 1 && ch == ',') {
      add(start, i);
      start = i + 1;
    }
    if (depth == 0) {
      close = i;
      break;
    }
  }
  if (close == std::string_view::npos) return;
  add(start, close);
  std::string_view rest = text.substr(close + 1);
  const size_t arrow = rest.find("->");
  if (arrow == std::string_view::npos) return;
  rest.remove_prefix(arrow + 2);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\r')) rest.remove_suffix(1);
  params = std::move(parts);
  returns = std::string(rest);
}

template <class F>
void for_each_body_node(const FunctionInfo& fn, F&& visit) {
  for (TSNode n : fn.body_nodes) visit(n);
}

}  // namespace

SemanticModel::SemanticModel(const Document& document, Scope scope,
                             const std::vector<std::string>& traced_from_workspace)
    : document_(document) {
  timing::Scope building(timing::Phase::Semantic);
  new_flow_generation();
  scope_ = scope;
  CalleeCache callees;
  callee_cache_ = &callees;
  TSNode root = document.root();
  // First, before any pass that recurses along the tree.
  find_deep_regions(root);
  collect_imports(root);
  disable_aliases_ = dynamo_disable_aliases(document, [this](TSNode n) { return qualified_name(n); });
  collect_module_constants(root);
  for (const std::string& name : traced_from_workspace) {
    // "disabled:timm.layers.disable_compiler": an imported decorator that disables Dynamo (read before the
    // definitions, whose decorators it marks).
    if (name.starts_with(kWorkspaceDisabledPrefix))
      workspace_disable_aliases_.insert(name.substr(kWorkspaceDisabledPrefix.size()));
  }
  collect_definitions(root, nullptr, nullptr);
  index_definitions();
  collect_compile_call_targets();
  for (const std::string& name : traced_from_workspace) {
    // "module:pkg.base.Base": the imported base `pkg.base.Base` is an nn.Module subclass in its own file.
    if (name.starts_with(kWorkspaceModuleBasePrefix)) {
      workspace_module_bases_.insert(name.substr(kWorkspaceModuleBasePrefix.size()));
      continue;
    }
    // "overridable:pkg.base.Base:make_params,transform": traced code of that base calls these through `self`.
    if (name.starts_with(kWorkspaceOverridablePrefix)) {
      const std::string_view rest = std::string_view(name).substr(kWorkspaceOverridablePrefix.size());
      const size_t colon = rest.rfind(':');
      if (colon == std::string_view::npos) continue;
      auto& methods = workspace_overridable_[std::string(rest.substr(0, colon))];
      for (std::string_view method : listed_names(rest.substr(colon + 1))) methods.emplace(method);
      continue;
    }
    if (name.starts_with(kWorkspaceImportedSparseReturnPrefix)) {
      workspace_sparse_returns_.emplace(std::string_view(name).substr(kWorkspaceImportedSparseReturnPrefix.size()));
      continue;
    }
    // "ret:pkg.bbox.infer_shape:LTT": what an imported function returns (a tuple of two tensors).
    if (name.starts_with(kWorkspaceImportedReturnPrefix)) {
      const std::string_view rest = std::string_view(name).substr(kWorkspaceImportedReturnPrefix.size());
      const size_t colon = rest.rfind(':');
      if (colon == std::string_view::npos || colon + 1 >= rest.size()) continue;
      ImportedReturn r;
      r.kind = kind_from_code(rest[colon + 1]);
      for (char c : rest.substr(colon + 2)) r.elements.push_back(kind_from_code(c));
      workspace_returns_[std::string(rest.substr(0, colon))] = std::move(r);
      continue;
    }
    // "args:f:TS": a call of `f` in another file's traced code passes a tensor and a static value.
    if (name.starts_with(kWorkspaceArgumentsPrefix)) {
      const std::string_view rest = std::string_view(name).substr(kWorkspaceArgumentsPrefix.size());
      const size_t colon = rest.rfind(':');
      if (colon == std::string_view::npos) continue;
      std::vector<ValueKind> kinds;
      for (char c : rest.substr(colon + 1)) kinds.push_back(kind_from_code(c));
      workspace_call_args_[std::string(rest.substr(0, colon))].push_back(std::move(kinds));
      continue;
    }
    // "overrides:Class:m1,m2": a class of another file derives from this file's `Class` and defines these: this
    // file asks its own imported bases about them too (overrides reach across several files).
    if (name.starts_with(kWorkspaceOverridesQueryPrefix)) {
      const std::string_view rest = std::string_view(name).substr(kWorkspaceOverridesQueryPrefix.size());
      const size_t colon = rest.find(':');
      if (colon == std::string_view::npos) continue;
      auto& methods = workspace_override_interest_[std::string(rest.substr(0, colon))];
      for (std::string_view method : listed_names(rest.substr(colon + 1))) methods.emplace(method);
      continue;
    }
    // "@d": another file's traced function is decorated with this file's `d`: d's wrappers run.
    if (name.starts_with("@")) {
      auto it = top_level_by_name_.find(name.substr(1));
      if (it == top_level_by_name_.end()) continue;
      if (auto nested = nested_.find(it->second); nested != nested_.end()) {
        for (FunctionInfo* g : nested->second) {
          g->is_entry = true;
          g->entry_description = "`" + g->name + "` inside decorator `" + it->second->name +
                                 "`, which wraps a function compiled in another workspace file";
          g->entry_range = node_range(field(g->node, "name"));
        }
      }
      continue;
    }
    // "Class.method": a method that a class of another file inherits from this file's `Class`.
    if (auto dot = name.find('.'); dot != std::string::npos) {
      const ClassInfo* cls = find_class(name.substr(0, dot));
      FunctionInfo* const* method = cls ? inherited(cls, name.substr(dot + 1), &ClassInfo::methods) : nullptr;
      if (method && !(*method)->is_entry) {
        (*method)->is_entry = true;
        (*method)->entry_description = "method `" + name + "`, inherited by a class compiled in another workspace file";
        (*method)->entry_range = node_range(field((*method)->node, "name"));
      }
      continue;
    }
    for (auto& f : functions_) {
      if (!f->owner && !f->parent && f->name == name && !f->is_entry) {
        f->is_entry = true;
        f->entry_description = "function `" + name + "`, called from compiled code in another workspace file";
        f->entry_range = node_range(field(f->node, "name"));
      }
    }
  }
  infer_class_attributes();
  new_flow_generation();
  // Locals depend on callee return kinds and callers' argument kinds: iterate to a small fixpoint.
  // What each function shows the others in each pass is recorded for incremental updates.
  std::vector<ResolvedCalls> calls;
  calls.reserve(functions_.size());
  for (const auto& f : functions_) {
    calls.push_back(resolved_calls(*f));
    f->attribute_method_callees = methods_called_through_attributes(*f);
    f->self_called_methods = self_called_method_names(document_, *f);
  }
  // Attributes set from names (`self.weights = weights`) take the names' kinds, known once the passes have run:
  // when that changes what a class holds, the passes run again with it (once: what they infer then is kept).
  for (int round = 0; round < 2; ++round) {
    seed_workspace_call_sites();
    for (int pass = 0; pass < kMaxInferencePasses; ++pass) {
      for (auto& f : functions_) {
        f->call_site_args_by_pass[pass] = f->call_site_args;
        infer_locals(*f);
        f->return_by_pass[pass] = f->return_kind;
        f->return_elements_by_pass[pass] = f->return_elements;
      }
      collect_call_sites(pass, calls);
      inference_passes_ = pass + 1;
      // Converged: every function saw in this pass what it would see in the next (the same returns of
      // all others, the same arguments from its callers), so another pass would repeat this one.
      if (pass > 0 && std::all_of(functions_.begin(), functions_.end(), [&](const auto& f) {
            return f->return_by_pass[pass] == f->return_by_pass[pass - 1] &&
                   f->return_elements_by_pass[pass] == f->return_elements_by_pass[pass - 1] &&
                   f->call_site_args == f->call_site_args_by_pass[pass];
          }))
        break;
    }
    if (round > 0 || !refine_attribute_kinds()) break;
    new_flow_generation();
    // From scratch, as a fresh model with these attribute facts would run (incremental updates replay that).
    for (auto& f : functions_) {
      f->call_site_args.clear();
      f->locals.clear();
      f->return_kind = ValueKind::Unknown;
      f->return_elements.clear();
    }
  }
  find_sparse_returns();
  mark_compiled_regions(scope);
  new_flow_generation();
  for (auto& f : functions_) {
    if (f->compiled) f->imported_calls = imported_calls(*f);
  }
  callee_cache_ = nullptr;
}

void SemanticModel::find_deep_regions(TSNode root) {
  // One cursor walk, keeping the enclosing definitions and the module-level statement. At a node past
  // the limit, the innermost of them is left out whole, and the walk goes on after it.
  struct Enclosing {
    TSNode node;
    uint32_t depth;
  };
  std::vector<Enclosing> enclosing;
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  uint32_t depth = 0;
  for (bool more = true; more;) {
    const TSNode node = ts_tree_cursor_current_node(&cursor);
    while (!enclosing.empty() && enclosing.back().depth >= depth) enclosing.pop_back();
    bool descend = true;
    if (depth > kMaxSyntaxDepth && !enclosing.empty()) {
      const Enclosing region = enclosing.back();
      enclosing.pop_back();
      TSNode definition = region.node;
      if (is_type(definition, "decorated_definition")) definition = field(definition, "definition");
      const std::string_view what = is_type(definition, "function_definition") ? "function"
                                    : is_type(definition, "class_definition")  ? "class"
                                                                               : "statement";
      skipped_.push_back({node_range(region.node), deepest_level(region.node, region.depth), what});
      while (depth > region.depth) {
        ts_tree_cursor_goto_parent(&cursor);
        --depth;
      }
      descend = false;
    } else {
      const auto t = type_of(node);
      // A decorated definition stands for the definition it wraps (its decorators are read with it).
      const bool wrapped = !enclosing.empty() && enclosing.back().depth + 1 == depth &&
                           is_type(enclosing.back().node, "decorated_definition");
      if (depth == 1 || t == "decorated_definition" ||
          ((t == "function_definition" || t == "class_definition") && !wrapped))
        enclosing.push_back({node, depth});
    }
    if (descend && ts_tree_cursor_goto_first_child(&cursor)) {
      ++depth;
      continue;
    }
    while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
      if (!ts_tree_cursor_goto_parent(&cursor)) {
        more = false;
        break;
      }
      --depth;
    }
  }
  ts_tree_cursor_delete(&cursor);
}

bool SemanticModel::is_skipped(TSNode node) const {
  if (skipped_.empty()) return false;
  const ByteRange range = node_range(node);
  auto it = std::lower_bound(skipped_.begin(), skipped_.end(), range.start,
                             [](const SkippedRegion& r, uint32_t start) { return r.range.start < start; });
  return it != skipped_.end() && it->range == range;
}

void SemanticModel::collect_imports(TSNode root) {
  // One cursor pass over the whole tree: import statements (module level or local) and the calls that
  // may be torch.compile(fn), resolved once the imports are known.
  std::vector<TSNode> imports;
  compile_calls_.clear();
  walk_preorder(root, [&](TSNode node) {
    auto t = type_of(node);
    if (is_skipped(node)) return Walk::Skip;
    if (t == "import_statement" || t == "import_from_statement") {
      imports.push_back(node);
      import_starts_.push_back(ts_node_start_byte(node));
      return Walk::Skip;
    }
    if (t == "call") {
      std::string_view callee = document_.node_text(field(node, "function"));
      if (callee.ends_with("compile") || callee.ends_with("partial") || callee.ends_with("export")) {
        compile_calls_.push_back(node);
        compile_call_starts_.push_back(ts_node_start_byte(node));
      }
    }
    return t == "string" || t == "comment" ? Walk::Skip : Walk::Descend;
  });
  for (TSNode node : imports) {
    if (is_type(node, "import_statement")) {
      for (TSNode name : named_children(node)) {
        if (is_type(name, "dotted_name")) {
          std::string full = text_of(document_, name);
          std::string head = full.substr(0, full.find('.'));
          imports_[head] = head;  // `import torch.nn` binds `torch`
        } else if (is_type(name, "aliased_import")) {
          imports_[text_of(document_, field(name, "alias"))] = text_of(document_, field(name, "name"));
        }
      }
    } else {
      TSNode module = field(node, "module_name");
      std::string mod = text_of(document_, module);
      // `from . import utils` names the sibling module ".utils", `from .. import x` the parent's "..x".
      const std::string join = mod.ends_with('.') ? mod : mod + ".";
      for (TSNode child : named_children(node)) {
        if (ts_node_eq(child, module)) continue;
        if (is_type(child, "dotted_name")) {
          std::string name = text_of(document_, child);
          imports_[name] = join + name;
        } else if (is_type(child, "aliased_import")) {
          imports_[text_of(document_, field(child, "alias"))] = join + text_of(document_, field(child, "name"));
        }
      }
    }
  }
  for (auto& [local, qualified] : imports_) {
    if (qualified == "torch" && (torch_alias_.empty() || local == "torch")) torch_alias_ = local;
  }
}

std::optional<std::string> SemanticModel::qualified_name(TSNode expr) const {
  expr = unparenthesize(expr);
  if (is_type(expr, "identifier")) {
    auto it = imports_.find(text_of(document_, expr));
    if (it == imports_.end()) return std::nullopt;
    return it->second;
  }
  if (is_type(expr, "attribute")) {
    auto base = qualified_name(field(expr, "object"));
    if (!base) return std::nullopt;
    return *base + "." + text_of(document_, field(expr, "attribute"));
  }
  return std::nullopt;
}

void SemanticModel::collect_definitions(TSNode node, ClassInfo* owner, FunctionInfo* parent) {
  for (TSNode child : named_children(node)) {
    if (is_skipped(child)) continue;
    TSNode def = child;
    if (is_type(child, "decorated_definition")) def = field(child, "definition");
    auto t = type_of(def);
    if (t == "class_definition") {
      auto cls = std::make_unique<ClassInfo>();
      cls->node = def;
      cls->name = text_of(document_, field(def, "name"));
      TSNode supers = field(def, "superclasses");
      if (!ts_node_is_null(supers)) {
        for_each_named_child(supers, [&](TSNode base) {
          if (is_type(base, "keyword_argument")) return;
          auto q = qualified_name(base);
          cls->bases.push_back(q ? *q : text_of(document_, base));
        });
      }
      ClassInfo* raw = cls.get();
      classes_.push_back(std::move(cls));
      collect_definitions(field(def, "body"), raw, parent);
    } else if (t == "function_definition") {
      auto fn = std::make_unique<FunctionInfo>();
      fn->index = static_cast<uint32_t>(functions_.size());
      fn->name = text_of(document_, field(def, "name"));
      fn->owner = parent ? nullptr : owner;
      fn->parent = parent;
      fn->qualified_name =
          (fn->owner ? fn->owner->name + "." : (parent ? parent->qualified_name + "." : "")) + fn->name;
      FunctionInfo* raw = fn.get();
      // `@name.setter` / `@name.deleter` define the same name again; reading `self.name` runs the getter.
      bool accessor = false;
      if (is_type(child, "decorated_definition")) {
        for_each_named_child(child, [&](TSNode deco) {
          if (!is_type(deco, "decorator")) return;
          const std::string text = text_of(document_, named_child(deco, 0));
          accessor = accessor || text == fn->name + ".setter" || text == fn->name + ".deleter";
        });
      }
      if (fn->owner && !(accessor && fn->owner->methods.count(fn->name))) fn->owner->methods[fn->name] = raw;
      function_by_start_[ts_node_start_byte(def)] = raw;
      read_function(*raw, def);
      // Decorators: torch.compile entries and torch.compiler.disable'd functions.
      if (is_type(child, "decorated_definition")) {
        for_each_named_child(child, [&](TSNode deco) {
          if (!is_type(deco, "decorator")) return;
          TSNode expr = named_child(deco, 0);
          if (is_type(expr, "identifier")) raw->decorator_names.push_back(text_of(document_, expr));
          TSNode callee = is_type(expr, "call") ? field(expr, "function") : expr;
          auto q = qualified_name(callee);
          if ((q && (*q == "torch.library.custom_op" || *q == "torch.library.triton_op")) ||
              (is_type(callee, "identifier") && (text_of(document_, callee) == "_graphmend_runtime_op" ||
                                                 text_of(document_, callee) == "_graphmend_check_op"))) {
            disabled_.insert(raw);
            operator_bodies_.insert(raw);
            return;
          }
          if (!q) {
            // `@_disable` with `_disable = getattr(torch.compiler, "disable", None) or torch._dynamo.disable`.
            if (is_type(callee, "identifier") && disable_aliases_.count(text_of(document_, callee)))
              disabled_.insert(raw);
            return;
          }
          if (*q == "torch.compile") {
            raw->is_entry = true;
            raw->entry_description = "function `" + raw->name + "` decorated with @torch.compile";
            raw->entry_range = node_range(field(def, "name"));
          } else if (*q == "torch.compiler.disable" || *q == "torch._dynamo.disable" ||
                     workspace_disable_aliases_.count(*q)) {
            disabled_.insert(raw);
          }
        });
      }
      functions_.push_back(std::move(fn));
      collect_definitions(field(def, "body"), nullptr, raw);
    } else if (t != "lambda" && !is_simple_statement(t)) {
      collect_definitions(child, owner, parent);
    }
  }
}

void SemanticModel::read_function(FunctionInfo& fn, TSNode definition) {
  const TSNode body = field(definition, "body");
  fn.node = definition;
  fn.range = node_range(definition);
  fn.body_range = node_range(body);
  fn.body_nodes.clear();
  fn.indexed_in_several_dimensions.clear();
  fn.tensor_method_receivers.clear();
  fn.isinstance_tested.clear();
  fn.binding_nodes.clear();
  fn.loop_ranges.clear();
  fn.if_statements.clear();
  fn.assignment_blocks.clear();
  const TSNode returns = field(definition, "return_type");
  read_type_comment(document_, definition, fn.comment_param_types, fn.comment_return_type);
  fn.declared_return = !ts_node_is_null(returns)         ? read_annotation(document_.node_text(returns)).kind
                       : !fn.comment_return_type.empty() ? read_annotation(fn.comment_return_type).kind
                                                         : ValueKind::Unknown;
  if (ts_node_is_null(body)) return;
  // One cursor pass, no allocation per node: the passes over a function read only these nodes.
  walk_preorder(body, [&](TSNode node) {
    auto t = type_of(node);
    if (t == "function_definition" || t == "class_definition" || t == "decorated_definition" || t == "lambda")
      return Walk::Skip;
    if (ts_node_is_named(node) && (t == "call" || t == "assignment" || t == "augmented_assignment" ||
                                   t == "for_statement" || t == "return_statement" || is_comprehension(t)))
      fn.body_nodes.push_back(node);
    if (t == "call" && (document_.node_text(field(node, "function")) == "isinstance" ||
                        document_.node_text(field(node, "function")).ends_with("is_tensor"))) {
      TSNode subject = named_child(field(node, "arguments"), 0);
      if (is_type(subject, "identifier")) fn.isinstance_tested.insert(text_of(document_, subject));
    }
    if (ts_node_is_named(node)) record_bindings(document_, node, fn.binding_nodes);
    if (t == "for_statement") fn.loop_ranges.push_back(node_range(field(node, "body")));
    if (t == "while_statement") fn.loop_ranges.push_back(node_range(node));
    if (t == "if_statement") {
      FunctionInfo::IfClauses clauses{node_range(node), {node_range(field(node, "consequence"))}};
      for (TSNode c : named_children(node)) {
        if (is_type(c, "elif_clause") || is_type(c, "else_clause")) clauses.clauses.push_back(node_range(c));
      }
      fn.if_statements.push_back(std::move(clauses));
    }
    // The block of each assignment statement, read from the block (ts_node_parent rescans from the root).
    if (t == "block") {
      for (TSNode statement : named_children(node)) {
        if (!is_type(statement, "expression_statement")) continue;
        TSNode assignment = named_child(statement, 0);
        if (is_type(assignment, "assignment") || is_type(assignment, "augmented_assignment"))
          fn.assignment_blocks[ts_node_start_byte(assignment)] = node_range(node);
      }
    }
    if (t == "subscript" && is_type(field(node, "value"), "identifier") && indexes_in_several_dimensions(node))
      fn.indexed_in_several_dimensions.insert(text_of(document_, field(node, "value")));
    if (t == "call") {
      TSNode callee = field(node, "function");
      if (is_type(callee, "attribute") && is_type(field(callee, "object"), "identifier") &&
          one_of(document_.node_text(field(callee, "attribute")), kTensorOnlyMethods))
        fn.tensor_method_receivers.insert(text_of(document_, field(callee, "object")));
    }
    return Walk::Descend;
  });
}

void SemanticModel::collect_module_constants(TSNode root) {
  std::unordered_map<std::string, int> assigned;
  for (TSNode stmt : named_children(root)) {
    if (!is_type(stmt, "expression_statement")) continue;
    TSNode a = named_child(stmt, 0);
    if (is_type(a, "call")) {
      // torch._dynamo.config.reorderable_logging_functions.add(f): Dynamo defers f instead of tracing it.
      std::string callee = text_of(document_, field(a, "function"));
      TSNode args = field(a, "arguments");
      if (callee.ends_with("reorderable_logging_functions.add") && named_child_count(args) == 1)
        deferred_.insert(text_of(document_, named_child(args, 0)));
      continue;
    }
    if (!is_type(a, "assignment") || !is_type(field(a, "left"), "identifier")) continue;
    std::string name = text_of(document_, field(a, "left"));
    TSNode right = field(a, "right");
    auto rt = type_of(right);
    ++assigned[name];
    if (is_type(right, "call")) {
      std::string callee = text_of(document_, field(right, "function"));
      if (callee.ends_with("getLogger") || callee.ends_with("get_logger")) module_loggers_.insert(name);
    }
    if (rt == "true")
      module_constants_[name] = true;
    else if (rt == "false" || rt == "none")
      module_constants_[name] = false;
    else if (rt == "integer")
      module_constants_[name] = text_of(document_, right) != "0";
    if (rt == "true" || rt == "false" || rt == "none" || rt == "integer" || rt == "float" || rt == "string")
      module_globals_[name] = rt == "none" ? ValueKind::None : ValueKind::Static;
  }
  for (auto& [name, count] : assigned) {
    if (count > 1) module_constants_.erase(name);
  }
}

void SemanticModel::mark_compile_target(TSNode call, TSNode target, const std::string& how) {
  target = unparenthesize(target);
  auto mark = [&](FunctionInfo* f, const std::string& what) {
    if (!f || f->is_entry) return;
    f->is_entry = true;
    f->entry_description = what + " " + how;
    f->entry_range = node_range(target);
  };
  if (is_type(target, "identifier")) {
    const std::string name = text_of(document_, target);
    for (auto& f : functions_) {
      if (!f->owner && !f->parent && f->name == name) mark(f.get(), "function `" + name + "`");
    }
    return;
  }
  if (!is_type(target, "attribute")) return;
  // `torch.compile(self.block)`, `torch.compile(Helper.run)`, `torch.compile(model.forward)`.
  const std::string object = text_of(document_, field(target, "object"));
  const std::string attr = text_of(document_, field(target, "attribute"));
  const ClassInfo* cls = nullptr;
  if (object == "self") {
    const FunctionInfo* in = function_containing(call);
    if (in) in = &in->outermost();
    cls = in ? in->owner : nullptr;
    if (cls) {
      if (const std::string* module = inherited(cls, attr, &ClassInfo::attribute_module_classes)) {
        if (const FunctionInfo* forward = forward_of(find_class(*module)))
          mark(const_cast<FunctionInfo*>(forward), "`forward` of `" + *module + "` (self." + attr + ")");
        return;
      }
    }
  } else {
    cls = find_class(object);
  }
  if (cls) {
    if (FunctionInfo* const* method = inherited(cls, attr, &ClassInfo::methods))
      mark(*method, "method `" + cls->name + "." + attr + "`");
    return;
  }
  // An instance of some class of this file: the method, when exactly one class defines it.
  FunctionInfo* only = nullptr;
  int count = 0;
  for (auto& c : classes_) {
    if (auto it = c->methods.find(attr); it != c->methods.end()) {
      only = it->second;
      ++count;
    }
  }
  if (count == 1) mark(only, "method `" + only->qualified_name + "`");
}

void SemanticModel::collect_compile_call_targets() {
  auto first_positional = [&](TSNode call) -> TSNode {
    for (TSNode a : named_children(field(call, "arguments"))) {
      if (is_type(a, "comment")) continue;
      return is_type(a, "keyword_argument") || is_type(a, "list_splat") || is_type(a, "dictionary_splat") ? TSNode{}
                                                                                                          : a;
    }
    return TSNode{};
  };
  // The call that applies `maker` (a compiler made by torch.compile(mode=...) or
  // functools.partial(torch.compile, ...)) to a function: `maker(fn)`, or nothing.
  auto applied = [&](TSNode maker) -> TSNode {
    TSNode parent = ts_node_parent(maker);
    if (is_type(parent, "call") && ts_node_eq(field(parent, "function"), maker)) return parent;
    return TSNode{};
  };
  for (TSNode node : compile_calls_) {
    auto q = qualified_name(field(node, "function"));
    if (!q) continue;
    if (*q == "torch.compile") {
      TSNode target = first_positional(node);
      if (!ts_node_is_null(target)) {
        mark_compile_target(node, target, "passed to torch.compile");
      } else if (TSNode outer = applied(node); !ts_node_is_null(outer)) {
        // `torch.compile(mode="max-autotune")(fn)`: a decorator factory applied by hand.
        TSNode fn = first_positional(outer);
        if (!ts_node_is_null(fn)) mark_compile_target(outer, fn, "compiled by torch.compile(...)(...)");
      }
      continue;
    }
    if (*q == "torch.export.export") {
      exported_ = true;
      continue;
    }
    if (*q != "functools.partial") continue;
    TSNode wrapped = first_positional(node);
    auto wq = ts_node_is_null(wrapped) ? std::nullopt : qualified_name(wrapped);
    if (!wq || *wq != "torch.compile") continue;
    if (TSNode outer = applied(node); !ts_node_is_null(outer)) {
      TSNode fn = first_positional(outer);
      if (!ts_node_is_null(fn)) mark_compile_target(outer, fn, "compiled by functools.partial(torch.compile, ...)");
      continue;
    }
    // `compile_fn = functools.partial(torch.compile, mode=...)`, applied later as `compile_fn(f)`.
    TSNode parent = ts_node_parent(node);
    if (is_type(parent, "assignment") && is_type(field(parent, "left"), "identifier"))
      compile_aliases_.insert(text_of(document_, field(parent, "left")));
  }
  if (compile_aliases_.empty()) return;
  walk_preorder(document_.root(), [&](TSNode node) {
    if (is_skipped(node)) return Walk::Skip;
    if (is_type(node, "call")) {
      TSNode callee = field(node, "function");
      if (is_type(callee, "identifier") && compile_aliases_.count(text_of(document_, callee))) {
        TSNode fn = first_positional(node);
        if (!ts_node_is_null(fn))
          mark_compile_target(
              node, fn, "compiled by `" + text_of(document_, callee) + "` (functools.partial(torch.compile, ...))");
      }
    }
    return is_type(node, "string") || is_type(node, "comment") ? Walk::Skip : Walk::Descend;
  });
}

SemanticModel::ResolvedCalls SemanticModel::resolved_calls(const FunctionInfo& caller) const {
  ResolvedCalls out;
  const FunctionInfo* top = &caller.outermost();
  for_each_body_node(caller, [&](TSNode node) {
    if (!is_type(node, "call")) return;
    const FunctionInfo* callee = resolve_callee(node, caller);
    if (!callee) return;
    out.emplace_back(node, callee->index);
    // `self.m(...)`: for an object of a subclass of this file, its own `m` runs, with these arguments.
    TSNode function = unparenthesize(field(node, "function"));
    if (!top->owner || !callee->owner || !is_type(function, "attribute") ||
        text_of(document_, field(function, "object")) != "self")
      return;
    for (const auto& cls : classes_) {
      if (cls.get() == top->owner) continue;
      auto it = cls->methods.find(callee->name);
      if (it == cls->methods.end() || it->second == callee || it->second->parent) continue;
      if (derives_from(cls.get(), top->owner)) out.emplace_back(node, it->second->index);
    }
  });
  return out;
}

std::vector<std::pair<uint32_t, std::vector<ValueKind>>> SemanticModel::outgoing_calls(
    const FunctionInfo& caller, const ResolvedCalls& calls) const {
  std::vector<std::pair<uint32_t, std::vector<ValueKind>>> out;
  for (const auto& [node, callee_index] : calls) {
    const FunctionInfo* callee = functions_[callee_index].get();
    std::vector<ValueKind> kinds;
    bool positional = true;
    const std::vector<TSNode> arguments = named_children(field(node, "arguments"));
    for (size_t i = 0; i < arguments.size(); ++i) {
      TSNode a = arguments[i];
      if (is_type(a, "comment")) continue;
      if (is_type(a, "list_splat")) {
        // `f(x, *x.size(), x.dtype)`: how many values the splat gives is unknown, but when it and every
        // positional argument after it are Python values, so is every parameter from here on.
        bool static_rest = positional && element_kind(named_child(a, 0), caller) == ValueKind::Static;
        for (size_t j = i + 1; j < arguments.size() && static_rest; ++j) {
          TSNode b = arguments[j];
          if (is_type(b, "comment") || is_type(b, "keyword_argument") || is_type(b, "dictionary_splat")) continue;
          static_rest = !is_type(b, "list_splat") && kind_of(b, caller) == ValueKind::Static;
        }
        if (static_rest && kinds.size() < callee->params.size()) kinds.resize(callee->params.size(), ValueKind::Static);
        break;
      }
      if (is_type(a, "dictionary_splat")) break;
      if (is_type(a, "keyword_argument")) {
        // `spatial_shapes=spatial_shapes`: the kind goes to that parameter's position.
        positional = false;
        const std::string name = text_of(document_, field(a, "name"));
        auto at = std::find(callee->params.begin(), callee->params.end(), name);
        if (at == callee->params.end()) continue;
        const size_t index = static_cast<size_t>(at - callee->params.begin());
        if (kinds.size() <= index) kinds.resize(index + 1, ValueKind::Unknown);
        kinds[index] = kind_of(field(a, "value"), caller);
        continue;
      }
      if (positional) kinds.push_back(kind_of(a, caller));
    }
    out.emplace_back(callee->index, std::move(kinds));
  }
  return out;
}

void SemanticModel::seed_workspace_call_sites() {
  if (workspace_call_args_.empty()) return;
  for (auto& f : functions_) {
    if (f->owner || f->parent) continue;
    auto it = workspace_call_args_.find(f->name);
    if (it != workspace_call_args_.end())
      f->call_site_args.insert(f->call_site_args.end(), it->second.begin(), it->second.end());
  }
}

void SemanticModel::collect_call_sites(int pass, const std::vector<ResolvedCalls>& calls) {
  for (auto& f : functions_) f->call_site_args.clear();
  seed_workspace_call_sites();
  for (auto& f : functions_) {
    f->outgoing_by_pass[pass] = outgoing_calls(*f, calls[f->index]);
    if (pass == 0) {
      f->resolved_callees.clear();
      for (const auto& call : f->outgoing_by_pass[pass]) f->resolved_callees.push_back(call.first);
    }
    for (const auto& [callee, kinds] : f->outgoing_by_pass[pass]) functions_[callee]->call_site_args.push_back(kinds);
  }
}

// Visits `cls` and its bases depth first, left to right: Python's method resolution order for the
// hierarchies models use (a mixin as a second base, `class PreTrainedModel(nn.Module, ModuleUtilsMixin)`).
// `on_class` returns true to stop; a base no class of this file defines goes to `on_imported`. At most 16
// classes: a class may name itself as its base (`class Block(Block)`), and a diamond is searched once per path.
template <class FindClass, class OnClass, class OnImported>
void walk_bases(const ClassInfo* cls, FindClass&& find, OnClass&& on_class, OnImported&& on_imported) {
  const ClassInfo* stack[16];
  int top = 0, visited = 0;
  if (cls) stack[top++] = cls;
  while (top > 0 && visited < 16) {
    const ClassInfo* c = stack[--top];
    ++visited;
    if (on_class(c)) return;
    for (auto base = c->bases.rbegin(); base != c->bases.rend(); ++base) {
      if (const ClassInfo* b = find(*base)) {
        if (b != c && top < 16) stack[top++] = b;
      } else {
        on_imported(*base);
      }
    }
  }
}

bool SemanticModel::derives_from(const ClassInfo* cls, const ClassInfo* base) const {
  bool found = false;
  walk_bases(
      cls, [&](std::string_view name) { return find_class(name); },
      [&](const ClassInfo* c) { return found = c == base; }, [](const std::string&) {});
  return found;
}

template <class Map>
const typename Map::mapped_type* SemanticModel::inherited(const ClassInfo* cls, const std::string& key,
                                                          Map ClassInfo::*map) const {
  const typename Map::mapped_type* found = nullptr;
  walk_bases(
      cls, [&](std::string_view name) { return find_class(name); },
      [&](const ClassInfo* c) {
        if (auto it = (c->*map).find(key); it != (c->*map).end()) found = &it->second;
        return found != nullptr;
      },
      [](const std::string&) {});
  return found;
}

std::string SemanticModel::attribute_constructor(const ClassInfo* cls, const std::string& name) const {
  const std::string* constructor = inherited(cls, name, &ClassInfo::attribute_constructors);
  return constructor ? *constructor : "";
}

std::optional<bool> SemanticModel::constant_attribute(const ClassInfo* cls, const std::string& name) const {
  const std::optional<bool>* truth = inherited(cls, name, &ClassInfo::literal_attributes);
  return truth ? *truth : std::nullopt;
}

const ClassInfo* SemanticModel::find_class(std::string_view name) const {
  auto it = class_by_name_.find(name);
  return it == class_by_name_.end() ? nullptr : it->second;
}

void SemanticModel::index_definitions() {
  // Name lookups run for every call in every pass: hash them (the first definition of a name wins,
  // as a scan in source order would find it).
  for (auto& c : classes_) class_by_name_.emplace(c->name, c.get());
  for (auto& f : functions_) {
    if (f->parent)
      nested_[f->parent].push_back(f.get());
    else if (!f->owner)
      top_level_by_name_.emplace(f->name, f.get());
  }
}

void SemanticModel::infer_class_attributes() {
  // Module-ness: nn.Module bases, HF-style base names, or a base class in this file that is a module.
  for (int pass = 0; pass < 3; ++pass) {
    for (auto& cls : classes_) {
      for (auto& base : cls->bases) {
        std::string_view last = base;
        if (auto dot = last.rfind('.'); dot != std::string_view::npos) last = last.substr(dot + 1);
        if (base == "torch.nn.Module" || base == "torch.nn.modules.module.Module" ||
            last.ends_with("PreTrainedModel") || last.ends_with("Module") || last.ends_with("Layer") ||
            last == "Sequential" || last == "ModuleDict" || last == "ModuleList") {
          cls->is_module = true;
        }
        if (auto* b = find_class(base); b && b->is_module) cls->is_module = true;
        if (workspace_module_bases_.count(base)) cls->is_module = true;
      }
    }
  }
  for (auto& fn : functions_) {
    if (!fn->owner) continue;
    fn->attribute_effects = attribute_effects(*fn);
    apply_attribute_effects(*fn->owner, fn->attribute_effects);
  }
}

std::vector<AttributeEffect> SemanticModel::attribute_effects(const FunctionInfo& method) const {
  new_flow_generation();  // class facts change between the methods read
  std::vector<AttributeEffect> out;
  for_each_body_node(method, [&](TSNode node) {
    if (is_type(node, "assignment")) {
      TSNode left = field(node, "left");
      TSNode right = field(node, "right");
      if (!is_type(left, "attribute") || text_of(document_, field(left, "object")) != "self") return;
      if (ts_node_is_null(right)) return;
      AttributeEffect effect;
      effect.name = text_of(document_, field(left, "attribute"));
      auto rt = type_of(right);
      if (rt == "true")
        effect.truth = true;
      else if (rt == "false" || rt == "none")
        effect.truth = false;
      else if (rt == "integer" || rt == "float")
        effect.truth = text_of(document_, right) != "0" && text_of(document_, right) != "0.0";
      if (is_type(right, "call")) {
        TSNode callee = field(right, "function");
        auto q = qualified_name(callee);
        std::string callee_text = text_of(document_, callee);
        std::string_view last = callee_text;
        if (auto dot = last.rfind('.'); dot != std::string_view::npos) last = last.substr(dot + 1);
        effect.constructor = q;
        // A module of this file, or a plain class with `__call__` (a loss, a box coder) whose instance is called.
        if (const ClassInfo* c = find_class(callee_text);
            c && (c->is_module || inherited(c, "__call__", &ClassInfo::methods)))
          effect.module_class = c->name;
        if (q && (*q == "torch.nn.ModuleList" || *q == "torch.nn.Sequential")) {
          // ModuleList([Block(c) for _ in range(n)]) or ModuleList([Block(c), Block(c)]): one class throughout.
          TSNode args = field(right, "arguments");
          TSNode list = named_child_count(args) == 1 ? named_child(args, 0) : TSNode{};
          std::vector<TSNode> elements;
          if (is_type(list, "list_comprehension") || is_type(list, "generator_expression"))
            elements.push_back(field(list, "body"));
          else if (is_type(list, "list"))
            elements = named_children(list);
          std::optional<std::string> element;
          for (TSNode e : elements) {
            const ClassInfo* c = is_type(e, "call") ? find_class(text_of(document_, field(e, "function"))) : nullptr;
            if (!c || !c->is_module || (element && *element != c->name)) {
              element.reset();
              break;
            }
            element = c->name;
          }
          effect.element_class = element;
        }
        if (q && (*q == "torch.nn.Parameter" || *q == "torch.nn.parameter.Parameter")) {
          effect.kind = ValueKind::Tensor;
        } else if (q && q->starts_with("torch.nn.") && !q->starts_with("torch.nn.functional") &&
                   !q->starts_with("torch.nn.init")) {
          effect.kind = ValueKind::Module;
        } else if (const ClassInfo* c = find_class(callee_text); c && c->is_module) {
          effect.kind = ValueKind::Module;
        } else if (q && q->starts_with("torch.") && !one_of(std::string_view(*q), kStaticTorchFunctions)) {
          effect.kind = ValueKind::Tensor;
        } else if (last == "Parameter") {
          effect.kind = ValueKind::Tensor;
        } else if (last.ends_with("Module") || last.ends_with("Layer") || last.ends_with("Attention") ||
                   last.ends_with("MLP") || last.ends_with("Embedding") || last.ends_with("Norm") ||
                   last.ends_with("Block") || last.ends_with("Encoder") || last.ends_with("Decoder") ||
                   last == "ModuleList" || last == "ModuleDict" || last == "Linear" || last == "Dropout") {
          effect.kind = ValueKind::Module;
        } else {
          effect.kind = ValueKind::Unknown;
        }
      } else if (is_type(right, "none")) {
        effect.kind = ValueKind::None;
      } else if (is_type(right, "identifier")) {
        // `self.weights = weights` after `weights = torch.as_tensor(...)`: the name's kind, once the passes
        // have inferred it (refine_attribute_kinds); until then a Python value, as before.
        auto it = method.locals.find(text_of(document_, right));
        if (it != method.locals.end() && tensor_valued(it->second)) effect.kind = it->second;
      }
      out.push_back(std::move(effect));
    } else if (is_type(node, "call")) {
      // self.register_buffer("name", tensor) / self.register_parameter("name", param)
      TSNode callee = field(node, "function");
      if (!is_type(callee, "attribute") || text_of(document_, field(callee, "object")) != "self") return;
      std::string method_name = text_of(document_, field(callee, "attribute"));
      if (method_name != "register_buffer" && method_name != "register_parameter") return;
      TSNode args = field(node, "arguments");
      if (named_child_count(args) == 0) return;
      TSNode first = named_child(args, 0);
      if (!is_type(first, "string")) return;
      AttributeEffect effect;
      effect.name = text_of(document_, first);
      if (effect.name.size() >= 2) effect.name = effect.name.substr(1, effect.name.size() - 2);
      effect.buffer = true;
      effect.kind = ValueKind::Tensor;
      out.push_back(std::move(effect));
    }
  });
  return out;
}

bool SemanticModel::refine_attribute_kinds() {
  bool changed = false;
  for (auto& fn : functions_) {
    if (!fn->owner) continue;
    std::vector<AttributeEffect> effects = attribute_effects(*fn);
    if (effects == fn->attribute_effects) continue;
    fn->attribute_effects = std::move(effects);
    changed = true;
  }
  if (!changed) return false;
  for (auto& cls : classes_) {
    cls->attributes.clear();
    cls->literal_attributes.clear();
    cls->attribute_constructors.clear();
    cls->attribute_module_classes.clear();
    cls->attribute_element_classes.clear();
  }
  for (auto& fn : functions_)
    if (fn->owner) apply_attribute_effects(*fn->owner, fn->attribute_effects);
  return true;
}

void SemanticModel::apply_attribute_effects(ClassInfo& cls, const std::vector<AttributeEffect>& effects) {
  for (const AttributeEffect& effect : effects) {
    if (effect.buffer) {
      cls.attributes[effect.name] = ValueKind::Tensor;
      continue;
    }
    auto [lit, fresh] = cls.literal_attributes.emplace(effect.name, effect.truth);
    if (!fresh && lit->second != effect.truth) lit->second = std::nullopt;
    if (!effect.truth) lit->second = std::nullopt;
    if (effect.constructor) cls.attribute_constructors[effect.name] = *effect.constructor;
    if (effect.module_class) cls.attribute_module_classes[effect.name] = *effect.module_class;
    if (effect.element_class) cls.attribute_element_classes[effect.name] = *effect.element_class;
    auto [it, inserted] = cls.attributes.emplace(effect.name, effect.kind);
    if (!inserted) it->second = merge(it->second, effect.kind);
  }
}

ValueKind SemanticModel::attribute_kind(const ClassInfo* cls, const std::string& name, int depth) const {
  if (!cls || depth > 8) return ValueKind::Unknown;
  if (name == "training" || name == "config") return ValueKind::Static;
  if (auto it = cls->attributes.find(name); it != cls->attributes.end()) return it->second;
  for (auto& base : cls->bases) {
    ValueKind k = attribute_kind(find_class(base), name, depth + 1);
    if (k != ValueKind::Unknown) return k;
  }
  return ValueKind::Unknown;
}

void SemanticModel::infer_locals(FunctionInfo& fn) {
  new_flow_generation();
  // What an earlier pass could not tell is asked again: a local read from a parameter the callers have
  // since proven (`area = img_h * img_w`) would otherwise stay unknown, since merging keeps unknown.
  std::erase_if(fn.locals, [](const auto& local) { return local.second == ValueKind::Unknown; });
  // Parameters.
  fn.params.clear();
  fn.assignments.clear();
  fn.tensor_params_from_callers.clear();
  fn.param_kinds.clear();
  TSNode params = field(fn.node, "parameters");
  bool is_method = fn.owner != nullptr;
  bool first = true;
  for_each_named_child(params, [&](TSNode p) {
    auto t = type_of(p);
    std::string name;
    ValueKind kind = ValueKind::Unknown;
    // Unannotated parameters take their type comment's annotation, if any (after self/cls, counted below).
    auto commented = [&]() -> ValueKind {
      const size_t index = fn.params.size();  // before this one is pushed (self/cls are never pushed)
      if (fn.comment_param_types.empty() || (is_method && first && (name == "self" || name == "cls")))
        return ValueKind::Unknown;
      return index < fn.comment_param_types.size() ? annotation_kind(fn.comment_param_types[index])
                                                   : ValueKind::Unknown;
    };
    if (t == "identifier") {
      name = text_of(document_, p);
      kind = commented();
    } else if (t == "typed_parameter" || t == "typed_default_parameter") {
      TSNode id = t == "typed_parameter" ? named_child(p, 0) : field(p, "name");
      name = text_of(document_, id);
      kind = annotation_kind(document_.node_text(field(p, "type")));
    } else if (t == "default_parameter") {
      name = text_of(document_, field(p, "name"));
      kind = commented();
      TSNode value = field(p, "value");
      auto vt = type_of(value);
      if (vt == "true" || vt == "false" || vt == "integer" || vt == "float" || vt == "string") kind = ValueKind::Static;
      // Optional inputs named like Hugging Face tensors (attention_mask=None, position_ids=None, labels=None);
      // past_key_values is a Cache object.
      if (vt == "none" && kind == ValueKind::Unknown && !looks_like_flag(name)) {
        std::string_view n = name;
        if (n == "mask" || n.ends_with("_mask") || n.ends_with("_ids") || n.ends_with("_states") ||
            n.ends_with("_embeds") || n == "labels" || (n.ends_with("_values") && n != "past_key_values") ||
            n.ends_with("_features") || n.ends_with("_bias") || n == "bias")
          kind = ValueKind::Tensor;
      }
    } else {
      return;  // *args, **kwargs, separators
    }
    if (is_method && first && (name == "self" || name == "cls")) {
      first = false;
      return;
    }
    first = false;
    fn.params.push_back(name);
    if (kind == ValueKind::Unknown && t == "identifier") {
      // An unannotated, default-less input of a module's forward or of a compiled function is a tensor.
      // Not by position alone: call sites that pass Python values there and never a tensor
      // (`self.block(x, 2)`) say it is not one.
      bool entry_like = (fn.owner && fn.owner->is_module && fn.name == "forward") || fn.is_entry;
      const size_t index = fn.params.size() - 1;
      const bool given_a_python_value =
          std::any_of(fn.call_site_args.begin(), fn.call_site_args.end(), [&](const auto& args) {
            return index < args.size() &&
                   (args[index] == ValueKind::Static || args[index] == ValueKind::TensorSequence ||
                    args[index] == ValueKind::TensorMapping);
          });
      const bool given_a_tensor =
          std::any_of(fn.call_site_args.begin(), fn.call_site_args.end(),
                      [&](const auto& args) { return index < args.size() && args[index] == ValueKind::Tensor; });
      if (entry_like && !looks_like_flag(name) && (given_a_tensor || !given_a_python_value)) kind = ValueKind::Tensor;
      if (entry_like && given_a_python_value && !given_a_tensor) {
        // Overrides what an earlier pass took by position: a Python value where every call site passes one.
        const bool all_static = std::all_of(fn.call_site_args.begin(), fn.call_site_args.end(), [&](const auto& args) {
          return index < args.size() && args[index] == ValueKind::Static;
        });
        fn.locals[name] = all_static ? ValueKind::Static : ValueKind::Unknown;
        fn.param_kinds[name] = fn.locals[name];
      }
    }
    if ((kind == ValueKind::Unknown || kind == ValueKind::Static) && !fn.call_site_args.empty()) {
      // A helper's parameter is a tensor when every call site passes one: what flows in wins over an
      // annotation that says otherwise (`grid_thw: list[list[int]]` given a tensor). A site whose argument
      // is unknown keeps it unproven (taking it as neutral flags Cache arguments passed down layers).
      size_t index = fn.params.size() - 1;
      auto all_pass = [&](ValueKind k) {
        return std::all_of(fn.call_site_args.begin(), fn.call_site_args.end(),
                           [&](const auto& args) { return index < args.size() && args[index] == k; });
      };
      if (all_pass(ValueKind::Tensor)) {
        kind = ValueKind::Tensor;
        fn.tensor_params_from_callers.insert(name);
      } else if (kind == ValueKind::Unknown && all_pass(ValueKind::TensorSequence)) {
        kind = ValueKind::TensorSequence;  // `helper(feats)` with `feats = [a, b]` at every call site
      } else if (kind == ValueKind::Unknown && all_pass(ValueKind::TensorMapping)) {
        kind = ValueKind::TensorMapping;
      } else if (kind == ValueKind::Unknown && all_pass(ValueKind::Static)) {
        kind = ValueKind::Static;  // `self._erase(img, chan, h, w)` with sizes unpacked from `x.size()`
      }
    }
    if (kind == ValueKind::Unknown && t == "default_parameter" && is_type(field(p, "value"), "none") && fn.owner &&
        fn.owner->is_module && !looks_like_flag(name)) {
      // An optional input of a module that the body indexes in several dimensions (`spatial_shapes[:, 0]`,
      // `x[..., None]`) is a tensor when given: a list or tuple cannot be indexed so.
      if (fn.indexed_in_several_dimensions.count(name)) kind = ValueKind::Tensor;
    }
    if (kind == ValueKind::Unknown && tensor_by_its_methods(fn, name)) kind = ValueKind::Tensor;
    if (kind != ValueKind::Unknown || !fn.param_kinds.count(name)) fn.param_kinds[name] = kind;
    auto it = fn.locals.find(name);
    if (it == fn.locals.end() || it->second == ValueKind::Unknown)
      fn.locals[name] = kind;
    else if (tensor_valued(kind))
      it->second = merge(it->second, kind);  // learnt from callers in a later pass
  });

  const Bind bind_local = [&](const std::string& name, ValueKind kind) {
    auto it = fn.locals.find(name);
    fn.locals[name] = it == fn.locals.end() ? kind : merge(it->second, kind);
  };

  ValueKind returns = ValueKind::Unknown;
  bool saw_return = false;
  std::vector<ValueKind> elements;
  bool tuples_only = true;
  for_each_body_node(fn, [&](TSNode node) {
    if (!is_type(node, "return_statement")) {
      bind_statement(node, fn, bind_local, &fn.assignments);
      return;
    }
    if (named_child_count(node) == 0) {
      tuples_only = false;
      return;
    }
    TSNode value = named_child(node, 0);
    ValueKind k = kind_of(value, fn);
    TSNode tuple = unparenthesize(value);
    if (is_type(tuple, "expression_list") || is_type(tuple, "tuple")) {
      std::vector<ValueKind> kinds;
      for (TSNode e : named_children(tuple)) {
        if (is_type(e, "list_splat")) tuples_only = false;
        if (!is_type(e, "comment")) kinds.push_back(kind_of(e, fn));
      }
      if (!saw_return) {
        elements = std::move(kinds);
      } else if (elements.size() == kinds.size()) {
        for (size_t i = 0; i < kinds.size(); ++i)
          elements[i] = elements[i] == kinds[i] ? kinds[i] : merge(elements[i], kinds[i]);
      } else {
        tuples_only = false;
      }
    } else {
      tuples_only = false;
    }
    returns = saw_return ? (returns == k ? k : merge(returns, k)) : k;
    saw_return = true;
  });
  // A local the body calls a tensor-only method on (`batch_prob = data.get("batch_prob")`, then
  // `batch_prob.numel()`) is a tensor where nothing else is proven: bound once, never isinstance-tested.
  for (const std::string& name : fn.tensor_method_receivers) {
    auto local = fn.locals.find(name);
    auto bindings = fn.binding_nodes.find(name);
    if (local == fn.locals.end() || local->second != ValueKind::Unknown || fn.isinstance_tested.count(name) ||
        bindings == fn.binding_nodes.end() || bindings->second.size() != 1 ||
        std::find(fn.params.begin(), fn.params.end(), name) != fn.params.end())
      continue;
    local->second = ValueKind::Tensor;
  }
  fn.return_kind = returns;
  fn.return_elements = tuples_only && saw_return ? std::move(elements) : std::vector<ValueKind>{};
  // A return annotation is the author's word where the body proves nothing; a tensor the body returns
  // wins over an annotation that says otherwise (`-> bool` over `return torch.all(a == b)`).
  if (TSNode annotation = field(fn.node, "return_type");
      !ts_node_is_null(annotation) || !fn.comment_return_type.empty()) {
    AnnotatedType declared = read_annotation(ts_node_is_null(annotation) ? std::string_view(fn.comment_return_type)
                                                                         : document_.node_text(annotation));
    if (declared.kind != ValueKind::Unknown && fn.return_kind != ValueKind::Tensor) fn.return_kind = declared.kind;
    if (fn.return_elements.empty()) {
      fn.return_elements = std::move(declared.elements);
    } else if (declared.elements.size() == fn.return_elements.size()) {
      for (size_t i = 0; i < declared.elements.size(); ++i) {
        if (fn.return_elements[i] != ValueKind::Tensor && declared.elements[i] != ValueKind::Unknown)
          fn.return_elements[i] = declared.elements[i];
      }
    }
  }
}

void SemanticModel::bind_statement(TSNode node, const FunctionInfo& fn, const Bind& bind,
                                   std::unordered_map<std::string, std::vector<TSNode>>* assignments) const {
  auto assign = [&](TSNode target, ValueKind kind) { unpack_target(target, kind, bind); };
  auto t = type_of(node);
  if (t == "assignment") {
    TSNode right = field(node, "right");
    TSNode type = field(node, "type");
    ValueKind kind = ValueKind::Unknown;
    if (!ts_node_is_null(type)) kind = annotation_kind(document_.node_text(type));
    if (!ts_node_is_null(right) && kind == ValueKind::Unknown) {
      if (is_type(right, "assignment")) right = field(right, "right");  // a = b = expr
      kind = kind_of(right, fn);
    }
    TSNode left = unparenthesize(field(node, "left"));
    if (assignments && is_type(left, "identifier") && !ts_node_is_null(right))
      (*assignments)[text_of(document_, left)].push_back(right);
    // `h, w = x.shape[-2:]` is one kind; `a, b = x, n` is element by element.
    if (is_pattern(left) && !ts_node_is_null(right) &&
        (is_type(unparenthesize(right), "expression_list") || is_type(unparenthesize(right), "tuple"))) {
      const std::vector<TSNode> targets = pattern_parts(left), values = pattern_parts(unparenthesize(right));
      auto splat = [](TSNode n) { return is_type(n, "list_splat_pattern") || is_type(n, "list_splat"); };
      if (targets.size() == values.size() && std::none_of(targets.begin(), targets.end(), splat) &&
          std::none_of(values.begin(), values.end(), splat)) {
        for (size_t i = 0; i < targets.size(); ++i) assign(targets[i], kind_of(values[i], fn));
        return;
      }
    }
    // `max_n, indices = self._global_indices(mask)`: each name takes its element of the callee's tuple.
    if ((is_type(left, "pattern_list") || is_type(left, "tuple_pattern")) && !ts_node_is_null(right) &&
        is_type(unparenthesize(right), "call")) {
      const FunctionInfo* callee = resolve_callee(unparenthesize(right), fn);
      std::vector<TSNode> targets;
      for (TSNode target : named_children(left)) {
        if (!is_type(target, "comment")) targets.push_back(target);
      }
      const ImportedReturn* imported = callee ? nullptr : imported_return(unparenthesize(right));
      const std::vector<ValueKind>* returned = callee     ? &callee->return_elements
                                               : imported ? &imported->elements
                                                          : nullptr;
      if (returned && !returned->empty() && returned->size() == targets.size() &&
          std::none_of(targets.begin(), targets.end(),
                       [](TSNode target) { return is_type(target, "list_splat_pattern"); })) {
        for (size_t i = 0; i < targets.size(); ++i) assign(targets[i], (*returned)[i]);
        return;
      }
    }
    assign(left, kind);
  } else if (t == "augmented_assignment") {
    ValueKind kind = kind_of(field(node, "right"), fn);
    ValueKind old = kind_of(field(node, "left"), fn);
    assign(field(node, "left"), merge(old, kind));
  } else if (t == "for_statement") {
    bind_iteration(field(node, "left"), field(node, "right"), fn, bind);
  } else if (is_comprehension(t)) {
    // The comprehension's variables, as locals for the rules that read its body (Python gives them a
    // scope of their own; a clash with a local of the same name only merges the two kinds).
    for (TSNode clause : named_children(node)) {
      if (is_type(clause, "for_in_clause")) bind_iteration(field(clause, "left"), field(clause, "right"), fn, bind);
    }
  } else if (t == "call") {
    // `feats.append(x)` / `feats.extend(xs)` / `feats.insert(i, x)`: what a list local holds.
    TSNode callee = unparenthesize(field(node, "function"));
    if (!is_type(callee, "attribute") || !is_type(field(callee, "object"), "identifier")) return;
    const std::string_view method = document_.node_text(field(callee, "attribute"));
    if (!grows_list(method)) return;
    const std::string name = text_of(document_, field(callee, "object"));
    auto local = fn.locals.find(name);
    if (local == fn.locals.end()) return;
    std::vector<TSNode> args = pattern_parts(field(node, "arguments"));
    if (args.size() != (method == "insert" ? 2u : 1u) || is_type(args.back(), "keyword_argument")) return;
    const ValueKind k = kind_of(args.back(), fn);
    if (method == "extend") {
      if (k == ValueKind::TensorSequence || k == ValueKind::Static) bind(name, k);
    } else if (k == ValueKind::Tensor) {
      bind(name, ValueKind::TensorSequence);
    } else if (k == ValueKind::Static) {
      bind(name, ValueKind::Static);
    }
  }
}

void SemanticModel::unpack_target(TSNode target, ValueKind kind, const Bind& bind) const {
  target = unparenthesize(target);
  if (is_type(target, "identifier")) {
    bind(text_of(document_, target), kind);
    return;
  }
  if (!is_pattern(target)) return;  // `self.x, y[0] = ...`: not a local
  // Unpacking a tensor (chunk, split, module outputs, the rows of a tensor) or a list of tensors gives
  // tensors, nested patterns included (`for h, w in shapes`); unpacking static values gives static ones.
  const ValueKind each = kind == ValueKind::TensorSequence                          ? ValueKind::Tensor
                         : (kind == ValueKind::Tensor || kind == ValueKind::Static) ? kind
                                                                                    : ValueKind::Unknown;
  for (TSNode part : pattern_parts(target)) {
    if (is_type(part, "list_splat_pattern") || is_type(part, "list_splat")) {
      // `first, *rest = feats`: the rest is a list of what the elements are.
      TSNode inner = named_child(part, 0);
      const ValueKind rest = each == ValueKind::Tensor   ? ValueKind::TensorSequence
                             : each == ValueKind::Static ? ValueKind::Static
                                                         : ValueKind::Unknown;
      if (is_type(inner, "identifier")) bind(text_of(document_, inner), rest);
      continue;
    }
    unpack_target(part, each, bind);
  }
}

ValueKind SemanticModel::element_kind(TSNode iterable, const FunctionInfo& fn) const {
  iterable = unparenthesize(iterable);
  if (is_type(iterable, "call")) {
    TSNode callee = unparenthesize(field(iterable, "function"));
    const std::string_view name = document_.node_text(callee);
    const std::vector<TSNode> args = pattern_parts(field(iterable, "arguments"));
    if (name == "range") return ValueKind::Static;
    if ((name == "reversed" || name == "list" || name == "tuple" || name == "sorted") && args.size() == 1)
      return element_kind(args[0], fn);
    if (name == "zip" || name == "enumerate") {
      // A whole tuple: a list of tensors when every zipped sequence yields tensors.
      if (name == "enumerate" || args.empty()) return ValueKind::Unknown;
      for (TSNode a : args) {
        if (element_kind(a, fn) != ValueKind::Tensor) return ValueKind::Unknown;
      }
      return ValueKind::TensorSequence;
    }
    if (is_type(callee, "attribute") && kind_of(field(callee, "object"), fn) == ValueKind::TensorMapping) {
      const std::string_view method = document_.node_text(field(callee, "attribute"));
      if (method == "values") return ValueKind::Tensor;
      if (method == "keys") return ValueKind::Static;
      return ValueKind::Unknown;
    }
  }
  switch (kind_of(iterable, fn)) {
    case ValueKind::TensorSequence:
    case ValueKind::Tensor:  // the rows of a tensor
      return ValueKind::Tensor;
    case ValueKind::Module:  // the layers of a ModuleList or Sequential
      return ValueKind::Module;
    case ValueKind::Static:
    case ValueKind::TensorMapping:  // its keys
      return ValueKind::Static;
    default:
      return ValueKind::Unknown;
  }
}

void SemanticModel::bind_iteration(TSNode target, TSNode iterable, const FunctionInfo& fn, const Bind& bind) const {
  target = unparenthesize(target);
  iterable = unparenthesize(iterable);
  if (is_pattern(target) && is_type(iterable, "call")) {
    const std::vector<TSNode> parts = pattern_parts(target);
    const std::vector<TSNode> args = pattern_parts(field(iterable, "arguments"));
    auto plain = [](const std::vector<TSNode>& nodes) {
      return std::none_of(nodes.begin(), nodes.end(), [](TSNode n) {
        return is_type(n, "list_splat_pattern") || is_type(n, "list_splat") || is_type(n, "keyword_argument") ||
               is_type(n, "dictionary_splat");
      });
    };
    TSNode callee = unparenthesize(field(iterable, "function"));
    const std::string_view name = document_.node_text(callee);
    if (name == "zip" && parts.size() == args.size() && plain(parts) && plain(args)) {
      // `for x, mask in zip(feats, masks)`: each name takes an element of its own sequence.
      for (size_t i = 0; i < parts.size(); ++i) bind_iteration(parts[i], args[i], fn, bind);
      return;
    }
    if (name == "enumerate" && parts.size() == 2 && plain(parts) && !args.empty() && plain({args[0]})) {
      // `for i, layer in enumerate(self.layers)`: a Python int counter and the elements.
      unpack_target(parts[0], ValueKind::Static, bind);
      bind_iteration(parts[1], args[0], fn, bind);
      return;
    }
    if (is_type(callee, "attribute") && document_.node_text(field(callee, "attribute")) == "items" &&
        parts.size() == 2 && kind_of(field(callee, "object"), fn) == ValueKind::TensorMapping) {
      unpack_target(parts[0], ValueKind::Static, bind);
      unpack_target(parts[1], ValueKind::Tensor, bind);
      return;
    }
  }
  unpack_target(target, element_kind(iterable, fn), bind);
}

ValueKind SemanticModel::comprehension_kind(TSNode expr, const FunctionInfo& fn) const {
  const size_t depth = comprehension_scope.size();
  const Bind push = [](const std::string& name, ValueKind kind) { comprehension_scope.emplace_back(name, kind); };
  for (TSNode clause : named_children(expr)) {
    if (is_type(clause, "for_in_clause")) bind_iteration(field(clause, "left"), field(clause, "right"), fn, push);
  }
  TSNode body = field(expr, "body");
  ValueKind result = ValueKind::Unknown;
  if (is_type(expr, "dictionary_comprehension")) {
    if (is_type(body, "pair") && kind_of(field(body, "value"), fn) == ValueKind::Tensor)
      result = ValueKind::TensorMapping;
  } else {
    const ValueKind element = kind_of(body, fn);
    result = element == ValueKind::Tensor   ? ValueKind::TensorSequence
             : element == ValueKind::Static ? ValueKind::Static
                                            : ValueKind::Unknown;
  }
  comprehension_scope.resize(depth);
  return result;
}

ValueKind SemanticModel::name_kind(std::string_view name, const FunctionInfo& fn) const {
  // A comprehension's own variables, while kind_of reads its body.
  for (auto it = comprehension_scope.rbegin(); it != comprehension_scope.rend(); ++it) {
    if (it->first == name) return it->second;
  }
  for (const FunctionInfo* f = &fn; f; f = f->parent) {
    if (auto it = f->locals.find(std::string(name)); it != f->locals.end()) return it->second;
  }
  if (name == "True" || name == "False") return ValueKind::Static;
  return ValueKind::Unknown;
}

const FunctionInfo* SemanticModel::resolve_callee(TSNode call, const FunctionInfo& caller) const {
  if (!callee_cache_) return find_callee(call, caller);
  const CallKey key{call.id, ts_node_start_byte(call), &caller};
  if (auto it = callee_cache_->find(key); it != callee_cache_->end()) return it->second;
  const FunctionInfo* found = find_callee(call, caller);
  callee_cache_->emplace(key, found);
  return found;
}

const FunctionInfo* SemanticModel::find_callee(TSNode call, const FunctionInfo& caller) const {
  TSNode callee = unparenthesize(field(call, "function"));
  if (is_type(callee, "identifier")) {
    std::string name = text_of(document_, callee);
    // Nested functions first, then module-level functions.
    for (const FunctionInfo* f = &caller; f; f = f->parent) {
      if (auto it = nested_.find(f); it != nested_.end()) {
        for (FunctionInfo* g : it->second) {
          if (g->name == name) return g;
        }
      }
    }
    auto it = top_level_by_name_.find(name);
    if (it != top_level_by_name_.end()) return it->second;
    // `for layer in self.layers: layer(x)` (or `for i, layer in enumerate(self.layers)`): the forward of
    // the ModuleList's element class.
    // Only a name some for statement of the caller binds (ts_node_parent rescans from the root: most calls
    // of names are builtins and imports, not loop variables).
    const auto bound = caller.binding_nodes.find(name);
    if (bound == caller.binding_nodes.end() || std::none_of(bound->second.begin(), bound->second.end(),
                                                            [](TSNode n) { return is_type(n, "for_statement"); })) {
      return nullptr;
    }
    const FunctionInfo* top = &caller.outermost();
    for (TSNode loop = ts_node_parent(call); !ts_node_is_null(loop); loop = ts_node_parent(loop)) {
      if (is_type(loop, "function_definition")) break;
      if (!is_type(loop, "for_statement")) continue;
      TSNode left = field(loop, "left"), right = unparenthesize(field(loop, "right"));
      if (is_type(right, "call") && text_of(document_, field(right, "function")) == "enumerate") {
        TSNode args = field(right, "arguments");
        right = named_child_count(args) == 1 ? named_child(args, 0) : TSNode{};
        left = (is_type(left, "pattern_list") || is_type(left, "tuple_pattern")) && named_child_count(left) == 2
                   ? named_child(left, 1)
                   : TSNode{};
      }
      if (!is_type(left, "identifier") || text_of(document_, left) != name) continue;
      if (!is_type(right, "attribute") || text_of(document_, field(right, "object")) != "self") return nullptr;
      const std::string attr = text_of(document_, field(right, "attribute"));
      const std::string* element = inherited(top->owner, attr, &ClassInfo::attribute_element_classes);
      return element ? forward_of(find_class(*element)) : nullptr;
    }
    return nullptr;
  }
  if (is_type(callee, "attribute")) {
    TSNode object = field(callee, "object");
    std::string method = text_of(document_, field(callee, "attribute"));
    const ClassInfo* cls = nullptr;
    const FunctionInfo* top = &caller.outermost();
    std::string object_text = text_of(document_, object);
    if (object_text == "self" || object_text == "cls" || object_text.starts_with("super(")) {
      cls = top->owner;
      if (cls && object_text.starts_with("super(") && !cls->bases.empty()) cls = find_class(cls->bases[0]);
    } else {
      cls = find_class(object_text);
    }
    if (FunctionInfo* const* found = inherited(cls, method, &ClassInfo::methods)) return *found;
    // `self.block(x)` with `self.block = Block(config)`: Block's forward (or `__call__` of a plain class).
    if (object_text == "self") {
      if (const std::string* module = inherited(cls, method, &ClassInfo::attribute_module_classes))
        return call_target_of(find_class(*module));
    }
    // `self.head.loss(logits, targets)` with `self.head = Head(...)`: a method of Head other than forward.
    if (is_type(object, "attribute") && text_of(document_, field(object, "object")) == "self") {
      const std::string attr = text_of(document_, field(object, "attribute"));
      if (const std::string* module = inherited(top->owner, attr, &ClassInfo::attribute_module_classes)) {
        if (FunctionInfo* const* found = inherited(find_class(*module), method, &ClassInfo::methods)) return *found;
      }
    }
  }
  return nullptr;
}

const FunctionInfo* SemanticModel::forward_of(const ClassInfo* cls) const {
  FunctionInfo* const* forward = inherited(cls, "forward", &ClassInfo::methods);
  return forward ? *forward : nullptr;
}

std::vector<uint32_t> SemanticModel::methods_called_through_attributes(const FunctionInfo& caller) const {
  std::vector<uint32_t> out;
  for (TSNode call : caller.body_nodes) {
    if (!is_type(call, "call")) continue;
    TSNode callee = unparenthesize(field(call, "function"));
    if (!is_type(callee, "attribute")) continue;
    TSNode object = field(callee, "object");
    if (!is_type(object, "attribute") || text_of(document_, field(object, "object")) != "self") continue;
    const std::string method = text_of(document_, field(callee, "attribute"));
    // Dunder and lifecycle methods are no evidence of which class is meant.
    if (method.starts_with("__") || method == "forward" || method == "reset_parameters") continue;
    if (resolve_callee(call, caller)) continue;
    for (const auto& cls : classes_) {
      if (auto it = cls->methods.find(method); it != cls->methods.end()) out.push_back(it->second->index);
    }
  }
  return out;
}

const FunctionInfo* SemanticModel::call_target_of(const ClassInfo* cls) const {
  if (!cls) return nullptr;
  if (cls->is_module) return forward_of(cls);
  FunctionInfo* const* call = inherited(cls, "__call__", &ClassInfo::methods);
  return call ? *call : nullptr;
}

ValueKind SemanticModel::call_kind(TSNode call, const FunctionInfo& fn) const {
  TSNode callee = unparenthesize(field(call, "function"));
  std::string callee_text = text_of(document_, callee);
  if (auto q = qualified_name(callee)) {
    std::string_view name = *q;
    if (one_of(name, kStaticTorchFunctions)) return ValueKind::Static;
    if (one_of(name, kDataTorchFunctions)) return ValueKind::Tensor;  // Dynamo breaks where the bool is used
    std::string_view last = name.substr(name.rfind('.') + 1);
    if (one_of(last, kCompilingChecks)) return ValueKind::Static;
    if (name.starts_with("torch.nn.functional.") || name.starts_with("torch.special.") ||
        name.starts_with("torch.linalg.") || name.starts_with("torch.fft."))
      return ValueKind::Tensor;
    if (name.starts_with("torch.nn.")) return ValueKind::Module;
    if (name.starts_with("torch.") && std::count(name.begin(), name.end(), '.') == 1 && !last.empty() &&
        std::islower(static_cast<unsigned char>(last[0])))
      return ValueKind::Tensor;
    if (name == "math." || name.starts_with("math.")) return ValueKind::Static;
    // A function of another file that said what it returns.
    if (const ImportedReturn* r = imported_return(call)) return r->kind;
    return ValueKind::Unknown;
  }
  if (is_type(callee, "identifier")) {
    if (callee_text == "len" || callee_text == "isinstance" || callee_text == "hasattr" || callee_text == "range" ||
        callee_text == "getattr" || callee_text == "type" || callee_text == "str")
      return ValueKind::Static;
    if (callee_text == "sum" && argument_count_of(call) == 1 &&
        element_kind(named_child(field(call, "arguments"), 0), fn) == ValueKind::Tensor)
      return ValueKind::Tensor;  // `sum(losses)` adds tensors
    if (callee_text == "max" || callee_text == "min" || callee_text == "abs" || callee_text == "round" ||
        callee_text == "sum") {
      // Of values Dynamo knows (`max(self.config.attention_window)`): known too. Of a tensor and Python numbers
      // (`max(box[0], 0)`, `min(box[2] + 1, w)`, `abs(t)`): a tensor, as Dynamo traces them as tensor operations.
      bool all_static = named_child_count(field(call, "arguments")) > 0;
      bool numbers_and_tensors = all_static, any_tensor = false;
      size_t count = 0;
      for (TSNode a : named_children(field(call, "arguments"))) {
        if (is_type(a, "comment")) continue;
        ++count;
        const ValueKind k = is_type(a, "keyword_argument") ? ValueKind::Unknown : kind_of(a, fn);
        all_static = all_static && k == ValueKind::Static;
        numbers_and_tensors = numbers_and_tensors && (k == ValueKind::Static || k == ValueKind::Tensor);
        any_tensor = any_tensor || k == ValueKind::Tensor;
      }
      if (all_static) return ValueKind::Static;
      const bool elementwise = callee_text == "abs" || callee_text == "round" || count >= 2;
      return callee_text != "sum" && elementwise && numbers_and_tensors && any_tensor ? ValueKind::Tensor
                                                                                      : ValueKind::Unknown;
    }
    TSNode arguments = field(call, "arguments");
    if ((callee_text == "list" || callee_text == "tuple" || callee_text == "sorted" || callee_text == "reversed") &&
        (argument_count_of(call) == 1 || is_type(arguments, "generator_expression"))) {
      // `list(feats)` of a list of tensors or of a tensor's rows; `tuple(params[k] for k in keys)` (the
      // generator expression is the whole argument list).
      const ValueKind element =
          element_kind(is_type(arguments, "generator_expression") ? arguments : named_child(arguments, 0), fn);
      if (element == ValueKind::Tensor) return ValueKind::TensorSequence;
      if (element == ValueKind::Static) return ValueKind::Static;
      return ValueKind::Unknown;
    }
    if (callee_text == "dict" && argument_count_of(call) == 1) {
      const ValueKind k = kind_of(named_child(field(call, "arguments"), 0), fn);
      return k == ValueKind::TensorMapping ? k : ValueKind::Unknown;
    }
    if (callee_text == "int" || callee_text == "float" || callee_text == "bool") {
      TSNode args = field(call, "arguments");
      if (named_child_count(args) == 1) {
        ValueKind k = kind_of(named_child(args, 0), fn);
        if (k == ValueKind::Tensor || k == ValueKind::DataScalar) return ValueKind::DataScalar;
        if (k == ValueKind::Static) return ValueKind::Static;
      }
      return ValueKind::Unknown;
    }
    ValueKind local = name_kind(callee_text, fn);
    if (local == ValueKind::Module) return ValueKind::Tensor;
    if (const ClassInfo* c = find_class(callee_text); c && c->is_module) return ValueKind::Module;
  }
  if (is_type(callee, "attribute")) {
    TSNode object = field(callee, "object");
    std::string method = text_of(document_, field(callee, "attribute"));
    ValueKind object_kind = kind_of(object, fn);
    if (object_kind == ValueKind::Tensor) {
      if (one_of(std::string_view(method), kMetadataMethods)) return ValueKind::Static;
      if (one_of(std::string_view(method), kDataMethods)) return ValueKind::DataScalar;
      if (method == "numpy") return ValueKind::Unknown;
      return ValueKind::Tensor;
    }
    if (object_kind == ValueKind::TensorMapping) {
      if (method == "get" || method == "pop" || method == "setdefault") return ValueKind::Tensor;
      if (method == "values") return ValueKind::TensorSequence;
      if (method == "keys") return ValueKind::Static;
      return ValueKind::Unknown;
    }
    if (object_kind == ValueKind::TensorSequence) {
      if (method == "pop") return ValueKind::Tensor;
      if (method == "index" || method == "count") return ValueKind::Static;
      return ValueKind::Unknown;
    }
    if (object_kind == ValueKind::Module) {
      if (method == "parameters" || method == "named_parameters" || method == "children" || method == "modules" ||
          method == "state_dict" || method == "extra_repr")
        return ValueKind::Unknown;
      return ValueKind::Tensor;  // self.proj.forward(x), self.attn(x) handled below
    }
  }
  // self.submodule(x) / layer(x): calling a module gives tensors.
  ValueKind callee_kind = kind_of(callee, fn);
  if (callee_kind == ValueKind::Module) return ValueKind::Tensor;
  if (const FunctionInfo* target = resolve_callee(call, fn)) return target->return_kind;
  return ValueKind::Unknown;
}

bool workspace_entry_wanted(std::string_view entry, const std::vector<std::pair<std::string, std::string>>& announced) {
  if (!entry.starts_with(kWorkspaceOverridesQueryPrefix)) return true;
  const std::pair<std::string, std::string> passes_on{
      "", std::string(kWorkspacePassesOnPrefix) + std::string(traced_entry_function(entry))};
  return std::find(announced.begin(), announced.end(), passes_on) != announced.end();
}

std::vector<std::string> workspace_answers(std::string_view module, std::string_view query,
                                           const std::vector<std::pair<std::string, std::string>>& announced) {
  const std::string name(traced_entry_function(query));
  const std::string subject = std::string(module) + "." + name;
  std::vector<std::string> out;
  if (query.starts_with(kWorkspaceDecoratorQueryPrefix)) {
    // `@disable_compiler` with the name imported: Dynamo is disabled there when its file binds it so.
    const std::pair<std::string, std::string> alias{"", std::string(kWorkspaceDisableAliasPrefix) + name};
    if (std::find(announced.begin(), announced.end(), alias) != announced.end())
      out.push_back(std::string(kWorkspaceDisabledPrefix) + subject);
    return out;
  }
  if (query.starts_with(kWorkspaceOverridesQueryPrefix)) {
    // `class A(Base)` defining `m`, with Base imported: `m` is traced when Base's traced code calls `self.m`.
    const std::string said_prefix = std::string(kWorkspaceSelfCallsPrefix) + name + ":";
    std::unordered_set<std::string_view> called;
    for (const auto& [none, said] : announced) {
      if (!none.empty() || !said.starts_with(said_prefix)) continue;
      for (std::string_view method : listed_names(std::string_view(said).substr(said_prefix.size())))
        called.insert(method);
    }
    std::vector<std::string_view> both;
    for (std::string_view method : listed_names(query.substr(kWorkspaceOverridesQueryPrefix.size() + name.size() + 1)))
      if (called.count(method)) both.push_back(method);
    if (!both.empty()) out.push_back(std::string(kWorkspaceOverridablePrefix) + subject + ":" + joined_names(both));
    return out;
  }
  if (query.starts_with(kWorkspaceBaseQueryPrefix)) {
    // `class A(Base)` with Base imported: a module when Base's file says so.
    const std::pair<std::string, std::string> module_class{"", std::string(kWorkspaceModuleClassPrefix) + name};
    if (std::find(announced.begin(), announced.end(), module_class) != announced.end())
      out.push_back(std::string(kWorkspaceModuleBasePrefix) + subject);
    return out;
  }
  // What the function returns, when its file says: the caller's file types its calls by it.
  const std::pair<std::string, std::string> sparse{"", std::string(kWorkspaceSparseReturnsPrefix) + name};
  if (std::find(announced.begin(), announced.end(), sparse) != announced.end())
    out.push_back(std::string(kWorkspaceImportedSparseReturnPrefix) + subject);
  const std::string returns = std::string(kWorkspaceReturnsPrefix) + name + ":";
  for (const auto& [none, said] : announced) {
    if (none.empty() && said.starts_with(returns))
      out.push_back(std::string(kWorkspaceImportedReturnPrefix) + subject + ":" + said.substr(returns.size()));
  }
  return out;
}

namespace {
constexpr std::array<std::string_view, 6> kSparseConversions{
    "to_sparse", "to_sparse_coo", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr", "to_sparse_bsc",
};
// Constructors, with the break Dynamo takes at each.
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kSparseConstructors{{
    {"torch.sparse_coo_tensor", "a function Dynamo marks as skipped (GB0007)"},
    {"torch.sparse_csr_tensor", "refused by Dynamo (Sparse tensor creation not supported, GB0374)"},
    {"torch.sparse_csc_tensor", "refused by Dynamo (Sparse tensor creation not supported, GB0374)"},
    {"torch.sparse_bsr_tensor", "refused by Dynamo (Sparse tensor creation not supported, GB0374)"},
    {"torch.sparse_bsc_tensor", "refused by Dynamo (Sparse tensor creation not supported, GB0374)"},
    {"torch.sparse_compressed_tensor", "refused by Dynamo (Sparse tensor creation not supported, GB0374)"},
}};

}  // namespace

bool bound_in_function(const FunctionInfo& fn, std::string_view name) {
  const std::string key(name);
  for (const FunctionInfo* f = &fn; f; f = f->parent) {
    if (std::find(f->params.begin(), f->params.end(), key) != f->params.end()) return true;
    if (f->assignments.count(key) || f->locals.count(key)) return true;
  }
  return false;
}

bool callee_root_bound(const Document& document, TSNode call, const FunctionInfo& fn) {
  TSNode callee = unparenthesize(field(call, "function"));
  while (is_type(callee, "attribute")) callee = unparenthesize(field(callee, "object"));
  return !is_type(callee, "identifier") || bound_in_function(fn, document.node_text(callee));
}

std::string_view sparse_constructor_break(std::string_view qualified) {
  for (const auto& [name, why] : kSparseConstructors)
    if (name == qualified) return why;
  return {};
}

bool is_sparse_conversion(std::string_view method) {
  return std::find(kSparseConversions.begin(), kSparseConversions.end(), method) != kSparseConversions.end();
}

bool SemanticModel::calls_imported_sparse_return(TSNode call) const {
  if (workspace_sparse_returns_.empty()) return false;
  auto q = qualified_name(field(call, "function"));
  return q && workspace_sparse_returns_.count(*q);
}

bool SemanticModel::sparse_returns_of(const FunctionInfo& fn) const {
  bool any = false;
  for (TSNode node : fn.body_nodes) {
    if (!is_type(node, "return_statement")) continue;
    TSNode value = named_child(node, 0);
    if (ts_node_is_null(value) || !makes_sparse(value, fn, 1)) return false;
    any = true;
  }
  return any;
}

void SemanticModel::find_sparse_returns() {
  // A function returning what another function of the file returns: a few rounds reach through such chains.
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    for (auto& f : functions_) {
      if (f->returns_sparse_tensor || !sparse_returns_of(*f)) continue;
      f->returns_sparse_tensor = true;
      changed = true;
    }
    if (!changed) break;
  }
}

bool SemanticModel::makes_sparse(TSNode expr, const FunctionInfo& fn, int depth, std::string_view assumed) const {
  expr = unparenthesize(expr);
  if (depth > 4) return false;
  if (is_type(expr, "call")) {
    TSNode callee = unparenthesize(field(expr, "function"));
    if (is_type(callee, "attribute") && kind_of(field(callee, "object"), fn) == ValueKind::Tensor) {
      // Methods that give a sparse tensor back when called on one (`adj = adj._coalesced_(True)`).
      const std::string_view method = document_.node_text(field(callee, "attribute"));
      if (is_sparse_conversion(method)) return true;
      return (method == "coalesce" || method == "_coalesced_" || method == "t" || method == "clone" ||
              method == "detach") &&
             makes_sparse(field(callee, "object"), fn, depth + 1, assumed);
    }
    if (auto q = qualified_name(callee); q && !sparse_constructor_break(*q).empty())
      return !callee_root_bound(document_, expr, fn);
    if (calls_imported_sparse_return(expr)) return true;
    const FunctionInfo* target = resolve_callee(expr, fn);
    return target && target != &fn && target->returns_sparse_tensor;
  }
  if (!is_type(expr, "identifier")) return false;
  const std::string name = text_of(document_, expr);
  // `adj = adj._coalesced_(True)` reads the name it binds: sparse if the name is, as the other bindings make it.
  if (name == assumed) return true;
  if (std::find(fn.params.begin(), fn.params.end(), name) != fn.params.end()) return false;
  auto it = fn.assignments.find(name);
  if (it == fn.assignments.end() || it->second.empty()) return false;
  bool made_here = false;  // by a binding that does not read the name itself
  for (TSNode value : it->second) {
    if (ts_node_is_null(value) || !is_type(unparenthesize(value), "call") || !makes_sparse(value, fn, depth + 1, name))
      return false;
    made_here = made_here || makes_sparse(value, fn, depth + 1, assumed);
  }
  return made_here;
}

const SemanticModel::ImportedReturn* SemanticModel::imported_return(TSNode call) const {
  if (workspace_returns_.empty()) return nullptr;
  auto q = qualified_name(field(call, "function"));  // the imported name as this file qualifies it
  if (!q) return nullptr;
  auto it = workspace_returns_.find(*q);
  return it == workspace_returns_.end() ? nullptr : &it->second;
}

namespace {
// `isinstance(name, int)`, `isinstance(name, (int, float))`: a test that `name` holds a Python number or string.
bool tests_python_scalar(const Document& document, TSNode test, const std::string& name) {
  test = unparenthesize(test);
  if (is_type(test, "boolean_operator") && document.node_text(field(test, "operator")) == "and")
    return tests_python_scalar(document, field(test, "left"), name) ||
           tests_python_scalar(document, field(test, "right"), name);
  if (!is_type(test, "call") || document.node_text(field(test, "function")) != "isinstance") return false;
  std::vector<TSNode> args;
  for (TSNode a : named_children(field(test, "arguments")))
    if (!is_type(a, "comment")) args.push_back(a);
  if (args.size() != 2 || !is_type(args[0], "identifier") || document.node_text(args[0]) != name) return false;
  std::vector<TSNode> types;
  if (is_type(unparenthesize(args[1]), "tuple")) {
    for (TSNode c : named_children(unparenthesize(args[1])))
      if (!is_type(c, "comment")) types.push_back(c);
  } else {
    types.push_back(args[1]);
  }
  return !types.empty() && std::all_of(types.begin(), types.end(), [&](TSNode type) {
    const std::string_view n = document.node_text(type);
    return n == "int" || n == "float" || n == "bool" || n == "complex" || n == "str" || n == "numbers.Number";
  });
}
}  // namespace

// `name` is read in the body of `if isinstance(name, (int, float)):` (or its `elif` form) of this function.
bool SemanticModel::narrowed_to_python_scalar(TSNode node, const std::string& name, const FunctionInfo& fn) const {
  if (!fn.isinstance_tested.count(name)) return false;  // most names: no walk up the tree
  TSNode child = node;
  for (TSNode n = ts_node_parent(node); !ts_node_is_null(n) && !ts_node_eq(n, fn.node);
       child = n, n = ts_node_parent(n)) {
    if ((is_type(n, "if_statement") || is_type(n, "elif_clause")) && ts_node_eq(child, field(n, "consequence")) &&
        tests_python_scalar(document_, field(n, "condition"), name))
      return true;
  }
  return false;
}

namespace {
// Flow queries recurse (a binding's right-hand side reads other names, whose bindings read others): at
// most this many levels, each level a read in a binding's right-hand side.
constexpr int kMaxFlowDepth = 24;

// Model states, numbered across all models: a cached flow answer holds only for the state it was computed in.
std::atomic<uint64_t> flow_generations{0};

// Per thread (models are read by several threads at once): the bindings whose kind is being computed (a
// loop carries a binding back to its own right-hand side: that path adds nothing new, so it is cut), how
// many cuts were made (an answer computed under a cut is not cached), and the answers of one model state.
struct FlowState {
  int depth = 0;
  uint64_t cuts = 0;
  std::vector<std::pair<const void*, uint32_t>> in_progress;
  uint64_t generation = 0;
  struct Key {
    const void* fn;
    uint32_t start;
    bool read;  // a read (kind_at) or a binding (binding_kind)
    std::string name;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return ((std::hash<const void*>()(k.fn) * 31 + k.start) * 31 + k.read) * 31 + std::hash<std::string>()(k.name);
    }
  };
  std::unordered_map<Key, std::optional<ValueKind>, KeyHash> answers;
  // Answers computed under a cut: they hold for the outermost query that computed them (so that each
  // binding is read once per query), not beyond it.
  std::unordered_map<Key, std::optional<ValueKind>, KeyHash> query_answers;
  const std::optional<ValueKind>* find(const Key& key) {
    if (auto it = answers.find(key); it != answers.end()) return &it->second;
    if (auto it = query_answers.find(key); it != query_answers.end()) return &it->second;
    return nullptr;
  }
  void store(Key key, std::optional<ValueKind> kind, bool cut) {
    (cut ? query_answers : answers).emplace(std::move(key), kind);
  }
  std::unordered_map<Key, std::optional<ValueKind>, KeyHash>& for_generation(uint64_t g) {
    if (g != generation) {
      answers.clear();
      query_answers.clear();
      generation = g;
    }
    return answers;
  }
};
thread_local FlowState flow_state;

bool inside(TSNode inner, TSNode outer) {
  return !ts_node_is_null(outer) && ts_node_start_byte(outer) <= ts_node_start_byte(inner) &&
         ts_node_end_byte(inner) <= ts_node_end_byte(outer);
}
bool inside(TSNode inner, ByteRange outer) { return outer.contains(node_range(inner)); }

// The innermost loop of the function that runs `binding` and, in a later iteration, `read` (what it repeats
// holds both: a while loop whole, a for loop's body), or nullptr.
const ByteRange* carrying_loop(TSNode binding, TSNode read, const FunctionInfo& fn) {
  const ByteRange* innermost = nullptr;
  for (const ByteRange& loop : fn.loop_ranges) {
    if (inside(binding, loop) && inside(read, loop) && (!innermost || innermost->contains(loop))) innermost = &loop;
  }
  return innermost;
}

// Whether `read` sits in a loop of the function at all (else no binding after it can reach it).
bool in_loop(TSNode read, const FunctionInfo& fn) {
  return std::any_of(fn.loop_ranges.begin(), fn.loop_ranges.end(),
                     [&](const ByteRange& loop) { return inside(read, loop); });
}

// `binding` and `read` sit in different clauses of one if statement.
bool in_other_branch(TSNode binding, TSNode read, const FunctionInfo& fn) {
  for (const FunctionInfo::IfClauses& s : fn.if_statements) {
    if (!inside(binding, s.whole) || !inside(read, s.whole)) continue;
    for (const ByteRange& clause : s.clauses) {
      if (inside(binding, clause) && !inside(read, clause)) return true;
    }
  }
  return false;
}

// A plain assignment `k` runs on every path from where it stands to `read`: it is a statement of a block
// that holds `read`, and ends before it.
bool dominates(TSNode k, TSNode read, const FunctionInfo& fn) {
  if (ts_node_end_byte(k) > ts_node_start_byte(read)) return false;
  if (is_type(k, "assignment") && ts_node_is_null(field(k, "right"))) return false;  // `x: int` binds nothing
  const auto block = fn.assignment_blocks.find(ts_node_start_byte(k));
  return block != fn.assignment_blocks.end() && inside(read, block->second);
}

// Some binding from byte `from` on runs on every path from there to `read`.
bool killed(uint32_t from, TSNode read, const std::vector<TSNode>& bindings, const FunctionInfo& fn) {
  return std::any_of(bindings.begin(), bindings.end(),
                     [&](TSNode k) { return ts_node_start_byte(k) >= from && dominates(k, read, fn); });
}

// The read is part of what `binding` evaluates before it binds (a right-hand side, an appended value).
bool read_before_binding(TSNode binding) {
  return is_type(binding, "assignment") || is_type(binding, "augmented_assignment") || is_type(binding, "call");
}
}  // namespace

ReachingBindings reaching_bindings(TSNode read, const std::vector<TSNode>& bindings, const FunctionInfo& fn) {
  ReachingBindings out;
  const uint32_t read_start = ts_node_start_byte(read);
  // Before the read, latest first: a plain assignment that dominates the read hides every earlier one.
  bool dominated = false;
  for (auto it = bindings.rbegin(); it != bindings.rend() && !dominated; ++it) {
    const TSNode b = *it;
    if (inside(read, b) && !read_before_binding(b)) {
      // A for loop's variables reach its body; a comprehension's reach its own expressions.
      if (!is_type(b, "for_statement") ||
          (inside(read, field(b, "body")) && !killed(ts_node_start_byte(field(b, "body")), read, bindings, fn)))
        out.bindings.push_back(b);
      dominated = is_type(b, "for_statement") && inside(read, field(b, "body"));
      continue;
    }
    if (ts_node_end_byte(b) > read_start) continue;
    if (dominates(b, read, fn)) {
      out.bindings.push_back(b);
      dominated = true;
    } else if (!in_other_branch(b, read, fn) || carrying_loop(b, read, fn)) {
      out.bindings.push_back(b);
    }
  }
  out.entry = !dominated;
  out.carried_from = out.bindings.size();
  // After the read (or around it, a right-hand side that reads the name): only through a loop, unless the
  // loop body rebinds it before the read.
  if (in_loop(read, fn)) {
    for (TSNode b : bindings) {
      // Bindings that hold the read count only when they evaluate it first; others only when after it.
      if (inside(read, b) ? !read_before_binding(b) : ts_node_end_byte(b) <= read_start) continue;
      const ByteRange* loop = carrying_loop(b, read, fn);
      if (loop && !killed(loop->start, read, bindings, fn)) out.bindings.push_back(b);
    }
  }
  return out;
}

void SemanticModel::new_flow_generation() const { flow_generation_ = ++flow_generations; }

std::optional<ValueKind> SemanticModel::binding_kind(TSNode binding, const std::string& name,
                                                     const FunctionInfo& fn) const {
  flow_state.for_generation(flow_generation_);
  FlowState::Key key{&fn, ts_node_start_byte(binding), false, name};
  if (const std::optional<ValueKind>* known = flow_state.find(key)) return *known;
  const std::pair<const void*, uint32_t> id{binding.id, ts_node_start_byte(binding)};
  if (std::find(flow_state.in_progress.begin(), flow_state.in_progress.end(), id) != flow_state.in_progress.end()) {
    ++flow_state.cuts;
    return std::nullopt;
  }
  const uint64_t cuts = flow_state.cuts;
  flow_state.in_progress.push_back(id);
  std::optional<ValueKind> kind;
  bind_statement(
      binding, fn,
      [&](const std::string& bound, ValueKind k) {
        if (bound == name) kind = kind ? merge(*kind, k) : k;
      },
      nullptr);
  flow_state.in_progress.pop_back();
  flow_state.for_generation(flow_generation_);
  flow_state.store(std::move(key), kind, flow_state.cuts != cuts);
  return kind;
}

std::optional<ValueKind> SemanticModel::kind_at(TSNode read, const std::string& name, const FunctionInfo& fn) const {
  if (ts_node_is_null(fn.node)) return std::nullopt;
  const auto found = fn.binding_nodes.find(name);
  if (found == fn.binding_nodes.end()) return std::nullopt;
  const std::vector<TSNode>& bindings = found->second;
  const auto param = fn.param_kinds.find(name);
  const bool is_param = param != fn.param_kinds.end();
  if (bindings.size() + (is_param ? 1 : 0) < 2 || flow_state.depth >= kMaxFlowDepth) return std::nullopt;
  FlowState::Key key{&fn, ts_node_start_byte(read), true, name};
  flow_state.for_generation(flow_generation_);
  if (const std::optional<ValueKind>* known = flow_state.find(key)) return *known;
  struct Level {
    Level() { ++flow_state.depth; }
    ~Level() {
      if (--flow_state.depth == 0) flow_state.query_answers.clear();
    }
  } level;
  const uint64_t cuts = flow_state.cuts;
  std::optional<ValueKind> joined;
  auto join = [&](TSNode b) {
    if (std::optional<ValueKind> k = binding_kind(b, name, fn)) joined = joined ? merge(*joined, *k) : *k;
  };
  const ReachingBindings reaching = reaching_bindings(read, bindings, fn);
  for (size_t i = 0; i < reaching.carried_from; ++i) join(reaching.bindings[i]);
  if (is_param && reaching.entry) joined = joined ? merge(*joined, param->second) : param->second;
  for (size_t i = reaching.carried_from; i < reaching.bindings.size(); ++i) join(reaching.bindings[i]);
  flow_state.for_generation(flow_generation_);
  flow_state.store(std::move(key), joined, flow_state.cuts != cuts);
  return joined;
}

bool SemanticModel::tests_tensor(TSNode test, const std::string& name) const {
  test = unparenthesize(test);
  if (is_type(test, "boolean_operator") && document_.node_text(field(test, "operator")) == "and")
    return tests_tensor(field(test, "left"), name) || tests_tensor(field(test, "right"), name);
  if (!is_type(test, "call")) return false;
  const std::vector<TSNode> args = pattern_parts(field(test, "arguments"));
  if (args.empty() || !is_type(args[0], "identifier") || document_.node_text(args[0]) != name) return false;
  const TSNode callee = field(test, "function");
  if (args.size() == 1) return qualified_name(callee) == "torch.is_tensor";
  if (args.size() != 2 || document_.node_text(callee) != "isinstance") return false;
  auto tensor_type = [&](TSNode type) {
    const std::optional<std::string> q = qualified_name(type);
    return q && (*q == "torch.Tensor" || *q == "torch.nn.Parameter" || *q == "torch.nn.parameter.Parameter");
  };
  const TSNode types = unparenthesize(args[1]);
  if (!is_type(types, "tuple")) return tensor_type(types);
  const std::vector<TSNode> each = pattern_parts(types);
  return !each.empty() && std::all_of(each.begin(), each.end(), tensor_type);
}

bool SemanticModel::narrowed_to_tensor(TSNode read, const std::string& name, const FunctionInfo& fn) const {
  if (!fn.isinstance_tested.count(name) || ts_node_is_null(fn.node)) return false;
  const auto found = fn.binding_nodes.find(name);
  // Whether a binding of the name runs between byte `from` and the read.
  auto rebound_since = [&](uint32_t from) {
    if (found == fn.binding_nodes.end()) return false;
    return std::any_of(found->second.begin(), found->second.end(), [&](TSNode b) {
      return ts_node_start_byte(b) >= from && ts_node_start_byte(b) < ts_node_start_byte(read) &&
             !(inside(read, b) && read_before_binding(b));
    });
  };
  auto negated_test = [&](TSNode condition) {
    condition = unparenthesize(condition);
    return is_type(condition, "not_operator") && tests_tensor(field(condition, "argument"), name);
  };
  TSNode child = read;
  for (TSNode n = ts_node_parent(read); !ts_node_is_null(n) && !ts_node_eq(n, fn.node);
       child = n, n = ts_node_parent(n)) {
    const std::string_view t = type_of(n);
    if ((t == "if_statement" || t == "elif_clause") && ts_node_eq(child, field(n, "consequence")) &&
        tests_tensor(field(n, "condition"), name))
      return !rebound_since(ts_node_start_byte(child));
    if (t == "boolean_operator" && document_.node_text(field(n, "operator")) == "and" &&
        ts_node_eq(child, field(n, "right")) && tests_tensor(field(n, "left"), name))
      return !rebound_since(ts_node_start_byte(child));
    if (t == "conditional_expression") {
      const std::vector<TSNode> parts = pattern_parts(n);  // value, test, alternative
      if (parts.size() == 3 && ts_node_eq(child, parts[0]) && tests_tensor(parts[1], name))
        return !rebound_since(ts_node_start_byte(n));
    }
    if (t == "else_clause" && is_type(ts_node_parent(n), "if_statement") &&
        negated_test(field(ts_node_parent(n), "condition")))
      return !rebound_since(ts_node_start_byte(n));
    if (t == "block") {
      // A guard before it: `if not isinstance(x, torch.Tensor): raise ...` (or return, continue, break).
      for (TSNode statement : named_children(n)) {
        if (ts_node_start_byte(statement) >= ts_node_start_byte(child)) break;
        if (!is_type(statement, "if_statement") || !ts_node_is_null(field(statement, "alternative")) ||
            !negated_test(field(statement, "condition")))
          continue;
        const std::vector<TSNode> body = named_children(field(statement, "consequence"));
        if (body.empty()) continue;
        const std::string_view last = type_of(body.back());
        if ((last == "raise_statement" || last == "return_statement" || last == "continue_statement" ||
             last == "break_statement") &&
            !rebound_since(ts_node_end_byte(statement)))
          return true;
      }
    }
  }
  return false;
}

ValueKind SemanticModel::kind_of(TSNode expr, const FunctionInfo& fn) const {
  expr = unparenthesize(expr);
  if (ts_node_is_null(expr)) return ValueKind::Unknown;
  auto t = type_of(expr);
  if (t == "identifier") {
    std::string name = text_of(document_, expr);
    ValueKind k = name_kind(name, fn);
    const bool comprehension_variable = std::any_of(comprehension_scope.begin(), comprehension_scope.end(),
                                                    [&](const auto& v) { return v.first == name; });
    if (!comprehension_variable) {
      // Flow refines what the whole function proves: `isinstance(x, torch.Tensor)` tested true, and where
      // the bindings of a name disagree (a tuple here, a tensor there), the ones that reach this read.
      if (k != ValueKind::Tensor && narrowed_to_tensor(expr, name, fn)) return ValueKind::Tensor;
      if (k == ValueKind::Unknown && fn.locals.count(name)) {
        if (std::optional<ValueKind> here = kind_at(expr, name, fn)) k = *here;
      }
    }
    if (k == ValueKind::Unknown) {
      if (auto it = module_globals_.find(name); it != module_globals_.end()) return it->second;
    }
    if (k == ValueKind::Tensor && narrowed_to_python_scalar(expr, name, fn)) return ValueKind::Static;
    return k;
  }
  if (t == "integer" || t == "float" || t == "string" || t == "true" || t == "false" || t == "concatenated_string")
    return ValueKind::Static;
  if (t == "none") return ValueKind::None;
  if (t == "attribute") {
    TSNode object = field(expr, "object");
    std::string attr = text_of(document_, field(expr, "attribute"));
    if (is_type(object, "identifier") && text_of(document_, object) == "self") {
      const FunctionInfo* top = &fn.outermost();
      return attribute_kind(top->owner, attr);
    }
    if (auto q = qualified_name(expr)) {
      // torch.float16, torch.long, math.pi: constants.
      if (q->starts_with("torch.") || q->starts_with("math.")) return ValueKind::Static;
      return ValueKind::Unknown;
    }
    ValueKind ok = kind_of(object, fn);
    if (ok == ValueKind::Tensor) {
      if (one_of(std::string_view(attr), kMetadataAttributes)) return ValueKind::Static;
      if (attr == "T" || attr == "mT" || attr == "H" || attr == "mH" || attr == "real" || attr == "imag" ||
          attr == "data" || attr == "grad")
        return ValueKind::Tensor;
      return ValueKind::Unknown;
    }
    if (ok == ValueKind::Static) return ValueKind::Static;  // self.config.hidden_size, x.shape.numel
    if (ok == ValueKind::Module) {
      ValueKind k = ValueKind::Unknown;
      // Attributes of submodules: weights are tensors, hyper-parameters are static.
      if (attr == "weight" || attr == "bias")
        k = ValueKind::Tensor;
      else if (attr == "training" || attr == "in_features" || attr == "out_features" || attr == "num_heads")
        k = ValueKind::Static;
      return k;
    }
    return ValueKind::Unknown;
  }
  if (t == "call") return call_kind(expr, fn);
  if (t == "binary_operator") {
    ValueKind l = kind_of(field(expr, "left"), fn), r = kind_of(field(expr, "right"), fn);
    if (l == ValueKind::Tensor || r == ValueKind::Tensor) return ValueKind::Tensor;
    if (l == ValueKind::DataScalar || r == ValueKind::DataScalar) return ValueKind::DataScalar;
    if (l == ValueKind::Static && r == ValueKind::Static) return ValueKind::Static;
    return ValueKind::Unknown;
  }
  if (t == "unary_operator") return kind_of(field(expr, "argument"), fn);
  if (t == "not_operator") {
    ValueKind k = kind_of(field(expr, "argument"), fn);
    if (k == ValueKind::Tensor || k == ValueKind::DataScalar) return ValueKind::DataScalar;
    if (k == ValueKind::Static || k == ValueKind::None) return ValueKind::Static;
    return ValueKind::Unknown;
  }
  if (t == "comparison_operator") {
    // `is`, `is not`, `in`, `not in` compare identities or containers: static for Dynamo.
    uint32_t n = ts_node_child_count(expr);
    for (uint32_t i = 0; i < n; ++i) {
      TSNode c = ts_node_child(expr, i);
      if (ts_node_is_named(c)) continue;
      auto op = type_of(c);
      if (op == "is" || op == "in" || op == "not" || op == "is not" || op == "not in") return ValueKind::Static;
    }
    ValueKind result = ValueKind::Static;
    for_each_named_child(expr, [&](TSNode operand) {
      ValueKind k = kind_of(operand, fn);
      if (k == ValueKind::Tensor)
        result = ValueKind::Tensor;
      else if (k == ValueKind::DataScalar && result != ValueKind::Tensor)
        result = ValueKind::DataScalar;
      else if ((k == ValueKind::Unknown || k == ValueKind::Module) && result == ValueKind::Static)
        result = ValueKind::Unknown;
    });
    return result;
  }
  if (t == "boolean_operator") {
    ValueKind l = kind_of(field(expr, "left"), fn), r = kind_of(field(expr, "right"), fn);
    return merge(l, r);
  }
  if (t == "conditional_expression") {
    if (named_child_count(expr) < 3) return ValueKind::Unknown;
    return merge(kind_of(named_child(expr, 0), fn), kind_of(named_child(expr, 2), fn));
  }
  if (t == "list" || t == "tuple" || t == "expression_list" || t == "set") {
    // `[a, b]`, `(h, w)`: a list of tensors when every element is one, of static values when every
    // element is static; `[]` proves nothing until something is appended.
    bool any = false, all_tensor = true, all_static = true;
    for (TSNode e : named_children(expr)) {
      if (is_type(e, "comment")) continue;
      if (is_type(e, "list_splat")) {
        const ValueKind inner = kind_of(named_child(e, 0), fn);
        all_tensor = all_tensor && inner == ValueKind::TensorSequence;
        all_static = all_static && inner == ValueKind::Static;
        any = true;
        continue;
      }
      const ValueKind k = kind_of(e, fn);
      any = true;
      all_tensor = all_tensor && k == ValueKind::Tensor;
      all_static = all_static && k == ValueKind::Static;
    }
    if (!any) return ValueKind::Unknown;
    return all_tensor ? ValueKind::TensorSequence : all_static ? ValueKind::Static : ValueKind::Unknown;
  }
  if (t == "dictionary") {
    bool any = false, all_tensor = true;
    for (TSNode pair : named_children(expr)) {
      if (!is_type(pair, "pair")) {
        all_tensor = all_tensor && is_type(pair, "comment");
        continue;
      }
      any = true;
      all_tensor = all_tensor && kind_of(field(pair, "value"), fn) == ValueKind::Tensor;
    }
    return any && all_tensor ? ValueKind::TensorMapping : ValueKind::Unknown;
  }
  if (t == "list_comprehension" || t == "generator_expression" || t == "set_comprehension" ||
      t == "dictionary_comprehension")
    return comprehension_kind(expr, fn);
  if (t == "subscript") {
    ValueKind k = kind_of(field(expr, "value"), fn);
    if (k == ValueKind::Tensor || k == ValueKind::Static) return k;
    if (k == ValueKind::TensorMapping) return ValueKind::Tensor;
    if (k == ValueKind::TensorSequence) {
      // `feats[-1]` is a tensor, `feats[1:]` a list of them.
      const uint32_t n = ts_node_named_child_count(expr);
      return n == 2 && is_type(named_child(expr, 1), "slice") ? ValueKind::TensorSequence : ValueKind::Tensor;
    }
    if (k == ValueKind::Module) return ValueKind::Module;  // self.layers[i]
    // `logits[..., :-1, :]`: a list, tuple or dict cannot be indexed so (a NumPy array can, and Dynamo
    // traces those as tensors).
    if (k == ValueKind::Unknown && indexes_in_several_dimensions(expr)) return ValueKind::Tensor;
    return ValueKind::Unknown;
  }
  return ValueKind::Unknown;
}

namespace {
// `node` sits in the body of a `for`/`while` loop of `function` (not of a nested function).
bool inside_loop(TSNode node, TSNode function) {
  for (TSNode n = ts_node_parent(node); !ts_node_is_null(n) && !ts_node_eq(n, function); n = ts_node_parent(n)) {
    if (is_type(n, "for_statement") || is_type(n, "while_statement")) return true;
    if (is_type(n, "function_definition") || is_type(n, "lambda")) return false;
  }
  return false;
}

// A class whose objects carry tensors (`self.alphas_cumprod = torch.cumprod(...)`): its methods compute on them.
bool holds_tensors(const ClassInfo& c) {
  return std::any_of(c.attributes.begin(), c.attributes.end(), [](const auto& a) { return tensor_valued(a.second); });
}
}  // namespace

bool SemanticModel::runs_training_loop(const FunctionInfo& f) const {
  for (TSNode node : f.body_nodes) {
    if (is_type(node, "call")) {
      TSNode callee = unparenthesize(field(node, "function"));
      if (is_type(callee, "identifier")) {
        const std::string_view name = document_.node_text(callee);
        if (name == "tqdm" || name == "trange") return true;
        // `self(...)` in a loop: a decoding loop (`generate`) running its own module once per step.
        if (name == "self" && inside_loop(node, f.node)) return true;
      }
      if (!is_type(callee, "attribute")) continue;
      const std::string_view attr = document_.node_text(field(callee, "attribute"));
      // A progress bar reports the steps of an eager driver loop (a sampler's denoising loop), which calls
      // the compiled code rather than being compiled.
      if (attr == "progress_bar" || attr == "tqdm" || attr == "trange") return true;
      // `self.forward(...)` in a loop: a decoding loop calling its own module step by step.
      if (attr == "forward" && document_.node_text(field(callee, "object")) == "self" && inside_loop(node, f.node))
        return true;
      if (attr == "backward" || attr == "zero_grad" ||
          (attr == "step" && document_.node_text(field(callee, "object")).find("optim") != std::string_view::npos))
        return true;
    } else if (is_type(node, "for_statement")) {
      std::string iterable(document_.node_text(field(node, "right")));
      std::transform(iterable.begin(), iterable.end(), iterable.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      if (iterable.find("loader") != std::string::npos) return true;
    }
  }
  return false;
}

bool SemanticModel::tensor_by_its_methods(const FunctionInfo& f, const std::string& name) {
  // Not where the body tests what it is (Tensor or SparseTensor) or binds the name to something else.
  return f.tensor_method_receivers.count(name) && !f.isinstance_tested.count(name) && !f.binding_nodes.count(name);
}

bool SemanticModel::takes_tensors(const FunctionInfo& f) const {
  if (std::any_of(f.params.begin(), f.params.end(),
                  [&](const std::string& name) { return tensor_by_its_methods(f, name); }))
    return true;
  // Or hands a parameter as it is to a function of this file that uses it so (timm's Mixup.__call__ passes `x`
  // to `_mix_batch`, which calls `x.flip(0)`).
  for (TSNode node : f.body_nodes) {
    if (!is_type(node, "call")) continue;
    const FunctionInfo* callee = resolve_callee(node, f);
    if (!callee || callee == &f) continue;
    size_t index = 0;
    for (TSNode a : named_children(field(node, "arguments"))) {
      if (is_type(a, "comment")) continue;
      if (!is_type(a, "identifier")) {
        if (is_type(a, "keyword_argument") || is_type(a, "list_splat") || is_type(a, "dictionary_splat")) break;
        ++index;
        continue;
      }
      const std::string name = text_of(document_, a);
      if (index < callee->params.size() && !f.binding_nodes.count(name) &&
          std::find(f.params.begin(), f.params.end(), name) != f.params.end() &&
          tensor_by_its_methods(*callee, callee->params[index]))
        return true;
      ++index;
    }
  }
  bool any = false;
  for_each_named_child(field(f.node, "parameters"), [&](TSNode p) {
    if (!is_type(p, "typed_parameter") && !is_type(p, "typed_default_parameter")) return;
    any = any || tensor_valued(annotation_kind(document_.node_text(field(p, "type"))));
  });
  // Or in a type comment (`# type: (List[Tensor], int) -> Tensor`).
  return any || std::any_of(f.comment_param_types.begin(), f.comment_param_types.end(),
                            [](const std::string& type) { return tensor_valued(annotation_kind(type)); });
}

void SemanticModel::mark_compiled_regions(Scope scope) {
  std::vector<FunctionInfo*> work;
  auto enter = [&](FunctionInfo* f, std::string description, ByteRange range, bool assumed) {
    if (f->compiled) return;
    f->compiled = true;
    f->assumed_entry = assumed;
    f->entry_description = std::move(description);
    f->entry_range = range;
    work.push_back(f);
  };
  auto drain = [&] {
    // Callees of compiled functions (and nested functions of compiled functions) are traced too.
    while (!work.empty()) {
      FunctionInfo* f = work.back();
      work.pop_back();
      if (auto it = nested_.find(f); it != nested_.end()) {
        for (FunctionInfo* g : it->second) {
          if (!g->compiled) enter(g, f->entry_description, f->entry_range, f->assumed_entry);
        }
      }
      // A decorator of this file wrapping a traced function: calling it runs the wrapper (the decorator's
      // nested functions), not the decorator's own body, which ran once at definition time.
      for (const std::string& name : f->decorator_names) {
        auto d = top_level_by_name_.find(name);
        if (d == top_level_by_name_.end() || d->second == f) continue;
        if (auto nested = nested_.find(d->second); nested != nested_.end()) {
          for (FunctionInfo* g : nested->second) {
            if (!g->compiled)
              enter(g,
                    "`" + g->name + "` inside decorator `" + name + "`, which wraps traced `" + f->qualified_name + "`",
                    node_range(field(g->node, "name")), f->assumed_entry);
          }
        }
      }
      for_each_body_node(*f, [&](TSNode node) {
        if (!is_type(node, "call")) return;
        const FunctionInfo* callee = resolve_callee(node, *f);
        if (callee && !callee->compiled && !disabled_.count(callee) && callee->name != "__init__" &&
            !deferred_.count(callee->name))
          enter(const_cast<FunctionInfo*>(callee), f->entry_description, f->entry_range, f->assumed_entry);
      });
      // `self.head.compute_loss(...)` where `self.head` was handed in (`self.head = head`): whichever
      // class of this file defines that method may be the one called, so each is traced.
      for (uint32_t index : f->attribute_method_callees) {
        FunctionInfo* g = functions_[index].get();
        if (!g->compiled && !disabled_.count(g) && !deferred_.count(g->name))
          enter(g, f->entry_description, f->entry_range, f->assumed_entry);
      }
    }
  };
  // Overrides: traced code of a class that calls `self.m(...)` runs the `m` of the object's class, so a
  // subclass's `m` is traced too (torchvision's Transform.forward calls the make_params of each transform).
  auto reach_overrides = [&] {
    for (bool entered = true; entered;) {
      entered = false;
      for (auto& cls : classes_) {
        std::optional<std::unordered_map<std::string, bool>> called;
        for (auto& [name, g] : cls->methods) {
          if (g->compiled || g->parent || name == "__init__" || disabled_.count(g) || deferred_.count(name)) continue;
          if (!called) called = self_calls_reaching(cls.get(), true);
          auto it = called->find(name);
          if (it == called->end()) continue;
          // Reported without an entry when only code reported so (a function of tensors nothing compiles) calls it.
          enter(g,
                "`" + g->qualified_name + "`, which overrides the `" + name +
                    "` that traced code of a base class calls through `self`",
                node_range(field(g->node, "name")), it->second);
          entered = true;
        }
      }
      drain();
    }
  };
  for (auto& f : functions_) {
    if (f->is_entry) enter(f.get(), f->entry_description, f->entry_range, false);
    if (f->owner && f->owner->is_module && f->name == "forward")
      enter(f.get(), "`forward` of nn.Module subclass `" + f->owner->name + "`", node_range(field(f->node, "name")),
            false);
    if (scope == Scope::All && f->name != "__init__" && !deferred_.count(f->name))
      enter(f.get(), "function `" + f->qualified_name + "` (scope = \"all\")", node_range(field(f->node, "name")),
            false);
  }
  drain();
  reach_overrides();
  if (scope != Scope::Compiled) return;
  // A function of tensors that nothing here compiles may be compiled by code outside the checked files
  // (a module of tensor ops): staying silent would be a false all-clear. Not when it is eager-only: it
  // runs a training loop, or every call of it in this file comes from such code.
  std::vector<char> eager(functions_.size(), 0);
  std::vector<std::vector<uint32_t>> callers(functions_.size());
  for (auto& f : functions_) {
    f->runs_training_loop = runs_training_loop(*f);
    eager[f->index] = f->runs_training_loop;
    for (uint32_t callee : f->resolved_callees) callers[callee].push_back(f->index);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& f : functions_) {
      const auto& by = callers[f->index];
      if (eager[f->index]) continue;
      // Called only from eager code; or calling eager code that is not traced itself (compiling this would
      // trace the driver loop it calls).
      if ((!by.empty() && std::all_of(by.begin(), by.end(), [&](uint32_t c) { return eager[c] != 0; })) ||
          (!f->compiled && std::any_of(f->resolved_callees.begin(), f->resolved_callees.end(),
                                       [&](uint32_t c) { return eager[c] && !functions_[c]->compiled; })))
        eager[f->index] = changed = true;
    }
  }
  // The same holds for the public methods of tensors of a module, or of a class whose objects carry tensors: a
  // sampler's `scheduler.step(model_output, t, sample)` or `torch.compile(model.forward_train)` is called from
  // the user's compiled code. Private methods (`_x`) are reached through the public ones; `__call__` makes
  // the object itself a function of tensors (an augmentation, a loss), whatever the class holds. Classes of
  // plain values (image processors, configs) are host-side code.
  for (auto& f : functions_) {
    if (f->compiled || f->parent || eager[f->index] || disabled_.count(f.get()) || deferred_.count(f->name) ||
        f->name.starts_with("test_") || !takes_tensors(*f))
      continue;
    if (!f->owner) {
      enter(f.get(), "function `" + f->name + "`, which takes tensors; no compile entry for it was seen in this file",
            node_range(field(f->node, "name")), true);
    } else if ((!f->name.starts_with("_") && (f->owner->is_module || holds_tensors(*f->owner))) ||
               f->name == "__call__") {
      enter(f.get(),
            "method `" + f->qualified_name + "`, which takes tensors; no compile entry for it was seen in this file",
            node_range(field(f->node, "name")), true);
    }
  }
  drain();
  reach_overrides();
}

std::vector<std::string> SemanticModel::self_called_method_names(const Document& document,
                                                                 const FunctionInfo& function) {
  std::vector<std::string> out;
  for (TSNode node : function.body_nodes) {
    if (!is_type(node, "call")) continue;
    TSNode callee = unparenthesize(field(node, "function"));
    if (!is_type(callee, "attribute") || text_of(document, field(callee, "object")) != "self") continue;
    std::string method = text_of(document, field(callee, "attribute"));
    // Dunder methods are Python's protocol, not a class's own dispatch.
    if (!method.starts_with("__")) out.push_back(std::move(method));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::unordered_map<std::string, bool> SemanticModel::self_calls_reaching(const ClassInfo* cls,
                                                                         bool strict_bases_only) const {
  std::unordered_map<std::string, bool> out;
  auto add = [&](const FunctionInfo& caller) {
    for (const std::string& name : caller.self_called_methods) {
      auto [it, fresh] = out.emplace(name, caller.assumed_entry);
      if (!fresh) it->second = it->second && caller.assumed_entry;
    }
  };
  walk_bases(
      cls, [&](std::string_view name) { return find_class(name); },
      [&](const ClassInfo* c) {
        if (strict_bases_only && c == cls) return false;
        for (const auto& [name, method] : c->methods) {
          if (!method->compiled) continue;
          add(*method);
          // Closures inside the method run as part of it.
          if (auto nested = nested_.find(method); nested != nested_.end())
            for (const FunctionInfo* g : nested->second)
              if (g->compiled) add(*g);
        }
        return false;
      },
      [&](const std::string& base) {
        if (auto it = workspace_overridable_.find(base); it != workspace_overridable_.end())
          for (const std::string& name : it->second) out[name] = false;  // announced: traced from an entry
      });
  return out;
}

std::vector<std::pair<std::string, std::string>> SemanticModel::imported_calls(const FunctionInfo& function) const {
  std::vector<std::pair<std::string, std::string>> out;
  for (TSNode node : function.body_nodes) {
    if (!is_type(node, "call")) continue;
    TSNode callee = unparenthesize(field(node, "function"));
    std::string q;
    if (is_type(callee, "identifier")) {
      auto it = imports_.find(text_of(document_, callee));
      if (it == imports_.end()) continue;
      q = it->second;
    } else if (is_type(callee, "attribute")) {
      // `layers.drop_path(x)` with `from timm import layers`: a function of an imported module.
      TSNode head = callee;
      while (is_type(head, "attribute")) head = field(head, "object");
      if (!is_type(head, "identifier") || !imports_.count(text_of(document_, head))) continue;
      auto qualified = qualified_name(callee);
      if (!qualified) continue;
      q = *qualified;
    } else {
      continue;
    }
    auto dot = q.rfind('.');
    if (dot == std::string::npos || q.starts_with("torch.")) continue;
    out.emplace_back(q.substr(0, dot), q.substr(dot + 1));
    // What this call passes, for the callee's file to type its parameters by (workspace_call_arguments).
    std::string kinds;
    for (TSNode a : named_children(field(node, "arguments"))) {
      if (is_type(a, "comment")) continue;
      if (is_type(a, "keyword_argument") || is_type(a, "list_splat") || is_type(a, "dictionary_splat")) break;
      kinds += kind_code(kind_of(a, function));
    }
    if (!kinds.empty())
      out.emplace_back(q.substr(0, dot), std::string(kWorkspaceArgumentsPrefix) + q.substr(dot + 1) + ":" + kinds);
  }
  // `self.method(...)` that no class of this file defines, on a class whose base is imported: the
  // method is inherited from that file ("Base.method" asks it to trace Base's method, looked up along
  // Base's own bases there). Properties count: `self.loss_function(...)` runs the getter first.
  const FunctionInfo* top = &function.outermost();
  if (top->owner) {
    std::vector<std::string> imported_bases;
    walk_bases(
        top->owner, [&](std::string_view name) { return find_class(name); }, [](const ClassInfo*) { return false; },
        [&](const std::string& base) {
          if (base.find('.') != std::string::npos && !base.starts_with("torch.")) imported_bases.push_back(base);
        });
    std::unordered_set<std::string> seen;
    for (TSNode node : function.body_nodes) {
      if (!is_type(node, "call")) continue;
      TSNode callee = unparenthesize(field(node, "function"));
      if (!is_type(callee, "attribute")) continue;
      const std::string object = text_of(document_, field(callee, "object"));
      if (object != "self" && !object.starts_with("super(")) continue;
      const std::string method = text_of(document_, field(callee, "attribute"));
      if (inherited(top->owner, method, &ClassInfo::methods) ||
          inherited(top->owner, method, &ClassInfo::attribute_module_classes) ||
          inherited(top->owner, method, &ClassInfo::attributes))
        continue;  // defined here, or an attribute set here (`self.dropout = nn.Dropout(p)`)
      for (const std::string& q : imported_bases) {
        auto dot = q.rfind('.');
        std::string target = q.substr(dot + 1) + "." + method;
        if (seen.insert(q + ":" + method).second) out.emplace_back(q.substr(0, dot), std::move(target));
      }
    }
  }
  // `self.box_coder.decode(...)` / `self.matcher(...)` with `self.box_coder = det_utils.BoxCoder(...)` built from
  // a class of another file: "BoxCoder.decode" (or "Matcher.__call__") asks that file to trace the method.
  if (top->owner) {
    std::unordered_set<std::string> seen;
    for (TSNode node : function.body_nodes) {
      if (!is_type(node, "call")) continue;
      TSNode callee = unparenthesize(field(node, "function"));
      if (!is_type(callee, "attribute")) continue;
      TSNode object = field(callee, "object");
      std::string attr, method;
      if (is_type(object, "identifier") && text_of(document_, object) == "self") {
        attr = text_of(document_, field(callee, "attribute"));
        method = "__call__";
      } else if (is_type(object, "attribute") && text_of(document_, field(object, "object")) == "self") {
        attr = text_of(document_, field(object, "attribute"));
        method = text_of(document_, field(callee, "attribute"));
      } else {
        continue;
      }
      const std::string constructor = attribute_constructor(top->owner, attr);
      const auto dot = constructor.rfind('.');
      if (dot == std::string::npos || dot == 0 || constructor.starts_with("torch.")) continue;
      std::string target = constructor.substr(dot + 1) + "." + method;
      if (seen.insert(constructor + ":" + method).second)
        out.emplace_back(constructor.substr(0, dot), std::move(target));
    }
  }
  // An imported decorator wrapping it: "@name" asks the decorator's file to trace its wrappers.
  for (const std::string& name : function.decorator_names) {
    auto it = imports_.find(name);
    if (it == imports_.end()) continue;
    const std::string& q = it->second;
    auto dot = q.rfind('.');
    if (dot == std::string::npos || q.starts_with("torch.")) continue;
    out.emplace_back(q.substr(0, dot), "@" + q.substr(dot + 1));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> SemanticModel::imported_calls_from_traced_code() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& f : functions_) {
    if (f->compiled) out.insert(out.end(), f->imported_calls.begin(), f->imported_calls.end());
  }
  // What this file's top-level functions return, for the files that call them: only what says something
  // about tensors (a tensor, a list or dict of them, a tuple with a tensor).
  for (const auto& f : functions_) {
    if (f->owner || f->parent) continue;
    const bool elements = std::any_of(f->return_elements.begin(), f->return_elements.end(), tensor_valued);
    if (!tensor_valued(f->return_kind) && !elements) continue;
    // `-> int` over a body with one tensor return among int ones is a union: not said to other files.
    // (read from the definition when it was read: after an incremental update, other functions' nodes are gone)
    const ValueKind declared = f->declared_return;
    if (declared != ValueKind::Unknown && !tensor_valued(declared) && declared != f->return_kind) continue;
    std::string codes(1, kind_code(f->return_kind));
    if (elements)
      for (ValueKind k : f->return_elements) codes += kind_code(k);
    out.emplace_back("", std::string(kWorkspaceReturnsPrefix) + f->name + ":" + codes);
  }
  for (const auto& f : functions_) {
    if (!f->owner && !f->parent && returns_sparse(*f))
      out.emplace_back("", std::string(kWorkspaceSparseReturnsPrefix) + f->name);
  }
  // Aliases of torch.compiler.disable for the files that import them, and questions about imported
  // decorators (plain names) of this file's functions.
  for (const std::string& alias : disable_aliases_)
    out.emplace_back("", std::string(kWorkspaceDisableAliasPrefix) + alias);
  std::unordered_set<std::string> asked;
  for (const auto& f : functions_) {
    for (const std::string& decorator : f->decorator_names) {
      const std::optional<std::string> imported = import_of(decorator);
      if (!imported || imported->starts_with("torch.") || !asked.insert(*imported).second) continue;
      const auto dot = imported->rfind('.');
      if (dot == std::string::npos || dot == 0) continue;
      out.emplace_back(imported->substr(0, dot),
                       std::string(kWorkspaceDecoratorQueryPrefix) + imported->substr(dot + 1));
    }
  }
  // Module-ness for the other files: this file's module classes, and its questions about imported bases.
  // Only a class with methods here, or the base of one, asks (the answer changes nothing else, and each
  // answer costs another analysis of the file).
  std::unordered_set<const ClassInfo*> with_methods;
  for (const auto& cls : classes_) {
    if (cls->methods.empty()) continue;
    walk_bases(
        cls.get(), [&](std::string_view name) { return find_class(name); },
        [&](const ClassInfo* c) {
          with_methods.insert(c);
          return false;
        },
        [](const std::string&) {});
  }
  // Overrides for the other files: what each class's traced code (or a base's) calls through `self`, and, for
  // each class with an imported base, the methods it and its subclasses here define, asked of that base's file.
  for (const auto& cls : classes_) {
    // Only what code traced from an entry calls (not code reported without one: a mixin's public methods of
    // tensors, which nothing may compile, would make every override in the package traced).
    std::vector<std::string> sorted;
    for (const auto& [name, assumed_only] : self_calls_reaching(cls.get(), false))
      if (!assumed_only) sorted.push_back(name);
    if (!sorted.empty()) {
      std::sort(sorted.begin(), sorted.end());
      out.emplace_back("", std::string(kWorkspaceSelfCallsPrefix) + cls->name + ":" + joined_names(sorted));
    }
    std::set<std::string> defined;
    for (const auto& sub : classes_) {
      if (!derives_from(sub.get(), cls.get())) continue;
      for (const auto& [name, method] : sub->methods)
        if (name != "__init__" && !method->parent) defined.insert(name);
      if (auto it = workspace_override_interest_.find(sub->name); it != workspace_override_interest_.end())
        defined.insert(it->second.begin(), it->second.end());
    }
    bool passes_on = false;
    const std::string list = joined_names(defined);
    for (const std::string& base : cls->bases) {
      const auto dot = base.rfind('.');
      if (dot == std::string::npos || dot == 0 || base.starts_with("torch.")) continue;
      passes_on = true;
      if (!defined.empty())
        out.emplace_back(base.substr(0, dot),
                         std::string(kWorkspaceOverridesQueryPrefix) + base.substr(dot + 1) + ":" + list);
    }
    if (passes_on) out.emplace_back("", std::string(kWorkspacePassesOnPrefix) + cls->name);
  }
  for (const auto& cls : classes_) {
    if (cls->is_module) out.emplace_back("", std::string(kWorkspaceModuleClassPrefix) + cls->name);
    // A module by an answer keeps asking: the answer must stay (the server drops contributions no longer asked).
    const bool answered = std::any_of(cls->bases.begin(), cls->bases.end(),
                                      [&](const std::string& b) { return workspace_module_bases_.count(b) > 0; });
    if ((cls->is_module && !answered) || !with_methods.count(cls.get())) continue;
    for (const std::string& base : cls->bases) {
      const auto dot = base.rfind('.');
      if (dot == std::string::npos || dot == 0 || base.starts_with("torch.")) continue;
      out.emplace_back(base.substr(0, dot), std::string(kWorkspaceBaseQueryPrefix) + base.substr(dot + 1));
    }
  }
  return out;
}

const FunctionInfo* SemanticModel::function_for(TSNode definition) const {
  auto it = function_by_start_.find(ts_node_start_byte(definition));
  return it == function_by_start_.end() ? nullptr : it->second;
}

const FunctionInfo* SemanticModel::function_containing(TSNode node) const {
  for (TSNode n = ts_node_parent(node); !ts_node_is_null(n); n = ts_node_parent(n)) {
    if (is_type(n, "function_definition")) return function_for(n);
  }
  return nullptr;
}

bool SemanticModel::is_dynamo_disabled(const FunctionInfo& function) const { return disabled_.count(&function) > 0; }
bool SemanticModel::runs_as_operator(const FunctionInfo& function) const {
  return operator_bodies_.count(&function) > 0;
}

std::optional<bool> SemanticModel::static_truth(TSNode condition, const FunctionInfo* function) const {
  return static_truth_of(condition, function, false);
}

std::optional<bool> SemanticModel::static_truth_of(TSNode condition, const FunctionInfo* function, bool operand) const {
  condition = unparenthesize(condition);
  if (is_type(condition, "identifier")) {
    if (auto it = module_constants_.find(text_of(document_, condition)); it != module_constants_.end()) {
      bool local = function && name_kind(text_of(document_, condition), *function) != ValueKind::Unknown;
      if (!local) return it->second;
    }
  }
  if (function && is_type(condition, "attribute") && text_of(document_, field(condition, "object")) == "self") {
    const FunctionInfo* top = &function->outermost();
    std::string attr = text_of(document_, field(condition, "attribute"));
    if (attr != "training") {
      if (auto c = constant_attribute(top->owner, attr)) return c;
    }
  }
  if (is_type(condition, "not_operator")) {
    auto inner = static_truth_of(field(condition, "argument"), function, true);
    if (inner) return !*inner;
    return std::nullopt;
  }
  if (is_type(condition, "call")) {
    TSNode callee = field(condition, "function");
    std::string text = text_of(document_, callee);
    std::string_view last = text;
    if (auto dot = last.rfind('.'); dot != std::string_view::npos) last = last.substr(dot + 1);
    if (one_of(last, kCompilingChecks)) return true;
    if (last == "is_scripting") return false;
    // False under torch.compile (torch.export's tracing is the one that sees it true): graphmend's
    // log-in-graph fix keeps the original call in such a branch for export.
    if (last == "is_exporting") {
      auto q = qualified_name(callee);
      if (text == "torch.compiler.is_exporting" || (q && *q == "torch.compiler.is_exporting")) return false;
    }
    // torch.jit.is_tracing() is false under Dynamo; transformers' `is_tracing(x)` ("compile or export,
    // torch.jit, torch.fx...") starts with is_torchdynamo_compiling(), so it is true there.
    if (last == "is_tracing") {
      auto q = qualified_name(callee);
      return !(text.starts_with("torch.") || text.starts_with("jit.") || (q && q->starts_with("torch.")));
    }
  }
  if (is_type(condition, "identifier") && text_of(document_, condition) == "TYPE_CHECKING") return false;
  // graphmend's own guarded select: `graphmend_then.shape == graphmend_else.shape and ...dtype == ...dtype`.
  // Dynamo decides it at trace time; the branches were selected to have matching shapes.
  {
    std::string_view t = document_.node_text(condition);
    if (t.starts_with("graphmend_then.shape == graphmend_else.shape") || t.starts_with("graphmend_cond.numel() == 1"))
      return true;
  }
  // graphmend's trace-time checks in front of a select (`x.dtype != torch.bool`, `x.dim() >= 2`...): the
  // test of an `if` that follows `graphmend_cond = ...` and falls back to `elif graphmend_cond:`, of
  // `torch.where(c, a, b) if <checks> else (a if c else b)`, or of `(x.double() > b) if <checks> else
  // (x.item() > b)`. Reports assume the checks pass. (Not for
  // an operand of and/or/not, whose parent is known: ts_node_parent rescans from the root.)
  if (TSNode p = operand ? TSNode{} : ts_node_parent(condition); !ts_node_is_null(p)) {
    if (is_type(p, "if_statement") && ts_node_eq(field(p, "condition"), condition)) {
      TSNode prev = ts_node_prev_named_sibling(p);
      bool after_cond =
          is_type(prev, "expression_statement") && text_of(document_, prev).starts_with("graphmend_cond = ");
      bool falls_back = false;
      for (TSNode c : named_children(p)) {
        if (is_type(c, "elif_clause") && text_of(document_, field(c, "condition")) == "graphmend_cond")
          falls_back = true;
      }
      if (after_cond && falls_back) return true;
    }
    if (is_type(p, "conditional_expression") && named_child_count(p) == 3 && ts_node_eq(named_child(p, 1), condition)) {
      TSNode select = named_child(p, 0);
      TSNode original = unparenthesize(named_child(p, 2));
      if (is_type(select, "call") && text_of(document_, field(select, "function")).ends_with(".where") &&
          is_type(original, "conditional_expression") && named_child_count(original) == 3) {
        std::vector<TSNode> args = named_children(field(select, "arguments"));
        if (args.size() == 3 && text_of(document_, args[1]) == text_of(document_, named_child(original, 0)) &&
            text_of(document_, args[2]) == text_of(document_, named_child(original, 2)))
          return true;
      }
      // `(x.double() > b) if <checks> else (x.item() > b)`: the exact .item() comparison (#28 technique 4).
      TSNode exact = unparenthesize(select);
      if (is_type(exact, "comparison_operator") && is_type(original, "comparison_operator")) {
        std::string expected(document_.node_text(exact));
        constexpr std::string_view kDouble = ".double()";
        if (const auto at = expected.find(kDouble); at != std::string::npos) {
          expected.replace(at, kDouble.size(), ".item()");
          if (expected == document_.node_text(original)) return true;
        }
      }
    }
  }
  if (is_type(condition, "boolean_operator")) {
    auto l = static_truth_of(field(condition, "left"), function, true);
    auto r = static_truth_of(field(condition, "right"), function, true);
    std::string op = text_of(document_, field(condition, "operator"));
    if (op == "and") {
      if (l == false || r == false) return false;
      if (l && r) return true;
    } else {
      if (l == true || r == true) return true;
      if (l && r) return false;
    }
  }
  return std::nullopt;
}

}  // namespace graphmend
