// The server in process: messages in through on_message, messages out through the writer, the
// I/O thread driven by the test.
#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <vector>

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

  // textDocument/didOpen of a Python document at version 1.
  void open(const std::string& uri, const std::string& text) {
    send({{"jsonrpc", "2.0"},
          {"method", "textDocument/didOpen"},
          {"params", {{"textDocument", {{"uri", uri}, {"languageId", "python"}, {"version", 1}, {"text", text}}}}}});
  }

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
    return wait_for([&](const json& m) { return m.contains("id") && m["id"] == id && !m.contains("method"); });
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
  h.send({{"jsonrpc", "2.0"},
          {"id", 2},
          {"method", "initialize"},
          {"params", {{"capabilities", json::object()}, {"initializationOptions", {{"debounce", 0}}}}}});
  const json init = h.response(2);
  CHECK(init["result"]["capabilities"]["positionEncoding"] == "utf-16");
  CHECK(init["result"]["serverInfo"]["name"] == "graphmend");

  h.open("file:///t/m.py", kModel);
  const json published =
      h.wait_for([](const json& m) { return m.value("method", "") == "textDocument/publishDiagnostics"; });
  REQUIRE(published.is_object());
  CHECK(published["params"]["version"] == 1);
  REQUIRE(published["params"]["diagnostics"].size() == 1);
  CHECK(published["params"]["diagnostics"][0]["code"] == "GM201");

  h.send({{"jsonrpc", "2.0"},
          {"id", 3},
          {"method", "textDocument/hover"},
          {"params", {{"textDocument", {{"uri", "file:///t/m.py"}}}, {"position", {{"line", 5}, {"character", 10}}}}}});
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
  h.send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"capabilities", json::object()}}}});
  h.response(1);
  h.open("file:///t/m.py", kModel);
  // Without running the I/O thread in between, the hover is still waiting for the analysis.
  h.send({{"jsonrpc", "2.0"},
          {"id", 2},
          {"method", "textDocument/hover"},
          {"params", {{"textDocument", {{"uri", "file:///t/m.py"}}}, {"position", {{"line", 5}, {"character", 10}}}}}});
  h.send(
      {{"jsonrpc", "2.0"},
       {"method", "textDocument/didChange"},
       {"params",
        {{"textDocument", {{"uri", "file:///t/m.py"}, {"version", 2}}}, {"contentChanges", {{{"text", "x = 1\n"}}}}}}});
  CHECK(h.response(2)["error"]["code"] == -32801);
  const json published =
      h.wait_for([](const json& m) { return m.value("method", "") == "textDocument/publishDiagnostics"; });
  CHECK(published["params"]["version"] == 2);
  CHECK(published["params"]["diagnostics"].empty());
}

namespace {

// A validator double that records what the server routes to it.
class RecordingValidator : public graphmend::lsp::Validator {
 public:
  std::vector<std::string> commands() const override { return {"graphmend.validate"}; }
  json code_lenses(const std::string& uri, const std::string& text, const std::vector<std::string>&) override {
    lens_requests.push_back(uri);
    return json::array(
        {{{"range", {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 0}, {"character", 0}}}}},
          {"command", {{"title", std::to_string(text.size()) + " bytes"}, {"command", "graphmend.validate"}}}}});
  }
  void execute(const std::string& command, const json& arguments, const json& id, Report report, Done done) override {
    (void)id;
    (void)report;
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
  h.send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"capabilities", json::object()}}}});
  const json init = h.response(1);
  CHECK(init["result"]["capabilities"]["executeCommandProvider"]["commands"] ==
        json::array({"graphmend.applyAutofix", "graphmend.validate"}));
  CHECK(init["result"]["capabilities"].contains("codeLensProvider"));
  h.open("file:///t/m.py", kModel);
  h.send({{"jsonrpc", "2.0"},
          {"id", 2},
          {"method", "textDocument/codeLens"},
          {"params", {{"textDocument", {{"uri", "file:///t/m.py"}}}}}});
  const json lenses = h.response(2);
  CHECK(lenses["result"][0]["command"]["title"] == std::to_string(std::string(kModel).size()) + " bytes");
  CHECK(validator->lens_requests == std::vector<std::string>{"file:///t/m.py"});
  h.send({{"jsonrpc", "2.0"},
          {"id", 3},
          {"method", "workspace/executeCommand"},
          {"params", {{"command", "graphmend.validate"}, {"arguments", {"m.py::make"}}}}});
  CHECK(h.response(3)["result"] == json{{"graphs", 1}, {"target", "m.py::make"}});
  h.send({{"jsonrpc", "2.0"},
          {"id", 4},
          {"method", "workspace/executeCommand"},
          {"params", {{"command", "graphmend.validate"}, {"arguments", json::array()}}}});
  CHECK(h.response(4)["error"]["code"] == -32602);
  CHECK(validator->executed.size() == 2);
}

