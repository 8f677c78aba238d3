#include <doctest/doctest.h>

#include "graphmend/protocol/jsonrpc.h"
#include "graphmend/protocol/lsp.h"

namespace protocol = graphmend::protocol;
namespace errc = protocol::error_code;
using protocol::json;
using protocol::MessageKind;
using protocol::ProtocolError;

namespace {

// The error code parse_message throws for `body`, or 0 when it parses.
int error_of(std::string_view body, json* id = nullptr) {
  try {
    protocol::parse_message(body);
  } catch (const ProtocolError& error) {
    if (id != nullptr) *id = error.id();
    return error.code();
  }
  return 0;
}

}  // namespace

TEST_CASE("jsonrpc: requests, notifications and responses are classified") {
  auto request = protocol::parse_message(R"({"jsonrpc":"2.0","id":"a","method":"m","params":{"x":1}})");
  CHECK(request.kind == MessageKind::Request);
  CHECK(request.id == "a");
  CHECK(request.method == "m");
  CHECK(request.params["x"] == 1);
  auto notification = protocol::parse_message(R"({"jsonrpc":"2.0","method":"n"})");
  CHECK(notification.kind == MessageKind::Notification);
  CHECK(notification.params.is_null());
  auto response = protocol::parse_message(R"({"jsonrpc":"2.0","id":3,"result":null})");
  CHECK(response.kind == MessageKind::Response);
  CHECK_FALSE(response.error);
  auto failure =
      protocol::parse_message(R"({"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"nope","data":[1]}})");
  REQUIRE(failure.error);
  CHECK(failure.error->code == -32601);
  CHECK(failure.error->message == "nope");
  CHECK(failure.error->data == json::array({1}));
}

TEST_CASE("jsonrpc: malformed input gets the right error code and keeps the id") {
  CHECK(error_of("{") == errc::kParseError);
  CHECK(error_of("") == errc::kParseError);
  CHECK(error_of("{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}") == errc::kParseError);
  CHECK(error_of("[]") == errc::kInvalidRequest);
  CHECK(error_of("7") == errc::kInvalidRequest);
  json id;
  CHECK(error_of(R"({"id":5,"method":"m"})", &id) == errc::kInvalidRequest);
  CHECK(id == 5);
  CHECK(error_of(R"({"jsonrpc":"1.0","id":5,"method":"m"})") == errc::kInvalidRequest);
  CHECK(error_of(R"({"jsonrpc":"2.0","id":1.5,"method":"m"})", &id) == errc::kInvalidRequest);
  CHECK(id.is_null());
  CHECK(error_of(R"({"jsonrpc":"2.0","id":null,"method":"m"})") == errc::kInvalidRequest);
  CHECK(error_of(R"({"jsonrpc":"2.0","id":2,"method":"m","params":3})", &id) == errc::kInvalidRequest);
  CHECK(id == 2);
  CHECK(error_of(R"({"jsonrpc":"2.0","id":2,"result":1,"error":{}})") == errc::kInvalidRequest);
  CHECK(error_of(R"({"jsonrpc":"2.0","result":1})") == errc::kInvalidRequest);
}

TEST_CASE("jsonrpc: builders and serialization") {
  CHECK(protocol::serialize(protocol::make_response(1, nullptr)) == R"({"id":1,"jsonrpc":"2.0","result":null})");
  const json error = protocol::make_error_response(nullptr, errc::kContentModified, "changed");
  CHECK(error["error"]["code"] == -32801);
  CHECK(error["id"].is_null());
  CHECK_FALSE(protocol::make_notification("n", nullptr).contains("params"));
  CHECK(protocol::make_request("graphmend/1", "m", {{"a", 1}})["params"]["a"] == 1);
  // Invalid UTF-8 (e.g. from a slice of user text) never throws on output.
  const json bad = std::string("a\xff");
  CHECK(protocol::serialize(bad) == "\"a\xEF\xBF\xBD\"");
  CHECK(protocol::error_code_name(-32800) == "RequestCancelled");
}

TEST_CASE("lsp: strict parameter reading names the field") {
  const json params = {{"textDocument", {{"uri", "file:///a.py"}}}, {"position", {{"line", 1}}}};
  CHECK(protocol::require_string(params, "/textDocument/uri") == "file:///a.py");
  try {
    protocol::position_from_json(params["position"]);
    FAIL("expected InvalidParams");
  } catch (const ProtocolError& error) {
    CHECK(error.code() == errc::kInvalidParams);
    CHECK(std::string(error.what()).find("character") != std::string::npos);
  }
  CHECK_THROWS_AS(protocol::require_integer(params, "/textDocument/uri"), ProtocolError);
  CHECK_THROWS_AS(protocol::range_from_json(json::array()), ProtocolError);
  CHECK_THROWS_AS(protocol::position_from_json({{"line", -1}, {"character", 0}}), ProtocolError);
  CHECK(protocol::optional_member(json::array({{{"uri", "u"}}}), "/0/uri", json::value_t::string));
  CHECK(protocol::optional_member(params, "/missing", json::value_t::string) == nullptr);
}

TEST_CASE("lsp: position encoding negotiation prefers utf-8, falls back to utf-16") {
  CHECK(protocol::negotiate_position_encoding(json::object()) == "utf-16");
  CHECK(protocol::negotiate_position_encoding({{"general", {{"positionEncodings", {"utf-32", "utf-16"}}}}}) ==
        "utf-16");
  CHECK(protocol::negotiate_position_encoding({{"general", {{"positionEncodings", {"utf-16", "utf-8"}}}}}) == "utf-8");
  CHECK(protocol::negotiate_position_encoding({{"general", {{"positionEncodings", "utf-8"}}}}) == "utf-16");
}

TEST_CASE("lsp: code action kinds match by dot-separated prefix") {
  using protocol::code_action_kind_matches;
  CHECK(code_action_kind_matches("source.fixAll", "source.fixAll.graphmend"));
  CHECK(code_action_kind_matches("source", "source.fixAll.graphmend"));
  CHECK(code_action_kind_matches("source.fixAll.graphmend", "source.fixAll.graphmend"));
  CHECK_FALSE(code_action_kind_matches("source.fix", "source.fixAll.graphmend"));
  CHECK_FALSE(code_action_kind_matches("quickfix", "source.fixAll.graphmend"));
  CHECK_FALSE(code_action_kind_matches("", "quickfix"));
  CHECK(protocol::code_action_kind_requested({}, "quickfix"));
  CHECK_FALSE(protocol::code_action_kind_requested({"source"}, "quickfix"));
}

TEST_CASE("lsp: file URIs and paths") {
  CHECK(protocol::uri_to_path("file:///home/a%20b/m.py") == "/home/a b/m.py");
  CHECK(protocol::uri_to_path("file://localhost/x.py") == "/x.py");
  CHECK_FALSE(protocol::uri_to_path("untitled:Untitled-1"));
  CHECK(protocol::path_to_uri("/home/a b/é.py") == "file:///home/a%20b/%C3%A9.py");
  CHECK(protocol::uri_to_path(protocol::path_to_uri("/tmp/x y#z.py")) == "/tmp/x y#z.py");
}
