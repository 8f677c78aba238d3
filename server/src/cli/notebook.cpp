#include "cli/notebook.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>

#include "graphmend/transforms/fixer.h"

namespace graphmend::cli {
using nlohmann::ordered_json;

bool is_notebook_path(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".ipynb";
}

namespace {

// Cell magics whose body is Python run in the kernel (ruff's list).
constexpr std::array<std::string_view, 9> kPythonCellMagics{"capture", "debug",   "prun", "pypy",  "python",
                                                            "python2", "python3", "time", "timeit"};

struct Line {
  size_t start = 0;        // first byte
  size_t content_end = 0;  // before "\r\n" / "\n"
  size_t next = 0;         // after the newline (== size for the last line without one)
};

std::vector<Line> split_cell_lines(std::string_view text) {
  std::vector<Line> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    size_t content_end = end > start && text[end - 1] == '\r' ? end - 1 : end;
    lines.push_back({start, content_end, nl == std::string_view::npos ? text.size() : nl + 1});
    start = lines.back().next;
  }
  return lines;
}

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// IPython's help syntax at the end of a line: `obj?`, `obj.attr??`, `%magic?` (IPython's help_end).
bool is_help_line(std::string_view s) {
  if (s.empty() || s.back() != '?') return false;
  s.remove_suffix(1);
  if (!s.empty() && s.back() == '?') s.remove_suffix(1);
  size_t i = 0;
  while (i < s.size() && i < 2 && s[i] == '%') ++i;
  if (i == s.size()) return false;
  bool segment_start = true;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.') {
      if (segment_start) return false;
      segment_start = true;
      continue;
    }
    if (segment_start && !(std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '*')) return false;
    if (!is_name_char(c) && c != '*') return false;
    segment_start = false;
  }
  return !segment_start;
}

// Where the IPython syntax starts on a line that begins a logical line, if it is IPython's: an escape
// (`!`, `%`, `?`, and the autocall escapes `/`, `,`, `;`, none of which can start a Python statement),
// a help request (`obj?`), or an assignment from one (`files = !ls`, `t = %timeit -o f()`).
std::optional<size_t> ipython_at(std::string_view line) {
  size_t k = line.find_first_not_of(" \t");
  if (k == std::string_view::npos) return std::nullopt;
  const char c = line[k];
  if (c == '!' || c == '%' || c == '?' || c == '/' || c == ',' || c == ';') return k;
  std::string_view stripped = line.substr(k);
  while (!stripped.empty() && (stripped.back() == ' ' || stripped.back() == '\t')) stripped.remove_suffix(1);
  if (is_help_line(stripped)) return k;
  // lhs = !cmd / lhs = %magic, lhs names separated by commas (IPython's assign_from_system/magic).
  size_t i = k;
  bool any = false;
  while (i < line.size()) {
    size_t name_start = i;
    while (i < line.size() && (is_name_char(line[i]) || line[i] == '.')) ++i;
    if (i == name_start) return std::nullopt;
    any = true;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i < line.size() && line[i] == ',') {
      ++i;
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      continue;
    }
    break;
  }
  if (!any || i >= line.size() || line[i] != '=') return std::nullopt;
  ++i;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i < line.size() && (line[i] == '!' || line[i] == '%')) return i;
  return std::nullopt;
}

// Bytes of `n` that stand for an IPython expression: `...` padded with spaces (a valid statement and
// expression), shorter forms below three bytes.
std::string placeholder(size_t n) {
  if (n >= 3) return "..." + std::string(n - 3, ' ');
  return n == 2 ? "()" : n == 1 ? "0" : "";
}

// Python's lexical state across lines, enough to know where logical lines start.
struct LexState {
  char quote = 0;  // the open string's quote
  bool triple = false;
  int depth = 0;              // open brackets
  bool continuation = false;  // the last line ended with a backslash outside strings

  bool at_logical_line_start() const { return quote == 0 && depth == 0 && !continuation; }

