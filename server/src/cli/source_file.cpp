#include "cli/source_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <cerrno>
#include <array>
#include <fstream>
#include <set>
#include <sstream>
#include <variant>

#include "graphmend/analysis/text.h"

namespace graphmend::cli {
namespace fs = std::filesystem;

namespace {

// Line and column (1-based, in bytes) of byte `offset`.
std::string where(const std::string& bytes, size_t offset) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset && i < bytes.size(); ++i) {
    if (bytes[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

size_t first_invalid_utf8(const std::string& bytes) {
  // Binary search would not find the first; scan sequences instead.
  size_t i = 0;
  while (i < bytes.size()) {
    size_t len = 1;
    auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x80) {
      if ((c >> 5) == 0x6) len = 2;
      else if ((c >> 4) == 0xE) len = 3;
      else if ((c >> 3) == 0x1E) len = 4;
      else return i;
      if (i + len > bytes.size() || !is_valid_utf8(std::string_view(bytes).substr(i, len))) return i;
    }
    i += len;
  }
  return std::string::npos;
}

constexpr std::array<std::string_view, 12> kSkippedDirs{".git", ".hg", ".svn", ".venv", "venv", "__pycache__",
                                                       "node_modules", ".tox", ".nox", ".mypy_cache",
                                                       ".pytest_cache", "site-packages"};

bool skipped_dir(const fs::path& dir) {
  std::string name = dir.filename().string();
  if (std::find(kSkippedDirs.begin(), kSkippedDirs.end(), name) != kSkippedDirs.end()) return true;
  if (name == "build" || name.starts_with("build-") || name == "dist" || name == ".cache") return true;
  std::error_code ec;
  return fs::exists(dir / "pyvenv.cfg", ec) || fs::exists(dir / "CMakeCache.txt", ec);
}

}  // namespace

std::variant<SourceFile, ReadError> source_from_bytes(const fs::path& display_path, std::string bytes) {
  SourceFile file;
  file.path = display_path;
  if (bytes.starts_with("\xEF\xBB\xBF")) {
    file.bom = true;
    bytes.erase(0, 3);
  }
  if (auto nul = bytes.find('\0'); nul != std::string::npos)
    return ReadError{display_path.string() + ":" + where(bytes, nul) + ": file contains a NUL byte; not a Python source file"};
  if (auto bad = first_invalid_utf8(bytes); bad != std::string::npos)
    return ReadError{display_path.string() + ":" + where(bytes, bad) + ": invalid UTF-8 byte 0x" +
                     [&] {
                       char buf[3];
                       std::snprintf(buf, sizeof buf, "%02X", static_cast<unsigned char>(bytes[bad]));
                       return std::string(buf);
                     }() +
                     " (Python source must be UTF-8)"};
  file.text = std::move(bytes);
  return file;
}

std::variant<SourceFile, ReadError> read_source(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return ReadError{path.string() + ": is a directory"};
  std::ifstream in(path, std::ios::binary);
  if (!in) return ReadError{path.string() + ": cannot read file (" + std::strerror(errno) + ")"};
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return ReadError{path.string() + ": read error"};
  return source_from_bytes(path, ss.str());
}

std::optional<std::string> write_source_atomically(const SourceFile& original, const std::string& new_text) {
  struct stat st {};
  if (::stat(original.path.c_str(), &st) != 0) return original.path.string() + ": cannot stat (" + std::strerror(errno) + ")";
  fs::path dir = original.path.parent_path().empty() ? fs::path(".") : original.path.parent_path();
  std::string tmpl = (dir / ("." + original.path.filename().string() + ".graphmend-XXXXXX")).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0) return original.path.string() + ": cannot create temporary file (" + std::strerror(errno) + ")";
  std::string data = (original.bom ? std::string("\xEF\xBB\xBF") : std::string()) + new_text;
  size_t written = 0;
  while (written < data.size()) {
    ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(name.data());
      return original.path.string() + ": write failed (" + err + ")";
    }
    written += static_cast<size_t>(n);
  }
  ::fchmod(fd, st.st_mode & 07777);
  if (::fchown(fd, st.st_uid, st.st_gid) != 0) { /* not owner: keep our ownership, mode is kept */ }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(name.data());
    return original.path.string() + ": cannot flush temporary file";
  }
  // Rename over the real file (through symlinks: replace the target, not the link).
  std::error_code ec;
  fs::path target = fs::is_symlink(original.path, ec) ? fs::canonical(original.path, ec) : original.path;
  if (::rename(name.data(), target.c_str()) != 0) {
    std::string err = std::strerror(errno);
    ::unlink(name.data());
    return original.path.string() + ": cannot replace file (" + err + ")";
  }
  return std::nullopt;
}

std::vector<fs::path> discover_python_files(const std::vector<fs::path>& paths, std::vector<std::string>& errors) {
  std::vector<fs::path> out;
  std::set<fs::path> seen;
  for (const fs::path& root : paths) {
    std::error_code ec;
    auto status = fs::status(root, ec);
    if (ec || !fs::exists(status)) {
      errors.push_back(root.string() + ": no such file or directory");
      continue;
    }
    if (!fs::is_directory(status)) {
      if (seen.insert(root.lexically_normal()).second) out.push_back(root);
      continue;
    }
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
    if (ec) {
      errors.push_back(root.string() + ": cannot read directory (" + ec.message() + ")");
      continue;
    }
    for (; it != end; it.increment(ec)) {
      if (ec) {
        errors.push_back(it->path().string() + ": " + ec.message());
        ec.clear();
        continue;
      }
      const fs::directory_entry& entry = *it;
      std::error_code e2;
      if (entry.is_directory(e2)) {
        if (skipped_dir(entry.path()) || entry.is_symlink(e2)) it.disable_recursion_pending();
        else if (::access(entry.path().c_str(), R_OK | X_OK) != 0)
          errors.push_back(entry.path().string() + ": cannot read directory (permission denied)");
        continue;
      }
      if (entry.path().extension() != ".py" && entry.path().extension() != ".pyi") continue;
      if (entry.path().extension() == ".pyi") continue;  // stubs hold no executable code
      if (!entry.is_regular_file(e2)) continue;  // dangling links, sockets
      if (seen.insert(entry.path().lexically_normal()).second) out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace graphmend::cli
