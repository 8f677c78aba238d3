// The engine's entry point: facts for one document, then the rules over them.
#pragma once

#include <memory>
#include <vector>

#include "graphmend/analysis/config.h"
#include "graphmend/analysis/document.h"
#include "graphmend/analysis/finding.h"

namespace graphmend {

class SemanticModel;  // semantic.h: scopes, imports, tensor-ness, compiled regions

struct Analysis {
  std::shared_ptr<const SemanticModel> model;
  std::vector<Finding> findings;  // sorted by range; noqa and config applied
};

// Pure function of the document text and config: safe to call from any thread on distinct documents.
Analysis analyze(const Document& document, const Config& config);

}  // namespace graphmend
