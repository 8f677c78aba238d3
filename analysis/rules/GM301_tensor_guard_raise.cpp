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
        "A safe fix: the test is passed to a custom operator, defined once per process in the fixed file, that "
        "raises the same exception (class, message, `from None`) inside the compiled graph at run time, with no "
        "break where the graph wrote no state before it. Where the message or class reads other values of the "
        "function (an f-string over the input), the unsafe fallback is `torch._assert_async` under compile, "
        "which raises RuntimeError.",
    .example_bad = "if torch.isinf(x).any():\n    raise ValueError('inf in activations')",
    .example_good =
        "@_graphmend_keep_state\n@_graphmend_runtime_op(\"raise_if_3f0c9a21d7e4\", \"(Tensor test) -> ()\")\n"
        "def _graphmend_raise_if_3f0c9a21d7e4(test):\n    if test:\n        raise ValueError('inf in activations')\n"
        "...\n_graphmend_raise_if_3f0c9a21d7e4(torch.isinf(x).any())",
    .fixable = true,
    .fix_safety =
        "Safe. The original broke the graph before its test, so state written in place earlier in the same graph "
        "(BatchNorm running statistics in training, in-place updates of inputs or buffers, Python attributes and "
        "lists) was written back before the raise; in one graph, AOTAutograd writes it back only after the graph "
        "returns, and a raise skips that. So the operator is wrapped (`@_graphmend_keep_state`): where Dynamo "
        "traces the call, it looks at the graph traced so far and breaks it there, as the original did, when "
        "anything was written, or when it cannot tell; an eval-mode model keeps the guard in one graph. The "
        "operator keeps the class, message, arguments and `from None` on every backend, static and dynamic "
        "shapes, eval and train, with the on-disk caches on (an ordered effect, so it is never dropped; its name "
        "carries a hash "
        "of what it does). It needs literal messages, or an f-string over values the tensor test reads (formatted "
        "at the call), and a class the module resolves the same way; a test with `and`/`or`/`not` inside, "
        "another f-string or a `from <value>` cause gets the fallback, "
        "`torch._assert_async` under compile: RuntimeError instead of the original class, the literal message "
        "or a fixed text naming the test, no cause, and on CUDA an asynchronous device-side assert that poisons "
        "the CUDA context. Both are refused inside a `try` with handlers, for a bare `raise`, and where `torch` "
        "is shadowed; the operator also in an `except` or `finally` block (the exception's context). A deployment with "
        "AOTInductor needs Python for the operator.",
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
