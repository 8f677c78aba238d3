#include "graphmend/protocol/lsp.h"

#include <limits>

namespace graphmend::protocol {
namespace {

uint32_t read_uint(const json& value, std::string_view where, std::string_view field) {
  const auto member = value.find(field);
  if (member == value.end() || !member->is_number_integer()) {
    throw ProtocolError(error_code::kInvalidParams,
                        std::string(where) + "." + std::string(field) + " must be an integer");
  }
  const auto number = member->get<int64_t>();
  if (number < 0 || number > std::numeric_limits<uint32_t>::max()) {
    throw ProtocolError(error_code::kInvalidParams,
                        std::string(where) + "." + std::string(field) + " is out of range");
  }
  return static_cast<uint32_t>(number);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

json to_json(const Position& position) {
  return {{"line", position.line}, {"character", position.character}};
}

json to_json(const Range& range) {
  return {{"start", to_json(range.start)}, {"end", to_json(range.end)}};
}

Position position_from_json(const json& value, std::string_view where) {
  if (!value.is_object()) {
    throw ProtocolError(error_code::kInvalidParams, std::string(where) + " must be an object");
  }
  return {read_uint(value, where, "line"), read_uint(value, where, "character")};
}

Range range_from_json(const json& value, std::string_view where) {
  if (!value.is_object() || !value.contains("start") || !value.contains("end")) {
    throw ProtocolError(error_code::kInvalidParams,
                        std::string(where) + " must be an object with start and end");
  }
  return {position_from_json(value["start"], std::string(where) + ".start"),
          position_from_json(value["end"], std::string(where) + ".end")};
}

const json* optional_member(const json& params, const std::string& pointer, json::value_t type) {
  const json::json_pointer ptr(pointer);
  if ((!params.is_object() && !params.is_array()) || !params.contains(ptr)) return nullptr;
  const json& member = params.at(ptr);
  if (member.type() == type) return &member;
  // Integers arrive as either signedness.
  if (type == json::value_t::number_integer && member.is_number_integer()) return &member;
  return nullptr;
}

const json& require(const json& params, const std::string& pointer, json::value_t type) {
  if (const json* member = optional_member(params, pointer, type)) return *member;
  const json probe(type);
  throw ProtocolError(error_code::kInvalidParams,
                      "params" + pointer + " must be " + std::string(probe.type_name()));
}

std::string require_string(const json& params, const std::string& pointer) {
  return require(params, pointer, json::value_t::string).get<std::string>();
}

int64_t require_integer(const json& params, const std::string& pointer) {
  return require(params, pointer, json::value_t::number_integer).get<int64_t>();
}

std::string negotiate_position_encoding(const json& client_capabilities) {
  const json* encodings =
      optional_member(client_capabilities, "/general/positionEncodings", json::value_t::array);
  if (encodings != nullptr) {
    for (const json& encoding : *encodings) {
      if (encoding == "utf-8") return "utf-8";
    }
  }
  return "utf-16";
}

bool code_action_kind_matches(std::string_view requested, std::string_view kind) {
  if (requested.empty()) return false;
  if (kind == requested) return true;
  return kind.size() > requested.size() && kind.substr(0, requested.size()) == requested &&
         kind[requested.size()] == '.';
}

bool code_action_kind_requested(const std::vector<std::string>& only, std::string_view kind) {
  if (only.empty()) return true;
  for (const std::string& requested : only) {
    if (code_action_kind_matches(requested, kind)) return true;
  }
  return false;
}

std::optional<std::string> uri_to_path(std::string_view uri) {
  constexpr std::string_view kScheme = "file://";
  if (uri.substr(0, kScheme.size()) != kScheme) return std::nullopt;
  std::string_view rest = uri.substr(kScheme.size());
  // Skip an authority ("localhost" or empty).
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  rest = rest.substr(slash);
  std::string path;
  path.reserve(rest.size());
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size()) {
      const int hi = hex_value(rest[i + 1]);
      const int lo = hex_value(rest[i + 2]);
      if (hi >= 0 && lo >= 0) {
        path.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    if (rest[i] == '?' || rest[i] == '#') break;
    path.push_back(rest[i]);
  }
  // file:///c%3A/x on Windows-style URIs: keep as is on POSIX.
  return path;
}

std::string path_to_uri(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = "file://";
  for (const char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    const bool plain = (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') ||
                       (byte >= '0' && byte <= '9') || c == '/' || c == '-' || c == '_' ||
                       c == '.' || c == '~';
    if (plain) {
      uri.push_back(c);
    } else {
      uri.push_back('%');
      uri.push_back(kHex[byte >> 4]);
      uri.push_back(kHex[byte & 15]);
    }
  }
  return uri;
}

}  // namespace graphmend::protocol