  void scan(std::string_view line) {
    continuation = false;
    bool escaped_newline = false;
    for (size_t j = 0; j < line.size();) {
      const char ch = line[j];
      if (quote != 0) {
        if (ch == '\\') {
          if (j + 1 == line.size()) escaped_newline = true;
          j += 2;
          continue;
        }
        if (triple) {
          if (ch == quote && line.substr(j, 3) == std::string(3, quote)) {
            quote = 0;
            j += 3;
            continue;
          }
        } else if (ch == quote) {
          quote = 0;
        }
        ++j;
        continue;
      }
      if (ch == '#') break;
      if (ch == '"' || ch == '\'') {
        quote = ch;
        triple = line.substr(j, 3) == std::string(3, ch);
        j += triple ? 3 : 1;
        continue;
      }
      if (ch == '(' || ch == '[' || ch == '{') ++depth;
      if ((ch == ')' || ch == ']' || ch == '}') && depth > 0) --depth;
      if (ch == '\\' && j + 1 == line.size()) continuation = true;
      ++j;
    }
    if (quote != 0 && !triple && !escaped_newline) quote = 0;  // an unterminated string ends with its line
  }
};

}  // namespace

NeutralisedCell neutralise_ipython(std::string_view cell) {
  NeutralisedCell out;
  out.python = std::string(cell);
  const std::vector<Line> lines = split_cell_lines(cell);
  size_t first = 0;
  if (!lines.empty() && cell.substr(0, 2) == "%%") {
    std::string_view head = cell.substr(2, lines[0].content_end - 2);
    std::string_view name = head.substr(0, head.find_first_of(" \t"));
    if (std::find(kPythonCellMagics.begin(), kPythonCellMagics.end(), name) == kPythonCellMagics.end()) {
      out.skipped = true;
      return out;
    }
    const Line& l = lines[0];
    out.python.replace(l.start, l.content_end - l.start, placeholder(l.content_end - l.start));
    out.ipython.push_back({{static_cast<uint32_t>(l.start), static_cast<uint32_t>(l.content_end)},
                           {static_cast<uint32_t>(l.start), static_cast<uint32_t>(l.next)},
                           std::string(cell.substr(l.start, l.content_end - l.start))});
    first = 1;
  }
  LexState lex;
  for (size_t i = first; i < lines.size(); ++i) {
    const Line& l = lines[i];
    std::string_view content = cell.substr(l.start, l.content_end - l.start);
    std::optional<size_t> at = lex.at_logical_line_start() ? ipython_at(content) : std::nullopt;
    if (!at) {
      lex.scan(content);
      continue;
    }
    // The escape's text runs on over lines ending with a backslash.
    size_t last = i;
    while (last + 1 < lines.size()) {
      const Line& m = lines[last];
      if (m.content_end == m.start || cell[m.content_end - 1] != '\\') break;
      ++last;
    }
    const size_t from = l.start + *at;
    out.python.replace(from, l.content_end - from, placeholder(l.content_end - from));
    for (size_t k = i + 1; k <= last; ++k) {
      const Line& m = lines[k];
      if (m.content_end > m.start)
        out.python.replace(m.start, m.content_end - m.start, "#" + std::string(m.content_end - m.start - 1, ' '));
    }
    out.ipython.push_back({{static_cast<uint32_t>(from), static_cast<uint32_t>(lines[last].content_end)},
                           {static_cast<uint32_t>(l.start), static_cast<uint32_t>(lines[last].next)},
                           std::string(cell.substr(from, lines[last].content_end - from))});
    i = last;
  }
  return out;
}

std::vector<uint32_t> VirtualText::cell_starts() const {
  std::vector<uint32_t> out;
  for (const Cell& c : cells) out.push_back(c.line);
  return out;
}

std::vector<uint32_t> VirtualText::cell_numbers() const {
  std::vector<uint32_t> out;
  for (const Cell& c : cells) out.push_back(c.number);
  return out;
}

