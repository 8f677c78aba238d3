// GM301: `if <tensor test>: raise E(...)` runtime guards.
#include "rule.h"

namespace graphmend {
namespace {

const RuleInfo kInfo{
    .code = "GM301",
    .name = "tensor-guard-raise",
    .family = "runtime guards",
    .summary = "`raise` guarded by a test on a tensor's value",
    .explanation =
        "A validation guard such as `if torch.isnan(x).any(): raise ValueError(...)` needs the tensor's value to "
        "decide whether to raise, so Dynamo breaks the graph at the test.",
    .registry_id = "GB0170",
    .fix_summary =
        "An unsafe fix (`--unsafe-fixes`): the guard becomes `torch._assert_async` under compile (the check stays "
        "in the graph, raising RuntimeError) while an eager run keeps raising the same exception with the same "
        "message.",
    .example_bad = "if torch.isinf(x).any():\n    raise ValueError('inf in activations')",
    .example_good =
        "if torch.compiler.is_compiling():\n    torch._assert_async(~torch.isinf(x).any(), 'inf in activations')\n"
        "elif torch.isinf(x).any():\n    raise ValueError('inf in activations')",
    .fixable = true,
    .fix_safety =
        "Always unsafe. Eager runs keep the original `raise` statement untouched (class, message, cause). "
        "Under torch.compile a failing check raises `RuntimeError` from `torch._assert_async` instead of the "
        "original class, with the literal message (or a fixed text naming the test when the message is an "
        "f-string or has several arguments), without the `from` cause; on CUDA it is an asynchronous "
        "device-side assert that poisons the CUDA context. Refused inside a `try` whose handlers could catch "
        "the exception (under compile they would no longer run), for a bare `raise`, and where `torch` is "
        "shadowed.",
    .export_fails = true,
};

void check(RuleContext& ctx, const Visit& v) {
  if (!body_is_raise(field(v.node, "consequence"))) return;
  TSNode condition = field(v.node, "condition");
  TSNode operand = breaking_operand(ctx, condition, v.function);
  if (ts_node_is_null(operand)) return;
  ctx.report(kInfo, node_range(operand),
             "This guard raises depending on a tensor's value: Dynamo breaks the graph at the test (Data-dependent "
             "branching).",
             v);
}

}  // namespace

const Rule& rule_GM301() {
  static const Rule rule{&kInfo, {"if_statement", "elif_clause"}, check};
  return rule;
}

}  // namespace graphmend
