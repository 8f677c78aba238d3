#include "cli/file_selection.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <memory>
#include <set>
#include <system_error>

#include "cli/source_file.h"
#include "graphmend/analysis/glob.h"

namespace graphmend::cli {
namespace fs = std::filesystem;

namespace {

fs::path absolute_normal(const fs::path& path) {
  std::error_code ec;
  fs::path out = fs::absolute(path, ec).lexically_normal();
  if (!out.has_filename() && out.has_relative_path()) out = out.parent_path();  // "dir/" -> "dir"
  return out;
}

// One line of an ignore file (gitignore(5) syntax).
struct IgnoreRule {
  std::string glob;
  bool negated = false;
  bool dir_only = false;  // a trailing `/`
  bool anchored = false;  // a `/` elsewhere: relative to the file's folder; else matches names at any depth
};

struct IgnoreFile {
  fs::path dir;  // absolute, normal
  std::vector<IgnoreRule> rules;
};

std::shared_ptr<const IgnoreFile> read_ignore_file(const fs::path& file, const fs::path& dir) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;  // never a FIFO
  std::ifstream in(file, std::ios::binary);
  if (!in) return nullptr;
  auto out = std::make_shared<IgnoreFile>();
  out->dir = dir;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // Trailing spaces go unless escaped with a backslash.
    while (!line.empty() && line.back() == ' ' && !(line.size() > 1 && line[line.size() - 2] == '\\')) line.pop_back();
    if (line.empty() || line.front() == '#') continue;
    IgnoreRule rule;
    if (line.front() == '!') {
      rule.negated = true;
      line.erase(0, 1);
    }
    if (!line.empty() && line.back() == '/') {
      rule.dir_only = true;
      while (!line.empty() && line.back() == '/') line.pop_back();
    }
    rule.anchored = line.find('/') != std::string::npos;
    while (!line.empty() && line.front() == '/') line.erase(0, 1);
    if (line.empty()) continue;
    rule.glob = std::move(line);
    out->rules.push_back(std::move(rule));
  }
  return out;
}

enum class Verdict { None, Ignored, Included };

Verdict match(const IgnoreFile& file, const fs::path& path, bool is_dir) {
  const fs::path relative = path.lexically_relative(file.dir);
  if (relative.empty() || relative == "." || *relative.begin() == "..") return Verdict::None;
  const std::string rel = relative.generic_string(), name = path.filename().string();
  for (auto it = file.rules.rbegin(); it != file.rules.rend(); ++it) {  // the last matching rule wins
    if (it->dir_only && !is_dir) continue;
    if (glob_match(it->glob, it->anchored ? rel : name)) return it->negated ? Verdict::Included : Verdict::Ignored;
  }
  return Verdict::None;
}

// The git directory of a repository whose root is `dir` (`.git` is a folder, or a file naming it).
fs::path git_dir(const fs::path& dir) {
  const fs::path dot_git = dir / ".git";
  std::error_code ec;
  if (fs::is_directory(dot_git, ec)) return dot_git;
  std::ifstream in(dot_git);
  std::string line;
  if (std::getline(in, line) && line.starts_with("gitdir: ")) {
    fs::path named = line.substr(8);
    return named.is_absolute() ? named : dir / named;
  }
  return dot_git;
}

// The ignore files that apply in a folder, as ruff's `ignore` crate ranks them: a `.ignore` file
// wins over the .gitignore files, which win over .git/info/exclude; among files of one kind the
// deepest with an opinion decides. .gitignore files count only inside a git repository, from its root
// down (a nested repository starts afresh).
struct IgnoreChain {
  std::vector<std::shared_ptr<const IgnoreFile>> ignores, gitignores;
  std::shared_ptr<const IgnoreFile> git_exclude;
  bool in_git = false;

  void descend(const fs::path& dir) {
    struct stat st {};
    if (::lstat((dir / ".git").c_str(), &st) == 0) {
      in_git = true;
      gitignores.clear();
      git_exclude = read_ignore_file(git_dir(dir) / "info" / "exclude", dir);
    }
    if (auto f = read_ignore_file(dir / ".ignore", dir)) ignores.push_back(std::move(f));
    if (in_git) {
      if (auto f = read_ignore_file(dir / ".gitignore", dir)) gitignores.push_back(std::move(f));
    }
  }

  bool ignored(const fs::path& path, bool is_dir) const {
    for (const auto* files : {&ignores, &gitignores}) {
      for (auto it = files->rbegin(); it != files->rend(); ++it) {
        Verdict v = match(**it, path, is_dir);
        if (v != Verdict::None) return v == Verdict::Ignored;
      }
    }
    return git_exclude && match(*git_exclude, path, is_dir) == Verdict::Ignored;
  }
};

// The chain for the folder `dir` (absolute, normal): its ancestors' ignore files, then its own.
IgnoreChain chain_for(const fs::path& dir) {
  std::vector<fs::path> folders;
  for (fs::path p = dir;; p = p.parent_path()) {
    folders.push_back(p);
    if (p == p.parent_path()) break;
  }
  IgnoreChain chain;
  for (auto it = folders.rbegin(); it != folders.rend(); ++it) chain.descend(*it);
  return chain;
}

