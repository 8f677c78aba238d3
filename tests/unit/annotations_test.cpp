#include "graphmend/analysis/annotations.h"

#include <doctest/doctest.h>

using namespace graphmend;

namespace {
ValueKind kind(std::string_view text) { return read_annotation(text).kind; }
}  // namespace

TEST_CASE("annotations that prove a tensor") {
  CHECK(kind("Tensor") == ValueKind::Tensor);
  CHECK(kind("torch.Tensor") == ValueKind::Tensor);
  CHECK(kind("torch.FloatTensor") == ValueKind::Tensor);
  CHECK(kind("\"torch.Tensor\"") == ValueKind::Tensor);  // a forward reference
  CHECK(kind("Optional[Tensor]") == ValueKind::Tensor);
  CHECK(kind("typing.Optional['torch.Tensor']") == ValueKind::Tensor);
  CHECK(kind("Tensor | None") == ValueKind::Tensor);
  CHECK(kind("None | torch.Tensor") == ValueKind::Tensor);
  CHECK(kind("Union[torch.Tensor, None]") == ValueKind::Tensor);
  CHECK(kind("nn.Parameter") == ValueKind::Tensor);
  CHECK(kind("Float[Tensor, \"b c h w\"]") == ValueKind::Tensor);  // jaxtyping
  CHECK(kind("Annotated[Tensor, 'mask']") == ValueKind::Tensor);
  // A tensor or an unproven container is taken as the tensor, as two paths merge.
  CHECK(kind("Tensor | list[tuple]") == ValueKind::Tensor);
}

TEST_CASE("annotations of containers of tensors") {
  CHECK(kind("List[Tensor]") == ValueKind::TensorSequence);
  CHECK(kind("list[torch.Tensor]") == ValueKind::TensorSequence);
  CHECK(kind("Sequence[Tensor]") == ValueKind::TensorSequence);
  CHECK(kind("Tuple[Tensor, ...]") == ValueKind::TensorSequence);
  CHECK(kind("Optional[List[Tensor]]") == ValueKind::TensorSequence);
  CHECK(kind("Dict[str, Tensor]") == ValueKind::TensorMapping);
  CHECK(kind("dict[str, torch.Tensor] | None") == ValueKind::TensorMapping);
  AnnotatedType pair = read_annotation("Tuple[Tensor, int]");
  CHECK(pair.kind == ValueKind::Unknown);
  REQUIRE(pair.elements.size() == 2);
  CHECK(pair.elements[0] == ValueKind::Tensor);
  CHECK(pair.elements[1] == ValueKind::Static);
  CHECK(read_annotation("tuple[Tensor, Tensor]").kind == ValueKind::TensorSequence);
  // A container of containers is no container of tensors.
  CHECK(kind("Tuple[Tuple[torch.FloatTensor]]") == ValueKind::Unknown);
}

TEST_CASE("annotations of Python values and what proves nothing") {
  CHECK(kind("int") == ValueKind::Static);
  CHECK(kind("Optional[float]") == ValueKind::Static);
  CHECK(kind("bool | None") == ValueKind::Static);
  CHECK(kind("List[int]") == ValueKind::Static);
  CHECK(kind("tuple[int, int]") == ValueKind::Static);
  CHECK(kind("list[list[int]]") == ValueKind::Static);
  CHECK(kind("torch.Size") == ValueKind::Static);
  CHECK(kind("torch.dtype") == ValueKind::Static);
  // A tensor or a number: the code tells them apart at run time, so neither is proven.
  CHECK(kind("int | torch.Tensor") == ValueKind::Unknown);
  CHECK(kind("Union[float, Tensor]") == ValueKind::Unknown);
  CHECK(kind("NestedTensor") == ValueKind::Unknown);  // a class of its own, not a tensor
  CHECK(kind("Callable[[Tensor], Tensor]") == ValueKind::Unknown);
  CHECK(kind("Literal[1, 2]") == ValueKind::Unknown);
  CHECK(kind("Tensor[") == ValueKind::Unknown);  // not an annotation
  CHECK(kind("") == ValueKind::Unknown);
}
