#include "cli/source_file.h"

#include <fcntl.h>
#include <iconv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
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
      if ((c >> 5) == 0x6)
        len = 2;
      else if ((c >> 4) == 0xE)
        len = 3;
      else if ((c >> 3) == 0x1E)
        len = 4;
      else
        return i;
      if (i + len > bytes.size() || !is_valid_utf8(std::string_view(bytes).substr(i, len))) return i;
    }
    i += len;
  }
  return std::string::npos;
}

// ---- PEP 263 coding declarations -------------------------------------------------------------------

// Python's codecs (CPython 3.11's `encodings` package, less mbcs and oem, which exist on Windows only):
// module name, glibc iconv name, and the aliases (encodings/aliases.py) that name it. The iconv name is
// "=" for UTF-8 (read as without a declaration), "!" for codecs that are not text encodings (CPython
// refuses them as a declaration) and empty for codecs that graphmend does not read: those that are not
// ASCII-compatible, and those whose glibc table differs from CPython's on some byte sequence (so a file
// would be accepted, refused or read differently from CPython; cp1255 and cp1258 compose combining
// marks in glibc, shift_jis maps 0x5C to the yen sign, gbk accepts 0x80, ...). The supported ones were
// checked against CPython on every byte and pair of bytes; tests/cli/test_source_encodings.py keeps that.
struct Codec {
  std::string_view module, iconv, aliases;
};
constexpr Codec kCodecs[] = {
    {"ascii", "ASCII",
     "646 ansi_x3.4_1968 ansi_x3.4_1986 ansi_x3_4_1968 cp367 csascii ibm367 iso646_us iso_646.irv_1991 iso_ir_6 us "
     "us_ascii"},
    {"base64_codec", "!", "base64 base_64"},
    {"big5", "", "big5_tw csbig5 x_mac_trad_chinese"},
    {"big5hkscs", "", "big5_hkscs hkscs"},
    {"bz2_codec", "!", "bz2"},
    {"charmap", "ISO-8859-1", ""},
    {"cp037", "", "037 csibm037 ebcdic_cp_ca ebcdic_cp_nl ebcdic_cp_us ebcdic_cp_wt ibm037 ibm039"},
    {"cp1006", "", ""},
    {"cp1026", "", "1026 csibm1026 ibm1026"},
    {"cp1125", "CP1125", "1125 cp866u ibm1125 ruscii"},
    {"cp1140", "", "1140 ibm1140"},
    {"cp1250", "CP1250", "1250 windows_1250"},
    {"cp1251", "CP1251", "1251 windows_1251"},
    {"cp1252", "CP1252", "1252 windows_1252"},
    {"cp1253", "CP1253", "1253 windows_1253"},
    {"cp1254", "CP1254", "1254 windows_1254"},
    {"cp1255", "", "1255 windows_1255"},
    {"cp1256", "CP1256", "1256 windows_1256"},
    {"cp1257", "CP1257", "1257 windows_1257"},
    {"cp1258", "", "1258 windows_1258"},
    {"cp273", "", "273 csibm273 ibm273"},
    {"cp424", "", "424 csibm424 ebcdic_cp_he ibm424"},
    {"cp437", "CP437", "437 cspc8codepage437 ibm437"},
    {"cp500", "", "500 csibm500 ebcdic_cp_be ebcdic_cp_ch ibm500"},
    {"cp720", "", ""},
    {"cp737", "CP737", ""},
    {"cp775", "CP775", "775 cspc775baltic ibm775"},
    {"cp850", "CP850", "850 cspc850multilingual ibm850"},
    {"cp852", "CP852", "852 cspcp852 ibm852"},
    {"cp855", "CP855", "855 csibm855 ibm855"},
    {"cp856", "", ""},
    {"cp857", "CP857", "857 csibm857 ibm857"},
    {"cp858", "IBM858", "858 csibm858 ibm858"},
    {"cp860", "CP860", "860 csibm860 ibm860"},
    {"cp861", "CP861", "861 cp_is csibm861 ibm861"},
    {"cp862", "CP862", "862 cspc862latinhebrew ibm862"},
    {"cp863", "CP863", "863 csibm863 ibm863"},
    {"cp864", "", "864 csibm864 ibm864"},
    {"cp865", "CP865", "865 csibm865 ibm865"},
    {"cp866", "CP866", "866 csibm866 ibm866"},
    {"cp869", "CP869", "869 cp_gr csibm869 ibm869"},
    {"cp874", "CP874", ""},
    {"cp875", "", ""},
    {"cp932", "", "932 ms932 ms_kanji mskanji"},
    {"cp949", "UHC", "949 ms949 uhc"},
    {"cp950", "", "950 ms950"},
    {"euc_jis_2004", "", "euc_jis2004 eucjis2004 jisx0213"},
    {"euc_jisx0213", "", "eucjisx0213"},
    {"euc_jp", "", "eucjp u_jis ujis"},
    {"euc_kr", "", "euckr korean ks_c_5601 ks_c_5601_1987 ks_x_1001 ksc5601 ksx1001 x_mac_korean"},
    {"gb18030", "", "gb18030_2000"},
    {"gb2312", "EUC-CN",
     "chinese csiso58gb231280 euc_cn euccn eucgb2312_cn gb2312_1980 gb2312_80 iso_ir_58 x_mac_simp_chinese"},
    {"gbk", "", "936 cp936 ms936"},
    {"hex_codec", "!", "hex"},
    {"hp_roman8", "HP-ROMAN8", "cp1051 csHPRoman8 ibm1051 r8 roman8"},
    {"hz", "", "hz_gb hz_gb_2312 hzgb"},
    {"idna", "", ""},
    {"iso2022_jp", "", "csiso2022jp iso2022jp iso_2022_jp"},
    {"iso2022_jp_1", "", "iso2022jp_1 iso_2022_jp_1"},
    {"iso2022_jp_2", "", "iso2022jp_2 iso_2022_jp_2"},
    {"iso2022_jp_2004", "", "iso2022jp_2004 iso_2022_jp_2004"},
    {"iso2022_jp_3", "", "iso2022jp_3 iso_2022_jp_3"},
    {"iso2022_jp_ext", "", "iso2022jp_ext iso_2022_jp_ext"},
    {"iso2022_kr", "", "csiso2022kr iso2022kr iso_2022_kr"},
    {"iso8859_1", "ISO-8859-1", ""},
    {"iso8859_10", "ISO-8859-10", "csisolatin6 iso_8859_10 iso_8859_10_1992 iso_ir_157 l6 latin6"},
    {"iso8859_11", "ISO-8859-11", "iso_8859_11 iso_8859_11_2001 thai"},
    {"iso8859_13", "ISO-8859-13", "iso_8859_13 l7 latin7"},
    {"iso8859_14", "ISO-8859-14", "iso_8859_14 iso_8859_14_1998 iso_celtic iso_ir_199 l8 latin8"},
    {"iso8859_15", "ISO-8859-15", "iso_8859_15 l9 latin9"},
    {"iso8859_16", "ISO-8859-16", "iso_8859_16 iso_8859_16_2001 iso_ir_226 l10 latin10"},
    {"iso8859_2", "ISO-8859-2", "csisolatin2 iso_8859_2 iso_8859_2_1987 iso_ir_101 l2 latin2"},
    {"iso8859_3", "ISO-8859-3", "csisolatin3 iso_8859_3 iso_8859_3_1988 iso_ir_109 l3 latin3"},
    {"iso8859_4", "ISO-8859-4", "csisolatin4 iso_8859_4 iso_8859_4_1988 iso_ir_110 l4 latin4"},
    {"iso8859_5", "ISO-8859-5", "csisolatincyrillic cyrillic iso_8859_5 iso_8859_5_1988 iso_ir_144"},
    {"iso8859_6", "ISO-8859-6", "arabic asmo_708 csisolatinarabic ecma_114 iso_8859_6 iso_8859_6_1987 iso_ir_127"},
    {"iso8859_7", "ISO-8859-7", "csisolatingreek ecma_118 elot_928 greek greek8 iso_8859_7 iso_8859_7_1987 iso_ir_126"},
    {"iso8859_8", "ISO-8859-8", "csisolatinhebrew hebrew iso_8859_8 iso_8859_8_1988 iso_ir_138"},
    {"iso8859_9", "ISO-8859-9", "csisolatin5 iso_8859_9 iso_8859_9_1989 iso_ir_148 l5 latin5"},
    {"johab", "", "cp1361 ms1361"},
    {"koi8_r", "KOI8-R", "cskoi8r"},
    {"koi8_t", "KOI8-T", ""},
    {"koi8_u", "KOI8-U", ""},
    {"kz1048", "RK1048", "kz_1048 rk1048 strk1048_2002"},
    {"latin_1", "ISO-8859-1",
     "8859 cp819 csisolatin1 ibm819 iso8859 iso8859_1 iso_8859_1 iso_8859_1_1987 iso_ir_100 l1 latin latin1"},
    {"mac_arabic", "", ""},
    {"mac_croatian", "", ""},
    {"mac_cyrillic", "", "maccyrillic"},
    {"mac_farsi", "", ""},
    {"mac_greek", "", "macgreek"},
    {"mac_iceland", "", "maciceland"},
    {"mac_latin2", "MAC-CENTRALEUROPE", "mac_centeuro maccentraleurope maclatin2"},
    {"mac_roman", "", "macintosh macroman"},
    {"mac_romanian", "", ""},
    {"mac_turkish", "", "macturkish"},
    {"palmos", "", ""},
    {"ptcp154", "PT154", "cp154 csptcp154 cyrillic_asian pt154"},
    {"punycode", "", ""},
    {"quopri_codec", "!", "quopri quoted_printable quotedprintable"},
    {"raw_unicode_escape", "", ""},
    {"rot_13", "!", "rot13"},
    {"shift_jis", "", "csshiftjis s_jis shiftjis sjis x_mac_japanese"},
    {"shift_jis_2004", "", "s_jis_2004 shiftjis2004 sjis_2004"},
    {"shift_jisx0213", "", "s_jisx0213 shiftjisx0213 sjisx0213"},
    {"tis_620", "", "iso_ir_166 tis620 tis_620_0 tis_620_2529_0 tis_620_2529_1"},
    {"undefined", "!", ""},
    {"unicode_escape", "", ""},
    {"utf_16", "", "u16 utf16"},
    {"utf_16_be", "", "unicodebigunmarked utf_16be"},
    {"utf_16_le", "", "unicodelittleunmarked utf_16le"},
    {"utf_32", "", "u32 utf32"},
    {"utf_32_be", "", "utf_32be"},
    {"utf_32_le", "", "utf_32le"},
    {"utf_7", "", "u7 unicode_1_1_utf_7 utf7"},
    {"utf_8", "=", "cp65001 u8 utf utf8 utf8_ucs2 utf8_ucs4"},
    {"utf_8_sig", "=", ""},
    {"uu_codec", "!", "uu"},
    {"zlib_codec", "!", "zip zlib"},
};

