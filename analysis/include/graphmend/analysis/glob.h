// Glob patterns of file selection (`exclude`, `extend-exclude`, `per-file-ignores`) and of .gitignore
// files, with the semantics of ruff's globset: `*`, `?` and `[...]` never match `/`, and a segment
// `**` matches any number of folders.
#pragma once

#include <filesystem>
#include <string_view>

namespace graphmend {

// Whether `path` matches `pattern`, both split at `/` (empty segments are dropped). A segment `**`
// matches zero or more segments, except at the end of the pattern where it matches one or more
// (`dir/**` is everything inside `dir`); every other segment is matched by fnmatch(3) with
// FNM_PATHNAME (so `*`, `?`, `[...]` and `\` escapes are glibc's). Case-sensitive.
bool glob_match(std::string_view pattern, std::string_view path);

// Whether `file` (an absolute path) matches a user's pattern anchored at the folder `base`: the
// pattern matches the file's name, or its path relative to `base` (an absolute pattern: its
// absolute path). A leading `./` and a trailing `/` of the pattern are ignored, so `build`,
// `build/` and `./build` all match a folder named `build`, `tests/*.py` matches `<base>/tests/x.py`
// and `**/tests/*.py` matches `<base>/tests/x.py` and `<base>/a/tests/x.py`.
bool path_matches(std::string_view pattern, const std::filesystem::path& file, const std::filesystem::path& base);

}  // namespace graphmend