TEST_CASE("server: without a validator, no code lenses and no validate command") {
  Harness h;
  h.send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"capabilities", json::object()}}}});
  const json init = h.response(1);
  CHECK_FALSE(init["result"]["capabilities"].contains("codeLensProvider"));
  h.send({{"jsonrpc", "2.0"},
          {"id", 2},
          {"method", "textDocument/codeLens"},
          {"params", {{"textDocument", {{"uri", "file:///t/m.py"}}}}}});
  CHECK(h.response(2)["error"]["code"] == -32601);
  h.send({{"jsonrpc", "2.0"},
          {"id", 3},
          {"method", "workspace/executeCommand"},
          {"params", {{"command", "graphmend.validate"}, {"arguments", json::array()}}}});
  CHECK(h.response(3)["error"]["code"] == -32602);
}

namespace {

// A validator whose runs the test drives by hand: reports, results and cancellations.
class ManualValidator : public graphmend::lsp::Validator {
 public:
  struct Run {
    json id;
    json arguments;
    Report report;
    Done done;
    bool finished = false;
  };
  std::vector<std::string> commands() const override { return {"graphmend.validate"}; }
  json code_lenses(const std::string&, const std::string&, const std::vector<std::string>&) override {
    return json::array();
  }
  void execute(const std::string&, const json& arguments, const json& id, Report report, Done done) override {
    runs.push_back({id, arguments, std::move(report), std::move(done)});
  }
  bool cancel(const json& id) override {
    cancelled.push_back(id);
    for (Run& run : runs) {
      if (run.id == id && !run.finished) {
        finish(run, nullptr, graphmend::protocol::ResponseError{-32800, "validation cancelled", nullptr});
        return true;
      }
    }
    return false;
  }
  void stop_all() override { ++stops; }
  static void finish(Run& run, json result, std::optional<graphmend::protocol::ResponseError> error = std::nullopt) {
    run.finished = true;
    run.done(std::move(result), std::move(error));
  }
  std::vector<Run> runs;
  std::vector<json> cancelled;
  int stops = 0;
};

struct ValidatorHarness : Harness {
  std::shared_ptr<ManualValidator> validator = std::make_shared<ManualValidator>();
  std::size_t seen = 0;  // messages already looked at by next()

  explicit ValidatorHarness(const json& capabilities) {
    server.set_validator(validator);
    send({{"jsonrpc", "2.0"}, {"id", "init"}, {"method", "initialize"}, {"params", {{"capabilities", capabilities}}}});
    response("init");
    seen = out.size();
  }

  // Runs the I/O thread briefly and returns the messages sent since the last call.
  std::vector<json> next() {
    for (int i = 0; i < 20; ++i) {
      io.restart();
      io.run_for(std::chrono::milliseconds(2));
    }
    std::vector<json> fresh(out.begin() + static_cast<std::ptrdiff_t>(seen), out.end());
    seen = out.size();
    return fresh;
  }

  void validate(const json& id, const json& extra = json::object()) {
    json params = {{"command", "graphmend.validate"}, {"arguments", {"/w/m.py::example"}}};
    params.update(extra);
    send({{"jsonrpc", "2.0"}, {"id", id}, {"method", "workspace/executeCommand"}, {"params", params}});
  }
};

std::vector<json> progress_of(const std::vector<json>& messages) {
  std::vector<json> values;
  for (const json& m : messages) {
    if (m.value("method", "") == "$/progress") values.push_back(m["params"]);
  }
  return values;
}

}  // namespace

TEST_CASE("server: validation progress on a token the server creates, then a code lens refresh") {
  ValidatorHarness h(
      json{{"window", {{"workDoneProgress", true}}}, {"workspace", {{"codeLens", {{"refreshSupport", true}}}}}});
  h.validate(7);
  CHECK(h.next().empty());  // nothing until the run reports its first stage
  REQUIRE(h.validator->runs.size() == 1);
  auto& run = h.validator->runs[0];
  CHECK(run.id == 7);
  run.report("starting the validator", 0);
  auto sent = h.next();
  REQUIRE(sent.size() == 1);
  CHECK(sent[0]["method"] == "window/workDoneProgress/create");
  const json token = sent[0]["params"]["token"];
  CHECK(token.is_string());
  // Progress waits for the client's answer; the latest stage is the one shown when it comes.
  run.report("original arm, run 1/2", 25);
  CHECK(h.next().empty());
  h.send({{"jsonrpc", "2.0"}, {"id", sent[0]["id"]}, {"result", nullptr}});
  auto progress = progress_of(h.next());
  REQUIRE(progress.size() == 1);
  CHECK(progress[0]["token"] == token);
  CHECK(progress[0]["value"] == json{{"kind", "begin"},
                                     {"title", "graphmend: validate example"},
                                     {"cancellable", true},
                                     {"message", "original arm, run 1/2"},
                                     {"percentage", 25}});
  run.report("fixed arm, run 2/2", 75);
  progress = progress_of(h.next());
  REQUIRE(progress.size() == 1);
  CHECK(progress[0]["value"] == json{{"kind", "report"}, {"message", "fixed arm, run 2/2"}, {"percentage", 75}});
  ManualValidator::finish(run, {{"ok", true}, {"summary", "breaks 1 → 0 · outputs equal"}});
  sent = h.next();
  REQUIRE(sent.size() == 4);
  CHECK(sent[0]["method"] == "$/progress");
  CHECK(sent[0]["params"]["value"] == json{{"kind", "end"}, {"message", "breaks 1 → 0 · outputs equal"}});
  CHECK(sent[1]["method"] == "window/logMessage");
  CHECK(sent[1]["params"]["message"] == "graphmend: validate example: breaks 1 → 0 · outputs equal");
  CHECK(sent[2]["id"] == 7);
  CHECK(sent[2]["result"]["summary"] == "breaks 1 → 0 · outputs equal");
  CHECK(sent[3]["method"] == "workspace/codeLens/refresh");
}

