#include "cli/source_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <system_error>
#include <utility>
#include <variant>

#include "cli/signal_cleanup.h"
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

// strerror is not thread-safe; the generic category gives the same text.
std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

std::string not_regular(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  const char* kind = S_ISFIFO(mode)  ? "a FIFO"
                     : S_ISSOCK(mode) ? "a socket"
                     : S_ISCHR(mode)  ? "a character device"
                     : S_ISBLK(mode)  ? "a block device"
                                      : "a special file";
  return std::string("is ") + kind + ", not a regular file";
}

std::string too_large(uint64_t size) {
  return "too large to analyse (" + std::to_string(size) + " bytes; the limit is " + std::to_string(kMaxSourceBytes) +
         ", 4 GiB)";
}

bool same_file(const struct stat& st, const SourceFile::Identity& id) {
  return st.st_dev == id.device && st.st_ino == id.inode && st.st_size == id.size &&
         st.st_mtim.tv_sec == id.mtime.tv_sec && st.st_mtim.tv_nsec == id.mtime.tv_nsec;
}

// At the file's start (pwrite) or its current position; false with errno set on failure.
bool write_all(int fd, const std::string& data, bool at_start) {
  size_t written = 0;
  while (written < data.size()) {
    ssize_t n = at_start ? ::pwrite(fd, data.data() + written, data.size() - written, static_cast<off_t>(written))
                         : ::write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    written += static_cast<size_t>(n);
  }
  return true;
}

// Creates ".NAME.graphmend-XXXXXX" next to `target`, registered in `slot` (so that a signal removes it).
// Only graphmend makes such names, so a signal unlinking one that turned out to exist already (O_EXCL
// failed) could only remove a leftover of an earlier run.
int create_temp(const fs::path& target, TempFileSlot& slot, std::string& error) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 random{std::random_device{}()};
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string suffix(6, 'X');
    for (char& c : suffix) c = kAlphabet[random() % (sizeof kAlphabet - 1)];
    std::string name = (dir / ("." + target.filename().string() + ".graphmend-" + suffix)).string();
    int fd = slot.create(name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    if (errno != EEXIST) {
      error = errno == ECANCELED ? "interrupted" : errno_text(errno);
      return -1;
    }
  }
  error = "no free name";
  return -1;
}

