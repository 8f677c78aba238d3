// One Python source file: its text, line index and tree-sitter tree, reparsed incrementally.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <tree_sitter/api.h>

#include "graphmend/analysis/text.h"

namespace graphmend {

class Document {
 public:
  Document(std::string path, std::string text);
  ~Document();
  Document(const Document&) = delete;
  Document& operator=(const Document&) = delete;
  Document(Document&&) noexcept;
  Document& operator=(Document&&) noexcept;

  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  const LineIndex& lines() const { return lines_; }
  TSTree* tree() const { return tree_; }
  TSNode root() const;

  // Replaces `range` with `new_text`, tells tree-sitter about the edit and reparses reusing the old tree.
  void apply_edit(ByteRange range, std::string_view new_text);
  void replace_text(std::string text);

  // Where the text and the tree changed since the last call (edits and the syntax they changed, as one
  // range of the current text; `delta` is the change in size), or nullopt when the text was replaced
  // wholesale or first parsed. `unchanged` is true when nothing was edited at all.
  struct Changes {
    bool unchanged = true;
    ByteRange region;
    int64_t delta = 0;
  };
  std::optional<Changes> take_changes();

  bool has_syntax_errors() const;
  // Ranges of ERROR and MISSING nodes: analysis reports nothing inside them.
  std::vector<ByteRange> error_ranges() const;

  std::string_view node_text(TSNode node) const;

 private:
  void reparse(TSTree* old_tree);

  std::string path_;
  std::string text_;
  LineIndex lines_;
  TSParser* parser_ = nullptr;
  TSTree* tree_ = nullptr;
  std::optional<Changes> changes_;  // nullopt: not known (a fresh parse)
};

ByteRange node_range(TSNode node);

}  // namespace graphmend
