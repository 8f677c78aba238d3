// Reading and writing users' source files without losing anything: encoding checks with positions,
// PEP 263 coding declarations (decoded to UTF-8 on reading, encoded back on writing), BOM and line
// endings kept, writes that replace the file atomically or, for links, rewrite it in place from a
// complete copy on disk; permissions, ownership and links kept.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace graphmend::cli {

// Offsets are 32-bit (tree-sitter's and ours): a larger file cannot be analysed, so it is refused.
constexpr uint64_t kMaxSourceBytes = UINT32_MAX;

// A PEP 263 coding declaration naming another encoding than UTF-8.
struct SourceEncoding {
  std::string declared;  // as the file spells it, e.g. "latin-1"
  std::string iconv;     // glibc's name for it, e.g. "ISO-8859-1"
  unsigned line = 1;     // the line of the declaration (1 or 2)
  // Encoding the decoded text gives the file's bytes back: false when two byte sequences decode to the
  // same text, and then the file is never written (it would change outside the fixes).
  bool round_trips = true;
};

struct SourceFile {
  std::filesystem::path path;
  std::string text;  // UTF-8, without the BOM
  bool bom = false;
  std::optional<SourceEncoding> encoding;  // absent: UTF-8 (no declaration, or one naming UTF-8)
  // The file as it was read (absent for stdin): a write refuses when it changed on disk since.
  struct Identity {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    timespec mtime{};
  };
  std::optional<Identity> identity;
};

// The text of an errno value (thread-safe, unlike strerror).
std::string errno_text(int e);
// Why a file of this mode cannot be read as source: "is a FIFO, not a regular file", "is a directory"...
std::string not_regular(mode_t mode);

struct ReadError {
  std::string message;  // "path:line:col: ..." or "path: ..."
};

// Reads a Python file as CPython does (PEP 263 and 3120): UTF-8, unless a coding declaration on line 1,
// or on line 2 after a comment or blank line 1, names another encoding; then the bytes are decoded from
// it (glibc's iconv, for the encodings whose tables match CPython's). Bytes invalid in the encoding, NUL
// bytes, an unknown or unsupported encoding and a BOM with a declaration other than utf-8 are errors
// naming the line and column. Never blocks on a FIFO or device (only regular files are read).
std::variant<SourceFile, ReadError> read_source(const std::filesystem::path& path);
std::variant<SourceFile, ReadError> source_from_bytes(const std::filesystem::path& display_path, std::string bytes);

struct EncodeError {
  std::string message;  // "path: ..."
};

// The bytes that hold `text` in `file`'s format: its BOM, and `text` encoded in its declared encoding.
// An error when `text` has a character that encoding lacks, or the file's bytes do not round-trip.
std::variant<std::string, EncodeError> encode_source(const SourceFile& file, const std::string& text);

// Replaces the file's contents with `new_text`, as encode_source gives it (nothing is written when that
// fails). A file without write permission (or with no write bit at all, even for root) is refused. An
// ordinary file is replaced atomically: a temporary file next to it, with its mode and owner, is fsynced
// and renamed over it. A hard-linked file, a symlink's target, or a file whose owner the temporary file
// cannot take is rewritten in place instead, after the new text is complete and fsynced in a temporary
// file (kept if the rewrite is interrupted), so every link still names the file. Returns an error
// message on failure; the file is unchanged then.
std::optional<std::string> write_source(const SourceFile& original, const std::string& new_text);

}  // namespace graphmend::cli