const Codec* codec_by_module(std::string_view module) {
  for (const Codec& c : kCodecs)
    if (c.module == module) return &c;
  return nullptr;
}

// The module an alias names (encodings/aliases.py), or empty.
std::string_view aliased_module(std::string_view name) {
  for (const Codec& c : kCodecs) {
    std::string_view rest = c.aliases;
    while (!rest.empty()) {
      size_t space = rest.find(' ');
      if (rest.substr(0, space) == name) return c.module;
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    }
  }
  return {};
}

bool ascii_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// CPython's tokenizer's get_normal_name: the spellings of utf-8 and latin-1 it knows itself.
std::string tokenizer_normal_name(const std::string& name) {
  std::string buf;
  for (size_t i = 0; i < name.size() && i < 12; ++i) buf += name[i] == '_' ? '-' : ascii_lower(name[i]);
  if (buf == "utf-8" || buf.starts_with("utf-8-")) return "utf-8";
  if (buf == "latin-1" || buf == "iso-8859-1" || buf == "iso-latin-1" || buf.starts_with("latin-1-") ||
      buf.starts_with("iso-8859-1-") || buf.starts_with("iso-latin-1-"))
    return "iso-8859-1";
  return name;
}

// codecs.lookup: lower case, each run of other characters than letters, digits and dots made one
// underscore (none at the ends), then an alias, then a module of the `encodings` package.
const Codec* lookup_codec(const std::string& name) {
  std::string norm;
  bool punct = false;
  for (char c : name) {
    if (ascii_alnum(c) || c == '.') {
      if (punct && !norm.empty()) norm += '_';
      norm += ascii_lower(c);
      punct = false;
    } else {
      punct = true;
    }
  }
  std::string undotted = norm;
  std::replace(undotted.begin(), undotted.end(), '.', '_');
  std::string_view aliased = aliased_module(norm);
  if (aliased.empty()) aliased = aliased_module(undotted);
  for (std::string_view module : {aliased, std::string_view(norm)}) {
    if (module.empty() || module.find('.') != std::string_view::npos) continue;
    if (const Codec* codec = codec_by_module(module)) return codec;
  }
  return nullptr;
}