VirtualText build_virtual_text(const std::vector<CodeCellText>& cells) {
  VirtualText v;
  for (size_t s = 0; s < cells.size(); ++s) {
    NeutralisedCell n = neutralise_ipython(cells[s].text);
    if (n.skipped) continue;
    const uint32_t offset = static_cast<uint32_t>(v.text.size());
    const size_t index = v.cells.size();
    const bool added = n.python.empty() || n.python.back() != '\n';
    v.cells.push_back({s, cells[s].number, offset, 0, added});
    v.text += n.python;
    if (added) v.text += '\n';
    const uint32_t separator = static_cast<uint32_t>(v.text.size() - 1);
    for (const auto& line : n.ipython) {
      ByteRange guard{offset + line.guard.start, offset + line.guard.end};
      if (guard.end == separator) guard.end = separator + 1;  // the last line: its newline is the separator
      v.protected_ranges.push_back(guard);
      v.guards.push_back({index, false, line.range.start - line.guard.start, line.original});
    }
    v.protected_ranges.push_back({separator, separator + 1});
    v.guards.push_back({index, true, 0, {}});
  }
  LineIndex lines(v.text);
  for (auto& c : v.cells) c.line = lines.line_of(c.offset);
  return v;
}

std::vector<std::string> split_virtual_text(const VirtualText& virt, std::string_view fixed,
                                            const std::vector<ByteRange>& moved) {
  if (moved.size() != virt.guards.size()) throw std::logic_error("notebook: protected ranges lost");
  std::vector<std::string> out;
  size_t start = 0;
  std::vector<std::pair<size_t, const std::string*>> restore;  // (offset in `fixed`, original)
  for (size_t g = 0; g < virt.guards.size(); ++g) {
    const VirtualText::Guard& guard = virt.guards[g];
    const ByteRange r = moved[g];
    if (r.end > fixed.size() || r.start < start) throw std::logic_error("notebook: protected ranges out of order");
    if (!guard.separator) {
      restore.emplace_back(r.start + guard.restore_from, &guard.original);
      continue;
    }
    const bool added = virt.cells[guard.cell].added_newline;
    std::string cell(fixed.substr(start, (added ? r.start : r.end) - start));
    for (const auto& [at, original] : restore) {
      const size_t local = at - start;
      if (local + original->size() > cell.size() ||
          cell.compare(local, original->size(), placeholder(original->size())) != 0) {
        // Placeholders of continuation lines differ; the first line's is checked where it can be.
        if (original->find('\n') == std::string::npos) throw std::logic_error("notebook: an IPython line was edited");
      }
      cell.replace(local, original->size(), *original);
    }
    restore.clear();
    out.push_back(std::move(cell));
    start = r.end;
  }
  return out;
}

VirtualText moved_virtual_text(const VirtualText& virt, std::string fixed, const std::vector<ByteRange>& moved) {
  VirtualText v = virt;
  v.text = std::move(fixed);
  v.protected_ranges = moved;
  uint32_t next_start = 0;
  for (size_t g = 0; g < v.guards.size(); ++g) {
    if (!v.guards[g].separator) continue;
    v.cells[v.guards[g].cell].offset = next_start;
    next_start = moved[g].end;
  }
  LineIndex lines(v.text);
  for (auto& c : v.cells) c.line = lines.line_of(c.offset);
  return v;
}

void drop_cross_cell_fixes(std::vector<Finding>& findings, const std::vector<ByteRange>& protected_ranges) {
  for (Finding& f : findings) {
    if (!f.fix || !touches_protected(f.fix->edits, protected_ranges)) continue;
    f.fix.reset();
    f.no_fix_reason = "the fix would span two notebook cells or edit an IPython line";
  }
}

// ---------------------------------------------------------------------------------------------------
// The .ipynb file.

namespace {

void append_escaped(std::string& out, std::string_view s, bool ensure_ascii) {
  static constexpr char kHex[] = "0123456789abcdef";
  auto u = [&](uint32_t cp) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(cp >> shift) & 0xF];
  };
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20 || (c == 0x7F && ensure_ascii)) {  // Python's ensure_ascii escapes DEL too
      u(c);
    } else if (c < 0x80 || !ensure_ascii) {
      out += static_cast<char>(c);
    } else {
      // A UTF-8 sequence (nlohmann validated it) as \uXXXX, astral characters as a surrogate pair.
      int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
      uint32_t cp = c & (0x3F >> extra);
      for (int k = 0; k < extra && i + 1 < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[++i]) & 0x3F);
      if (cp > 0xFFFF) {
        cp -= 0x10000;
        u(0xD800 + (cp >> 10));
        u(0xDC00 + (cp & 0x3FF));
      } else {
        u(cp);
      }
    }
  }
  out += '"';
}