// Makes a rename durable; failure only weakens durability, never correctness.
void sync_directory(const fs::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

std::variant<SourceFile, ReadError> source_from_bytes(const fs::path& display_path, std::string bytes) {
  SourceFile file;
  file.path = display_path;
  if (bytes.size() > kMaxSourceBytes) return ReadError{display_path.string() + ": " + too_large(bytes.size())};
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
  const std::string shown = path.string();
  // stat before open: opening a FIFO blocks until a writer comes, opening a device may do anything.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return ReadError{shown + ": cannot read file (" + errno_text(errno) + ")"};
  if (!S_ISREG(st.st_mode)) return ReadError{shown + ": " + not_regular(st.st_mode)};
  // O_NONBLOCK: should the path have become a FIFO since, open returns at once and fstat refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return ReadError{shown + ": cannot read file (" + errno_text(errno) + ")"};
  auto fail = [&](std::string message) {
    ::close(fd);
    return ReadError{shown + ": " + std::move(message)};
  };
  if (::fstat(fd, &st) != 0) return fail("cannot read file (" + errno_text(errno) + ")");
  if (!S_ISREG(st.st_mode)) return fail(not_regular(st.st_mode));
  if (static_cast<uint64_t>(st.st_size) > kMaxSourceBytes) return fail(too_large(static_cast<uint64_t>(st.st_size)));
  SourceFile::Identity identity{st.st_dev, st.st_ino, st.st_size, st.st_mtim};
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  for (;;) {
    if (got == bytes.size()) bytes.resize(bytes.size() + 65536);  // the file grew while being read
    ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("read error (" + errno_text(errno) + ")");
    if (n == 0) break;
    got += static_cast<size_t>(n);
    if (got > kMaxSourceBytes) return fail(too_large(got));
  }
  ::close(fd);
  bytes.resize(got);
  auto result = source_from_bytes(path, std::move(bytes));
  if (auto* file = std::get_if<SourceFile>(&result)) file->identity = identity;
  return result;
}

std::optional<std::string> write_source(const SourceFile& original, const std::string& new_text) {
  const std::string shown = original.path.string();
  auto fail = [&](const std::string& why) { return std::optional<std::string>(shown + ": " + why + "; not written"); };
  if (interrupted()) return fail("interrupted");
  struct stat st {};
  if (::lstat(original.path.c_str(), &st) != 0) return fail("cannot stat (" + errno_text(errno) + ")");
  const bool via_symlink = S_ISLNK(st.st_mode);
  fs::path target = original.path;
  if (via_symlink) {
    // Write the target (the link stays a link), and make the temporary file next to it, where it
    // can be renamed and where it stays on the target's file system.
    char* real = ::realpath(original.path.c_str(), nullptr);
    if (!real) return fail("cannot resolve the symlink (" + errno_text(errno) + ")");
    target = real;
    std::free(real);
    if (::stat(target.c_str(), &st) != 0)
      return fail("cannot stat " + target.string() + " (" + errno_text(errno) + ")");
  }
  if (!S_ISREG(st.st_mode)) return fail(not_regular(st.st_mode));
  if (original.identity && !same_file(st, *original.identity)) return fail("changed on disk while it was checked");
  // rename() needs only the folder's write permission: ask for the file's own, as an editor would.
  // Root may write anything, so a file without any write bit is refused for root too.
  if ((st.st_mode & 0222) == 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    return fail(std::string("file is read-only (mode ") + mode + ")");
  }
  if (::faccessat(AT_FDCWD, target.c_str(), W_OK, AT_EACCESS) != 0)
    return fail("file is not writable (" + errno_text(errno) + ")");

  std::string data = (original.bom ? std::string("\xEF\xBB\xBF") : std::string()) + new_text;
  TempFileSlot slot;
  std::string error;
  int fd = create_temp(target, slot, error);
  if (fd < 0) return fail("cannot create a temporary file next to it (" + error + ")");
  auto discard = [&](const std::string& why) {
    if (fd >= 0) ::close(fd);
    ::unlink(slot.path());
    slot.release();
    return fail(why);
  };
  if (!write_all(fd, data, false)) return discard("write failed (" + errno_text(errno) + ")");
  // Owner before mode: chown clears the set-user-ID and set-group-ID bits.
  const bool owner_kept = ::fchown(fd, st.st_uid, st.st_gid) == 0;
  if (::fchmod(fd, st.st_mode & 07777) != 0) return discard("cannot set the mode (" + errno_text(errno) + ")");
  if (::fsync(fd) != 0) return discard("cannot flush the temporary file (" + errno_text(errno) + ")");
  int closed = ::close(fd);
  fd = -1;
  if (closed != 0) return discard("cannot flush the temporary file (" + errno_text(errno) + ")");

  // A rename would replace one name of a hard-linked file (the others keep the old text), the inode a
  // symlink points to, or give the file our owner: rewrite those in place.
  const bool in_place = via_symlink || st.st_nlink > 1 || !owner_kept;
  if (!in_place) {
    if (::rename(slot.path(), target.c_str()) != 0)
      return discard("cannot replace the file (" + errno_text(errno) + ")");
    slot.release();
    sync_directory(target.parent_path());
    return std::nullopt;
  }

  // The complete new text is on disk in the temporary file; a crash while the file is overwritten leaves
  // that copy, and a signal waits (InPlaceWrite) until the file is whole again.
  InPlaceWrite writing;
  if (!writing.allowed()) return discard("interrupted");
  slot.keep();
  int out = ::open(target.c_str(), O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
  if (out < 0) return discard("cannot open for writing (" + errno_text(errno) + ")");
  auto overwrite = [&](const std::string& bytes) {
    return write_all(out, bytes, true) && ::ftruncate(out, static_cast<off_t>(bytes.size())) == 0 && ::fsync(out) == 0;
  };
  if (!overwrite(data)) {
    std::string why = errno_text(errno);
    std::string before = (original.bom ? std::string("\xEF\xBB\xBF") : std::string()) + original.text;
    bool restored = overwrite(before);
    ::close(out);
    if (restored) return discard("write failed (" + why + "); the original was restored");
    // Keep the copy (still marked kept: a signal now names it instead of removing it).
    return shown + ": write failed (" + why + ") and the original could not be restored: the fixed text is in " +
           slot.path();
  }
  ::close(out);
  ::unlink(slot.path());
  slot.release();
  return std::nullopt;
}

std::vector<fs::path> discover_python_files(const std::vector<fs::path>& paths, std::vector<std::string>& errors) {
  std::vector<fs::path> out;
  std::set<fs::path> seen;
  for (const fs::path& root : paths) {
    struct stat st {};
    if (::stat(root.c_str(), &st) != 0) {
      const int e = errno;
      errors.push_back(root.string() + ": " + (e == ENOENT ? std::string("no such file or directory") : errno_text(e)));
      continue;
    }
    if (S_ISREG(st.st_mode)) {
      if (seen.insert(root.lexically_normal()).second) out.push_back(root);
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      // Never opened: a FIFO would block the run until something writes to it.
      errors.push_back(root.string() + ": " + not_regular(st.st_mode) + "; not read");
      continue;
    }
    // skip_permission_denied below would skip an unreadable root silently.
    if (DIR* d = ::opendir(root.c_str())) {
      ::closedir(d);
    } else {
      errors.push_back(root.string() + ": cannot read directory (" + errno_text(errno) + ")");
      continue;
    }
    std::error_code ec;
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
        else if (::faccessat(AT_FDCWD, entry.path().c_str(), R_OK | X_OK, AT_EACCESS) != 0)
          errors.push_back(entry.path().string() + ": cannot read directory (" + errno_text(errno) + ")");
        continue;
      }
      if (entry.path().extension() != ".py") continue;  // .pyi stubs hold no executable code
      if (!entry.is_regular_file(e2)) continue;  // FIFOs, sockets, devices, dangling links: never opened
      if (seen.insert(entry.path().lexically_normal()).second) out.push_back(entry.path());
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