struct Cookie {
  std::string name;   // as written
  size_t offset = 0;  // of the name in the bytes
  unsigned line = 1;
};

// The coding declaration on `line` (without its line break), as CPython's tokenizer finds it: the line
// is a comment (`^[ \t\f]*#`), and `coding` followed by `:` or `=`, blanks and a name `[-\w.]+`.
std::optional<Cookie> cookie_on(std::string_view line, size_t line_offset, unsigned number) {
  size_t i = line.find_first_not_of(" \t\f");
  if (i == std::string_view::npos || line[i] != '#') return std::nullopt;
  for (size_t at = line.find("coding", i); at != std::string_view::npos; at = line.find("coding", at + 1)) {
    size_t t = at + 6;
    if (t >= line.size() || (line[t] != ':' && line[t] != '=')) continue;
    ++t;
    while (t < line.size() && (line[t] == ' ' || line[t] == '\t')) ++t;
    size_t begin = t;
    while (t < line.size() && (ascii_alnum(line[t]) || line[t] == '-' || line[t] == '_' || line[t] == '.')) ++t;
    if (t > begin) return Cookie{std::string(line.substr(begin, t - begin)), line_offset + begin, number};
  }
  return std::nullopt;
}

// Lines end at \n, \r\n or \r (CPython translates them all before it looks).
size_t line_end(const std::string& bytes, size_t from) {
  size_t end = bytes.find_first_of("\r\n", from);
  return end == std::string::npos ? bytes.size() : end;
}

