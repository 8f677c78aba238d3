// Incremental update of the semantic model after an edit inside one function
// body (the common case while typing): only that function is read and inferred
// again. The update is exact or refused: it replays the fixpoint of the
// constructor for the edited function against what every other function showed
// in each pass, and gives up as soon as anything another function could see
// differs.
#include <algorithm>

#include "graphmend/analysis/semantic.h"

namespace graphmend {
namespace {

// The function_definition that starts at `start`, descending from the root
// through the children that contain it (ts_node_parent from a leaf would rescan
// from the root at every step), and its level in the tree.
TSNode definition_at(TSNode root, uint32_t start, uint32_t& depth) {
  TSNode node = root;
  for (depth = 0; !ts_node_is_null(node); ++depth) {
    if (ts_node_start_byte(node) == start && is_type(node, "function_definition")) return node;
    TSNode next = ts_node_first_child_for_byte(node, start);
    if (ts_node_is_null(next) || ts_node_start_byte(next) > start) return TSNode{};
    node = next;
  }
  return TSNode{};
}

// Whether the subtree defines functions or classes, imports, or calls something ending in `compile`,
// `partial` or `export` (compile entries, torch.export): all of those change what other functions or the
// module see, so the model is built afresh.
bool has_module_effects(const Document& document, TSNode body) {
  bool found = false;
  walk_preorder(body, [&](TSNode node) {
    auto t = type_of(node);
    found = t == "function_definition" || t == "class_definition" || t == "import_statement" ||
            t == "import_from_statement" || t == "future_import_statement" ||
            (t == "call" && (document.node_text(field(node, "function")).ends_with("compile") ||
                             document.node_text(field(node, "function")).ends_with("partial") ||
                             document.node_text(field(node, "function")).ends_with("export")));
    if (found) return Walk::Stop;
    return t == "string" || t == "comment" ? Walk::Skip : Walk::Descend;
  });
  return found;
}

bool any_within(const std::vector<uint32_t>& sorted_starts, ByteRange range) {
  auto it = std::lower_bound(sorted_starts.begin(), sorted_starts.end(), range.start);
  return it != sorted_starts.end() && *it < range.end;
}

}  // namespace

const FunctionInfo* SemanticModel::function_holding(ByteRange range) const {
  const FunctionInfo* holder = nullptr;
  for (const auto& f : functions_) {
    if (f->body_range.start <= range.start && range.end < f->body_range.end &&
        (!holder || holder->range.contains(f->range)))
      holder = f.get();
  }
  return holder;
}

const FunctionInfo* SemanticModel::update_after_edit(const Document::Changes& edit) {
  const ByteRange region = edit.region;  // in the new text
  const ByteRange old_region = edit.old_region();
  if (old_region.end < old_region.start) return nullptr;

  // The innermost function whose body holds the whole edit, in the old text.
  const FunctionInfo* holder = function_holding(old_region);
  if (!holder) return nullptr;
  FunctionInfo* target = functions_[holder->index].get();
  if (target->parent || nested_.count(target) || !compile_aliases_.empty()) return nullptr;
  if (any_within(import_starts_, target->range) || any_within(compile_call_starts_, target->range)) return nullptr;

  // The same definition in the new tree: same start, end moved by the edit, the
  // edit inside its body.
  uint32_t level = 0;
  TSNode definition = definition_at(document_.root(), target->range.start, level);
  if (ts_node_is_null(definition)) return nullptr;
  // Too deep to analyse now: built afresh, which leaves it out.
  if (deepest_level(definition, level) > kMaxSyntaxDepth) return nullptr;
  TSNode body = field(definition, "body");
  if (static_cast<int64_t>(ts_node_end_byte(definition)) != static_cast<int64_t>(target->range.end) + edit.delta ||
      ts_node_start_byte(body) != target->body_range.start || region.start < ts_node_start_byte(body) ||
      region.end >= ts_node_end_byte(body))
    return nullptr;
  if (has_module_effects(document_, body)) return nullptr;

  FunctionInfo fresh;
  fresh.index = target->index;
  fresh.name = target->name;
  fresh.qualified_name = target->qualified_name;
  fresh.owner = target->owner;
  fresh.parent = target->parent;
  fresh.compiled = target->compiled;
  fresh.is_entry = target->is_entry;
  fresh.assumed_entry = target->assumed_entry;
  fresh.entry_description = target->entry_description;
  fresh.entry_range = target->entry_range;
  fresh.decorator_names = target->decorator_names;  // decorators lie outside the body: unchanged
  read_function(fresh, definition);
  // Whether it runs a training loop decides which functions are reported without an entry.
  if (scope_ == Scope::Compiled) {  // (only scope compiled reports functions without an entry)
    fresh.runs_training_loop = runs_training_loop(fresh);
    if (fresh.runs_training_loop != target->runs_training_loop) return nullptr;
  }

  // Structure other functions depend on: the callees it reaches (compiled
  // regions follow them) and the attributes it sets on its class.
  for (const auto& call : resolved_calls(fresh)) fresh.resolved_callees.push_back(call.second);
  if (fresh.resolved_callees != target->resolved_callees ||
      std::find(fresh.resolved_callees.begin(), fresh.resolved_callees.end(), target->index) !=
          fresh.resolved_callees.end())
    return nullptr;  // a recursive function would see its own new facts: not
                     // replayed here
  fresh.attribute_method_callees = methods_called_through_attributes(fresh);
  if (fresh.attribute_method_callees != target->attribute_method_callees) return nullptr;
  fresh.self_called_methods = self_called_method_names(document_, fresh);
  if (fresh.self_called_methods != target->self_called_methods) return nullptr;  // overrides it reaches
  if (fresh.owner) {
    fresh.attribute_effects = attribute_effects(fresh);
    if (fresh.attribute_effects != target->attribute_effects) return nullptr;
  }

  // Replay the fixpoint: in pass p the constructor's sweep showed this function
  // the pass-p results of the functions before it and the pass-(p-1) results of
  // those after it.
  auto show_others = [&](int pass, bool sweep) {
    new_flow_generation();  // the kinds the others show change: cached flow answers no longer hold
    for (auto& g : functions_) {
      if (g.get() == target) continue;
      if (!sweep || g->index < target->index) {
        g->return_kind = g->return_by_pass[pass];
        g->return_elements = g->return_elements_by_pass[pass];
      } else {
        g->return_kind = pass > 0 ? g->return_by_pass[pass - 1] : ValueKind::Unknown;
        g->return_elements = pass > 0 ? g->return_elements_by_pass[pass - 1] : std::vector<ValueKind>{};
      }
    }
  };
  bool same = true;
  const ResolvedCalls calls = resolved_calls(fresh);  // the same in every pass
  for (int pass = 0; pass < inference_passes_ && same; ++pass) {
    show_others(pass, true);
    fresh.call_site_args = target->call_site_args_by_pass[pass];
    fresh.call_site_args_by_pass[pass] = fresh.call_site_args;
    infer_locals(fresh);
    fresh.return_by_pass[pass] = fresh.return_kind;
    fresh.return_elements_by_pass[pass] = fresh.return_elements;
    if (fresh.return_kind != target->return_by_pass[pass] ||
        fresh.return_elements != target->return_elements_by_pass[pass])
      same = false;
    show_others(pass, false);
    fresh.outgoing_by_pass[pass] = outgoing_calls(fresh, calls);
    if (fresh.outgoing_by_pass[pass] != target->outgoing_by_pass[pass]) same = false;
  }
  show_others(inference_passes_ - 1, false);
  if (!same) return nullptr;
  // Attributes set from names take the names' inferred kinds (refine_attribute_kinds), known only now: an edit
  // that makes `w` a tensor before `self.w = w` changes what the class holds, and every method reading it.
  if (fresh.owner) {
    fresh.attribute_effects = attribute_effects(fresh);
    if (fresh.attribute_effects != target->attribute_effects) return nullptr;
  }

  // Calls of it in other functions make a sparse tensor or not by this (GM612).
  fresh.returns_sparse_tensor = sparse_returns_of(fresh);
  if (fresh.returns_sparse_tensor != target->returns_sparse_tensor) return nullptr;

  fresh.call_site_args = target->call_site_args;
  if (fresh.compiled) fresh.imported_calls = imported_calls(fresh);
  *target = std::move(fresh);

  // Everything after the edit moved by delta. The other functions keep their
  // facts; their nodes belonged to the old tree and are dropped (nothing reads
  // them after construction).
  auto shift_range = [&](ByteRange& r) {
    r.start = edit.moved(r.start);
    r.end = edit.moved(r.end);
  };
  function_by_start_.clear();
  for (auto& f : functions_) {
    if (f.get() != target) {
      shift_range(f->range);
      shift_range(f->body_range);
      f->node = TSNode{};
      f->body_nodes.clear();
      f->assignments.clear();
      f->binding_nodes.clear();
      f->memo.clear();
    }
    shift_range(f->entry_range);
    function_by_start_[f->range.start] = f.get();
  }
  for (auto& c : classes_) c->node = TSNode{};
  for (SkippedRegion& r : skipped_) shift_range(r.range);
  memo_.clear();
  new_flow_generation();
  compile_calls_.clear();
  for (uint32_t& start : import_starts_) start = edit.moved(start);
  for (uint32_t& start : compile_call_starts_) start = edit.moved(start);
  return target;
}

}  // namespace graphmend
