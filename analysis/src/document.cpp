#include "graphmend/analysis/document.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "graphmend/analysis/phase_timing.h"

extern "C" const TSLanguage* tree_sitter_python(void);

namespace graphmend {
namespace {

// A "\r" not followed by "\n": a line break for CPython, a space for tree-sitter-python.
bool lone_cr(std::string_view text, size_t i) {
  return text[i] == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n');
}

// The tree-sitter point of `offset`: (row, byte column). "\n" starts a row, and so does a lone "\r", which
// the parser reads as "\n": the rows are `lines`' (the LineIndex of `text`).
TSPoint point_at(const LineIndex& lines, uint32_t offset) {
  const uint32_t row = lines.line_of(offset);
  return TSPoint{row, offset - lines.line_start(row)};
}

// `from` (the point of `start`) moved over text[start, end).
TSPoint advance(TSPoint from, const std::string& text, uint32_t start, uint32_t end) {
  TSPoint point = from;
  for (uint32_t i = start; i < end && i < text.size(); ++i) {
    if (text[i] == '\n' || lone_cr(text, i)) {
      ++point.row;
      point.column = 0;
    } else {
      ++point.column;
    }
  }
  return point;
}

// ERROR and MISSING nodes in order, with a cursor: a recursion would follow the tree's depth, which
// hostile input makes as large as its length.
void collect_errors(TSNode root, std::vector<ByteRange>& out) {
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  for (bool more = true; more;) {
    const TSNode node = ts_tree_cursor_current_node(&cursor);
    const bool error = std::string_view(ts_node_type(node)) == "ERROR" || ts_node_is_missing(node);
    if (error) out.push_back(node_range(node));
    if (!error && ts_node_has_error(node) && ts_tree_cursor_goto_first_child(&cursor)) continue;
    while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
      if (!ts_tree_cursor_goto_parent(&cursor)) {
        more = false;
        break;
      }
    }
  }
  ts_tree_cursor_delete(&cursor);
}

}  // namespace

ByteRange node_range(TSNode node) { return {ts_node_start_byte(node), ts_node_end_byte(node)}; }

Document::Document(std::string path, std::string text)
    : Document(std::move(path), std::make_shared<const std::string>(std::move(text))) {}

Document::Document(std::string path, std::shared_ptr<const std::string> text)
    : path_(std::move(path)), text_(text ? std::move(text) : std::make_shared<const std::string>()) {
  parser_ = ts_parser_new();
  ts_parser_set_language(parser_, tree_sitter_python());
  text_changed();
  parse(std::chrono::microseconds{0});
}

Document::~Document() {
  if (base_) ts_tree_delete(base_);
  if (tree_) ts_tree_delete(tree_);
  if (parser_) ts_parser_delete(parser_);
}

Document::Document(Document&& other) noexcept
    : path_(std::move(other.path_)),
      text_(std::move(other.text_)),
      lines_(std::move(other.lines_)),
      tokenizer_(std::move(other.tokenizer_)),
      parse_text_(std::move(other.parse_text_)),
      parser_(std::exchange(other.parser_, nullptr)),
      tree_(std::exchange(other.tree_, nullptr)),
      parse_pending_(std::exchange(other.parse_pending_, false)),
      base_(std::exchange(other.base_, nullptr)),
      edits_since_base_(other.edits_since_base_) {}

Document& Document::operator=(Document&& other) noexcept {
  if (this != &other) {
    if (tree_) ts_tree_delete(tree_);
    if (base_) ts_tree_delete(base_);
    if (parser_) ts_parser_delete(parser_);
    path_ = std::move(other.path_);
    base_ = std::exchange(other.base_, nullptr);
    parse_pending_ = std::exchange(other.parse_pending_, false);
    edits_since_base_ = other.edits_since_base_;
    text_ = std::move(other.text_);
    lines_ = std::move(other.lines_);
    tokenizer_ = std::move(other.tokenizer_);
    parse_text_ = std::move(other.parse_text_);
    parser_ = std::exchange(other.parser_, nullptr);
    tree_ = std::exchange(other.tree_, nullptr);
  }
  return *this;
}