size_t next_line(const std::string& bytes, size_t end) {
  if (end >= bytes.size()) return bytes.size();
  return bytes[end] == '\r' && end + 1 < bytes.size() && bytes[end + 1] == '\n' ? end + 2 : end + 1;
}

// Line 1's declaration, or line 2's when line 1 is blank or only a comment.
std::optional<Cookie> find_cookie(const std::string& bytes) {
  size_t end1 = line_end(bytes, 0);
  std::string_view line1 = std::string_view(bytes).substr(0, end1);
  if (auto cookie = cookie_on(line1, 0, 1)) return cookie;
  size_t first = line1.find_first_not_of(" \t\f");
  if (first != std::string_view::npos && line1[first] != '#') return std::nullopt;
  size_t start2 = next_line(bytes, end1);
  if (start2 >= bytes.size()) return std::nullopt;
  return cookie_on(std::string_view(bytes).substr(start2, line_end(bytes, start2) - start2), start2, 2);
}

struct Conversion {
  std::string out;
  bool opened = true;              // iconv_open succeeded
  size_t bad = std::string::npos;  // offset in the input of what could not be converted
  bool truncated = false;          // the input ends inside a sequence
};

// `in` converted from `from` to `to` with iconv, exactly: a character or sequence without an exact
// counterpart stops the conversion (`bad`).
Conversion convert(const char* from, const char* to, std::string_view in) {
  Conversion result;
  iconv_t cd = ::iconv_open(to, from);
  if (cd == reinterpret_cast<iconv_t>(-1)) {
    result.opened = false;
    return result;
  }
  std::string& out = result.out;
  out.resize(in.size() + in.size() / 2 + 16);
  char* in_ptr = const_cast<char*>(in.data());
  size_t in_left = in.size();
  size_t used = 0;
  bool flushing = false;
  for (;;) {
    char* out_ptr = out.data() + used;
    size_t out_left = out.size() - used;
    size_t r = flushing ? ::iconv(cd, nullptr, nullptr, &out_ptr, &out_left)
                        : ::iconv(cd, &in_ptr, &in_left, &out_ptr, &out_left);
    const int error = errno;
    used = static_cast<size_t>(out_ptr - out.data());
    if (r == static_cast<size_t>(-1) && error == E2BIG) {
      out.resize(out.size() * 2);
      continue;
    }
    if (r == static_cast<size_t>(-1) || r > 0) {  // r > 0: converted inexactly
      result.bad = static_cast<size_t>(in_ptr - in.data());
      result.truncated = r == static_cast<size_t>(-1) && error == EINVAL;
      break;
    }
    if (flushing) break;
    flushing = true;
  }
  ::iconv_close(cd);
  out.resize(used);
  return result;
}

