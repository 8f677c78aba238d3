// `graphmend server`: the stdio transport (Asio) around Server, logging, and the exit code.
#include <fcntl.h>
#include <poll.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <asio.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cli/cli_app.h"
#include "graphmend/protocol/framing.h"
#include "graphmend/protocol/jsonrpc.h"
#include "lsp/server.h"
#include "lsp/validator_bridge.h"

namespace graphmend::lsp {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;

// Writes all of `bytes` to `fd`, blocking (also when the descriptor is non-blocking).
bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd descriptor{fd, POLLOUT, 0};
      ::poll(&descriptor, 1, -1);
      continue;
    }
    return false;
  }
  return true;
}

// Reads stdin through Asio, decodes frames and hands them to the server.
class StdioTransport {
 public:
  StdioTransport(asio::io_context& io, Server& server, std::size_t max_message_bytes)
      : server_(server), input_(io), decoder_(max_message_bytes) {
    saved_flags_ = ::fcntl(STDIN_FILENO, F_GETFL);
    input_.assign(::dup(STDIN_FILENO));
  }

  ~StdioTransport() {
    std::error_code ignored;
    input_.close(ignored);
    if (saved_flags_ != -1) ::fcntl(STDIN_FILENO, F_SETFL, saved_flags_);
  }

  void start() { read(); }

 private:
  void read() {
    input_.async_read_some(asio::buffer(buffer_), [this](const std::error_code& error, std::size_t size) {
      if (size > 0) {
        decoder_.feed(std::string_view(buffer_.data(), size));
        while (!server_.exit_code()) {
          auto event = decoder_.next();
          if (!event) break;
          // An exception here would skip the next read: stdin would never be read again.
          try {
            server_.on_frame(*event);
          } catch (const std::exception& failure) {
            spdlog::error("internal error handling a message (recovered): {}", failure.what());
          }
        }
      }
      if (server_.exit_code()) return;
      if (error) {
        if (error != asio::error::eof) spdlog::warn("reading stdin: {}", error.message());
        if (decoder_.pending_bytes() > 0) {
          spdlog::warn("input ended inside a message ({} bytes discarded)", decoder_.pending_bytes());
        }
        server_.on_input_closed();
        return;
      }
      read();
    });
  }

  Server& server_;
  asio::posix::stream_descriptor input_;
  protocol::FrameDecoder decoder_;
  std::array<char, kReadChunk> buffer_{};
  int saved_flags_ = -1;
};

}  // namespace

int run_server(const std::vector<std::string>& args) {
  std::string log_file;
  std::string log_level = "info";
  std::size_t max_message_bytes = protocol::kDefaultMaxMessageBytes;
  ServerOptions options;
  auto app = cli::make_app("server", "Speaks the Language Server Protocol on stdin/stdout.");
  bool stdio = true;  // the default and only transport; accepted for editors that pass it
  app->add_flag("--stdio", stdio, "use stdin/stdout (the default and only transport)");
  app->add_option("--log-file", log_file, "write the log here instead of stderr")->type_name("FILE");
  app->add_option("--log-level", log_level, "trace, debug, info (default), warn, error, critical or off")
      ->type_name("LEVEL");
  app->add_option("--max-message-bytes", max_message_bytes, "largest LSP message accepted")
      ->type_name("N")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40));
  app->add_option("--workers", options.workers, "analysis threads")->type_name("N")->check(CLI::Range(1, 4096));
  std::vector<std::string> rest = args;
  if (!rest.empty() && rest.front() == "server") rest.erase(rest.begin());  // `graphmend server server`
  if (auto stop = cli::parse_command_line(*app, rest)) return *stop;

  std::shared_ptr<spdlog::logger> logger;
  try {
    if (!log_file.empty()) {
      logger =
          std::make_shared<spdlog::logger>("graphmend", std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_file));
    } else {
      logger = std::make_shared<spdlog::logger>("graphmend", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    }
  } catch (const std::exception& error) {
    std::cerr << "graphmend server: cannot open log file: " << error.what() << "\n";
    return 2;
  }
  const auto level = spdlog::level::from_str(log_level == "warning" ? "warn" : log_level);
  if (level == spdlog::level::off && log_level != "off") {
    std::cerr << "graphmend server: unknown log level '" << log_level << "'\n";
    return 2;
  }
  logger->set_level(level);
  logger->flush_on(spdlog::level::trace);
  logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  spdlog::set_default_logger(logger);

  // A client that goes away must not kill us with SIGPIPE: writes then fail and we exit.
  std::signal(SIGPIPE, SIG_IGN);

  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  bool output_failed = false;
  int code = 1;
  {
    Server server(
        io,
        [&](const nlohmann::json& message) {
          if (output_failed) return;
          const std::string body = protocol::serialize(message);
          if (!write_all(STDOUT_FILENO, protocol::encode_frame(body))) {
            output_failed = true;
            spdlog::error("writing to stdout failed ({}); stopping", std::strerror(errno));
            io.stop();
          }
        },
        options);
    server.on_exit = [&](int) { io.stop(); };
    server.set_validator(std::make_shared<ValidatorBridge>());
    StdioTransport transport(io, server, max_message_bytes);
    spdlog::info("graphmend {} language server started (pid {})", GRAPHMEND_VERSION, ::getpid());
    transport.start();
    // A handler that throws must not take the server down: log it and keep serving.
    for (;;) {
      try {
        io.run();
        break;
      } catch (const std::exception& error) {
        spdlog::error("internal error (recovered): {}", error.what());
      }
    }
    code = server.exit_code().value_or(1);
  }
  spdlog::default_logger()->flush();
  return code;
}

}  // namespace graphmend::lsp
