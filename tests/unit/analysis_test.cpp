#include <doctest/doctest.h>

#include <string>

#include "graphmend/analysis/analyzer.h"
#include "graphmend/analysis/semantic.h"
#include "graphmend/transforms/fixer.h"

using namespace graphmend;

namespace {

std::vector<std::string> codes(const std::string& source) {
  Document doc("m.py", source);
  Analysis a = analyze(doc, Config{});
  std::vector<std::string> out;
  for (const auto& f : a.findings)
    out.push_back(std::string(f.rule->code) + "@" + std::to_string(doc.lines().line_of(f.range.start) + 1));
  return out;
}

const char* kHeader =
    "import torch\nfrom torch import nn\nfrom .utils import is_torchdynamo_compiling\n\n\nclass M(nn.Module):\n    def "
    "forward(self, x):\n";

}  // namespace

TEST_CASE("tests pruned at trace time are not reported, `not` included") {
  std::string src = std::string(kHeader) +
                    "        legacy = (x[:, :-1] & x[:, 1:]).sum() == 0\n"
                    "        if not is_torchdynamo_compiling() and legacy:\n"
                    "            x = x + 1\n"
                    "        if is_torchdynamo_compiling() or x.sum() > 0:\n"
                    "            x = x - 1\n"
                    "        return x\n";
  CHECK(codes(src).empty());
}

TEST_CASE("a tensor test after a reachable static conjunct is reported at the tensor operand") {
  std::string src = std::string(kHeader) +
                    "        if self.training and x.sum() > 0:\n"
                    "            x = x + 1\n"
                    "        return x\n";
  CHECK(codes(src) == std::vector<std::string>{"GM101@8"});
}

TEST_CASE("flag-like parameters are not tensors") {
  std::string src = std::string(kHeader) +
                    "        return self.inner(x, output_hidden_states=True)\n\n"
                    "    def inner(self, x, output_hidden_states):\n"
                    "        if output_hidden_states:\n"
                    "            x = x + 1\n"
                    "        return x\n";
  CHECK(codes(src).empty());
}

TEST_CASE("fix_all predicates and is idempotent") {
  std::string src = std::string(kHeader) +
                    "        y = x * 2\n"
                    "        if y.sum() > 0:\n"
                    "            y = y + 1\n"
                    "        return y\n";
  FixAllResult once = fix_all("m.py", src, Config{}, FixOptions{});
  CHECK(once.changed);
  CHECK(once.text.find("y = torch.where(y.sum() > 0, y + 1, y)") != std::string::npos);
  FixAllResult twice = fix_all("m.py", once.text, Config{}, FixOptions{});
  CHECK_FALSE(twice.changed);
}

TEST_CASE("fix_all runs to its fixpoint when each fix waits on the next (a chain of deferred log calls)") {
  // Each log call can only be deferred after the graph once every effect after it is: one per pass.
  std::string src =
      "import logging\n\nimport torch\n\nlogger = logging.getLogger(__name__)\n\n\n"
      "@torch.compile\ndef step(x):\n";
  for (const char* method : {"debug", "info", "warning", "error", "critical", "exception", "fatal", "warn"})
    src += std::string("    logger.") + method + "(\"m\")\n";
  src += "    logger.log(20, \"m\")\n";
  src += "    return x + 1\n";
  FixAllResult once = fix_all("m.py", src, Config{}, FixOptions{});
  CHECK(once.converged);
  CHECK(once.applied == 9);
  CHECK_FALSE(fix_all("m.py", once.text, Config{}, FixOptions{}).changed);
  FixOptions bounded;
  bounded.max_passes = 4;
  FixAllResult cut = fix_all("m.py", src, Config{}, bounded);
  CHECK_FALSE(cut.converged);
  CHECK(cut.applied == 4);
}

TEST_CASE("every fixable rule says what its fix keeps and what may change") {
  for (const RuleInfo* r : all_rules()) {
    CAPTURE(r->code);
    if (r->fixable) CHECK(!r->fix_safety.empty());
  }
}

TEST_CASE("grammar positions skip a line continuation and a comment inside an expression") {
  // tree-sitter keeps `\` continuations and comments as named children: a conditional expression split after
  // `else \` has four, and positional access by ts_node_named_child would take the `\` for the alternative.
  Document doc("m.py", "y = (a if b else \\\n     c)\nz = [a,  # first\n     b]\n");
  TSNode root = doc.root();
  TSNode conditional = unparenthesize(field(named_child(named_child(root, 0), 0), "right"));
  REQUIRE(is_type(conditional, "conditional_expression"));
  CHECK(ts_node_named_child_count(conditional) == 4);
  CHECK(named_child_count(conditional) == 3);
  CHECK(doc.node_text(named_child(conditional, 1)) == "b");
  CHECK(doc.node_text(named_child(conditional, 2)) == "c");
  TSNode list = field(named_child(named_child(root, 1), 0), "right");
  CHECK(named_child_count(list) == 2);
  CHECK(doc.node_text(named_child(list, 1)) == "b");
  CHECK(named_children(conditional).size() == 3);  // continuations left out, comments kept
  CHECK(named_children(list).size() == 3);
}

TEST_CASE("a draw picked by a conditional expression split with a backslash is reported where range() reads it") {
  std::string src =
      "import random\nimport torch\n\n\n@torch.compile\ndef f(x, lo: int, hi: int):\n"
      "    n = lo if lo == hi else \\\n        random.randint(lo, hi)\n"
      "    for _ in range(n):\n        x = x + 1\n    return x\n";
  CHECK(codes(src) == std::vector<std::string>{"GM614@9"});
}

TEST_CASE("a fix that would drop a comment written inside what it replaces is refused, and says so") {
  const std::string body =
      "        w = (z * 3\n             if x.amax() > 0.5  # why this bound\n             else z)\n"
      "        return w\n";
  const std::string src = std::string(kHeader) + "        z = x * 2\n" + body;
  Document doc("m.py", src);
  Analysis a = check(doc, Config{});
  REQUIRE(a.findings.size() == 1);
  CHECK(!a.findings[0].fix);
  CHECK(a.findings[0].no_fix_reason.find("`# why this bound`") != std::string::npos);
  // Without the comment the same expression is rewritten.
  std::string plain = src;
  plain.erase(plain.find("  # why this bound"), std::string("  # why this bound").size());
  Document plain_doc("m.py", plain);
  Analysis b = check(plain_doc, Config{});
  REQUIRE(b.findings.size() == 1);
  CHECK(b.findings[0].fix);
}
