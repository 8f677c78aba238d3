// Reading and writing users' source files without losing anything: encoding checks with positions,
// BOM and line endings kept, atomic replacement that keeps permissions.
#pragma once

#include <filesystem>
#include <optional>
#include <variant>
#include <string>
#include <vector>

namespace graphmend::cli {

struct SourceFile {
  std::filesystem::path path;
  std::string text;   // UTF-8, without the BOM
  bool bom = false;
};

struct ReadError {
  std::string message;  // "path:line:col: ..." or "path: ..."
};

// Reads a Python file; non-UTF-8 bytes and NUL bytes are errors naming the line and column.
std::variant<SourceFile, ReadError> read_source(const std::filesystem::path& path);
std::variant<SourceFile, ReadError> source_from_bytes(const std::filesystem::path& display_path, std::string bytes);

// Writes `text` (BOM restored) next to the file and renames it over the original, keeping its mode.
// Returns an error message on failure; the original is untouched then.
std::optional<std::string> write_source_atomically(const SourceFile& original, const std::string& new_text);

// Every *.py file under `paths` (files are taken as given); skips VCS, virtual environment and build folders,
// does not follow directory symlinks. Problems (unreadable folders, missing paths) go to `errors`.
std::vector<std::filesystem::path> discover_python_files(const std::vector<std::filesystem::path>& paths,
                                                         std::vector<std::string>& errors);

}  // namespace graphmend::cli