TSNode Document::root() const { return ts_tree_root_node(tree_); }

void Document::apply_edit(ByteRange range, std::string_view new_text) {
  apply_edit(range, new_text, std::chrono::microseconds{0});
}

bool Document::apply_edit(ByteRange range, std::string_view new_text, std::chrono::microseconds budget) {
  return apply_edit(range, new_text, nullptr, budget);
}

bool Document::apply_edit(ByteRange range, std::string_view new_text, std::shared_ptr<const std::string> edited,
                          std::chrono::microseconds budget) {
  // Held to the end: `text_` is replaced below, and the old text may have no other owner.
  const std::shared_ptr<const std::string> old = text_;
  const std::string& text = *old;
  if (range.end > text.size()) range.end = static_cast<uint32_t>(text.size());
  if (range.start > range.end) range.start = range.end;
  // A "\r" just before the edit may change meaning (lone, or the start of "\r\n"): the edit covers it.
  std::string widened;
  if (range.start > 0 && text[range.start - 1] == '\r') {
    --range.start;
    widened = "\r" + std::string(new_text);
    new_text = widened;
  }
  TSInputEdit edit;
  edit.start_byte = range.start;
  edit.old_end_byte = range.end;
  edit.new_end_byte = range.start + static_cast<uint32_t>(new_text.size());
  // From the old text's line index, which text_changed() then builds for the new one.
  edit.start_point = point_at(lines_, range.start);
  edit.old_end_point = point_at(lines_, range.end);
  const size_t size = text.size() - (range.end - range.start) + new_text.size();
  if (!edited || edited->size() != size) {
    auto built = std::make_shared<std::string>();
    built->reserve(size);
    built->append(text, 0, range.start);
    built->append(new_text);
    built->append(text, range.end, std::string::npos);
    edited = std::move(built);
  }
  text_ = std::move(edited);
  edit.new_end_point = advance(edit.start_point, *text_, edit.start_byte, edit.new_end_byte);
  // tree_ is the last complete tree, or the one a pending parse started from: either way the tree the
  // next parse reuses, edited to match the text. A halted parse is dropped and starts over.
  if (parse_pending_) ts_parser_reset(parser_);
  ts_tree_edit(tree_, &edit);
  text_changed(&edit);
  const bool done = parse(budget);
  if (base_) {
    ts_tree_edit(base_, &edit);
    edits_since_base_ =
        combine(edits_since_base_, {false,
                                    {edit.start_byte, edit.new_end_byte},
                                    static_cast<int64_t>(edit.new_end_byte) - static_cast<int64_t>(edit.old_end_byte)});
  }
  return done;
}

void Document::text_changed(const TSInputEdit* edit) {
  const std::string& text = *text_;
  lines_ = LineIndex(text);
  if (edit)
    tokenizer_.edited(text, edit->start_byte, edit->old_end_byte, edit->new_end_byte);
  else
    tokenizer_ = TokenizerCheck(text);
  parse_text_.clear();
  for (size_t i = text.find('\r'); i != std::string::npos; i = text.find('\r', i + 1)) {
    if (!lone_cr(text, i)) continue;
    if (parse_text_.empty()) parse_text_ = text;
    parse_text_[i] = '\n';
  }
}

bool Document::parse(std::chrono::microseconds budget) {
  timing::Scope parsing(timing::Phase::Parse);
  const std::string& source = parse_text_.empty() ? *text_ : parse_text_;
  ts_parser_set_timeout_micros(parser_, static_cast<uint64_t>(budget.count()));
  TSTree* fresh = ts_parser_parse_string(parser_, tree_, source.data(), static_cast<uint32_t>(source.size()));
  ts_parser_set_timeout_micros(parser_, 0);
  parse_pending_ = fresh == nullptr;  // halted by the budget: resumed by finish_parse()
  if (fresh) {
    if (tree_) ts_tree_delete(tree_);
    tree_ = fresh;
  }
  return fresh != nullptr;
}

