// The server in process: messages in through on_message, messages out through the writer, the
// I/O thread driven by the test.
#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <vector>

#include <asio.hpp>
#include <spdlog/spdlog.h>

#include "lsp/server.h"

using nlohmann::json;

namespace {

struct Harness {
  asio::io_context io;
  std::vector<json> out;
  graphmend::lsp::Server server{io, [this](const json& message) { out.push_back(message); },
                                graphmend::lsp::ServerOptions{1}};

  Harness() { spdlog::set_level(spdlog::level::off); }

  void send(const json& message) { server.on_message(message.dump()); }

  // Runs the I/O thread until a message satisfying `want` arrives; returns it (or null on timeout).
  json wait_for(const std::function<bool(const json&)>& want) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    std::size_t seen = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      for (; seen < out.size(); ++seen) {
        if (want(out[seen])) return out[seen];
      }
      io.restart();
      io.run_for(std::chrono::milliseconds(5));
    }
    return nullptr;
  }

  json response(const json& id) {
    return wait_for([&](const json& m) {
      return m.contains("id") && m["id"] == id && !m.contains("method");
    });
  }
};

const char* kModel =
    "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
    "        print(x)\n        return x\n";

}  // namespace

TEST_CASE("server: lifecycle, push diagnostics, hover, and exit codes") {
  Harness h;
  int exited = -1;
  h.server.on_exit = [&](int code) { exited = code; };
  h.send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "hover"}, {"params", json::object()}});
  CHECK(h.response(1)["error"]["code"] == -32002);
  h.send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "initialize"},
          {"params",
           {{"capabilities", json::object()}, {"initializationOptions", {{"debounce", 0}}}}}});
  const json init = h.response(2);
  CHECK(init["result"]["capabilities"]["positionEncoding"] == "utf-16");
  CHECK(init["result"]["serverInfo"]["name"] == "graphmend");

  h.send({{"jsonrpc", "2.0"}, {"method", "textDocument/didOpen"},
          {"params", {{"textDocument", {{"uri", "file:///t/m.py"}, {"languageId", "python"},
                                        {"version", 1}, {"text", kModel}}}}}});
  const json published = h.wait_for([](const json& m) {
    return m.value("method", "") == "textDocument/publishDiagnostics";
  });
  REQUIRE(published.is_object());
  CHECK(published["params"]["version"] == 1);
  REQUIRE(published["params"]["diagnostics"].size() == 1);
  CHECK(published["params"]["diagnostics"][0]["code"] == "GM201");

  h.send({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "textDocument/hover"},
          {"params", {{"textDocument", {{"uri", "file:///t/m.py"}}},
                      {"position", {{"line", 5}, {"character", 10}}}}}});
  const json hover = h.response(3);
  CHECK(hover["result"]["contents"]["value"].get<std::string>().find("GM201") != std::string::npos);

  h.send({{"jsonrpc", "2.0"}, {"id", 4}, {"method", "shutdown"}});
  CHECK(h.response(4)["result"].is_null());
  CHECK_FALSE(h.server.exit_code());
  h.send({{"jsonrpc", "2.0"}, {"method", "exit"}});
  CHECK(h.server.exit_code() == 0);
  CHECK(exited == 0);
}

TEST_CASE("server: end of input without shutdown exits with 1; garbage never stops it first") {
  Harness h;
  h.server.on_message("{not json");
  REQUIRE(h.out.size() == 1);
  CHECK(h.out[0]["error"]["code"] == -32700);
  h.server.on_frame({graphmend::protocol::FrameEvent::Kind::Oversized, "", 99, "too big"});
  REQUIRE(h.out.size() == 2);
  CHECK(h.out[1]["error"]["code"] == -32600);
  h.server.on_input_closed();
  CHECK(h.server.exit_code() == 1);
}

