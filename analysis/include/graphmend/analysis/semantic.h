// Facts about one Python file that rules and transforms read: imports, classes and their submodules,
// functions, which of them Dynamo traces (compiled regions), and which values are tensors.
#pragma once

#include <tree_sitter/api.h>

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graphmend/analysis/config.h"
#include "graphmend/analysis/document.h"

namespace graphmend {

// What a Python value is, as far as Dynamo is concerned.
enum class ValueKind {
  Unknown,     // nothing proven: rules stay silent
  Tensor,      // a torch.Tensor whose data Dynamo cannot read at trace time
  DataScalar,  // a Python value computed from tensor data (.item(), torch.equal): already a break
  Static,      // a Python value Dynamo knows at trace time (shapes, dtypes, flags, constants)
  None,        // the constant None
  Module,      // an nn.Module instance
  // Containers whose elements are proven tensors: indexing or iterating one gives a Tensor; the
  // container itself is a Python value (its truth and length are known at trace time).
  TensorSequence,  // a list or tuple of tensors (`List[Tensor]`, `[a, b]`, `x.unbind()` collected, appends)
  TensorMapping,   // a dict of tensors (`Dict[str, Tensor]`, `{"a": x}`)
};
std::string_view to_string(ValueKind kind);

struct FunctionInfo;

struct ClassInfo {
  TSNode node{};
  std::string name;
  std::vector<std::string> bases;  // qualified where imports resolve them
  bool is_module = false;
  std::unordered_map<std::string, ValueKind> attributes;  // self.<name> kinds set anywhere in the class
  std::unordered_map<std::string, FunctionInfo*> methods;
  std::unordered_map<std::string, std::optional<bool>> literal_attributes;
  std::unordered_map<std::string, std::string> attribute_module_classes;   // self.x = Block(...) -> "Block"
  std::unordered_map<std::string, std::string> attribute_element_classes;  // self.x = ModuleList([Block(...)...])
  std::unordered_map<std::string, std::string>
      attribute_constructors;  // self.x = torch.nn.Linear(...) -> qualified  // nullopt: mixed/non-literal
};

// One write to `self.<name>` (or register_buffer/register_parameter) in a method: what the class's
// attribute facts are folded from, kept per method so an edit can be checked against them.
struct AttributeEffect {
  std::string name;
  ValueKind kind = ValueKind::Static;
  bool buffer = false;                     // register_buffer/register_parameter: always a tensor
  std::optional<bool> truth;               // the literal's truthiness; nullopt when not a literal
  std::optional<std::string> constructor;  // qualified callee of `self.x = torch.nn.Linear(...)`
  // A module class of this file: `self.x = Block(config)` (module_class), or every element of
  // `self.x = nn.ModuleList([Block(config) for _ in range(n)])` (element_class). Calls through them run its forward.
  std::optional<std::string> module_class;
  std::optional<std::string> element_class;
  bool operator==(const AttributeEffect&) const = default;
};

// Config::traced_from_workspace entries that carry the argument kinds of a call from another file rather
// than a name to trace: "args:<function>:<one letter per positional argument>".
inline constexpr std::string_view kWorkspaceArgumentsPrefix = "args:";
// Module-ness across files. A file asks about each imported base of its classes that it cannot prove a module
// with an imported call (module, "base:Name"); it announces its own module classes as ("", "module-class:Name");
// the workspace pass answers a question with the asker's entry "module:<base as the asker names it>".
inline constexpr std::string_view kWorkspaceBaseQueryPrefix = "base:";
inline constexpr std::string_view kWorkspaceModuleClassPrefix = "module-class:";
inline constexpr std::string_view kWorkspaceModuleBasePrefix = "module:";
// Return kinds across files. A file announces what its top-level functions return as ("", "returns:f:<codes>"):
// one kind code, then one per element of a tuple return. A file whose traced code calls `f` from there gets
// "ret:<f as it names it, qualified>:<codes>", and its calls of `f` take those kinds.
inline constexpr std::string_view kWorkspaceReturnsPrefix = "returns:";
inline constexpr std::string_view kWorkspaceImportedReturnPrefix = "ret:";
// `torch.compiler.disable` across files. A file announces its module-level aliases of it
// (`disable_compiler = getattr(torch.compiler, "disable", None) or ...`) as ("", "disable-alias:Name"); a file
// whose functions are decorated with an imported plain name asks (module, "decorator:Name"), and the answer
// "disabled:<module>.<Name>" says that decorator disables Dynamo on what it decorates.
inline constexpr std::string_view kWorkspaceDecoratorQueryPrefix = "decorator:";
inline constexpr std::string_view kWorkspaceDisableAliasPrefix = "disable-alias:";
inline constexpr std::string_view kWorkspaceDisabledPrefix = "disabled:";
// Overrides across files. A file announces, for each class, the methods its traced code (or a base's) calls
// through `self` as ("", "self-calls:Class:m1,m2"); a file whose class derives from an imported base asks
// (module, "overrides:Base:n1,n2") with the methods that class and its subclasses here define, and the answer
// "overridable:<base as the asker names it>:m1" names those the base's traced code calls: they are traced.
// The question is also an entry of the base's file (not a query: it is kept there), which then asks its own
// imported bases about those methods, so an override reaches through a chain of classes in several files.
inline constexpr std::string_view kWorkspaceSelfCallsPrefix = "self-calls:";
inline constexpr std::string_view kWorkspaceOverridesQueryPrefix = "overrides:";
inline constexpr std::string_view kWorkspaceOverridablePrefix = "overridable:";
// Announced ("", "passes-on:Class") for each class with an imported base: only such a class's file takes the
// "overrides:" question as an entry (to ask its own bases); elsewhere it would cost an analysis for nothing.
inline constexpr std::string_view kWorkspacePassesOnPrefix = "passes-on:";
// Sparse returns across files (GM612). A file announces ("", "sparse-returns:f") for each top-level function every
// return of which gives a sparse tensor it made; a file whose traced code calls `f` gets "sparse-ret:<f as it names
// it, qualified>": Dynamo breaks where that call's result is wrapped (torch_geometric's to_torch_coo_tensor).
inline constexpr std::string_view kWorkspaceSparseReturnsPrefix = "sparse-returns:";
inline constexpr std::string_view kWorkspaceImportedSparseReturnPrefix = "sparse-ret:";

// Sparse tensors: how Dynamo breaks at the constructor `qualified` names (empty when it names none), and whether a
// tensor method converts a tensor to a sparse one (`to_sparse_csr`).
std::string_view sparse_constructor_break(std::string_view qualified);
bool is_sparse_conversion(std::string_view method);
// A question about another file's name (a base class, a decorator), not a function to trace there.
inline bool is_workspace_query(std::string_view entry) {
  return entry.starts_with(kWorkspaceBaseQueryPrefix) || entry.starts_with(kWorkspaceDecoratorQueryPrefix);
}
// Whether the file that announced `announced` takes `entry`, an entry another file's traced code asks it to
// trace (not a query): every entry but an "overrides:" question about a class that passes nothing on.
bool workspace_entry_wanted(std::string_view entry, const std::vector<std::pair<std::string, std::string>>& announced);
// The function (or class) an entry names: "f" for "f", for "args:f:TS" and for the queries "base:f", "decorator:f".
inline std::string_view traced_entry_function(std::string_view entry) {
  if (entry.starts_with(kWorkspaceBaseQueryPrefix)) return entry.substr(kWorkspaceBaseQueryPrefix.size());
  if (entry.starts_with(kWorkspaceDecoratorQueryPrefix)) return entry.substr(kWorkspaceDecoratorQueryPrefix.size());
  if (entry.starts_with(kWorkspaceOverridesQueryPrefix)) {
    entry.remove_prefix(kWorkspaceOverridesQueryPrefix.size());
    return entry.substr(0, entry.find(':'));
  }
  if (!entry.starts_with(kWorkspaceArgumentsPrefix)) return entry;
  entry.remove_prefix(kWorkspaceArgumentsPrefix.size());
  return entry.substr(0, entry.rfind(':'));
}
// The answers for the asking file to an imported call or base query (`module`, `query`) it made of another file,
// from what that file announced (imported_calls_from_traced_code's ("", ...) entries): "module:<module>.<Base>"
// when the base is a module there, "ret:<module>.<f>:<codes>" when it said what `f` returns. The CLI's workspace
// pass and the server's share it.
std::vector<std::string> workspace_answers(std::string_view module, std::string_view query,
                                           const std::vector<std::pair<std::string, std::string>>& announced);

// Most passes of the locals/call-site fixpoint. Each pass carries argument kinds one call deeper (a
// mask computed in an encoder reaches the attention helper four calls down); the model stops at the
// first pass that changes nothing, so most files take two or three.
inline constexpr int kMaxInferencePasses = 12;

// Syntax nested deeper than this many levels of the tree is not analysed. The passes over expressions
// (inference, rules, transforms) recurse along the tree: at this depth the deepest of them (the rules'
// walk, about 530 bytes a level) needs about half a megabyte of stack, a sixteenth of the usual 8 MB and
// a quarter of the 2 MB threads get under `ulimit -s unlimited`. Real code stays well under it: 42
// levels at the 99.9th percentile of 12,800 files of site-packages, 570 at most (sympy's generated
// polynomials), 34 in torch and transformers.
inline constexpr uint32_t kMaxSyntaxDepth = 1000;

// A function, class or module-level statement holding syntax deeper than kMaxSyntaxDepth: the model
// leaves it out (nothing in it is read, defined or traced), and the analysis says so.
struct SkippedRegion {
  ByteRange range;        // the definition (with its decorators) or the statement
  uint32_t depth = 0;     // the depth of its deepest node, the module being level 0
  std::string_view what;  // "function", "class" or "statement"
  bool operator==(const SkippedRegion&) const = default;
};

struct FunctionInfo {
  TSNode node{};           // function_definition (null for functions an incremental update did not re-read)
  uint32_t index = 0;      // position in SemanticModel::functions()
  ByteRange range{};       // the function_definition
  ByteRange body_range{};  // its body block
  std::string name;
  std::string qualified_name;  // Class.method or function
  ClassInfo* owner = nullptr;
  FunctionInfo* parent = nullptr;  // enclosing function for nested definitions
  // The outermost enclosing function (itself at top level): a method's nested helpers see its `self`.
  const FunctionInfo& outermost() const {
    const FunctionInfo* f = this;
    while (f->parent) f = f->parent;
    return *f;
  }
  bool compiled = false;  // traced by Dynamo (reached from a compiled entry)
  bool is_entry = false;
  // Reported without a compile entry: a function of tensors (a parameter annotated `torch.Tensor`) that
  // nothing in the file compiles or calls from compiled code, and that is not eager-only; or reached
  // only from one. Its findings say that no entry was seen.
  bool assumed_entry = false;
  // Its body runs a training step or a data loop (`.backward()`, `optimizer.step()`, `for b in loader`).
  bool runs_training_loop = false;
  std::string entry_description;  // "forward of nn.Module subclass Net", "@torch.compile function f"
  // Decorators that are plain names (`@dynamic_rope_update`), as written: calling a decorated traced
  // function runs the decorator's wrapper, so the wrapper is traced too.
  std::vector<std::string> decorator_names;
  ByteRange entry_range{};  // the entry's name, for related information
  std::unordered_map<std::string, ValueKind> locals;
  std::vector<std::string> params;  // names in order (without self/cls)
  // Parameters that are tensors because every call site in the file passes one (not by their name or
  // default): their callers computed them, so what holds for the argument holds here.
  std::unordered_set<std::string> tensor_params_from_callers;
  // Right-hand sides assigned to each local name, in source order (simple `name = expr` only).
  std::unordered_map<std::string, std::vector<TSNode>> assignments;
  ValueKind return_kind = ValueKind::Unknown;
  // Kinds of the elements when every return is a tuple of the same length (`return max_n, indices`),
  // for unpacking at call sites; empty otherwise.
  std::vector<ValueKind> return_elements;
  // Kinds of the positional arguments at each call site in this file (params inferred from them).
  std::vector<std::vector<ValueKind>> call_site_args;
  // The calls, assignments, augmented assignments, for statements and returns of the body in source
  // order, nested definitions and lambdas left out: the passes over a function read this list
  // instead of walking the tree again.
  std::vector<TSNode> body_nodes;
  std::unordered_set<std::string> isinstance_tested;  // names `isinstance(name, ...)` tests in the body
  // Every return gives a sparse tensor it made (GM612): read once the kinds are inferred, while the nodes are there.
  bool returns_sparse_tensor = false;
  ValueKind declared_return = ValueKind::Unknown;  // what its return annotation says (`-> int`: Static)
  // A PEP 484 type comment under the header (`# type: (List[Tensor], int) -> Tensor`, as TorchScript-era code
  // such as torchvision writes): the annotation of each parameter after self/cls, and of the return.
  std::vector<std::string> comment_param_types;
  std::string comment_return_type;
  // Names the body subscripts in several dimensions with a slice (`x[:, 0]`), read in the same pass.
  std::unordered_set<std::string> indexed_in_several_dimensions;
  // Names the body calls a method on that only tensors have (`x.numel()`, `x.unsqueeze(0)`, kTensorOnlyMethods).
  std::unordered_set<std::string> tensor_method_receivers;
  // The nodes of the body that bind each name (assignments, augmented assignments, for statements,
  // comprehensions, `name.append(...)`), in source order: read from the syntax with body_nodes. The kind of
  // a name at one place is folded from the bindings that reach it there (SemanticModel::kind_at).
  std::unordered_map<std::string, std::vector<TSNode>> binding_nodes;
  // The kind each parameter holds on entry (its annotation, default or callers), in the last pass.
  std::unordered_map<std::string, ValueKind> param_kinds;
  // The control structure flow needs, by byte range (read with body_nodes; nested definitions left out):
  // what a loop repeats (a for loop's body, a while loop whole), each if statement with its clauses
  // (consequence, elifs, else), and for each plain assignment among the bindings (by start byte) the
  // block its statement belongs to, which every path from it to a read in that block goes through.
  struct IfClauses {
    ByteRange whole;
    std::vector<ByteRange> clauses;
  };
  std::vector<ByteRange> loop_ranges;
  std::vector<IfClauses> if_statements;
  std::unordered_map<uint32_t, ByteRange> assignment_blocks;

