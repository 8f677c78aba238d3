#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "graphmend/protocol/framing.h"

using graphmend::protocol::encode_frame;
using graphmend::protocol::FrameDecoder;
using graphmend::protocol::FrameEvent;
using Kind = FrameEvent::Kind;

namespace {

std::vector<FrameEvent> drain(FrameDecoder& decoder) {
  std::vector<FrameEvent> events;
  while (auto event = decoder.next()) events.push_back(std::move(*event));
  return events;
}

}  // namespace

TEST_CASE("framing: encode and decode round trip, one byte at a time") {
  const std::string stream = encode_frame(R"({"a":1})") + encode_frame("{}") + encode_frame("");
  CHECK(stream.substr(0, 21) == "Content-Length: 7\r\n\r\n");
  FrameDecoder decoder;
  std::vector<FrameEvent> events;
  for (const char c : stream) {
    decoder.feed(std::string_view(&c, 1));
    for (auto& event : drain(decoder)) events.push_back(std::move(event));
  }
  REQUIRE(events.size() == 3);
  CHECK(events[0].kind == Kind::Message);
  CHECK(events[0].body == R"({"a":1})");
  CHECK(events[1].body == "{}");
  CHECK(events[2].body.empty());
  CHECK(decoder.pending_bytes() == 0);
}

TEST_CASE("framing: headers are case-insensitive, Content-Type is accepted, LF-only tolerated") {
  FrameDecoder decoder;
  decoder.feed("content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}");
  decoder.feed("Content-Type: x\nContent-Length:3\n\n[1]");
  const auto events = drain(decoder);
  REQUIRE(events.size() == 2);
  CHECK(events[0].body == "{}");
  CHECK(events[1].body == "[1]");
}

TEST_CASE("framing: a body without a header is skipped up to the next header") {
  FrameDecoder decoder;
  decoder.feed(R"({"jsonrpc":"2.0"})" + encode_frame("{}"));
  const auto events = drain(decoder);
  REQUIRE(events.size() == 2);
  CHECK(events[0].kind == Kind::Junk);
  CHECK(events[0].size == 17);
  CHECK(events[1].kind == Kind::Message);
  CHECK(events[1].body == "{}");
}

TEST_CASE("framing: junk without any header in sight is dropped in bounded pieces") {
  FrameDecoder decoder;
  decoder.feed(std::string(100 * 1024, 'x'));
  const auto events = drain(decoder);
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == Kind::Junk);
  CHECK(decoder.pending_bytes() < 64);
}

TEST_CASE("framing: a header without a valid Content-Length is reported and skipped") {
  FrameDecoder decoder;
  decoder.feed("Content-Length: 12x\r\n\r\n" + encode_frame("{}"));
  auto events = drain(decoder);
  REQUIRE(events.size() == 2);
  CHECK(events[0].kind == Kind::BadHeader);
  CHECK(events[0].detail.find("12x") != std::string::npos);
  CHECK(events[1].body == "{}");

  FrameDecoder overflow;
  overflow.feed("Content-Length: 99999999999999999999999\r\n\r\n" + encode_frame("[]"));
  events = drain(overflow);
  REQUIRE(events.size() == 2);
  CHECK(events[0].kind == Kind::BadHeader);
  CHECK(events[1].body == "[]");
}

TEST_CASE("framing: an oversized message is skipped without being buffered") {
  FrameDecoder decoder(10);
  decoder.feed("Content-Length: 25\r\n\r\n0123456789");
  auto events = drain(decoder);
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == Kind::Oversized);
  CHECK(events[0].size == 25);
  CHECK(decoder.pending_bytes() == 0);
  decoder.feed("0123456789");
  CHECK(drain(decoder).empty());
  decoder.feed("01234" + encode_frame("{}"));
  events = drain(decoder);
  REQUIRE(events.size() == 1);
  CHECK(events[0].body == "{}");
}

TEST_CASE("framing: an incomplete message waits for more bytes") {
  FrameDecoder decoder;
  decoder.feed("Content-Length: 4\r\n\r\n{}");
  CHECK(drain(decoder).empty());
  CHECK(decoder.pending_bytes() == 2);
  decoder.feed("  ");
  const auto events = drain(decoder);
  REQUIRE(events.size() == 1);
  CHECK(events[0].body == "{}  ");
}

TEST_CASE("framing: a large body arriving in chunks is assembled once") {
  const std::string body(3 * 1024 * 1024, 'a');
  const std::string frame = encode_frame(body);
  FrameDecoder decoder;
  std::vector<FrameEvent> events;
  for (std::size_t i = 0; i < frame.size(); i += 65536) {
    decoder.feed(std::string_view(frame).substr(i, 65536));
    for (auto& event : drain(decoder)) events.push_back(std::move(event));
  }
  REQUIRE(events.size() == 1);
  CHECK(events[0].body.size() == body.size());
}