bool matches_exclude(const fs::path& path, const FileSelection& selection) {
  return std::any_of(selection.exclude.begin(), selection.exclude.end(),
                     [&](const ExcludePattern& p) { return path_matches(p.glob, path, p.base); });
}

bool has_extension(const fs::path& path, std::span<const std::string_view> extensions) {
  const std::string ext = path.extension().string();
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

struct PendingDir {
  fs::path path;      // as it will be reported: under the root as given
  fs::path absolute;  // for matching
  IgnoreChain chain;  // the ignore files that apply inside it
};

}  // namespace

FileSelection selection_of(const Config& config) {
  std::error_code ec;
  FileSelection out;
  out.root = (config.source ? config.source->parent_path() : fs::current_path(ec)).lexically_normal();
  for (const auto* list : {&config.exclude, &config.extend_exclude}) {
    for (const std::string& glob : *list) out.exclude.push_back({glob, out.root});
  }
  out.respect_gitignore = config.respect_gitignore;
  out.force_exclude = config.force_exclude;
  return out;
}

bool is_excluded(const fs::path& path, const FileSelection& selection) {
  for (fs::path p = absolute_normal(path); p != selection.root; p = p.parent_path()) {
    if (matches_exclude(p, selection)) return true;
    if (p == p.parent_path()) break;
  }
  return false;
}

std::vector<fs::path> discover_files(const std::vector<fs::path>& paths, const SelectionFor& selection_for,
                                     std::vector<std::string>& errors, std::span<const std::string_view> extensions) {
  std::vector<fs::path> out;
  std::set<fs::path> seen;
  for (const fs::path& root : paths) {
    struct stat st {};
    if (::stat(root.c_str(), &st) != 0) {
      const int e = errno;
      errors.push_back(root.string() + ": " + (e == ENOENT ? std::string("no such file or directory") : errno_text(e)));
      continue;
    }
    const fs::path absolute = absolute_normal(root);
    // An explicit path is checked whatever the exclude patterns say, unless force-exclude applies them.
    const FileSelection own = selection_for(absolute.parent_path());
    if (own.force_exclude && is_excluded(absolute, own)) continue;
    if (S_ISREG(st.st_mode)) {
      if (seen.insert(root.lexically_normal()).second) out.push_back(root);
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      // Never opened: a FIFO would block the run until something writes to it.
      errors.push_back(root.string() + ": " + not_regular(st.st_mode) + "; not read");
      continue;
    }
    std::vector<PendingDir> pending{{root, absolute, chain_for(absolute)}};
    while (!pending.empty()) {
      PendingDir dir = std::move(pending.back());
      pending.pop_back();
      std::error_code ec;
      fs::directory_iterator it(dir.path, ec), end;
      if (ec) {
        errors.push_back(dir.path.string() + ": cannot read directory (" + ec.message() + ")");
        continue;
      }
      const FileSelection selection = selection_for(dir.absolute);
      for (; it != end; it.increment(ec)) {
        if (ec) {
          errors.push_back(dir.path.string() + ": " + ec.message());
          break;
        }
        const fs::directory_entry& entry = *it;
        const fs::path entry_absolute = dir.absolute / entry.path().filename();
        std::error_code e2;
        if (entry.is_directory(e2)) {
          if (entry.is_symlink(e2)) continue;  // folder links are not followed
          if (matches_exclude(entry_absolute, selection)) continue;
          if (selection.respect_gitignore && dir.chain.ignored(entry_absolute, true)) continue;
          if (::faccessat(AT_FDCWD, entry.path().c_str(), R_OK | X_OK, AT_EACCESS) != 0) {
            errors.push_back(entry.path().string() + ": cannot read directory (" + errno_text(errno) + ")");
            continue;
          }
          IgnoreChain chain = dir.chain;
          chain.descend(entry_absolute);
          pending.push_back({entry.path(), entry_absolute, std::move(chain)});
          continue;
        }
        if (!has_extension(entry.path(), extensions)) continue;
        if (matches_exclude(entry_absolute, selection)) continue;
        if (selection.respect_gitignore && dir.chain.ignored(entry_absolute, false)) continue;
        if (!entry.is_regular_file(e2)) continue;  // FIFOs, sockets, devices, dangling links: never opened
        if (seen.insert(entry.path().lexically_normal()).second) out.push_back(entry.path());
      }
    }
  }
  std::sort(out.begin(), out.end());
  // One file under two names (a symlink or hard link in the tree) is checked once: fixing it twice at
  // once would make the second write see a file changed since it was read.
  std::set<std::pair<dev_t, ino_t>> inodes;
  std::erase_if(out, [&](const fs::path& file) {
    struct stat st {};
    return ::stat(file.c_str(), &st) == 0 && !inodes.insert({st.st_dev, st.st_ino}).second;
  });
  return out;
}

}  // namespace graphmend::cli
