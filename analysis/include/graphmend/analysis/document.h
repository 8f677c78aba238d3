// One Python source file: its text, line index and tree-sitter tree, reparsed incrementally.
#pragma once

#include <tree_sitter/api.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/analysis/finding.h"
#include "graphmend/analysis/text.h"
#include "graphmend/analysis/tokenizer.h"

namespace graphmend {

class Document {
 public:
  Document(std::string path, std::string text);
  // Shares `text` (the language server's snapshot of the version): one copy of each version's text.
  Document(std::string path, std::shared_ptr<const std::string> text);
  ~Document();
  Document(const Document&) = delete;
  Document& operator=(const Document&) = delete;
  Document(Document&&) noexcept;
  Document& operator=(Document&&) noexcept;

  const std::string& path() const { return path_; }
  const std::string& text() const { return *text_; }
  const std::shared_ptr<const std::string>& shared_text() const { return text_; }
  const LineIndex& lines() const { return lines_; }
  TSTree* tree() const { return tree_; }
  TSNode root() const;

  // Replaces `range` with `new_text`, tells tree-sitter about the edit and reparses reusing the old tree.
  void apply_edit(ByteRange range, std::string_view new_text);
  // The same, but the reparse stops after `budget` (0: no limit; tree-sitter's error recovery can take
  // tens of milliseconds on a large file): false when it did not finish. Until finish_parse(), the
  // text is the new one but the tree is not: only text(), lines() and text_changes_since_base() apply.
  bool apply_edit(ByteRange range, std::string_view new_text, std::chrono::microseconds budget);
  // The same with the edited text already made (`edited` is the text with `range` replaced by `new_text`):
  // it is shared, not built again.
  bool apply_edit(ByteRange range, std::string_view new_text, std::shared_ptr<const std::string> edited,
                  std::chrono::microseconds budget);
  bool parse_pending() const { return parse_pending_; }
  // Resumes a halted reparse for at most `budget` (0: to the end); true when the tree is complete.
  bool finish_parse(std::chrono::microseconds budget = std::chrono::microseconds{0});
  void replace_text(std::string text);
  void replace_text(std::shared_ptr<const std::string> text);

  // What changed since the base (the last `rebase()`): the edits and the syntax that differs between
  // the base's tree and the current one, as one range of the current text, with the change in size.
  // Outside `region`, text and tree are the base's (moved by `delta` after it). nullopt when unknown:
  // no base yet, or the text was replaced wholesale.
  struct Changes {
    bool unchanged = true;
    ByteRange region;
    int64_t delta = 0;
    // The same region in the text before the changes.
    ByteRange old_region() const {
      return {region.start, static_cast<uint32_t>(static_cast<int64_t>(region.end) - delta)};
    }
    // Where a position of the text before the changes, outside them, is now.
    uint32_t moved(uint32_t old_pos) const {
      return old_pos >= old_region().end ? static_cast<uint32_t>(static_cast<int64_t>(old_pos) + delta) : old_pos;
    }
  };
  std::optional<Changes> changes_since_base() const;
  // The edits alone (no tree needed); nullopt when unknown.
  std::optional<Changes> text_changes_since_base() const {
    return base_ ? std::optional<Changes>(edits_since_base_) : std::nullopt;
  }
  void rebase();

  // tree-sitter's ERROR and MISSING nodes, or what CPython's tokenizer rejects (indentation).
  bool has_syntax_errors() const;
  // What CPython's tokenizer rejects alone (kept through edits by rescanning around them).
  const std::optional<TokenizerError>& tokenizer_error() const { return tokenizer_.error(); }
  // Their ranges: analysis reports nothing inside them.
  std::vector<ByteRange> error_ranges() const;
  // The same with CPython's words, in order of position ("SyntaxError: invalid syntax" for tree-sitter's).
  std::vector<Problem> syntax_errors() const;

  std::string_view node_text(TSNode node) const;

 private:
  bool parse(std::chrono::microseconds budget);
  // After `text_` changed (by `edit`, or wholesale when null): its line index, tokenizer check and the
  // text tree-sitter reads.
  void text_changed(const TSInputEdit* edit = nullptr);
  // `earlier` followed by `later` as one change of the text before `earlier`.
  static Changes combine(const Changes& earlier, const Changes& later);

  std::string path_;
  // Shared with the server's snapshot of the version; null only in a moved-from Document.
  std::shared_ptr<const std::string> text_;
  LineIndex lines_;  // views *text_, which a move leaves in place
  TokenizerCheck tokenizer_;
  // `text_` with each lone "\r" (old Mac line ends, which CPython reads as line breaks and
  // tree-sitter-python as spaces) made a "\n": same length, same offsets. Empty when there is none.
  std::string parse_text_;
  TSParser* parser_ = nullptr;
  TSTree* tree_ = nullptr;
  bool parse_pending_ = false;
  TSTree* base_ = nullptr;    // the tree at the last rebase(), edited along (positions follow the text)
  Changes edits_since_base_;  // the text edits only
};

ByteRange node_range(TSNode node);

}  // namespace graphmend