bool Document::finish_parse(std::chrono::microseconds budget) { return !parse_pending_ || parse(budget); }

std::optional<Document::Changes> Document::changes_since_base() const {
  if (!base_) return std::nullopt;
  if (edits_since_base_.unchanged) return edits_since_base_;
  // The syntax that differs (tree-sitter's recovery can restructure far beyond an edit, and back).
  Changes out = edits_since_base_;
  uint32_t count = 0;
  TSRange* ranges = ts_tree_get_changed_ranges(base_, tree_, &count);
  for (uint32_t i = 0; i < count; ++i) {
    out.region.start = std::min(out.region.start, ranges[i].start_byte);
    out.region.end = std::max(out.region.end, ranges[i].end_byte);
  }
  std::free(ranges);
  return out;
}

void Document::rebase() {
  if (base_) ts_tree_delete(base_);
  base_ = ts_tree_copy(tree_);
  edits_since_base_ = Changes{};
}

Document::Changes Document::combine(const Changes& earlier, const Changes& later) {
  if (earlier.unchanged) return later;
  if (later.unchanged) return earlier;
  // Carry the earlier region through the later change: positions before it stay, positions after
  // what it replaced move by its delta, positions inside it widen to its bounds.
  const int64_t later_old_end = static_cast<int64_t>(later.region.end) - later.delta;
  auto carry = [&](uint32_t pos, bool is_end) -> uint32_t {
    if (pos < later.region.start) return pos;
    if (pos > later_old_end || (is_end && pos == later_old_end)) return static_cast<uint32_t>(pos + later.delta);
    return is_end ? later.region.end : later.region.start;
  };
  Changes out{false, later.region, earlier.delta + later.delta};
  out.region.start = std::min(out.region.start, carry(earlier.region.start, false));
  out.region.end = std::max(out.region.end, carry(earlier.region.end, true));
  return out;
}

void Document::replace_text(std::string text) { replace_text(std::make_shared<const std::string>(std::move(text))); }

void Document::replace_text(std::shared_ptr<const std::string> text) {
  text_ = text ? std::move(text) : std::make_shared<const std::string>();
  if (parse_pending_) ts_parser_reset(parser_);
  if (base_) ts_tree_delete(base_);
  base_ = nullptr;
  if (tree_) ts_tree_delete(tree_);
  tree_ = nullptr;  // parsed from scratch
  text_changed();
  parse(std::chrono::microseconds{0});
}

bool Document::has_syntax_errors() const { return tokenizer_.error() || ts_node_has_error(root()); }

std::vector<ByteRange> Document::error_ranges() const {
  std::vector<ByteRange> out;
  for (const Problem& p : syntax_errors()) out.push_back(p.range);
  return out;
}

std::vector<Problem> Document::syntax_errors() const {
  std::vector<ByteRange> ranges;
  collect_errors(root(), ranges);
  std::vector<Problem> out;
  for (ByteRange r : ranges) out.push_back({Problem::Kind::Syntax, r, "SyntaxError: invalid syntax"});
  if (const auto& tokenizer_error = tokenizer_.error()) {
    const Problem p{Problem::Kind::Syntax, tokenizer_error->range, tokenizer_error->message};
    auto at = std::find_if(out.begin(), out.end(), [&](const Problem& q) { return q.range.start > p.range.start; });
    out.insert(at, p);
  }
  return out;
}

std::string_view Document::node_text(TSNode node) const {
  uint32_t start = ts_node_start_byte(node), end = ts_node_end_byte(node);
  if (end > text_->size() || start > end) return {};
  return std::string_view(*text_).substr(start, end - start);
}

}  // namespace graphmend
