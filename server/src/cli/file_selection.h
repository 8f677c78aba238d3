// Which files `graphmend check` (and the language server) look at, as ruff selects them: the folders
// given are walked, skipping what `exclude`/`extend-exclude` match and, with `respect-gitignore`, what
// the repository's .gitignore files, .git/info/exclude and .ignore files ignore. Paths given
// explicitly are always checked, unless `force-exclude` applies the exclude patterns to them too.
#pragma once

#include <array>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/analysis/config.h"

namespace graphmend::cli {

// An `exclude` or `extend-exclude` pattern and the folder it is relative to (see path_matches).
struct ExcludePattern {
  std::string glob;
  std::filesystem::path base;  // absolute
};

struct FileSelection {
  std::vector<ExcludePattern> exclude;  // `exclude` and `extend-exclude` together
  // The configuration's folder (the current one without configuration): force-exclude matches an
  // explicit path and its folders below this one.
  std::filesystem::path root;
  bool respect_gitignore = true;
  bool force_exclude = false;
};

// The selection of `config`: its patterns relative to its folder (without a pyproject.toml, to the
// current folder).
FileSelection selection_of(const Config& config);

// Whether `path` (a file or folder) matches an exclude pattern, or one of its folders below
// `selection.root` does. Ignore files are not consulted.
bool is_excluded(const std::filesystem::path& path, const FileSelection& selection);

// The selection that applies to the entries of a folder (given as an absolute, normal path).
using SelectionFor = std::function<FileSelection(const std::filesystem::path& folder)>;

// What discovery returns from the folders it walks: Python files and Jupyter notebooks.
inline constexpr std::array<std::string_view, 2> kSourceExtensions{".py", ".ipynb"};

// Every file with one of `extensions` under `paths`, once (by the first of its names), sorted. A path
// given explicitly must be a regular file (of any extension) or a folder; folders are walked without
// following directory symlinks, and FIFOs, sockets and devices inside them are skipped. Problems
// (missing paths, unreadable folders, other kinds of files) go to `errors`.
std::vector<std::filesystem::path> discover_files(const std::vector<std::filesystem::path>& paths,
                                                  const SelectionFor& selection_for, std::vector<std::string>& errors,
                                                  std::span<const std::string_view> extensions = kSourceExtensions);

}  // namespace graphmend::cli
