// The transform interface: one transform per file in transforms/src/, each serving findings of some rules.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "graphmend/analysis/analyzer.h"
#include "graphmend/analysis/semantic.h"

namespace graphmend {

struct Refusal {
  std::string reason;  // plain words: "the branch writes self.hits, and predication would run it on both paths"
  // False when the finding is not of the transform's pattern at all: the reason of a transform that did
  // recognise it (the first one) is what the finding shows.
  bool recognised = true;
};

using TransformResult = std::variant<Fix, Refusal>;

struct TransformContext {
  const Document& document;
  const SemanticModel& model;
  const Finding& finding;
};

struct Transform {
  std::string_view name;
  std::vector<std::string_view> codes;  // rule codes it can fix
  TransformResult (*apply)(const TransformContext&);
};

const std::vector<const Transform*>& registered_transforms();

}  // namespace graphmend
