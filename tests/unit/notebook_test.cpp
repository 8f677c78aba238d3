// Jupyter notebooks (cli/notebook.h): IPython syntax neutralised in place, cells joined and split back,
// the file's layout detected and reproduced byte for byte.
#include "cli/notebook.h"

#include <doctest/doctest.h>

#include <string>

#include "graphmend/transforms/fixer.h"

using namespace graphmend;
using namespace graphmend::cli;

TEST_CASE("notebook: IPython lines become placeholders of the same bytes") {
  const std::string cell =
      "%matplotlib inline\n"
      "!pip install \\\n"
      "    torch\n"
      "files = !ls -la\n"
      "x = 1  # what?\n"
      "step?\n"
      "s = \"\"\"\n"
      "%d items\n"
      "\"\"\"\n"
      "y = (1 +\n"
      "     2)\n"
      "for i in range(3):\n"
      "    %time f(i)\n";
  const NeutralisedCell n = neutralise_ipython(cell);
  CHECK_FALSE(n.skipped);
  CHECK(n.python.size() == cell.size());
  CHECK(n.python ==
        "...               \n"
        "...           \n"
        "#        \n"
        "files = ...    \n"
        "x = 1  # what?\n"
        "...  \n"
        "s = \"\"\"\n"
        "%d items\n"
        "\"\"\"\n"
        "y = (1 +\n"
        "     2)\n"
        "for i in range(3):\n"
        "    ..."
        "       \n");
  REQUIRE(n.ipython.size() == 5);
  CHECK(n.ipython[1].original == "!pip install \\\n    torch");
  CHECK(n.ipython[2].original == "!ls -la");
}

TEST_CASE("notebook: a cell magic other than a Python one leaves the cell out") {
  CHECK(neutralise_ipython("%%bash\necho hi\n").skipped);
  CHECK(neutralise_ipython("%%writefile x.py\nprint(1)\n").skipped);
  const NeutralisedCell timed = neutralise_ipython("%%time\nx = f()\n");
  CHECK_FALSE(timed.skipped);
  CHECK(timed.python == "...   \nx = f()\n");
}

TEST_CASE("notebook: cells joined with a newline where missing, and split back") {
  VirtualText v = build_virtual_text({{2, "import torch\n%time x = 1"}, {3, "%%bash\nls"}, {5, "y = 2\n"}, {6, ""}});
  CHECK(v.text ==
        "import torch\n..."
        "        \ny = 2\n\n");
  REQUIRE(v.cells.size() == 3);
  CHECK(v.cell_starts() == std::vector<uint32_t>{0, 2, 3});
  CHECK(v.cell_numbers() == std::vector<uint32_t>{2, 5, 6});
  CHECK(split_virtual_text(v, v.text, v.protected_ranges) ==
        std::vector<std::string>{"import torch\n%time x = 1", "y = 2\n", ""});
  // An edit inside a cell moves what follows; the IPython line comes back as it was.
  TextEdit insert{{0, 0}, "import os\n"};
  CHECK_FALSE(touches_protected({insert}, v.protected_ranges));
  std::string fixed = apply_edits(v.text, {insert});
  std::vector<ByteRange> moved = v.protected_ranges;
  for (ByteRange& r : moved) r = {r.start + 10, r.end + 10};
  CHECK(split_virtual_text(v, fixed, moved) ==
        std::vector<std::string>{"import os\nimport torch\n%time x = 1", "y = 2\n", ""});
  const VirtualText after = moved_virtual_text(v, fixed, moved);
  CHECK(after.cell_starts() == std::vector<uint32_t>{0, 3, 4});
  // Edits that would join two cells, or touch an IPython line, are refused.
  const uint32_t separator = static_cast<uint32_t>(v.text.find('\n', 14));
  CHECK(touches_protected({{{separator - 1, separator + 1}, ""}}, v.protected_ranges));
  CHECK(touches_protected({{{15, 15}, "z"}}, v.protected_ranges));
  // Inserting at the end of a cell's last line is fine, unless that line is an IPython one.
  CHECK(touches_protected({{{separator, separator}, "  # end"}}, v.protected_ranges));
  const uint32_t after_y = static_cast<uint32_t>(v.text.find("y = 2") + 5);
  CHECK_FALSE(touches_protected({{{after_y, after_y}, "  # end"}}, v.protected_ranges));
}

