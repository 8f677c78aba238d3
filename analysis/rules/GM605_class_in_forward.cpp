// GM605: a class statement inside traced code.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM605",
    .name = "class-in-forward",
    .family = "unsupported Python",
    .summary = "Class defined inside compiled code",
    .explanation =
        "A `class` statement calls `__build_class__`, which Dynamo does not trace: it breaks the "
        "graph every time the function runs.",
    .registry_id = "GB8977",
    .fix_summary = "No automatic fix: define the class at module level.",
    .example_bad = "def forward(self, x):\n    class Box: ...",
    .example_good = "class Box: ...\n\ndef forward(self, x): ...",
    .fixable = false,
};

void check(RuleContext& ctx, const Visit& v) {
  ByteRange range = node_range(v.node);
  TSNode name = field(v.node, "name");
  if (!ts_node_is_null(name)) range.end = ts_node_end_byte(name);
  ctx.report(kInfo, range,
             "A class statement inside compiled code calls __build_class__, which Dynamo does not support: it breaks "
             "the graph here.",
             v);
}

}  // namespace

const Rule& rule_GM605() {
  static const Rule rule{&kInfo, {"class_definition"}, check};
  return rule;
}

}  // namespace graphmend