TEST_CASE("server: the request's workDoneToken; cancelling by request id and by token") {
  ValidatorHarness h(json{{"window", {{"workDoneProgress", true}}}});
  h.validate(1, {{"workDoneToken", "tok-1"}});
  h.validator->runs[0].report("prepare", 0);
  auto progress = progress_of(h.next());  // no create request: the client gave a token
  REQUIRE(progress.size() == 1);
  CHECK(progress[0]["token"] == "tok-1");
  CHECK(progress[0]["value"]["kind"] == "begin");
  // window/workDoneProgress/cancel on that token cancels the run; the answer comes from its end.
  h.send({{"jsonrpc", "2.0"}, {"method", "window/workDoneProgress/cancel"}, {"params", {{"token", "tok-1"}}}});
  auto sent = h.next();
  CHECK(h.validator->cancelled == std::vector<json>{1});
  REQUIRE(sent.size() == 2);
  CHECK(sent[0]["params"]["value"]["kind"] == "end");
  CHECK(sent[1]["id"] == 1);
  CHECK(sent[1]["error"]["code"] == -32800);

  // $/cancelRequest of a validation is routed to the validator too.
  h.validate("two", {{"workDoneToken", 42}});
  h.validator->runs[1].report("original arm, run 1/2", 20);
  CHECK(progress_of(h.next()).at(0)["token"] == 42);
  h.send({{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", {{"id", "two"}}}});
  sent = h.next();
  CHECK(h.validator->cancelled.back() == "two");
  REQUIRE(sent.size() == 2);
  CHECK(sent[0]["params"]["value"]["kind"] == "end");
  CHECK(sent[1]["error"]["code"] == -32800);
  // A late report after the end sends nothing; an unknown token is ignored.
  h.validator->runs[1].report("late", 90);
  h.send({{"jsonrpc", "2.0"}, {"method", "window/workDoneProgress/cancel"}, {"params", {{"token", "nope"}}}});
  CHECK(h.next().empty());
  CHECK(h.validator->cancelled.size() == 2);
}

TEST_CASE("server: a client without progress support gets no $/progress and no refresh") {
  ValidatorHarness h(json::object());
  h.validate(1);
  auto& run = h.validator->runs[0];
  run.report("starting the validator", 0);
  run.report("original arm, run 1/2", 25);
  CHECK(h.next().empty());
  ManualValidator::finish(run, {{"ok", false}, {"summary", "failed: exception in the fixed arm"}});
  auto sent = h.next();
  REQUIRE(sent.size() == 2);
  CHECK(sent[0]["method"] == "window/logMessage");
  CHECK(sent[0]["params"]["type"] == 2);  // a failed run is a warning
  CHECK(sent[1]["id"] == 1);
  CHECK(sent[1]["result"]["summary"] == "failed: exception in the fixed arm");
  // A refused command (bad target) starts no progress either.
  h.validate(2);
  ManualValidator::finish(h.validator->runs[1], nullptr,
                          graphmend::protocol::ResponseError{-32602, "bad target", nullptr});
  sent = h.next();
  REQUIRE(sent.size() == 1);
  CHECK(sent[0]["error"]["code"] == -32602);
}

TEST_CASE("server: shutdown cancels running validations and exit stops them all") {
  ValidatorHarness h(json{{"window", {{"workDoneProgress", true}}}});
  h.validate(1, {{"workDoneToken", "t"}});
  h.validator->runs[0].report("prepare", 0);
  h.next();
  h.send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "shutdown"}});
  auto sent = h.next();
  CHECK(h.validator->cancelled == std::vector<json>{1});
  REQUIRE(sent.size() == 3);
  CHECK(sent[0]["id"] == 2);  // shutdown answers at once
  CHECK(sent[1]["params"]["value"]["kind"] == "end");
  CHECK(sent[2]["error"]["code"] == -32800);
  CHECK(h.validator->stops == 0);
  h.send({{"jsonrpc", "2.0"}, {"method", "exit"}});
  CHECK(h.server.exit_code() == 0);
  CHECK(h.validator->stops == 1);
}
