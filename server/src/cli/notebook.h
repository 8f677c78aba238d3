// Jupyter notebooks (.ipynb, nbformat 4): the Python code cells joined into one text for the analyser
// (so a model defined in one cell and compiled in another is found), IPython syntax neutralised without
// moving any other code, and the notebook written back with only the fixed cells' sources changed.
//
// The joined ("virtual") text is each analysed cell's text followed by a newline when it does not end
// with one (ruff's concatenation). IPython lines (`%magic`, `!shell`, `obj?`, `x = !cmd`, a Python cell
// magic's `%%time` line) are replaced by a placeholder of the same bytes (`...` then spaces; `#` on a
// continuation line), so offsets, lines and the columns of all other code are the cell's own. A cell
// whose cell magic is not Python (`%%bash`, `%%writefile`, ...) is left out. The cell separators and the
// IPython lines are "protected" ranges that no fix may touch (FixOptions::protected_ranges): a fix never
// spans two cells and never edits a magic.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "graphmend/analysis/finding.h"
#include "graphmend/analysis/text.h"

namespace graphmend::cli {

// `.ipynb`, in any case.
bool is_notebook_path(const std::filesystem::path& path);

// One cell's text with its IPython syntax neutralised.
struct NeutralisedCell {
  std::string python;    // same size as the cell's text; IPython lines replaced by placeholders
  bool skipped = false;  // a cell magic whose body is not Python: the cell is not analysed
  struct IPythonLine {
    ByteRange range;  // the replaced bytes in `python` (a line, or its tail after `x = `)
    ByteRange guard;  // the whole line(s), with the newline after them: no fix may touch it
    std::string original;
  };
  std::vector<IPythonLine> ipython;
};
NeutralisedCell neutralise_ipython(std::string_view cell);

// The analysed code cells joined into one text.
struct VirtualText {
  std::string text;
  struct Cell {
    size_t source = 0;           // index into the cells given to build_virtual_text
    uint32_t number = 0;         // the cell's 1-based number in the notebook (every cell counted, as Jupyter does)
    uint32_t offset = 0;         // byte offset in `text` where the cell starts
    uint32_t line = 0;           // 0-based line in `text` where the cell starts
    bool added_newline = false;  // the newline after the cell was added (its text did not end with one)
  };
  std::vector<Cell> cells;
  // Ranges no fix may touch, in order: each cell's IPython lines, then the newline ending the cell.
  std::vector<ByteRange> protected_ranges;
  struct Guard {
    size_t cell = 0;            // index into `cells`
    bool separator = false;     // the newline ending the cell; otherwise an IPython line
    uint32_t restore_from = 0;  // IPython line: where its placeholder starts, from the guard's start
    std::string original;       // IPython line: the text the placeholder stands for
  };
  std::vector<Guard> guards;  // parallel to protected_ranges

  // Cell starts as FileReport::cell_starts and FileReport::cell_numbers take them.
  std::vector<uint32_t> cell_starts() const;
  std::vector<uint32_t> cell_numbers() const;
};

struct CodeCellText {
  uint32_t number = 0;  // 1-based, in the notebook
  std::string text;
};
VirtualText build_virtual_text(const std::vector<CodeCellText>& cells);

// The cells' texts (parallel to `virt.cells`) from `fixed`, a text fix_all made of `virt.text`, and
// `moved`, where fix_all moved `virt.protected_ranges` to. The IPython lines come back as they were.
std::vector<std::string> split_virtual_text(const VirtualText& virt, std::string_view fixed,
                                            const std::vector<ByteRange>& moved);
// `virt` for `fixed`: the same cells and guards, at the offsets and lines `moved` gives them.
VirtualText moved_virtual_text(const VirtualText& virt, std::string fixed, const std::vector<ByteRange>& moved);

// Findings whose fix would touch a protected range (span two cells, or edit an IPython line) lose the
// fix, with a reason saying so.
void drop_cross_cell_fixes(std::vector<Finding>& findings, const std::vector<ByteRange>& protected_ranges);

// A parsed .ipynb file.
struct Notebook {
  nlohmann::ordered_json json;
  bool python = true;    // the notebook's language (metadata language_info / kernelspec) is Python
  std::string language;  // as the metadata names it, "" when it names none
  struct CodeCell {
    size_t index = 0;    // in json["cells"]
    std::string source;  // joined
  };
  std::vector<CodeCell> code_cells;  // the Python code cells, in order
  VirtualText virt;                  // from code_cells (virt.cells[i].source indexes code_cells)
  // How the file is laid out (indent, escapes, newline), when serialising it gives its bytes back;
  // otherwise why the notebook cannot be written without reformatting it.
  struct Layout {
    std::string indent;  // one level; empty: on one line
    std::string newline = "\n";
    bool ensure_ascii = false;
    bool compact_separators = false;  // "," and ":" (no indent only)
    bool final_newline = true;
  };
  std::optional<Layout> layout;
  std::string layout_problem;
};

struct NotebookError {
  std::string message;  // "path:line:col: ..." or "path: ..."
};

// Parses a notebook's text (UTF-8, BOM removed). An invalid JSON text is an error naming the line and
// column; so is a document that is no nbformat 4 notebook.
std::variant<Notebook, NotebookError> parse_notebook(const std::string& display_path, std::string_view text);

// The notebook's text with the code cells' sources replaced (`sources` parallel to notebook.virt.cells),
// each written as the cell had it (a list of lines or one string), everything else byte for byte as it
// was. An error when the file's layout could not be reproduced (nothing may be written then).
std::variant<std::string, NotebookError> write_notebook(const std::string& display_path, const Notebook& notebook,
                                                        const std::vector<std::string>& sources);

// Python's json.dumps(value, indent=..., ensure_ascii=...) for `layout` (nbformat's and VS Code's output).
std::string serialize_json(const nlohmann::ordered_json& value, const Notebook::Layout& layout);

}  // namespace graphmend::cli
