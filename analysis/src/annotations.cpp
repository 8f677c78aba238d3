// A small reader for annotation expressions: dotted names, subscripts, `|` unions, quoted forward
// references. It parses the text (not the tree) because string annotations and `from __future__ import
// annotations` hold the same grammar inside a string.
#include "graphmend/analysis/annotations.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string>

namespace graphmend {
namespace {

// Names that are tensors: torch.Tensor and its legacy typed aliases, and parameters.
constexpr std::array<std::string_view, 10> kTensorNames{"Tensor",         "FloatTensor", "LongTensor",   "BoolTensor",
                                                        "IntTensor",      "HalfTensor",  "DoubleTensor", "ByteTensor",
                                                        "BFloat16Tensor", "Parameter"};
// Names of values Dynamo knows at trace time.
constexpr std::array<std::string_view, 9> kStaticNames{"bool",  "int",    "float", "str",   "Size",
                                                       "dtype", "device", "bytes", "SymInt"};
// Sequences whose element type is their one argument (or the first of `Tuple[X, ...]`).
constexpr std::array<std::string_view, 10> kSequences{
    "List", "list", "Sequence", "MutableSequence", "Iterable", "Iterator", "Collection", "Tuple", "tuple", "Deque"};
constexpr std::array<std::string_view, 6> kMappings{"Dict",           "dict",        "Mapping",
                                                    "MutableMapping", "OrderedDict", "DefaultDict"};
// jaxtyping / torchtyping: `Float[Tensor, "b c"]` is a Tensor of that dtype class and shape.
constexpr std::array<std::string_view, 12> kShapedTensorTypes{
    "Float", "Int", "Bool", "Shaped", "Num", "Real", "Integer", "Inexact", "Float32", "Float16", "Int64", "TensorType"};

template <size_t N>
bool one_of(std::string_view s, const std::array<std::string_view, N>& set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

// A parsed annotation node: a name with optional arguments, or a union of alternatives.
struct Node {
  std::string name;  // last component of the dotted name; "|" for a union; "..." ; "None"
  std::vector<Node> args;
  bool subscripted = false;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  std::optional<Node> parse_all() {
    auto n = parse_union();
    skip_space();
    if (!n || pos_ != s_.size()) return std::nullopt;
    return n;
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::optional<Node> parse_union() {
    auto first = parse_primary();
    if (!first) return std::nullopt;
    if (!eat('|')) return first;
    Node u{"|", {std::move(*first)}, false};
    do {
      auto next = parse_primary();
      if (!next) return std::nullopt;
      u.args.push_back(std::move(*next));
    } while (eat('|'));
    return u;
  }
  std::optional<Node> parse_primary() {
    skip_space();
    if (pos_ >= s_.size()) return std::nullopt;
    const char c = s_[pos_];
    if (c == '"' || c == '\'') {
      // A forward reference inside an annotation (`Optional["Tensor"]`): its text is an annotation.
      const size_t end = s_.find(c, pos_ + 1);
      if (end == std::string_view::npos) return std::nullopt;
      std::string_view inner = s_.substr(pos_ + 1, end - pos_ - 1);
      pos_ = end + 1;
      auto n = Parser(inner).parse_all();
      // A string that is not an annotation (jaxtyping's shape "b c") is kept as an opaque name.
      return n ? n : std::optional<Node>(Node{"<string>", {}, false});
    }
    if (s_.substr(pos_, 3) == "...") {
      pos_ += 3;
      return Node{"...", {}, false};
    }
    if (c == '[') {  // Callable's parameter list
      ++pos_;
      Node list{"<list>", {}, true};
      if (!eat(']')) {
        do {
          auto a = parse_union();
          if (!a) return std::nullopt;
          list.args.push_back(std::move(*a));
        } while (eat(','));
        if (!eat(']')) return std::nullopt;
      }
      return list;
    }
    if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_')) {
      // Numbers in Literal[...] and the like: an opaque token.
      const size_t start = pos_;
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
                                  s_[pos_] == '-' || s_[pos_] == '+'))
        ++pos_;
      if (pos_ == start) return std::nullopt;
      return Node{"<literal>", {}, false};
    }
    std::string name;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '.')) {
      name += s_[pos_++];
    }
    if (auto dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
    Node n{name, {}, false};
    if (eat('[')) {
      n.subscripted = true;
      if (!eat(']')) {
        do {
          auto a = parse_union();
          if (!a) return std::nullopt;
          n.args.push_back(std::move(*a));
        } while (eat(','));
        if (!eat(']')) return std::nullopt;
      }
    }
    return n;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

ValueKind kind_of_alternatives(const std::vector<Node>& alternatives);

AnnotatedType evaluate(const Node& n) {
  if (n.name == "|") return {kind_of_alternatives(n.args), {}};
  if (n.name == "None") return {ValueKind::None, {}};
  if (!n.subscripted) {
    if (one_of(std::string_view(n.name), kTensorNames)) return {ValueKind::Tensor, {}};
    if (one_of(std::string_view(n.name), kStaticNames)) return {ValueKind::Static, {}};
    return {};
  }
  if (n.name == "Optional" && n.args.size() == 1) {
    AnnotatedType inner = evaluate(n.args[0]);
    return {inner.kind == ValueKind::None ? ValueKind::None : inner.kind, {}};
  }
  if (n.name == "Union") return {kind_of_alternatives(n.args), {}};
  if (n.name == "Annotated" && !n.args.empty()) return evaluate(n.args[0]);
  if (one_of(std::string_view(n.name), kShapedTensorTypes) && !n.args.empty()) {
    if (evaluate(n.args[0]).kind == ValueKind::Tensor) return {ValueKind::Tensor, {}};
    return {};
  }
  if (one_of(std::string_view(n.name), kSequences)) {
    const bool tuple = n.name == "Tuple" || n.name == "tuple";
    if (n.args.empty()) return {};
    // Tuple[X, ...] and List[X]: one element type.
    if (!tuple || (n.args.size() == 2 && n.args[1].name == "...") || n.args.size() == 1) {
      const ValueKind element = evaluate(n.args[0]).kind;
      if (element == ValueKind::Tensor) return {ValueKind::TensorSequence, {}};
      if (element == ValueKind::Static) return {ValueKind::Static, {}};
      return {};
    }
    // Tuple[A, B, C]: a kind per element, for unpacking.
    AnnotatedType t;
    bool all_tensor = true, all_static = true;
    for (const Node& a : n.args) {
      const ValueKind k = evaluate(a).kind;
      t.elements.push_back(k);
      all_tensor = all_tensor && k == ValueKind::Tensor;
      all_static = all_static && k == ValueKind::Static;
    }
    t.kind = all_tensor ? ValueKind::TensorSequence : all_static ? ValueKind::Static : ValueKind::Unknown;
    return t;
  }
  if (one_of(std::string_view(n.name), kMappings) && n.args.size() == 2) {
    const ValueKind value = evaluate(n.args[1]).kind;
    if (value == ValueKind::Tensor) return {ValueKind::TensorMapping, {}};
    return {};
  }
  return {};
}

// `A | B`, `Union[A, B]`: None drops out (an optional value is that value where it is used). A tensor
// or a Python number (`int | Tensor`) proves neither: the code often tells them apart with isinstance, and
// only the values that reach it decide (call sites, flow). A tensor or an unproven container
// (`Tensor | list[tuple]`) is taken as the tensor, as where the model merges two paths.
ValueKind kind_of_alternatives(const std::vector<Node>& alternatives) {
  std::optional<ValueKind> result;
  bool only_none = true;
  for (const Node& a : alternatives) {
    const ValueKind k = evaluate(a).kind;
    if (k == ValueKind::None) continue;
    only_none = false;
    if (!result) {
      result = k;
    } else if (*result != k) {
      const bool tensor_or_unproven = (*result == ValueKind::Tensor && k == ValueKind::Unknown) ||
                                      (*result == ValueKind::Unknown && k == ValueKind::Tensor);
      result = tensor_or_unproven ? ValueKind::Tensor : ValueKind::Unknown;
    }
  }
  if (only_none) return ValueKind::None;
  return result.value_or(ValueKind::Unknown);
}

}  // namespace

AnnotatedType read_annotation(std::string_view annotation) {
  auto node = Parser(annotation).parse_all();
  if (!node) return {};
  return evaluate(*node);
}

}  // namespace graphmend
