// Content-Length framing (the LSP base protocol): an incremental decoder that survives bad input,
// and the encoder.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace graphmend::protocol {

inline constexpr std::size_t kDefaultMaxMessageBytes = 64u * 1024u * 1024u;

// What the decoder produced: a message body, or a framing problem it recovered from.
struct FrameEvent {
  enum class Kind {
    Message,      // `body` holds one complete message body
    Oversized,    // a message of `size` bytes exceeded the limit; its body was skipped
    BadHeader,    // a header block without a usable Content-Length; skipped up to the next header
    Junk,         // bytes before a header that were not a header; skipped
  };
  Kind kind = Kind::Message;
  std::string body;
  std::size_t size = 0;  // Oversized: announced length; Junk/BadHeader: bytes skipped
  std::string detail;    // human-readable description for logs and error messages
};

class FrameDecoder {
 public:
  explicit FrameDecoder(std::size_t max_message_bytes = kDefaultMaxMessageBytes);

  // Appends bytes read from the stream.
  void feed(std::string_view bytes);
  // The next complete event, or nothing until more bytes arrive.
  std::optional<FrameEvent> next();
  // Bytes buffered but not yet consumed (an incomplete message at end of stream).
  std::size_t pending_bytes() const { return buffer_.size() - read_pos_; }

 private:
  std::optional<FrameEvent> parse_header();
  void compact();

  std::size_t max_bytes_;
  std::string buffer_;
  std::size_t read_pos_ = 0;
  std::optional<std::size_t> body_length_;  // set once a header was read
  std::size_t skip_remaining_ = 0;          // oversized body bytes still to discard
};

// "Content-Length: N\r\n\r\n" + body.
std::string encode_frame(std::string_view body);

}  // namespace graphmend::protocol
