#include "graphmend/protocol/framing.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace graphmend::protocol {
namespace {

constexpr std::string_view kContentLength = "content-length:";
constexpr std::string_view kContentType = "content-type:";
// A header block longer than this without its blank line is garbage, not a slow client.
constexpr std::size_t kMaxHeaderBytes = 8 * 1024;
// Junk without any header name in sight is dropped in pieces of at most this size.
constexpr std::size_t kMaxJunkBytes = 64 * 1024;

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  }
  return true;
}

std::size_t find_nocase(std::string_view text, std::string_view needle, std::size_t from = 0) {
  if (needle.empty() || text.size() < needle.size()) return std::string_view::npos;
  for (std::size_t i = from; i + needle.size() <= text.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) == needle[0] &&
        starts_with_nocase(text.substr(i), needle)) {
      return i;
    }
  }
  return std::string_view::npos;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
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
  if (skip_remaining_ > 0) {
    const std::size_t n = std::min(skip_remaining_, pending_bytes());
    read_pos_ += n;
    skip_remaining_ -= n;
    if (skip_remaining_ > 0) return std::nullopt;
  }
  if (!body_length_) {
    auto header_event = parse_header();
    if (header_event || !body_length_) return header_event;
  }
  if (pending_bytes() < *body_length_) return std::nullopt;
  FrameEvent event;
  event.kind = FrameEvent::Kind::Message;
  event.body = buffer_.substr(read_pos_, *body_length_);
  event.size = *body_length_;
  read_pos_ += *body_length_;
  body_length_.reset();
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

  if (!starts_with_nocase(data, kContentLength) && !starts_with_nocase(data, kContentType)) {
    // Not a header: skip to the next header name (or, when none is in sight, most of the junk).
    std::size_t next = std::min(find_nocase(data, kContentLength), find_nocase(data, kContentType));
    if (next == std::string_view::npos) {
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

  // The header block ends with an empty line: CRLF CRLF per the specification; LF LF tolerated.
  std::size_t end = data.find("\r\n\r\n");
  std::size_t terminator = 4;
  if (const std::size_t lf = data.find("\n\n"); lf != std::string_view::npos && lf < end) {
    end = lf;
    terminator = 2;
  }
  if (end == std::string_view::npos) {
    if (data.size() < kMaxHeaderBytes) return std::nullopt;
    FrameEvent event;
    event.kind = FrameEvent::Kind::BadHeader;
    const std::size_t line_end = data.find('\n');
    event.size = line_end == std::string_view::npos ? data.size() : line_end + 1;
    event.detail = "header block without an empty line after " + std::to_string(data.size()) +
                   " bytes";
    read_pos_ += event.size;
    return event;
  }

  const std::string_view block = data.substr(0, end);
  std::optional<std::size_t> length;
  std::string problem;
  std::size_t pos = 0;
  while (pos <= block.size()) {
    std::size_t eol = block.find('\n', pos);
    if (eol == std::string_view::npos) eol = block.size();
    const std::string_view line = trim(block.substr(pos, eol - pos));
    pos = eol + 1;
    if (line.empty()) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      problem = "header line without a colon: '" + std::string(line.substr(0, 80)) + "'";
      continue;
    }
    if (starts_with_nocase(line, kContentLength)) {
      const std::string_view value = trim(line.substr(colon + 1));
      std::size_t parsed = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
      if (ec != std::errc() || ptr != value.data() + value.size() || value.empty()) {
        problem = "invalid Content-Length '" + std::string(value.substr(0, 40)) + "'";
      } else {
        length = parsed;
      }
    }
  }
  read_pos_ += end + terminator;

  if (!length) {
    FrameEvent event;
    event.kind = FrameEvent::Kind::BadHeader;
    event.size = end + terminator;
    event.detail = problem.empty() ? "header block without Content-Length" : problem;
    return event;
  }
  if (*length > max_bytes_) {
    FrameEvent event;
    event.kind = FrameEvent::Kind::Oversized;
    event.size = *length;
    event.detail = "message of " + std::to_string(*length) + " bytes exceeds the limit of " +
                   std::to_string(max_bytes_) + " bytes";
    skip_remaining_ = *length;
    // Discard what is already buffered right away.
    const std::size_t n = std::min(skip_remaining_, pending_bytes());
    read_pos_ += n;
    skip_remaining_ -= n;
    return event;
  }
  body_length_ = *length;
  return std::nullopt;
}

std::string encode_frame(std::string_view body) {
  std::string frame = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  frame.append(body);
  return frame;
}

}  // namespace graphmend::protocol
