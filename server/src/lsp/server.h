// The language server: `graphmend server` speaks LSP over stdio.
//
// Threading: one I/O thread (an asio::io_context) owns the transport and every piece of server
// state; analysis and fix-all run on a worker pool, each open document on its own strand (so its
// tree-sitter tree is edited and read by one thread at a time); results are posted back to the I/O
// thread, which drops them when the document moved on.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "graphmend/protocol/framing.h"
#include "graphmend/protocol/jsonrpc.h"

namespace asio {
class io_context;
}  // namespace asio

namespace graphmend::lsp {

// `graphmend server [--log-file F] [--log-level L] [--max-message-bytes N] [--workers N]`.
// Returns the process exit code: 0 after shutdown + exit, 1 when exit or end of input comes
// without shutdown, 2 for bad arguments.
int run_server(const std::vector<std::string>& args);

// The seam for the GPU validator's client (graphmend.validate, code lenses). The server calls it
// on the I/O thread; `report` and `done` may be called from any thread, `done` once per run.
//
// The server owns the LSP side of a run: it turns `report`s into `$/progress` (the request's
// `workDoneToken`, else a token it creates with `window/workDoneProgress/create` when the client
// declared `window.workDoneProgress`; nothing for other clients), answers the request from `done`,
// and asks clients that support it to refresh code lenses afterwards. It calls `cancel` for
// `$/cancelRequest` of the request and `window/workDoneProgress/cancel` of its token, and at
// `shutdown`; `stop_all` at `exit` or end of input.
class Validator {
 public:
  virtual ~Validator() = default;
  // Commands it executes through workspace/executeCommand ("graphmend.validate").
  virtual std::vector<std::string> commands() const = 0;
  // Code lenses (LSP CodeLens array) for a document's text, on the top-level `def`s of `factories`
  // (`example` and the pyproject.toml's validate targets in this file).
  virtual nlohmann::json code_lenses(const std::string& uri, const std::string& text,
                                     const std::vector<std::string>& factories) = 0;
  using Done = std::function<void(nlohmann::json result, std::optional<protocol::ResponseError>)>;
  // The stage a run has reached, in words ("original arm, run 1/2"), and how far along it is
  // (0-100, or -1 when unknown).
  using Report = std::function<void(const std::string& message, int percentage)>;
  // Runs `command` for the executeCommand request `id` (the id `cancel` names it by). A run may
  // call `done` before it returns (bad arguments); it calls `report` only before `done`.
  virtual void execute(const std::string& command, const nlohmann::json& arguments, const nlohmann::json& id,
                       Report report, Done done) = 0;
  // Cancels the run started for request `id`: its processes are killed (the whole process group)
  // and its `done` then gets RequestCancelled (-32800), once they are gone. Returns false when no
  // such run is in flight (it finished, or never started); then nothing is called.
  virtual bool cancel(const nlohmann::json& id) {
    (void)id;
    return false;
  }
  // Kills every run and waits (a few seconds at most) until their processes are gone; `done` is
  // not called for them any more. For the server's exit: no child outlives it.
  virtual void stop_all() {}
  // The interpreter the user chose in the editor's settings (empty: discover one).
  virtual void set_python(const std::string& python) { (void)python; }
};

struct ServerOptions {
  unsigned workers = 0;  // analysis threads; 0 picks from the hardware
};

class Server {
 public:
  // `write` sends one message to the client; called on the I/O thread only.
  using Writer = std::function<void(const nlohmann::json&)>;

  Server(asio::io_context& io, Writer write, ServerOptions options = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Must be set before `initialize` to be advertised.
  void set_validator(std::shared_ptr<Validator> validator);

  // One event from the framing decoder (I/O thread).
  void on_frame(const protocol::FrameEvent& event);
  // One message body (I/O thread); malformed bodies are answered with the right error.
  void on_message(std::string_view body);
  // End of input: the server stops as if `exit` had come.
  void on_input_closed();

  // Set once the server wants to stop (exit, or end of input): the process exit code.
  std::optional<int> exit_code() const;
  // Called (I/O thread) when exit_code() becomes set.
  std::function<void(int)> on_exit;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace graphmend::lsp
