// Writing users' files: the refusals and the signal cleanup that the CLI tests cannot time exactly.
#include "cli/source_file.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include "cli/signal_cleanup.h"

namespace fs = std::filesystem;
using namespace graphmend::cli;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("graphmend-unit-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void put(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string get(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `body` in a child with the default actions for SIGINT and SIGTERM (doctest handles them); the
// child's wait status.
template <typename F>
int in_child(F body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace

TEST_CASE("write_source refuses a file that changed on disk after it was read") {
  fs::path dir = fresh_dir("changed");
  put(dir / "m.py", "x = 1\n");
  auto read = read_source(dir / "m.py");
  REQUIRE(std::holds_alternative<SourceFile>(read));
  put(dir / "m.py", "x = 22\n");  // the user saved meanwhile
  auto error = write_source(std::get<SourceFile>(read), "x = 3\n");
  REQUIRE(error);
  CHECK(error->find("changed on disk while it was checked; not written") != std::string::npos);
  CHECK(get(dir / "m.py") == "x = 22\n");
  fs::remove_all(dir);
}

TEST_CASE("write_source keeps the BOM, and rewrites a hard-linked file in place") {
  fs::path dir = fresh_dir("link");
  put(dir / "a.py", "\xEF\xBB\xBFx = 1\r\n");
  fs::create_hard_link(dir / "a.py", dir / "b.py");
  auto read = read_source(dir / "a.py");
  REQUIRE(std::holds_alternative<SourceFile>(read));
  CHECK(std::get<SourceFile>(read).text == "x = 1\r\n");
  CHECK_FALSE(write_source(std::get<SourceFile>(read), "x = 2\r\n"));
  CHECK(get(dir / "b.py") == "\xEF\xBB\xBFx = 2\r\n");
  CHECK(fs::hard_link_count(dir / "a.py") == 2);
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 2);  // no temporary file
  fs::remove_all(dir);
}

TEST_CASE("a signal removes registered temporary files, then ends the process as before") {
  fs::path dir = fresh_dir("signal");
  const std::string temp = (dir / ".m.py.graphmend-abcdef").string();
  int status = in_child([&] {
    SignalCleanup cleanup;
    TempFileSlot slot;
    if (slot.create(temp, O_WRONLY | O_CLOEXEC, 0600) < 0) ::_exit(3);
    ::raise(SIGTERM);
    ::_exit(4);  // not reached: the default action ends the child
  });
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  CHECK_FALSE(fs::exists(temp));
  fs::remove_all(dir);
}

TEST_CASE("a signal during an in-place write waits until the write ends, and none starts after it") {
  fs::path dir = fresh_dir("in-place");
  const fs::path marker = dir / "write-finished";
  int status = in_child([&] {
    SignalCleanup cleanup;
    {
      InPlaceWrite writing;
      if (!writing.allowed()) ::_exit(3);
      ::raise(SIGINT);  // recorded, not acted on yet
      if (!interrupted()) ::_exit(4);
      put(marker, "done");
    }
    ::_exit(5);  // not reached: the scope's end delivers the signal
  });
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  CHECK(get(marker) == "done");
  fs::remove_all(dir);
}

TEST_CASE("handlers are restored after the run; an ignored signal stays ignored") {
  int status = in_child([] {
    ::signal(SIGHUP, SIG_IGN);
    { SignalCleanup cleanup; }
    struct sigaction now {};
    ::sigaction(SIGINT, nullptr, &now);
    if (now.sa_handler != SIG_DFL) ::_exit(3);
    {
      SignalCleanup cleanup;
      ::raise(SIGHUP);
    }  // ignored, as under nohup
    ::_exit(0);
  });
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
