#include "graphmend/protocol/jsonrpc.h"

namespace graphmend::protocol {
namespace {

bool valid_id(const json& id) { return id.is_string() || id.is_number_integer(); }

}  // namespace

Message parse_message(std::string_view body) {
  json value;
  try {
    value = json::parse(body.begin(), body.end());
  } catch (const json::parse_error& error) {
    throw ProtocolError(error_code::kParseError, std::string("parse error: ") + error.what());
  }
  return classify_message(std::move(value));
}

Message classify_message(json value) {
  if (value.is_array()) {
    throw ProtocolError(error_code::kInvalidRequest, "batch requests are not supported by LSP");
  }
  if (!value.is_object()) {
    throw ProtocolError(error_code::kInvalidRequest, "a message must be a JSON object");
  }
  // Read the id first, so every later complaint can name the request.
  json id = nullptr;
  const bool has_id = value.contains("id");
  if (has_id) {
    if (valid_id(value["id"])) {
      id = value["id"];
    } else if (!value["id"].is_null()) {
      throw ProtocolError(error_code::kInvalidRequest,
                          "the id must be an integer or a string, not " + std::string(value["id"].type_name()));
    }
  }
  const auto version = value.find("jsonrpc");
  if (version == value.end() || *version != "2.0") {
    throw ProtocolError(error_code::kInvalidRequest, "missing \"jsonrpc\": \"2.0\"", id);
  }

  Message message;
  const auto method = value.find("method");
  if (method != value.end()) {
    if (!method->is_string()) {
      throw ProtocolError(error_code::kInvalidRequest, "the method must be a string", id);
    }
    message.method = method->get<std::string>();
    if (const auto params = value.find("params"); params != value.end()) {
      if (!params->is_object() && !params->is_array() && !params->is_null()) {
        throw ProtocolError(error_code::kInvalidRequest, "params must be an object or an array", id);
      }
      message.params = std::move(*params);
    }
    if (has_id && id.is_null()) {
      throw ProtocolError(error_code::kInvalidRequest, "a request id must not be null");
    }
    message.kind = has_id ? MessageKind::Request : MessageKind::Notification;
    message.id = std::move(id);
    return message;
  }

  // No method: a response to one of our requests.
  const bool has_result = value.contains("result");
  const auto error = value.find("error");
  if (!has_id || has_result == (error != value.end())) {
    throw ProtocolError(error_code::kInvalidRequest, "neither a request, a notification nor a response", id);
  }
  message.kind = MessageKind::Response;
  message.id = std::move(id);
  if (has_result) {
    message.result = std::move(value["result"]);
  } else {
    ResponseError response_error;
    if (error->is_object()) {
      const auto code = error->find("code");
      if (code != error->end() && code->is_number_integer()) {
        response_error.code = code->get<int>();
      }
      if (const auto text = error->find("message"); text != error->end() && text->is_string()) {
        response_error.message = text->get<std::string>();
      }
      if (const auto data = error->find("data"); data != error->end()) response_error.data = *data;
    }
    message.error = std::move(response_error);
  }
  return message;
}

json make_request(const json& id, std::string_view method, json params) {
  json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) message["params"] = std::move(params);
  return message;
}

json make_notification(std::string_view method, json params) {
  json message = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) message["params"] = std::move(params);
  return message;
}

json make_response(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json make_error_response(const json& id, int code, std::string_view message, json data) {
  json error = {{"code", code}, {"message", message}};
  if (!data.is_null()) error["data"] = std::move(data);
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

std::string serialize(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string_view error_code_name(int code) {
  switch (code) {
    case error_code::kParseError:
      return "ParseError";
    case error_code::kInvalidRequest:
      return "InvalidRequest";
    case error_code::kMethodNotFound:
      return "MethodNotFound";
    case error_code::kInvalidParams:
      return "InvalidParams";
    case error_code::kInternalError:
      return "InternalError";
    case error_code::kServerNotInitialized:
      return "ServerNotInitialized";
    case error_code::kUnknownErrorCode:
      return "UnknownErrorCode";
    case error_code::kRequestFailed:
      return "RequestFailed";
    case error_code::kServerCancelled:
      return "ServerCancelled";
    case error_code::kContentModified:
      return "ContentModified";
    case error_code::kRequestCancelled:
      return "RequestCancelled";
    default:
      return "Error";
  }
}

}  // namespace graphmend::protocol
