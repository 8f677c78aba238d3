// Where a rule's page is: a documentation site when one is configured, else the page installed beside
// the executable, else none. A binary never links into the checkout it was built from unless it runs
// from that build tree (docs/check.md, "Rule links").
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <system_error>

#include "graphmend/analysis/finding.h"

#ifndef GRAPHMEND_DOCS_URL
#define GRAPHMEND_DOCS_URL ""
#endif

namespace graphmend {
namespace fs = std::filesystem;
namespace {

std::optional<fs::path> existing_dir(const fs::path& dir) {
  std::error_code ec;
  fs::path real = fs::canonical(dir, ec);
  if (ec || !fs::is_directory(real, ec)) return std::nullopt;
  return real;
}

#if defined(GRAPHMEND_BUILD_DIR) && defined(GRAPHMEND_SOURCE_DOCS_DIR)
// Whether `path` is `dir` or below it (both canonical). Only the build tree's binary asks.
bool inside(const fs::path& path, const fs::path& dir) {
  auto p = path.begin();
  for (auto d = dir.begin(); d != dir.end(); ++d, ++p) {
    if (d->empty()) continue;  // a trailing separator
    if (p == path.end() || *p != *d) return false;
  }
  return true;
}
#endif

std::optional<fs::path> resolve_docs_dir() {
  if (const char* env = std::getenv("GRAPHMEND_DOCS_DIR"); env != nullptr && *env != '\0') {
    return existing_dir(env);  // set but missing: no pages, rather than another folder's
  }
  std::error_code ec;
  const fs::path exe = fs::canonical("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  if (auto installed = existing_dir(exe.parent_path() / ".." / "share" / "graphmend" / "docs")) return installed;
#if defined(GRAPHMEND_BUILD_DIR) && defined(GRAPHMEND_SOURCE_DOCS_DIR)
  // The build tree's binary (and its tests) link to the checkout's pages; a copied or installed one never.
  if (auto build = existing_dir(GRAPHMEND_BUILD_DIR); build && inside(exe, *build)) {
    return existing_dir(GRAPHMEND_SOURCE_DOCS_DIR);
  }
#endif
  return std::nullopt;
}

std::string page_url(const fs::path& docs, const RuleInfo& rule) {
  const fs::path page = docs / "rules" / (std::string(rule.code) + ".md");
  std::error_code ec;
  return fs::is_regular_file(page, ec) ? file_url(page) : std::string();
}

std::string join(std::string_view base, const RuleInfo& rule) {
  std::string out(base);
  if (!out.ends_with('/')) out += '/';
  return out + std::string(rule.code) + ".md";
}

}  // namespace

std::string file_url(const fs::path& path) {
  std::string out = "file://";
  for (unsigned char c : path.generic_string()) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

std::optional<fs::path> docs_dir() {
  static const std::optional<fs::path> dir = resolve_docs_dir();
  return dir;
}

std::string rule_url(const RuleInfo& rule, std::string_view docs_url) {
  if (!docs_url.empty()) return join(docs_url, rule);
  const char* env = std::getenv("GRAPHMEND_DOCS_DIR");
  const bool env_set = env != nullptr && *env != '\0';
  if (env_set) return docs_dir() ? page_url(*docs_dir(), rule) : std::string();
  if (std::string_view built_in = GRAPHMEND_DOCS_URL; !built_in.empty()) return join(built_in, rule);
  return docs_dir() ? page_url(*docs_dir(), rule) : std::string();
}

}  // namespace graphmend
