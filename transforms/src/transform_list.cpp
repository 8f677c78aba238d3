// The registry of transforms. A new transform adds its file in this folder and one line here.
#include "transform.h"

namespace graphmend {

const Transform& transform_static_precondition();
const Transform& transform_predicate_if();
const Transform& transform_predicate_ternary();
const Transform& transform_raise_in_graph();
const Transform& transform_check_in_graph();
const Transform& transform_graph_native_guard();
const Transform& transform_emit_once_at_trace();
const Transform& transform_log_in_graph();
const Transform& transform_defer_side_effect();
const Transform& transform_item_in_condition();
const Transform& transform_dense_mask_reduction();

const std::vector<const Transform*>& registered_transforms() {
  static const std::vector<const Transform*> transforms{
      &transform_static_precondition(),  // before predication: it keeps the branch, and the RNG stream
      &transform_item_in_condition(),    // before predication: a test with exact literals needs no check
      &transform_predicate_if(),        &transform_predicate_ternary(),
      &transform_raise_in_graph(),  // before the graph-native guard: it keeps the class and message
      &transform_graph_native_guard(),  &transform_check_in_graph(),
      &transform_emit_once_at_trace(),  // before the deferral: it applies in inlined frames too
      &transform_log_in_graph(),        // before the deferral's unsafe skip in inlined frames
      &transform_defer_side_effect(),   &transform_dense_mask_reduction(),
  };
  return transforms;
}

}  // namespace graphmend
