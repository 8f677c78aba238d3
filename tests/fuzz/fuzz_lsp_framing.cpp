// libFuzzer target: the language server's input path on arbitrary bytes, the Content-Length framing
// (protocol::FrameDecoder) and the dispatch of what it decodes (lsp::Server::on_frame, in process).
//
// The input's first byte picks how the stream is cut into reads (all at once, or chunks of 1-255
// bytes); the rest is the stream, followed by a sentinel request the fuzzer cannot swallow. Asserted
// (abort, so libFuzzer saves the input):
//   * no crash, no sanitizer report, no exception out of the decoder or out of on_frame (one there
//     would stop the transport from ever reading again);
//   * the decoder's buffer stays bounded (limit + header and junk windows + one read), message
//     bodies stay within the limit;
//   * whatever came before, the sentinel is decoded whole, as the last event, with nothing left over;
//   * the messages decoded (bodies, cut-short bodies, oversized announcements) do not depend on how the
//     stream was cut into reads;
//   * the server answers the sentinel (unless the input made it exit), everything it writes is a
//     JSON-RPC 2.0 message that serialises, and it never answers InternalError or logs an internal
//     error (a handler that threw).
// tests/fuzz/fuzz_lsp.sh builds it (clang, ASan) and seeds it from tests/lsp/transcripts.
#include <spdlog/spdlog.h>

#include <asio.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/protocol/framing.h"
#include "graphmend/protocol/jsonrpc.h"
#include "lsp/server.h"

namespace {

using graphmend::protocol::FrameDecoder;
using graphmend::protocol::FrameEvent;
using Kind = FrameEvent::Kind;
using nlohmann::json;

// Small, so that oversized messages are easy to reach.
constexpr std::size_t kLimit = 512;
// What the decoder may hold besides a body: a header block (8 KiB) or a junk window (64 KiB).
constexpr std::size_t kSlack = 8 * 1024 + 64 * 1024;

const std::string kSentinelBody = R"({"jsonrpc":"2.0","id":"graphmend-fuzz-sentinel","method":"graphmend/fuzzPing"})";
const std::string kSentinel = graphmend::protocol::encode_frame(kSentinelBody);

[[noreturn]] void fail(const char* what, std::string_view input, const std::string& detail) {
  std::fprintf(stderr, "\n== graphmend LSP fuzz: %s\n-- input (%zu bytes)\n-- detail:\n%s\n", what, input.size(),
               detail.c_str());
  std::abort();
}

std::string kind_name(Kind kind) {
  switch (kind) {
    case Kind::Message:
      return "Message";
    case Kind::Oversized:
      return "Oversized";
    case Kind::BadHeader:
      return "BadHeader";
    case Kind::Junk:
      return "Junk";
    case Kind::Incomplete:
      return "Incomplete";
  }
  return "?";
}

// Decodes `stream` fed in reads of `chunk` bytes (0: all at once), checking the buffer bound.
std::vector<FrameEvent> decode(std::string_view stream, std::size_t chunk, std::string_view input) {
  FrameDecoder decoder(kLimit);
  std::vector<FrameEvent> events;
  const std::size_t step = chunk == 0 ? stream.size() : chunk;
  for (std::size_t at = 0; at < stream.size(); at += step) {
    const std::string_view piece = stream.substr(at, step);
    try {
      decoder.feed(piece);
      while (auto event = decoder.next()) {
        if (event->kind == Kind::Message && event->body.size() > kLimit) {
          fail("a message body over the limit", input, std::to_string(event->body.size()));
        }
        events.push_back(std::move(*event));
      }
    } catch (const std::exception& error) {
      fail("the decoder threw", input, error.what());
    }
    if (decoder.pending_bytes() > kLimit + kSlack + piece.size()) {
      fail("the decoder's buffer grew without bound", input, std::to_string(decoder.pending_bytes()));
    }
  }
  if (events.empty() || events.back().kind != Kind::Message || events.back().body != kSentinelBody) {
    fail("the sentinel after the input was not decoded", input,
         events.empty() ? "no events" : kind_name(events.back().kind) + ": " + events.back().body.substr(0, 200));
  }
  if (decoder.pending_bytes() != 0) {
    fail("bytes left over after the sentinel", input, std::to_string(decoder.pending_bytes()));
  }
  return events;
}

// The events that carry messages: the same however the stream was cut.
std::string messages_of(const std::vector<FrameEvent>& events) {
  std::string out;
  for (const FrameEvent& event : events) {
    if (event.kind == Kind::Junk || event.kind == Kind::BadHeader) continue;
    out += kind_name(event.kind) + " " + std::to_string(event.size) + " " + std::to_string(event.body.size()) + ":" +
           event.body + "\n";
  }
  return out;
}

void dispatch(const std::vector<FrameEvent>& events, std::string_view input) {
  asio::io_context io;
  std::vector<json> out;
  {
    graphmend::lsp::Server server(
        io,
        [&](const json& message) {
          if (!message.is_object() || message.value("jsonrpc", "") != "2.0") {
            fail("the server wrote something that is not JSON-RPC 2.0", input, message.dump());
          }
          try {
            (void)graphmend::protocol::serialize(message);
          } catch (const std::exception& error) {
            fail("the server wrote a message that does not serialise", input, error.what());
          }
          // A handler that threw is a bug, however bad the input.
          const json* error = message.contains("error") && message["error"].is_object() ? &message["error"] : nullptr;
          if (error != nullptr && error->value("code", 0) == graphmend::protocol::error_code::kInternalError) {
            fail("the server answered InternalError", input, message.dump());
          }
          if (message.value("method", "") == "window/logMessage" &&
              message.dump().find("internal error") != std::string::npos) {
            fail("the server logged an internal error", input, message.dump());
          }
          out.push_back(message);
        },
        graphmend::lsp::ServerOptions{1});
    // Initialised first, so that what follows reaches the handlers past the lifecycle checks.
    server.on_message(
        R"({"jsonrpc":"2.0","id":"graphmend-fuzz-init","method":"initialize","params":{"capabilities":{},)"
        R"("initializationOptions":{"debounce":0}}})");
    server.on_message(R"({"jsonrpc":"2.0","method":"initialized","params":{}})");
    for (const FrameEvent& event : events) {
      try {
        server.on_frame(event);
      } catch (const std::exception& error) {
        fail("on_frame threw (the transport would stop reading)", input, error.what());
      }
      io.restart();
      io.poll();
    }
    if (!server.exit_code()) {
      bool answered = false;
      for (const json& message : out) {
        answered = answered || (message.contains("id") && message["id"] == "graphmend-fuzz-sentinel" &&
                                !message.contains("method"));
      }
      if (!answered) fail("the server did not answer the sentinel", input, std::to_string(out.size()) + " messages");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t chunk = static_cast<unsigned char>(input[0]);
  std::string stream(input.substr(1));
  stream += kSentinel;
  const std::vector<FrameEvent> whole = decode(stream, 0, input);
  if (chunk != 0) {
    const std::vector<FrameEvent> cut = decode(stream, chunk, input);
    if (messages_of(cut) != messages_of(whole)) {
      fail("the messages decoded depend on how the stream was cut", input,
           "-- all at once:\n" + messages_of(whole) + "-- in reads of " + std::to_string(chunk) + " bytes:\n" +
               messages_of(cut));
    }
  }
  dispatch(whole, input);
  return 0;
}