  // What other functions see of this one, pass by pass of the fixpoint (for incremental updates):
  std::array<ValueKind, kMaxInferencePasses> return_by_pass{};
  std::array<std::vector<ValueKind>, kMaxInferencePasses> return_elements_by_pass;
  std::array<std::vector<std::vector<ValueKind>>, kMaxInferencePasses> call_site_args_by_pass;  // on entry
  // Arguments this function passes to functions of the file at the end of each pass: (callee index, kinds).
  std::array<std::vector<std::pair<uint32_t, std::vector<ValueKind>>>, kMaxInferencePasses> outgoing_by_pass;
  std::vector<uint32_t> resolved_callees;          // indices of the functions its calls resolve to, in order
  std::vector<uint32_t> attribute_method_callees;  // methods_called_through_attributes, traced with it
  // Names it calls as `self.<name>(...)`, sorted and unique: when it is traced, a subclass's method of that
  // name runs in its place for an object of the subclass, so the override is traced too.
  std::vector<std::string> self_called_methods;
  std::vector<AttributeEffect> attribute_effects;
  std::vector<std::pair<std::string, std::string>> imported_calls;  // see imported_calls_from_traced_code
  // Answers to what transforms ask of the whole function ("does it call locals()?"), by question: a fix
  // is tried for each finding, and walking the function each time is quadratic in its length.
  mutable std::unordered_map<std::string, std::string> memo;
};

// Transparent hashing, so maps keyed by std::string can be searched with a string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class SemanticModel {
 public:
  SemanticModel(const Document& document, Scope scope, const std::vector<std::string>& traced_from_workspace = {});

