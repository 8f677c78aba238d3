#include "graphmend/protocol/framing.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace graphmend::protocol {
namespace {

constexpr std::size_t kNone = std::string_view::npos;
constexpr std::string_view kContentLength = "content-length:";
constexpr std::string_view kContentType = "content-type:";
// A header block longer than this without its blank line is garbage, not a slow client.
constexpr std::size_t kMaxHeaderBytes = 8 * 1024;
// Junk without any header name in sight is dropped in pieces of at most this size.
constexpr std::size_t kMaxJunkBytes = 64 * 1024;
// A Content-Length line that resynchronises the stream: at most this many digits and blanks.
constexpr std::size_t kMaxLengthDigits = 20;
constexpr std::size_t kMaxLengthBlanks = 8;
// How far back a Content-Type line in front of such a line is looked for.
constexpr std::size_t kMaxContentTypeLine = 1024;

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (lower(text[i]) != prefix[i]) return false;
  }
  return true;
}

bool header_name_at(std::string_view text, std::size_t pos) {
  const std::string_view rest = text.substr(pos);
  return starts_with_nocase(rest, kContentLength) || starts_with_nocase(rest, kContentType);
}

// The first `Content-Length:` or `Content-Type:` at or after `from`.
std::size_t find_header_name(std::string_view text, std::size_t from) {
  for (std::size_t i = text.find_first_of("cC", from); i != kNone; i = text.find_first_of("cC", i + 1)) {
    if (header_name_at(text, i)) return i;
  }
  return kNone;
}

// How many of the last bytes of `text` could begin a header name whose rest has not arrived: a cut
// at the end of what arrived stops before them.
std::size_t partial_name_at_end(std::string_view text) {
  auto begins = [](std::string_view name, std::string_view tail) {
    return tail.size() < name.size() &&
           std::equal(tail.begin(), tail.end(), name.begin(), [](char a, char b) { return lower(a) == b; });
  };
  for (std::size_t n = std::min(text.size(), kContentLength.size() - 1); n > 0; --n) {
    const std::string_view tail = text.substr(text.size() - n);
    if (begins(kContentLength, tail) || begins(kContentType, tail)) return n;
  }
  return 0;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

bool is_control(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return (byte < 0x20 && c != '\t') || byte == 0x7f;
}

// RFC 9110 token characters (a header field name).
bool is_token(char c) {
  if (std::isalnum(static_cast<unsigned char>(c)) != 0) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != kNone;
}

enum class Match { kNo, kYes, kMore };

// Whether `text` at `pos` holds a line that only a message header can hold: `Content-Length:`,
// blanks, 1-20 digits, blanks, LF or CRLF. kMore: the bytes end before that is decided.
Match length_line_at(std::string_view text, std::size_t pos) {
  std::size_t i = pos;
  for (const char expected : kContentLength) {
    if (i == text.size()) return Match::kMore;
    if (lower(text[i]) != expected) return Match::kNo;
    ++i;
  }
  auto skip_blanks = [&] {
    std::size_t n = 0;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) {
      ++i;
      if (++n > kMaxLengthBlanks) return false;
    }
    return true;
  };
  if (!skip_blanks()) return Match::kNo;
  std::size_t digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    ++i;
    if (++digits > kMaxLengthDigits) return Match::kNo;
  }
  if (i == text.size()) return Match::kMore;
  if (digits == 0 || !skip_blanks()) return Match::kNo;
  if (i == text.size()) return Match::kMore;
  if (text[i] == '\r' && ++i == text.size()) return Match::kMore;
  return text[i] == '\n' ? Match::kYes : Match::kNo;
}

// `at` begins a Content-Length line; when a `Content-Type:` line (not before `floor`) ends right in
// front of it, the header block begins there instead.
std::size_t header_block_start(std::string_view text, std::size_t at, std::size_t floor) {
  if (at == floor || text[at - 1] != '\n') return at;
  const std::size_t lowest = std::max(floor, at > kMaxContentTypeLine ? at - kMaxContentTypeLine : 0);
  for (std::size_t j = at - 1; j-- > lowest;) {
    if (text[j] == '\n') return at;
    if (!starts_with_nocase(text.substr(j), kContentType)) continue;
    std::string_view value = text.substr(j + kContentType.size(), at - 1 - j - kContentType.size());
    if (!value.empty() && value.back() == '\r') value.remove_suffix(1);
    return std::none_of(value.begin(), value.end(), is_control) ? j : at;
  }
  return at;
}

