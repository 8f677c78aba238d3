// JSON-RPC 2.0 messages as LSP uses them: classification of incoming messages, construction of
// outgoing ones, and the error codes of both specifications.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace graphmend::protocol {

using json = nlohmann::json;

namespace error_code {
// JSON-RPC 2.0.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// LSP.
inline constexpr int kServerNotInitialized = -32002;
inline constexpr int kUnknownErrorCode = -32001;
inline constexpr int kRequestFailed = -32803;
inline constexpr int kServerCancelled = -32802;
inline constexpr int kContentModified = -32801;
inline constexpr int kRequestCancelled = -32800;
}  // namespace error_code

// An error to answer with: thrown by parsing and by request handlers, caught by the dispatcher.
class ProtocolError : public std::runtime_error {
 public:
  ProtocolError(int code, const std::string& message, json id = nullptr)
      : std::runtime_error(message), code_(code), id_(std::move(id)) {}
  int code() const { return code_; }
  // The id of the request that failed, when it could be read (null otherwise).
  const json& id() const { return id_; }

 private:
  int code_;
  json id_;
};

enum class MessageKind { Request, Notification, Response };

struct ResponseError {
  int code = 0;
  std::string message;
  json data;
};

struct Message {
  MessageKind kind = MessageKind::Notification;
  json id;                             // number or string for requests and responses, null for notifications
  std::string method;                  // requests and notifications
  json params;                         // requests and notifications: object, array or null when absent
  json result;                         // responses
  std::optional<ResponseError> error;  // responses
};

// Parses and classifies one message body. Throws ProtocolError with kParseError for text that is
// not JSON (or not UTF-8), kInvalidRequest for JSON that is not a JSON-RPC 2.0 message; the error
// carries the request's id when one could be read.
Message parse_message(std::string_view body);

// Classifies an already parsed value (same rules as parse_message).
Message classify_message(json value);

json make_request(const json& id, std::string_view method, json params);
json make_notification(std::string_view method, json params);
json make_response(const json& id, json result);
json make_error_response(const json& id, int code, std::string_view message, json data = nullptr);

// Serializes compactly; invalid UTF-8 inside strings is replaced (U+FFFD) instead of throwing.
std::string serialize(const json& value);

// A readable name for an error code ("RequestCancelled"), for logs.
std::string_view error_code_name(int code);

}  // namespace graphmend::protocol
