// What a type annotation proves about a value: `Tensor`, `Optional[Tensor]`, `List[Tensor]`,
// `Tuple[Tensor, Tensor]`, `Dict[str, Tensor]`, `int`, string annotations, `X | None`, jaxtyping's
// `Float[Tensor, "b c"]`. Annotations are facts the author wrote down: the model takes them before any
// inference from how a value is used.
#pragma once

#include <string_view>
#include <vector>

#include "graphmend/analysis/semantic.h"

namespace graphmend {

struct AnnotatedType {
  ValueKind kind = ValueKind::Unknown;
  // A fixed-length tuple (`Tuple[Tensor, int]`): the kind of each element, for unpacking. Empty otherwise.
  std::vector<ValueKind> elements;
};

// Reads an annotation as written (with or without quotes). Unknown for anything it does not prove.
AnnotatedType read_annotation(std::string_view annotation);

}  // namespace graphmend