struct Resync {
  std::size_t at = kNone;         // a header begins here for certain
  std::size_t undecided = kNone;  // the bytes end before what begins here is decided
};

// The first header start in text[from, until) (its Content-Length line may extend past `until`);
// a Content-Type line in front of it is taken along, also from before `from` (the same start
// however the bytes arrived).
Resync find_resync(std::string_view text, std::size_t from, std::size_t until) {
  Resync result;
  for (std::size_t i = text.find_first_of("cC", from); i < until; i = text.find_first_of("cC", i + 1)) {
    const Match match = length_line_at(text, i);
    if (match == Match::kNo) continue;
    if (match == Match::kMore) {
      result.undecided = i;
    } else {
      result.at = header_block_start(text, i, 0);
    }
    return result;
  }
  return result;
}

// Why a header line is not `Name: value`; empty when it is (or, for a line whose end has not
// arrived, when it may still be).
std::string line_problem(std::string_view line, bool complete) {
  if (!complete && !line.empty() && line.back() == '\r') line.remove_suffix(1);  // its LF may follow
  const std::size_t colon = line.find(':');
  const std::string_view name = line.substr(0, colon);
  const std::string shown(line.substr(0, 80));
  if (name.empty() && colon != kNone) return "header line without a name: '" + shown + "'";
  if (!std::all_of(name.begin(), name.end(), is_token)) return "header line without a valid name: '" + shown + "'";
  if (colon == kNone) return complete ? "header line without a colon: '" + shown + "'" : std::string();
  const std::string_view value = line.substr(colon + 1);
  if (std::any_of(value.begin(), value.end(), is_control)) return "control character in header line '" + shown + "'";
  return {};
}

}  // namespace

FrameDecoder::FrameDecoder(std::size_t max_message_bytes) : max_bytes_(max_message_bytes) {}

void FrameDecoder::feed(std::string_view bytes) {
  compact();
  buffer_.append(bytes);
}

void FrameDecoder::compact() {
  if (read_pos_ > 0 && (read_pos_ == buffer_.size() || read_pos_ > (1u << 20))) {
    buffer_.erase(0, read_pos_);
    read_pos_ = 0;
  }
}

std::optional<FrameEvent> FrameDecoder::next() {
  if (discarding_ && !discard_oversized()) return std::nullopt;
  if (!body_length_) {
    auto header_event = parse_header();
    if (header_event || !body_length_) return header_event;
  }
  return read_body();
}

bool FrameDecoder::discard_oversized() {
  // Dropped unbuffered; only the last bytes, which may begin a header, are kept.
  const std::string_view data = std::string_view(buffer_).substr(read_pos_);
  const Resync found = find_resync(data, 0, data.size());
  const std::size_t drop = found.at != kNone ? found.at : found.undecided != kNone ? found.undecided : data.size();
  read_pos_ += drop;
  discarded_ += drop;
  if (found.at == kNone) return false;
  discarding_ = false;
  return true;
}

std::optional<FrameEvent> FrameDecoder::read_body() {
  const std::size_t length = *body_length_;
  const std::string_view data = std::string_view(buffer_).substr(read_pos_);
  // A header inside the announced body: the Content-Length was too large, and the body ends there
  // (waiting for the rest would swallow the messages that follow).
  const Resync found = find_resync(data, body_scanned_, std::min(data.size(), length));
  if (found.at != kNone) {
    FrameEvent event;
    event.kind = FrameEvent::Kind::Incomplete;
    event.body = std::string(data.substr(0, found.at));
    event.size = length;
    event.detail = "Content-Length announced " + std::to_string(length) + " bytes, but a message header began after " +
                   std::to_string(found.at) + " bytes of the body";
    read_pos_ += found.at;
    body_length_.reset();
    body_scanned_ = 0;
    return event;
  }
  if (found.undecided != kNone) {
    body_scanned_ = found.undecided;
    return std::nullopt;  // the next bytes say whether a header begins there
  }
  body_scanned_ = std::min(data.size(), length);
  if (data.size() < length) return std::nullopt;
  FrameEvent event;
  event.kind = FrameEvent::Kind::Message;
  event.body = std::string(data.substr(0, length));
  event.size = length;
  if (discarded_ > 0) {
    event.detail = "resynchronised after skipping " + std::to_string(discarded_) + " bytes of an oversized message";
    discarded_ = 0;
  }
  read_pos_ += length;
  body_length_.reset();
  body_scanned_ = 0;
  compact();
  return event;
}