TEST_CASE("server: an edit answers pending requests with ContentModified") {
  Harness h;
  h.send({{"jsonrpc", "2.0"},
          {"id", 1},
          {"method", "initialize"},
          {"params", {{"capabilities", json::object()}}}});
  h.response(1);
  h.send({{"jsonrpc", "2.0"}, {"method", "textDocument/didOpen"},
          {"params", {{"textDocument", {{"uri", "file:///t/m.py"}, {"languageId", "python"},
                                        {"version", 1}, {"text", kModel}}}}}});
  // Without running the I/O thread in between, the hover is still waiting for the analysis.
  h.send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "textDocument/hover"},
          {"params", {{"textDocument", {{"uri", "file:///t/m.py"}}},
                      {"position", {{"line", 5}, {"character", 10}}}}}});
  h.send({{"jsonrpc", "2.0"}, {"method", "textDocument/didChange"},
          {"params", {{"textDocument", {{"uri", "file:///t/m.py"}, {"version", 2}}},
                      {"contentChanges", {{{"text", "x = 1\n"}}}}}}});
  CHECK(h.response(2)["error"]["code"] == -32801);
  const json published = h.wait_for([](const json& m) {
    return m.value("method", "") == "textDocument/publishDiagnostics";
  });
  CHECK(published["params"]["version"] == 2);
  CHECK(published["params"]["diagnostics"].empty());
}

namespace {

// A validator double that records what the server routes to it.
class RecordingValidator : public graphmend::lsp::Validator {
 public:
  std::vector<std::string> commands() const override { return {"graphmend.validate"}; }
  json code_lenses(const std::string& uri, const std::string& text) override {
    lens_requests.push_back(uri);
    return json::array({{{"range", {{"start", {{"line", 0}, {"character", 0}}},
                                    {"end", {{"line", 0}, {"character", 0}}}}},
                         {"command", {{"title", std::to_string(text.size()) + " bytes"},
                                      {"command", "graphmend.validate"}}}}});
  }
  void execute(const std::string& command, const json& arguments, Done done) override {
    executed.push_back(command);
    if (arguments.empty()) {
      done(nullptr, graphmend::protocol::ResponseError{-32602, "no target", nullptr});
    } else {
      done({{"graphs", 1}, {"target", arguments[0]}}, std::nullopt);
    }
  }
  std::vector<std::string> lens_requests;
  std::vector<std::string> executed;
};

}  // namespace

TEST_CASE("server: the validator seam advertises its commands and code lenses and routes them") {
  Harness h;
  auto validator = std::make_shared<RecordingValidator>();
  h.server.set_validator(validator);
  h.send({{"jsonrpc", "2.0"},
          {"id", 1},
          {"method", "initialize"},
          {"params", {{"capabilities", json::object()}}}});
  const json init = h.response(1);
  CHECK(init["result"]["capabilities"]["executeCommandProvider"]["commands"] ==
        json::array({"graphmend.applyAutofix", "graphmend.validate"}));
  CHECK(init["result"]["capabilities"].contains("codeLensProvider"));
  h.send({{"jsonrpc", "2.0"}, {"method", "textDocument/didOpen"},
          {"params", {{"textDocument", {{"uri", "file:///t/m.py"}, {"languageId", "python"},
                                        {"version", 1}, {"text", kModel}}}}}});
  h.send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "textDocument/codeLens"},
          {"params", {{"textDocument", {{"uri", "file:///t/m.py"}}}}}});
  const json lenses = h.response(2);
  CHECK(lenses["result"][0]["command"]["title"] ==
        std::to_string(std::string(kModel).size()) + " bytes");
  CHECK(validator->lens_requests == std::vector<std::string>{"file:///t/m.py"});
  h.send({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "workspace/executeCommand"},
          {"params", {{"command", "graphmend.validate"}, {"arguments", {"m.py::make"}}}}});
  CHECK(h.response(3)["result"] == json{{"graphs", 1}, {"target", "m.py::make"}});
  h.send({{"jsonrpc", "2.0"}, {"id", 4}, {"method", "workspace/executeCommand"},
          {"params", {{"command", "graphmend.validate"}, {"arguments", json::array()}}}});
  CHECK(h.response(4)["error"]["code"] == -32602);
  CHECK(validator->executed.size() == 2);
}

TEST_CASE("server: without a validator, no code lenses and no validate command") {
  Harness h;
  h.send({{"jsonrpc", "2.0"},
          {"id", 1},
          {"method", "initialize"},
          {"params", {{"capabilities", json::object()}}}});
  const json init = h.response(1);
  CHECK_FALSE(init["result"]["capabilities"].contains("codeLensProvider"));
  h.send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "textDocument/codeLens"},
          {"params", {{"textDocument", {{"uri", "file:///t/m.py"}}}}}});
  CHECK(h.response(2)["error"]["code"] == -32601);
  h.send({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "workspace/executeCommand"},
          {"params", {{"command", "graphmend.validate"}, {"arguments", json::array()}}}});
  CHECK(h.response(3)["error"]["code"] == -32602);
}
