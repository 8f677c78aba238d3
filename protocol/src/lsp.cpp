#include "graphmend/protocol/lsp.h"

#include <algorithm>
#include <cctype>
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
    throw ProtocolError(error_code::kInvalidParams, std::string(where) + "." + std::string(field) + " is out of range");
  }
  return static_cast<uint32_t>(number);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    std::size_t extra = 0;
    uint32_t code = 0;
    if (byte < 0x80) {
      ++i;
      continue;
    } else if ((byte & 0xE0) == 0xC0) {
      extra = 1;
      code = byte & 0x1Fu;
    } else if ((byte & 0xF0) == 0xE0) {
      extra = 2;
      code = byte & 0x0Fu;
    } else if ((byte & 0xF8) == 0xF0) {
      extra = 3;
      code = byte & 0x07u;
    } else {
      return false;
    }
    if (i + extra >= text.size()) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3Fu);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    static constexpr uint32_t kMinimum[] = {0, 0x80, 0x800, 0x10000};
    if (code < kMinimum[extra] || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return false;
    i += extra + 1;
  }
  return true;
}

}  // namespace

json to_json(const Position& position) { return {{"line", position.line}, {"character", position.character}}; }

json to_json(const Range& range) { return {{"start", to_json(range.start)}, {"end", to_json(range.end)}}; }

Position position_from_json(const json& value, std::string_view where) {
  if (!value.is_object()) {
    throw ProtocolError(error_code::kInvalidParams, std::string(where) + " must be an object");
  }
  return {read_uint(value, where, "line"), read_uint(value, where, "character")};
}

Range range_from_json(const json& value, std::string_view where) {
  if (!value.is_object() || !value.contains("start") || !value.contains("end")) {
    throw ProtocolError(error_code::kInvalidParams, std::string(where) + " must be an object with start and end");
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
  throw ProtocolError(error_code::kInvalidParams, "params" + pointer + " must be " + std::string(probe.type_name()));
}

std::string require_string(const json& params, const std::string& pointer) {
  return require(params, pointer, json::value_t::string).get<std::string>();
}

int64_t require_integer(const json& params, const std::string& pointer) {
  return require(params, pointer, json::value_t::number_integer).get<int64_t>();
}

std::string negotiate_position_encoding(const json& client_capabilities) {
  const json* encodings = optional_member(client_capabilities, "/general/positionEncodings", json::value_t::array);
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

std::optional<std::string> document_path(std::string_view uri) {
  const std::string shown(uri.substr(0, 200));
  auto refuse = [&](const std::string& why) -> ProtocolError {
    return ProtocolError(error_code::kInvalidParams, "invalid document URI '" + shown + "': " + why);
  };
  // RFC 3986: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then ":".
  const std::size_t colon = uri.find(':');
  const std::string_view scheme = uri.substr(0, colon);
  const auto scheme_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '-' || c == '.';
  };
  if (colon == std::string_view::npos || scheme.empty() || std::isalpha(static_cast<unsigned char>(scheme[0])) == 0 ||
      !std::all_of(scheme.begin(), scheme.end(), scheme_char)) {
    throw refuse("no scheme (a file is file:///absolute/path)");
  }
  std::string lowered(scheme);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
  if (lowered != "file") return std::nullopt;
  std::string_view rest = uri.substr(colon + 1);
  if (const std::size_t end = rest.find_first_of("?#"); end != std::string_view::npos) rest = rest.substr(0, end);
  if (rest.substr(0, 2) == "//") {
    rest.remove_prefix(2);
    const std::size_t slash = rest.find('/');
    const std::string_view host = rest.substr(0, slash);
    std::string host_lowered(host);
    std::transform(host_lowered.begin(), host_lowered.end(), host_lowered.begin(),
                   [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
    if (!host.empty() && host_lowered != "localhost") {
      throw refuse("names the host '" + std::string(host.substr(0, 80)) + "'; only local files can be opened");
    }
    if (slash == std::string_view::npos) throw refuse("names no path");
    rest = rest.substr(slash);
  }
  if (rest.empty() || rest[0] != '/') throw refuse("not an absolute path");
  std::string path;
  path.reserve(rest.size());
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] != '%') {
      path.push_back(rest[i]);
      continue;
    }
    const int hi = i + 1 < rest.size() ? hex_value(rest[i + 1]) : -1;
    const int lo = i + 2 < rest.size() ? hex_value(rest[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      throw refuse("'" + std::string(rest.substr(i, 3)) + "' is not a percent escape (% and two hex digits)");
    }
    if (hi == 0 && lo == 0) throw refuse("'%00' is a NUL byte, which no file name holds");
    path.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  if (!valid_utf8(path)) throw refuse("the path is not UTF-8");
  return path;
}

std::optional<std::string> uri_to_path(std::string_view uri) {
  try {
    return document_path(uri);
  } catch (const ProtocolError&) {
    return std::nullopt;
  }
}

std::string path_to_uri(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = "file://";
  for (const char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    const bool plain = (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') || (byte >= '0' && byte <= '9') ||
                       c == '/' || c == '-' || c == '_' || c == '.' || c == '~';
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