std::optional<FrameEvent> FrameDecoder::parse_header() {
  // Blank lines between messages are harmless.
  while (read_pos_ < buffer_.size() && (buffer_[read_pos_] == '\r' || buffer_[read_pos_] == '\n')) {
    ++read_pos_;
  }
  const std::string_view data = std::string_view(buffer_).substr(read_pos_);
  if (data.empty()) return std::nullopt;

  if (!header_name_at(data, 0)) {
    // Not a header: skip to the next header name (or, when none is in sight, most of the junk).
    std::size_t next = find_header_name(data, 0);
    if (next == kNone) {
      if (data.size() < kMaxJunkBytes) return std::nullopt;  // a header may still be arriving
      next = data.size() - kContentLength.size();
    }
    FrameEvent event;
    event.kind = FrameEvent::Kind::Junk;
    event.size = next;
    event.detail = "skipped " + std::to_string(next) + " bytes that were not a message header";
    read_pos_ += next;
    return event;
  }

  auto bad_header = [&](std::size_t skip, std::string detail) {
    FrameEvent event;
    event.kind = FrameEvent::Kind::BadHeader;
    event.size = skip;
    event.detail = std::move(detail);
    read_pos_ += skip;
    return event;
  };
  // Line by line up to the empty line (CRLF per the specification; LF tolerated). A bad line ends
  // the block there: the bytes up to its end, or up to a header name inside it, are skipped.
  std::optional<std::size_t> length;
  std::size_t pos = 0;
  std::size_t first_line_end = kNone;
  for (;;) {
    const std::size_t eol = data.find('\n', pos);
    const bool complete = eol != kNone;
    const std::size_t line_end = complete ? eol : data.size();
    std::string_view line = data.substr(pos, line_end - pos);
    if (complete && !line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (complete && line.empty()) {
      pos = eol + 1;
      break;
    }
    if (first_line_end == kNone && complete) first_line_end = eol + 1;
    const std::size_t inner = find_header_name(data.substr(0, line_end), pos + 1);
    const std::string problem = line_problem(line, complete);
    if (inner != kNone) {
      const std::string shown(data.substr(pos, std::min<std::size_t>(inner - pos, 80)));
      return bad_header(inner, problem.empty() ? "header line running into another header: '" + shown + "'" : problem);
    }
    // Cut where the line's bytes end for now, but not into a header name still arriving.
    const std::size_t arrived = data.size() - partial_name_at_end(data);
    if (!problem.empty()) return bad_header(complete ? eol + 1 : std::max(arrived, pos + 1), problem);
    if (!complete) {
      if (data.size() < kMaxHeaderBytes) return std::nullopt;
      return bad_header(pos > 0 ? first_line_end : arrived,
                        "header block without an empty line after " + std::to_string(data.size()) + " bytes");
    }
    if (starts_with_nocase(line, kContentLength)) {
      const std::string_view value = trim(line.substr(kContentLength.size()));
      std::size_t parsed = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
      if (ec != std::errc() || ptr != value.data() + value.size() || value.empty()) {
        return bad_header(eol + 1, "invalid Content-Length '" + std::string(value.substr(0, 40)) + "'");
      }
      length = parsed;
    }
    pos = eol + 1;
    if (pos > kMaxHeaderBytes) {
      return bad_header(first_line_end, "header block without an empty line after " + std::to_string(pos) + " bytes");
    }
  }

  if (!length) return bad_header(pos, "header block without Content-Length");
  read_pos_ += pos;
  if (*length > max_bytes_) {
    FrameEvent event;
    event.kind = FrameEvent::Kind::Oversized;
    event.size = *length;
    event.detail = "message of " + std::to_string(*length) + " bytes exceeds the limit of " +
                   std::to_string(max_bytes_) + " bytes";
    // Its bytes are dropped up to the next header, not counted off: the length may be wrong too.
    discarding_ = true;
    discarded_ = 0;
    discard_oversized();
    return event;
  }
  body_length_ = *length;
  body_scanned_ = 0;
  return std::nullopt;
}

std::string encode_frame(std::string_view body) {
  std::string frame = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  frame.append(body);
  return frame;
}

}  // namespace graphmend::protocol