std::string hex_byte(unsigned char c) {
  char buf[3];
  std::snprintf(buf, sizeof buf, "%02X", c);
  return buf;
}

// Line and column (1-based, in characters) of byte `offset` of UTF-8 `text`.
std::string where_in_text(const std::string& text, size_t offset) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

// "U+20AC" for the UTF-8 character at `offset`.
std::string code_point_at(const std::string& text, size_t offset) {
  auto c = static_cast<unsigned char>(text[offset]);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : 4;
  uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1Fu : len == 3 ? c & 0x0Fu : c & 0x07u;
  for (size_t i = 1; i < len && offset + i < text.size(); ++i)
    cp = cp << 6 | (static_cast<unsigned char>(text[offset + i]) & 0x3Fu);
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
  return buf;
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

// strerror is not thread-safe; the generic category gives the same text.
std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

std::string not_regular(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  const char* kind = S_ISFIFO(mode)   ? "a FIFO"
                     : S_ISSOCK(mode) ? "a socket"
                     : S_ISCHR(mode)  ? "a character device"
                     : S_ISBLK(mode)  ? "a block device"
                                      : "a special file";
  return std::string("is ") + kind + ", not a regular file";
}

std::variant<SourceFile, ReadError> source_from_bytes(const fs::path& display_path, std::string bytes) {
  SourceFile file;
  file.path = display_path;
  const std::string shown = display_path.string();
  if (bytes.size() > kMaxSourceBytes) return ReadError{shown + ": " + too_large(bytes.size())};
  if (bytes.starts_with("\xEF\xBB\xBF")) {
    file.bom = true;
    bytes.erase(0, 3);
  }
  if (auto nul = bytes.find('\0'); nul != std::string::npos)
    return ReadError{shown + ":" + where(bytes, nul) + ": file contains a NUL byte; not a Python source file"};
  // PEP 263, as CPython reads it: the declaration is found in the bytes before anything is decoded.
  const Codec* codec = nullptr;
  std::optional<Cookie> cookie = find_cookie(bytes);
  if (cookie) {
    const std::string normal = tokenizer_normal_name(cookie->name);
    auto refuse = [&](const std::string& why) {
      return ReadError{shown + ":" + where(bytes, cookie->offset) + ": " + why};
    };
    if (file.bom && normal != "utf-8")
      return refuse("the file starts with a UTF-8 BOM but declares the encoding " + cookie->name +
                    " (with a BOM, only utf-8 may be declared)");
    if (normal != "utf-8") {
      codec = lookup_codec(normal);
      if (!codec) return refuse("unknown encoding: " + cookie->name);
      if (codec->iconv == "!") return refuse("encoding " + cookie->name + " is not a text encoding");
      if (codec->iconv.empty())
        return refuse("encoding " + cookie->name +
                      (cookie->name == codec->module ? "" : " (Python's " + std::string(codec->module) + ")") +
                      " is not supported by graphmend (see \"Encodings\" in docs/check.md)");
      if (codec->iconv == "=") codec = nullptr;  // another spelling of utf-8
    }
  }
  if (!codec) {
    if (auto bad = first_invalid_utf8(bytes); bad != std::string::npos)
      return ReadError{shown + ":" + where(bytes, bad) + ": invalid UTF-8 byte 0x" +
                       hex_byte(static_cast<unsigned char>(bytes[bad])) + " (Python source must be UTF-8)"};
    file.text = std::move(bytes);
    return file;
  }
  SourceEncoding encoding{cookie->name, std::string(codec->iconv), cookie->line};
  const std::string declared = " (the encoding declared on line " + std::to_string(encoding.line) + ")";
  Conversion decoded = convert(encoding.iconv.c_str(), "UTF-8", bytes);
  if (!decoded.opened)
    return ReadError{shown + ":" + where(bytes, cookie->offset) + ": cannot decode " + cookie->name +
                     ": this system's iconv has no " + encoding.iconv + " converter"};
  if (decoded.bad != std::string::npos) {
    const std::string what = decoded.truncated ? "incomplete " + cookie->name + " sequence at the end of the file"
                                               : "invalid " + cookie->name + " byte 0x" +
                                                     hex_byte(static_cast<unsigned char>(bytes[decoded.bad]));
    return ReadError{shown + ":" + where(bytes, decoded.bad) + ": " + what + declared};
  }
  if (decoded.out.size() > kMaxSourceBytes)
    return ReadError{shown + ": " + too_large(decoded.out.size()) + " once decoded"};
  // Fixes are written by encoding the fixed text: the bytes outside them come back only if this does.
  Conversion back = convert("UTF-8", encoding.iconv.c_str(), decoded.out);
  encoding.round_trips = back.bad == std::string::npos && back.out == bytes;
  file.text = std::move(decoded.out);
  file.encoding = std::move(encoding);
  return file;
}

std::variant<std::string, EncodeError> encode_source(const SourceFile& file, const std::string& text) {
  const std::string bom = file.bom ? "\xEF\xBB\xBF" : "";
  if (!file.encoding) return bom + text;
  const SourceEncoding& encoding = *file.encoding;
  const std::string shown = file.path.string();
  if (!encoding.round_trips)
    return EncodeError{shown + ": its " + encoding.declared +
                       " bytes do not survive decoding and encoding again (two byte sequences give the same "
                       "text), so writing it would change more than the fixes"};
  Conversion encoded = convert("UTF-8", encoding.iconv.c_str(), text);
  if (!encoded.opened) return EncodeError{shown + ": this system's iconv cannot encode " + encoding.iconv};
  if (encoded.bad != std::string::npos)
    return EncodeError{shown + ": the fixed text has " + code_point_at(text, encoded.bad) + " at " +
                       where_in_text(text, encoded.bad) + ", which " + encoding.declared +
                       " (the file's declared encoding) cannot represent"};
  return bom + encoded.out;
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

  auto encoded = encode_source(original, new_text);
  if (auto* err = std::get_if<EncodeError>(&encoded)) return err->message + "; not written";
  const std::string data = std::get<std::string>(std::move(encoded));
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
    // The original bytes: a file that does not round-trip was refused above.
    auto before = encode_source(original, original.text);
    bool restored = std::holds_alternative<std::string>(before) && overwrite(std::get<std::string>(before));
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

}  // namespace graphmend::cli