  // Calls from traced code to functions imported from other modules: (module as written, name).
  // Relative modules keep their dots (".utils"). The workspace pass resolves them to files.
  std::vector<std::pair<std::string, std::string>> imported_calls_from_traced_code() const;

  const Document& document() const { return document_; }

  // The regions too deeply nested to analyse, in order.
  const std::vector<SkippedRegion>& skipped() const { return skipped_; }
  // Answers to what transforms ask of the whole module, by question (see FunctionInfo::memo).
  std::unordered_map<std::string, std::string>& memo() const { return memo_; }

  // Brings the model up to date with `document_` after edits inside one function's body, re-inferring
  // only that function. Succeeds only when the result equals a fresh model's: the edit leaves the
  // function's header, nested definitions, imports and torch.compile calls alone, and everything other
  // functions see of it (its return kind, the arguments it passes, the callees it reaches, the
  // attributes it sets) is the same in every pass. Returns the re-read function, or nullptr when the
  // model must be built afresh (it is then unusable).
  const FunctionInfo* update_after_edit(const Document::Changes& edit);
  // The innermost function whose body strictly holds `range` (of the text the model describes).
  const FunctionInfo* function_holding(ByteRange range) const;

  // `t.nn.functional.pad` -> "torch.nn.functional.pad" through the file's imports; nullopt if not an import.
  std::optional<std::string> qualified_name(TSNode expr) const;
  // Every name the file's imports bind, with what it is bound to (as written).
  const std::unordered_map<std::string, std::string>& imports() const { return imports_; }
  // What an import binds `local_name` to ("..utils.import_utils.check" as written), nullopt if nothing.
  std::optional<std::string> import_of(std::string_view local_name) const {
    auto it = imports_.find(std::string(local_name));
    return it == imports_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  // The file calls torch.export.export: a data-dependent branch is an error there, not a graph break.
  bool calls_export() const { return exported_; }
  // Local name bound to the torch module ("torch", "t", ...), empty when torch is not imported as a module.
  const std::string& torch_alias() const { return torch_alias_; }

  ValueKind kind_of(TSNode expr, const FunctionInfo& function) const;
  bool is_tensor(TSNode expr, const FunctionInfo& function) const {
    return kind_of(expr, function) == ValueKind::Tensor;
  }

  const std::vector<std::unique_ptr<FunctionInfo>>& functions() const { return functions_; }
  const std::vector<std::unique_ptr<ClassInfo>>& classes() const { return classes_; }
  // The innermost function whose body contains `node`, or nullptr at module level.
  const FunctionInfo* function_containing(TSNode node) const;
  const FunctionInfo* function_for(TSNode definition) const;
  const ClassInfo* find_class(std::string_view name) const;
  // Qualified constructor of `self.<name>` ("torch.nn.Linear"), searching base classes; empty if unknown.
  std::string attribute_constructor(const ClassInfo* cls, const std::string& name) const;
  // Functions registered with torch._dynamo.config.reorderable_logging_functions.add(...) in this file.
  bool is_deferred(std::string_view name) const { return deferred_.count(std::string(name)) > 0; }
  // Module-level names bound to `logging.getLogger(...)` / `logging.get_logger(...)`.
  bool is_module_logger(std::string_view name) const { return module_loggers_.count(std::string(name)) > 0; }
  // The function a call expression's callee names in this file (`helper`, `self.method`), if any.
  const FunctionInfo* resolve_callee(TSNode call, const FunctionInfo& caller) const;
  // A sparse tensor made here: a constructor, a conversion of a tensor, a call of a function of this file that
  // returns one (or of another checked file's, by the workspace pass), or a local only ever assigned one. The
  // name `assumed` is taken as sparse (while its own bindings are read).
  bool makes_sparse(TSNode expr, const FunctionInfo& fn, int depth = 0, std::string_view assumed = {}) const;
  // A function each of whose returns gives a sparse tensor it made (torch_geometric's to_torch_csr_tensor).
  bool returns_sparse(const FunctionInfo& fn) const { return fn.returns_sparse_tensor; }
  // `call` calls an imported function that another checked file said returns a sparse tensor.
  bool calls_imported_sparse_return(TSNode call) const;
  // The forward of a module class (searching its bases in this file), or nullptr.
  const FunctionInfo* forward_of(const ClassInfo* cls) const;
  // What calling an instance of `cls` runs: a module's forward, another class's `__call__`.
  const FunctionInfo* call_target_of(const ClassInfo* cls) const;
  // For each call `self.<attr>.<method>(...)` of `caller` whose target is unknown (the attribute's class is
  // not named), the methods of that name in this file's classes: the candidates such a call may run.
  std::vector<uint32_t> methods_called_through_attributes(const FunctionInfo& caller) const;
  // Functions decorated with @torch.compiler.disable / @torch._dynamo.disable in this file, directly or
  // through a module-level alias (`_disable = getattr(torch.compiler, "disable", None) or ...`).
  // Operator bodies count as disabled too (Dynamo does not trace them), but calling one is no break.
  bool is_dynamo_disabled(const FunctionInfo& function) const;
  // Functions whose body runs as a custom operator, opaque to Dynamo and called inside the graph:
  // `@torch.library.custom_op(...)`, `@torch.library.triton_op(...)`, and the operators graphmend's own fixes
  // write (`@_graphmend_runtime_op(...)`, `@_graphmend_check_op(...)`).
  bool runs_as_operator(const FunctionInfo& function) const;

  // A test Dynamo evaluates at trace time to a constant: is_compiling() and friends.
  std::optional<bool> static_truth(TSNode condition, const FunctionInfo* function = nullptr) const;
  // `self.<name>` only ever assigned literals of one truthiness in its class.
  std::optional<bool> constant_attribute(const ClassInfo* cls, const std::string& name) const;

 private:
  // The entry for `key` in `map` of `cls` or of its nearest base class of this file that has one, or nullptr.
  template <class Map>
  const typename Map::mapped_type* inherited(const ClassInfo* cls, const std::string& key, Map ClassInfo::*map) const;
  void find_deep_regions(TSNode root);
  bool is_skipped(TSNode node) const;
  void collect_imports(TSNode root);
  void collect_definitions(TSNode node, ClassInfo* owner, FunctionInfo* parent);
  void index_definitions();
  void infer_class_attributes();
  void infer_locals(FunctionInfo& function);
  void mark_compiled_regions(Scope scope);
  bool runs_training_loop(const FunctionInfo& function) const;
  bool takes_tensors(const FunctionInfo& function) const;  // a parameter annotated as a tensor
  void collect_compile_call_targets();
  // Marks what `target` (an argument of `call`) names as a compile entry: a function, `self.block`'s
  // forward, `Class.method`, or the one method of that name in the file's classes.
  void mark_compile_target(TSNode call, TSNode target, const std::string& how);
  // The calls in `caller`'s body that resolve to a function of this file, with the callee's index. Depends
  // on the syntax and the class facts only, not on inferred kinds: the same in every inference pass.
  using ResolvedCalls = std::vector<std::pair<TSNode, uint32_t>>;
  ResolvedCalls resolved_calls(const FunctionInfo& caller) const;
  // Per pass: what each function's calls pass (argument kinds), `calls[f]` being resolved_calls(f).
  void collect_call_sites(int pass, const std::vector<ResolvedCalls>& calls);
  // Adds the calls other workspace files make to this file's top-level functions to their call sites.
  void seed_workspace_call_sites();
  std::vector<std::pair<uint32_t, std::vector<ValueKind>>> outgoing_calls(const FunctionInfo& caller,
                                                                          const ResolvedCalls& calls) const;
  std::vector<std::pair<uint32_t, std::vector<ValueKind>>> outgoing_calls(const FunctionInfo& caller) const {
    return outgoing_calls(caller, resolved_calls(caller));
  }
  const FunctionInfo* find_callee(TSNode call, const FunctionInfo& caller) const;  // resolve_callee, uncached
  std::vector<AttributeEffect> attribute_effects(const FunctionInfo& method) const;
  void apply_attribute_effects(ClassInfo& cls, const std::vector<AttributeEffect>& effects);
  std::vector<std::pair<std::string, std::string>> imported_calls(const FunctionInfo& function) const;
  void read_function(FunctionInfo& fn, TSNode definition);
  void collect_module_constants(TSNode root);
  ValueKind attribute_kind(const ClassInfo* cls, const std::string& name, int depth = 0) const;
  // `operand`: `condition` is an operand of and/or/not, so not the test of an if or a ternary.
  std::optional<bool> static_truth_of(TSNode condition, const FunctionInfo* function, bool operand) const;
  ValueKind call_kind(TSNode call, const FunctionInfo& function) const;
  // Flow of kinds into names. `bind(name, kind)` records one name's kind (a local, or a comprehension
  // variable while its body is read).
  using Bind = std::function<void(const std::string&, ValueKind)>;
  // Unpacking `kind` into `target` (a name or a pattern, starred names included).
  void unpack_target(TSNode target, ValueKind kind, const Bind& bind) const;
  // `for target in iterable` (statements and comprehensions): zip and enumerate element by element,
  // `d.items()` of a dict of tensors, otherwise the kind of one element.
  void bind_iteration(TSNode target, TSNode iterable, const FunctionInfo& function, const Bind& bind) const;
  ValueKind element_kind(TSNode iterable, const FunctionInfo& function) const;
  ValueKind comprehension_kind(TSNode comprehension, const FunctionInfo& function) const;
  ValueKind name_kind(std::string_view name, const FunctionInfo& function) const;
  // What `node` (one of FunctionInfo::body_nodes) binds, through `bind`; `assignments`, when given, collects
  // the right-hand sides of simple `name = expr` assignments.
  void bind_statement(TSNode node, const FunctionInfo& function, const Bind& bind,
                      std::unordered_map<std::string, std::vector<TSNode>>* assignments) const;
  // Flow: the kind of local `name` where `read` reads it, joined over the bindings that reach that place
  // (and the parameter's value on entry). nullopt when it has fewer than two bindings or none reaches.
  std::optional<ValueKind> kind_at(TSNode read, const std::string& name, const FunctionInfo& function) const;
  // The kind `binding` gives `name`; nullopt when it binds no such local.
  std::optional<ValueKind> binding_kind(TSNode binding, const std::string& name, const FunctionInfo& function) const;
  // `read` is where `isinstance(name, torch.Tensor)` (or `torch.is_tensor(name)`) was tested true, with no
  // binding of `name` in between.
  bool narrowed_to_tensor(TSNode read, const std::string& name, const FunctionInfo& function) const;
  // `test` (an and-chain) holds only when `name` is a tensor.
  bool tests_tensor(TSNode test, const std::string& name) const;

  const Document& document_;
  std::vector<SkippedRegion> skipped_;
  mutable std::unordered_map<std::string, std::string> memo_;
  // resolve_callee's answers while the constructor runs (one tree, the classes known): the inference
  // passes ask again for the same calls. Null afterwards, so that an incremental update never reads it.
  struct CallKey {
    const void* node;  // TSNode::id, with its start byte: a subtree shared at two places is two calls
    uint32_t start;
    const FunctionInfo* caller;
    bool operator==(const CallKey&) const = default;
  };
  struct CallKeyHash {
    size_t operator()(const CallKey& k) const {
      return (std::hash<const void*>()(k.node) * 31 + k.start) * 31 + std::hash<const void*>()(k.caller);
    }
  };
  using CalleeCache = std::unordered_map<CallKey, const FunctionInfo*, CallKeyHash>;
  mutable CalleeCache* callee_cache_ = nullptr;
  Scope scope_ = Scope::Compiled;
  std::unordered_map<std::string, std::string> imports_;  // local name -> qualified name
  std::string torch_alias_;
  std::vector<std::unique_ptr<ClassInfo>> classes_;
  std::vector<std::unique_ptr<FunctionInfo>> functions_;
  std::unordered_map<uint32_t, FunctionInfo*> function_by_start_;  // definition start byte
  // Lookups by name, first definition in source order first.
  std::unordered_map<std::string, const ClassInfo*, StringHash, std::equal_to<>> class_by_name_;
  std::unordered_map<std::string, FunctionInfo*> top_level_by_name_;
  std::unordered_map<const FunctionInfo*, std::vector<FunctionInfo*>> nested_;  // parent -> nested functions
  std::unordered_set<const FunctionInfo*> disabled_;
  std::unordered_set<const FunctionInfo*> operator_bodies_;
  // Module-level names bound only to torch.compiler.disable (module_bindings.h): `@_disable` disables too.
  std::unordered_set<std::string> disable_aliases_;
  // Imported names that another workspace file says are such aliases ("disabled:" entries), qualified.
  std::unordered_set<std::string> workspace_disable_aliases_;
  std::unordered_map<std::string, ValueKind> module_globals_;
  // Module-level names bound once to a literal, and self attributes only ever set to literals: truthiness.
  std::unordered_map<std::string, bool> module_constants_;
  std::unordered_set<std::string> deferred_;
  // Argument kinds of calls that traced code in other workspace files makes to this file's top-level
  // functions (Config::traced_from_workspace entries "args:<name>:<kinds>").
  std::unordered_map<std::string, std::vector<std::vector<ValueKind>>> workspace_call_args_;
  // Imported bases that another file proves are nn.Module subclasses ("module:" entries).
  std::unordered_set<std::string> workspace_module_bases_;
  // Methods that traced code of an imported base calls through `self` ("overridable:" entries), by the base as
  // this file names it: this file's overrides of them are traced.
  std::unordered_map<std::string, std::unordered_set<std::string>> workspace_overridable_;
  // Methods that subclasses in other files define, by this file's class they derive from ("overrides:" entries).
  std::unordered_map<std::string, std::unordered_set<std::string>> workspace_override_interest_;
  // The names that traced code of `cls` or of any of its bases calls through `self` (local bases by their traced
  // methods, imported ones by workspace_overridable_), each with whether only code reported without an entry
  // (assumed_entry) calls it.
  std::unordered_map<std::string, bool> self_calls_reaching(const ClassInfo* cls, bool strict_bases_only) const;
  // A parameter the body calls a tensor-only method on, never rebinds and never tests with isinstance.
  static bool tensor_by_its_methods(const FunctionInfo& f, const std::string& name);
  // `cls` is `base` or derives from it through classes of this file.
  bool derives_from(const ClassInfo* cls, const ClassInfo* base) const;
  // Attribute effects read again with the methods' inferred kinds; true when one changed (the classes' attribute
  // facts are then folded afresh).
  bool refine_attribute_kinds();
  static std::vector<std::string> self_called_method_names(const Document& document, const FunctionInfo& function);
  // What functions of other files return ("ret:" entries), by the qualified name this file calls them by.
  struct ImportedReturn {
    ValueKind kind = ValueKind::Unknown;
    std::vector<ValueKind> elements;
  };
  std::unordered_map<std::string, ImportedReturn> workspace_returns_;
  std::unordered_set<std::string> workspace_sparse_returns_;  // qualified as this file names them
  bool sparse_returns_of(const FunctionInfo& fn) const;
  void find_sparse_returns();
  // The return of an imported function this call calls, when another file said what it is.
  const ImportedReturn* imported_return(TSNode call) const;
  // `name` (a tensor by flow) is read where `isinstance(name, (int, float))` was tested true.
  bool narrowed_to_python_scalar(TSNode node, const std::string& name, const FunctionInfo& fn) const;
  std::unordered_set<std::string> module_loggers_;
  std::vector<TSNode> compile_calls_;  // calls whose callee text ends in "compile", "partial" or "export"
  // Names bound to functools.partial(torch.compile, ...): calling one compiles its argument. A file with
  // any is rebuilt on every edit (update_after_edit), as calls of them are not tracked.
  std::unordered_set<std::string> compile_aliases_;
  bool exported_ = false;     // the file calls torch.export.export
  int inference_passes_ = 0;  // passes of the fixpoint the constructor ran (at most kMaxInferencePasses)
  // The state of the kinds, numbered across models: flow answers (kind_at) are cached per state. A new one
  // starts whenever kinds may change (each inference of a function, the end of construction, an update).
  mutable uint64_t flow_generation_ = 0;
  void new_flow_generation() const;
  // Start bytes of every import statement and of every call whose callee text ends in "compile".
  std::vector<uint32_t> import_starts_;
  std::vector<uint32_t> compile_call_starts_;
};

// Whether `name` is bound in `fn` or a function around it (a parameter, an assigned or inferred local),
// so that a module-level name or an import of that name is shadowed there.
bool bound_in_function(const FunctionInfo& fn, std::string_view name);
// Whether the leftmost name of `call`'s callee (`torch` of `torch.sparse_coo_tensor(...)`) is bound in `fn`
// or a function around it, or the callee starts with something other than a name.
bool callee_root_bound(const Document& document, TSNode call, const FunctionInfo& fn);

// The bindings of one name (`bindings`: FunctionInfo::binding_nodes of it) whose value may be the one `read`
// sees: before it, the latest that runs on every path to it and every one after that; after it, those a loop
// carries back. `entry`: no binding runs on every path, so the value on entry (a parameter's argument, or none)
// may reach it too.
struct ReachingBindings {
  std::vector<TSNode> bindings;  // latest first; from `carried_from` on, those a loop carries back
  size_t carried_from = 0;
  bool entry = true;
};
ReachingBindings reaching_bindings(TSNode read, const std::vector<TSNode>& bindings, const FunctionInfo& fn);

// Small tree-sitter helpers shared by rules and transforms.
TSNode field(TSNode node, const char* name);
std::string_view type_of(TSNode node);
bool is_type(TSNode node, std::string_view type);
TSNode unparenthesize(TSNode node);
// The grammar's named children by position, extras left out: a comment or a `\` line continuation may sit
// between any two tokens, and tree-sitter counts it as a named child (`a if b else \` + newline + `c`
// has four). What ts_node_named_child(_count) would give on code without extras.
TSNode named_child(TSNode node, uint32_t index);
uint32_t named_child_count(TSNode node);
// Pre-order walk of `root` and everything under it with one tree cursor (no allocation per node).
// `visit(node)` says whether to look inside the node, skip its subtree, or end the walk.
enum class Walk { Descend, Skip, Stop };
template <class Visit>
void walk_preorder(TSNode root, Visit&& visit) {
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  for (bool more = true; more;) {
    const Walk next = visit(ts_tree_cursor_current_node(&cursor));
    if (next == Walk::Stop) break;
    if (next == Walk::Descend && ts_tree_cursor_goto_first_child(&cursor)) continue;
    // The next sibling, else the nearest ancestor's (the cursor never leaves `root`).
    while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
      if (!ts_tree_cursor_goto_parent(&cursor)) {
        more = false;
        break;
      }
    }
  }
  ts_tree_cursor_delete(&cursor);
}
// The depth of the deepest node under `node`, which is at level `depth` (with a cursor: no recursion).
uint32_t deepest_level(TSNode node, uint32_t depth);
// Named children in order, read with a tree cursor: named_child(i) rescans from the first child,
// which makes index loops quadratic on long blocks.
std::vector<TSNode> named_children(TSNode node);

}  // namespace graphmend
