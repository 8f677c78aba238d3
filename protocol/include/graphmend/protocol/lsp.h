// The LSP structures graphmend uses, with strict reading of request parameters (a malformed field
// throws ProtocolError with InvalidParams naming the field).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/protocol/jsonrpc.h"

namespace graphmend::protocol {

struct Position {
  uint32_t line = 0;
  uint32_t character = 0;
  bool operator==(const Position&) const = default;
};

struct Range {
  Position start;
  Position end;
  bool operator==(const Range&) const = default;
};

json to_json(const Position& position);
json to_json(const Range& range);
// Throw ProtocolError(kInvalidParams) naming `where` when the value is not a Position / Range.
Position position_from_json(const json& value, std::string_view where = "position");
Range range_from_json(const json& value, std::string_view where = "range");

// Members of request parameters, by JSON pointer ("/textDocument/uri"); InvalidParams when missing
// or of the wrong type.
const json& require(const json& params, const std::string& pointer, json::value_t type);
std::string require_string(const json& params, const std::string& pointer);
int64_t require_integer(const json& params, const std::string& pointer);
// The member when present and of the given type, nothing otherwise.
const json* optional_member(const json& params, const std::string& pointer, json::value_t type);

// Position encodings ("utf-8", "utf-16", "utf-32"): UTF-8 when the client offers it (no
// conversion at all), otherwise UTF-16, which every client must support.
std::string negotiate_position_encoding(const json& client_capabilities);

namespace severity {
inline constexpr int kError = 1;
inline constexpr int kWarning = 2;
inline constexpr int kInformation = 3;
inline constexpr int kHint = 4;
}  // namespace severity

namespace message_type {
inline constexpr int kError = 1;
inline constexpr int kWarning = 2;
inline constexpr int kInfo = 3;
inline constexpr int kLog = 4;
}  // namespace message_type

namespace code_action_kind {
inline constexpr std::string_view kQuickFix = "quickfix";
inline constexpr std::string_view kSource = "source";
inline constexpr std::string_view kSourceFixAll = "source.fixAll";
inline constexpr std::string_view kSourceFixAllGraphmend = "source.fixAll.graphmend";
}  // namespace code_action_kind

// Whether an action of `kind` answers a request whose `only` lists `requested`: equal, or
// `requested` is a dot-separated prefix ("source.fixAll" matches "source.fixAll.graphmend").
bool code_action_kind_matches(std::string_view requested, std::string_view kind);
// Same over a whole `only` list; an absent (empty) list matches everything.
bool code_action_kind_requested(const std::vector<std::string>& only, std::string_view kind);

// The local path a document URI names: `file:///abs/path`, `file://localhost/abs/path` or
// `file:/abs/path`, percent-decoded, with its query and fragment ignored. Nothing for another
// scheme (an in-memory document such as `untitled:Untitled-1`). Throws ProtocolError
// (InvalidParams, naming the URI) for a URI that cannot be used: none or a bad scheme, a file URI
// of another host or of a relative path, a bad percent escape (`%zz`), a NUL byte (`%00`), or a
// path that is not UTF-8.
std::optional<std::string> document_path(std::string_view uri);
// The same, but nothing (instead of the error) for a URI document_path() refuses.
std::optional<std::string> uri_to_path(std::string_view uri);
std::string path_to_uri(std::string_view path);

}  // namespace graphmend::protocol