TEST_CASE("notebook: layouts that reproduce the file, and those that do not") {
  const std::string nbformat =
      "{\n \"cells\": [\n  {\n   \"cell_type\": \"code\",\n   \"execution_count\": null,\n   \"metadata\": {},\n"
      "   \"outputs\": [],\n   \"source\": [\n    \"x = 1\\n\",\n    \"print(\\\"é\\\")\"\n   ]\n  }\n ],\n"
      " \"metadata\": {\"language_info\": {\"name\": \"python\"}},\n \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n";
  auto parsed = parse_notebook("nb.ipynb", nbformat);
  REQUIRE(std::holds_alternative<Notebook>(parsed));
  const Notebook& nb = std::get<Notebook>(parsed);
  // The metadata object is on one line: not what json.dumps writes.
  CHECK_FALSE(nb.layout.has_value());
  CHECK(std::holds_alternative<NotebookError>(write_notebook("nb.ipynb", nb, {"x = 2\nprint(\"é\")"})));

  std::string fixed_layout = nbformat;
  fixed_layout.replace(fixed_layout.find("{\"language_info\": {\"name\": \"python\"}}"),
                       std::string("{\"language_info\": {\"name\": \"python\"}}").size(),
                       "{\n  \"language_info\": {\n   \"name\": \"python\"\n  }\n }");
  auto good = parse_notebook("nb.ipynb", fixed_layout);
  REQUIRE(std::holds_alternative<Notebook>(good));
  const Notebook& ok = std::get<Notebook>(good);
  REQUIRE(ok.layout.has_value());
  CHECK(ok.layout->indent == " ");
  CHECK(ok.code_cells.size() == 1);
  CHECK(ok.code_cells[0].source == "x = 1\nprint(\"é\")");
  auto written = write_notebook("nb.ipynb", ok, {"x = 2\ny = 3\nprint(\"é\")"});
  REQUIRE(std::holds_alternative<std::string>(written));
  std::string expected = fixed_layout;
  expected.replace(expected.find("    \"x = 1\\n\",\n"), std::string("    \"x = 1\\n\",\n").size(),
                   "    \"x = 2\\n\",\n    \"y = 3\\n\",\n");
  CHECK(std::get<std::string>(written) == expected);

  // ensure_ascii files are written with \u escapes (DEL included, as Python does), surrogate pairs for
  // astral characters; otherwise only control characters are escaped.
  Notebook::Layout ascii{" ", "\n", true, false, true};
  CHECK(serialize_json(nlohmann::ordered_json("é😀\x1b\x7f"), ascii) == "\"\\u00e9\\ud83d\\ude00\\u001b\\u007f\"\n");
  Notebook::Layout raw{" ", "\n", false, false, true};
  CHECK(serialize_json(nlohmann::ordered_json("é\x7f\x1b"), raw) == "\"é\x7f\\u001b\"\n");
}

TEST_CASE("notebook: invalid JSON names the line and column") {
  auto parsed = parse_notebook("nb.ipynb", "{\n \"cells\": [\n  {\"x\": 1,}\n ]\n}\n");
  REQUIRE(std::holds_alternative<NotebookError>(parsed));
  const std::string& message = std::get<NotebookError>(parsed).message;
  CHECK(message.starts_with("nb.ipynb:3:"));
  CHECK(message.find("invalid notebook JSON") != std::string::npos);
  auto old = parse_notebook("nb.ipynb", "{\"nbformat\": 3, \"worksheets\": []}");
  REQUIRE(std::holds_alternative<NotebookError>(old));
  CHECK(std::get<NotebookError>(old).message.find("nbformat 3") != std::string::npos);
}

TEST_CASE("notebook: fix_all applies no fix touching a protected range, and moves the ranges") {
  const std::string src =
      "import torch\n\n\n@torch.compile\ndef f(x):\n    if x.sum() > 0:\n        x = x + x\n    return x + 0\n\n\n"
      "@torch.compile\ndef g(x):\n    if x.sum() > 0:\n        x = x - 1\n    return x\n";
  const std::string kept = "        x = x - 1";
  const auto at = static_cast<uint32_t>(src.find(kept));
  FixOptions options;
  options.protected_ranges = {{at, at + static_cast<uint32_t>(kept.size())}};
  const FixAllResult fixed = fix_all("m.py", src, Config{}, options);
  CHECK(fixed.text.find("x = torch.where(x.sum() > 0, x + x, x)") != std::string::npos);
  CHECK(fixed.text.find("    if x.sum() > 0:\n" + kept) != std::string::npos);  // g's fix was not applied
  REQUIRE(fixed.protected_ranges.size() == 1);
  CHECK(fixed.text.substr(fixed.protected_ranges[0].start, kept.size()) == kept);
  CHECK(fixed.protected_ranges[0].end - fixed.protected_ranges[0].start == kept.size());
}

TEST_CASE("notebook: a fix with edits in two cells spans the boundary between them") {
  VirtualText v = build_virtual_text({{1, "a = 1"}, {2, "b = 2"}});
  CHECK_FALSE(touches_protected({{{0, 0}, "import torch\n"}}, v.protected_ranges));
  CHECK_FALSE(touches_protected({{{6, 6}, "import torch\n"}, {{10, 11}, "3"}}, v.protected_ranges));
  CHECK(touches_protected({{{0, 0}, "import torch\n"}, {{10, 11}, "3"}}, v.protected_ranges));
}
