// Content-Length framing (the LSP base protocol): an incremental decoder that survives bad input,
// and the encoder.
//
// Recovery: a valid JSON body can never hold a raw `Content-Length: <digits>` line (JSON strings
// escape CR and LF, and bare words are not JSON), so such a line is taken as the start of the next
// message wherever it appears. The decoder never counts blindly through bytes it was told to
// expect: after an oversized header it discards bytes only up to the next such line, and a body
// whose announced length runs into such a line ends there (Kind::Incomplete). A header block with
// a bad line is skipped up to that line's end, or up to a header name inside it.
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
    Message,     // `body` holds one complete message body
    Oversized,   // a message of `size` bytes exceeded the limit; bytes up to the next header are skipped
    BadHeader,   // a header block without a usable Content-Length; skipped up to the next header
    Junk,        // bytes before a header that were not a header; skipped
    Incomplete,  // a header began inside a body announced as `size` bytes; `body` holds the bytes before it
  };
  Kind kind = Kind::Message;
  std::string body;
  std::size_t size = 0;  // Oversized, Incomplete: announced length; Junk/BadHeader: bytes skipped
  // Human-readable description for logs and error messages; for a Message, set when bytes of an
  // oversized message were discarded before it.
  std::string detail;
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
  std::optional<FrameEvent> read_body();
  bool discard_oversized();
  void compact();

  std::size_t max_bytes_;
  std::string buffer_;
  std::size_t read_pos_ = 0;
  std::optional<std::size_t> body_length_;  // set once a header was read
  std::size_t body_scanned_ = 0;            // body bytes already searched for a header
  bool discarding_ = false;                 // after an oversized header: dropping bytes up to a header
  std::size_t discarded_ = 0;               // bytes dropped so, reported with the next message
};

// "Content-Length: N\r\n\r\n" + body.
std::string encode_frame(std::string_view body);

}  // namespace graphmend::protocol
