#include "graphmend/analysis/glob.h"

#include <fnmatch.h>

#include <string>
#include <vector>

namespace graphmend {
namespace {

std::vector<std::string> segments(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t slash = text.find('/', start);
    if (slash == std::string_view::npos) slash = text.size();
    if (slash > start) out.emplace_back(text.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

bool match_from(const std::vector<std::string>& pattern, size_t p, const std::vector<std::string>& path, size_t s) {
  for (; p < pattern.size(); ++p, ++s) {
    if (pattern[p] == "**") {
      while (p + 1 < pattern.size() && pattern[p + 1] == "**") ++p;
      if (p + 1 == pattern.size()) return s < path.size();  // a trailing `**`: whatever is inside
      for (size_t k = s; k <= path.size(); ++k) {
        if (match_from(pattern, p + 1, path, k)) return true;
      }
      return false;
    }
    if (s >= path.size() || ::fnmatch(pattern[p].c_str(), path[s].c_str(), FNM_PATHNAME) != 0) return false;
  }
  return s == path.size();
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view path) {
  return match_from(segments(pattern), 0, segments(path), 0);
}

bool path_matches(std::string_view pattern, const std::filesystem::path& file, const std::filesystem::path& base) {
  while (pattern.starts_with("./")) pattern.remove_prefix(2);
  while (pattern.size() > 1 && pattern.ends_with('/')) pattern.remove_suffix(1);
  if (pattern.empty()) return false;
  const std::filesystem::path normal = file.lexically_normal();
  const std::string name = normal.filename().string();
  if (!name.empty() && glob_match(pattern, name)) return true;
  if (pattern.starts_with('/')) return glob_match(pattern, normal.generic_string());
  const std::filesystem::path relative = normal.lexically_relative(base.lexically_normal());
  if (relative.empty() || relative == "." || *relative.begin() == "..") return false;
  return glob_match(pattern, relative.generic_string());
}

}  // namespace graphmend