void dump(std::string& out, const ordered_json& v, const Notebook::Layout& layout, int depth) {
  const bool indented = !layout.indent.empty();
  auto newline = [&](int d) {
    out += layout.newline;
    for (int i = 0; i < d; ++i) out += layout.indent;
  };
  const std::string item_separator = indented || layout.compact_separators ? "," : ", ";
  const std::string key_separator = layout.compact_separators ? ":" : ": ";
  switch (v.type()) {
    case ordered_json::value_t::string:
      append_escaped(out, v.get_ref<const std::string&>(), layout.ensure_ascii);
      return;
    case ordered_json::value_t::array: {
      if (v.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      bool first = true;
      for (const auto& e : v) {
        if (!first) out += item_separator;
        first = false;
        if (indented) newline(depth + 1);
        dump(out, e, layout, depth + 1);
      }
      if (indented) newline(depth);
      out += ']';
      return;
    }
    case ordered_json::value_t::object: {
      if (v.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      bool first = true;
      for (const auto& [key, e] : v.items()) {
        if (!first) out += item_separator;
        first = false;
        if (indented) newline(depth + 1);
        append_escaped(out, key, layout.ensure_ascii);
        out += key_separator;
        dump(out, e, layout, depth + 1);
      }
      if (indented) newline(depth);
      out += '}';
      return;
    }
    default:
      out += v.dump();
      return;  // null, booleans, numbers: JSON's own spelling
  }
}

// 1-based line and column (in code points) of `offset`.
std::pair<size_t, size_t> line_column(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return {line, 1 + utf32_length(text.substr(line_start, offset - line_start))};
}

std::string joined_source(const ordered_json& source) {
  if (source.is_string()) return source.get<std::string>();
  std::string out;
  for (const auto& part : source) out += part.get_ref<const std::string&>();
  return out;
}

std::optional<std::string> string_at(const ordered_json& j, const char* pointer) {
  try {
    const ordered_json::json_pointer p(pointer);
    if (!j.contains(p) || !j.at(p).is_string()) return std::nullopt;
    return j.at(p).get<std::string>();
  } catch (const ordered_json::exception&) {
    return std::nullopt;  // a member on the way is not an object
  }
}

}  // namespace

std::string serialize_json(const ordered_json& value, const Notebook::Layout& layout) {
  std::string out;
  dump(out, value, layout, 0);
  if (layout.final_newline) out += layout.newline;
  return out;
}

std::variant<Notebook, NotebookError> parse_notebook(const std::string& display_path, std::string_view text) {
  Notebook nb;
  try {
    nb.json = ordered_json::parse(text);
  } catch (const ordered_json::parse_error& e) {
    std::string message = e.what();
    size_t at = message.find("column");
    at = message.find(": ", at == std::string::npos ? message.find("parse error") : at);
    if (at != std::string::npos) message = message.substr(at + 2);
    // nlohmann names the last byte it read: the error is at the start of the token that ends there.
    size_t at_byte = std::min(e.byte > 0 ? e.byte - 1 : 0, text.size());
    if (at_byte < text.size() && text[at_byte] == '"') {
      size_t open = at_byte;
      while (open > 0) {
        --open;
        size_t backslashes = 0;
        while (open >= backslashes + 1 && text[open - backslashes - 1] == '\\') ++backslashes;
        if (text[open] == '"' && backslashes % 2 == 0) break;
      }
      at_byte = open;
    } else {
      auto word = [&](size_t i) {
        return std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '-' || text[i] == '+' || text[i] == '.';
      };
      if (at_byte < text.size() && word(at_byte))
        while (at_byte > 0 && word(at_byte - 1)) --at_byte;
    }
    auto [line, column] = line_column(text, at_byte);
    return NotebookError{display_path + ":" + std::to_string(line) + ":" + std::to_string(column) +
                         ": invalid notebook JSON: " + message};
  }
  auto fail = [&](const std::string& why) { return NotebookError{display_path + ": not a Jupyter notebook: " + why}; };
  if (!nb.json.is_object()) return fail("the JSON document is not an object");
  if (nb.json.contains("nbformat")) {
    const auto& version = nb.json["nbformat"];
    if (!version.is_number_integer()) return fail("`nbformat` is not a number");
    if (version.get<int64_t>() < 4)
      return NotebookError{display_path + ": nbformat " + version.dump() +
                           " notebooks are not supported (convert it: `jupyter nbconvert --to notebook --inplace`)"};
  }
  if (!nb.json.contains("cells") || !nb.json["cells"].is_array()) return fail("no `cells` list");
  std::optional<std::string> language = string_at(nb.json, "/metadata/language_info/name");
  if (!language) language = string_at(nb.json, "/metadata/kernelspec/language");
  nb.language = language.value_or("");
  std::string lower = nb.language;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  nb.python = lower.empty() || lower.starts_with("python");
  const auto& cells = nb.json["cells"];
  for (size_t i = 0; i < cells.size(); ++i) {
    const auto& cell = cells[i];
    const std::string where = "cell " + std::to_string(i + 1) + ": ";
    if (!cell.is_object() || !cell.contains("cell_type") || !cell["cell_type"].is_string())
      return fail(where + "no `cell_type`");
    if (cell["cell_type"] != "code") continue;
    if (!cell.contains("source")) return fail(where + "no `source`");
    const auto& source = cell["source"];
    bool lines =
        source.is_array() && std::all_of(source.begin(), source.end(), [](const auto& s) { return s.is_string(); });
    if (!source.is_string() && !lines) return fail(where + "`source` is neither a string nor a list of strings");
    // A cell in another language than the kernel's (VS Code records it in the cell's metadata).
    if (auto cell_language = string_at(cell, "/metadata/vscode/languageId");
        cell_language && *cell_language != "python")
      continue;
    nb.code_cells.push_back({i, joined_source(source)});
  }
  if (nb.python) {
    std::vector<CodeCellText> texts;
    for (const auto& c : nb.code_cells) texts.push_back({static_cast<uint32_t>(c.index + 1), c.source});
    nb.virt = build_virtual_text(texts);
  }
  // The layout that gives the file's bytes back, if there is one.
  std::vector<Notebook::Layout> candidates;
  std::string newline = text.find("\r\n") != std::string_view::npos ? "\r\n" : "\n";
  if (text.size() > 1 && text[0] == '{' && text.substr(1, newline.size()) == newline) {
    size_t from = 1 + newline.size();
    size_t to = text.find_first_not_of(" \t", from);
    if (to != std::string_view::npos && to > from) {
      for (bool ascii : {false, true})
        candidates.push_back({std::string(text.substr(from, to - from)), newline, ascii, false, true});
    }
  } else {
    for (bool compact : {false, true})
      for (bool ascii : {false, true}) candidates.push_back({"", "\n", ascii, compact, true});
  }
  for (auto layout : candidates) {
    layout.final_newline = text.ends_with(layout.newline);
    if (serialize_json(nb.json, layout) == text) {
      nb.layout = layout;
      break;
    }
  }
  if (!nb.layout)
    nb.layout_problem =
        "its JSON is not laid out the way Jupyter writes it (indentation, spacing, escapes, key order or number "
        "format), so writing the fixes would reformat the whole file";
  return nb;
}

std::variant<std::string, NotebookError> write_notebook(const std::string& display_path, const Notebook& notebook,
                                                        const std::vector<std::string>& sources) {
  if (!notebook.layout)
    return NotebookError{display_path + ": not written: " + notebook.layout_problem +
                         " (save it from Jupyter, or run `jupyter nbconvert --to notebook --inplace`, then try again)"};
  ordered_json j = notebook.json;
  for (size_t i = 0; i < notebook.virt.cells.size() && i < sources.size(); ++i) {
    const Notebook::CodeCell& cell = notebook.code_cells[notebook.virt.cells[i].source];
    if (sources[i] == cell.source) continue;
    ordered_json& source = j["cells"][cell.index]["source"];
    if (source.is_array()) {
      ordered_json lines = ordered_json::array();
      for (size_t start = 0; start < sources[i].size();) {
        size_t nl = sources[i].find('\n', start);
        size_t end = nl == std::string::npos ? sources[i].size() : nl + 1;
        lines.push_back(sources[i].substr(start, end - start));
        start = end;
      }
      source = std::move(lines);
    } else {
      source = sources[i];
    }
  }
  return serialize_json(j, *notebook.layout);
}

}  // namespace graphmend::cli
