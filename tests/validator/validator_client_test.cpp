// ValidatorClient end to end (real torch, CPU, backend eager) and the report's text and HTML.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "validate/validator_client.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "validate/report.h"

namespace fs = std::filesystem;
using graphmend::validate::json;
using graphmend::validate::Progress;
using graphmend::validate::ValidatorClient;
using graphmend::validate::ValidatorError;

namespace {

const fs::path kRoot = GRAPHMEND_SOURCE_DIR;
const fs::path kTargets = kRoot / "tests" / "validator" / "targets";

std::string venv_python() {
  const fs::path python = kRoot / ".venv" / "bin" / "python";
  REQUIRE_MESSAGE(fs::exists(python), "the project's .venv with torch is missing: run scripts/setup.sh");
  return python.string();
}

fs::path temp_folder(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("graphmend-validator-test-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

bool pid_alive(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

std::string error_kind_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const ValidatorError& e) {
    return e.kind();
  }
  return "";
}

}  // namespace

TEST_CASE("handshake, validation with progress, user errors as results, bad params as errors") {
  ValidatorClient client;
  const json info = client.start(venv_python());
  CHECK(info["torch_version"].get<std::string>().rfind("2.", 0) == 0);
  CHECK(info["cuda_available"].is_boolean());
  CHECK(client.running());

  std::vector<Progress> progress;
  const json result = client.validate({{"target", (kTargets / "fn_target.py").string() + "::make"},
                                       {"fixed_source", (kTargets / "fn_target_fixed.py").string()},
                                       {"backend", "eager"},
                                       {"repeats", 1}},
                                      [&](const Progress& p) { progress.push_back(p); });
  REQUIRE(result["ok"] == true);
  CHECK(result["original"]["graph_break_count"] == 1);
  CHECK(result["fixed"]["graph_break_count"] == 0);
  CHECK(result["outputs_match"] == true);
  CHECK(result["original"]["breaks"][0]["line"] == 7);
  REQUIRE(progress.size() >= 4);
  CHECK(progress.front().kind == "begin");
  CHECK(progress.back().kind == "end");
  CHECK(progress[progress.size() - 2].percentage == 100);

  const json failed =
      client.validate({{"target", (kTargets / "misbehaving.py").string() + "::raises"}, {"backend", "eager"}});
  CHECK(failed["ok"] == false);
  CHECK(failed["error"]["kind"] == "exception");
  CHECK(failed["error"]["type"] == "ValueError");

  CHECK(error_kind_of([&] { client.validate({{"target", "no separator"}}); }) == "bad_target");
  CHECK(error_kind_of([&] {
          client.validate({{"target", (kTargets / "fn_target.py").string() + "::make"}, {"repeats", -1}});
        }) == "bad_params");
  client.stop();
  CHECK_FALSE(client.running());
  client.stop();  // idempotent
}

TEST_CASE("cancellation through the stop token kills the running arm; the client goes on") {
  const fs::path dir = temp_folder("cancel");
  const fs::path pidfile = dir / "pid";
  ::setenv("GRAPHMEND_TEST_PIDFILE", pidfile.c_str(), 1);
  ValidatorClient client;
  client.start(venv_python());
  ::unsetenv("GRAPHMEND_TEST_PIDFILE");
  std::stop_source cancel;
  long arm_pid = 0;
  std::thread canceller([&] {
    for (int i = 0; i < 1200 && !fs::exists(pidfile); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::ifstream in(pidfile);
    in >> arm_pid;
    cancel.request_stop();
  });
  const auto started = std::chrono::steady_clock::now();
  const std::string kind = error_kind_of([&] {
    client.validate(
        {{"target", (kTargets / "misbehaving.py").string() + "::hangs"}, {"backend", "eager"}, {"timeout_s", 300}}, {},
        cancel.get_token());
  });
  canceller.join();
  CHECK(kind == "cancelled");
  REQUIRE(arm_pid > 0);
  CHECK_FALSE(pid_alive(arm_pid));
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(150));
  CHECK(client.running());
  CHECK(error_kind_of([&] { client.validate({{"target", "still::alive"}}); }) == "bad_target");
  fs::remove_all(dir);
}

TEST_CASE("an interpreter without torch, and one that does not exist") {
  const fs::path dir = temp_folder("torchless");
  const std::string base = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  REQUIRE(std::system((base + " -m venv --without-pip " + (dir / "venv").string()).c_str()) == 0);
  ValidatorClient client;
  try {
    client.start((dir / "venv" / "bin" / "python").string());
    FAIL("start succeeded without torch");
  } catch (const ValidatorError& e) {
    CHECK(e.kind() == "torch_missing");
    CHECK(std::string(e.what()).find("torch cannot be imported") != std::string::npos);
    CHECK(e.code() == -32001);
  }
  CHECK_FALSE(client.running());
  CHECK(error_kind_of([&] { client.start("/nonexistent/bin/python"); }) == "spawn_failed");
  fs::remove_all(dir);
}

TEST_CASE("python discovery: explicit, then graphmend's own environment, the activated ones, a .venv, python3") {
  const fs::path dir = temp_folder("discover");
  auto make_python = [](const fs::path& prefix, bool torch) {
    fs::create_directories(prefix / "bin");
    std::ofstream(prefix / "bin" / "python") << "#!/bin/sh\n";
    fs::permissions(prefix / "bin" / "python", fs::perms::owner_all);
    if (torch) {
      fs::create_directories(prefix / "lib" / "python3.11" / "site-packages" / "torch");
      std::ofstream(prefix / "lib" / "python3.11" / "site-packages" / "torch" / "__init__.py") << "\n";
    }
  };
  make_python(dir / "proj" / ".venv", false);
  fs::create_directories(dir / "proj" / "src" / "deep");
  make_python(dir / "ws" / ".venv", false);
  using graphmend::EnvironmentContext;
  using graphmend::validate::discover_python;
  const EnvironmentContext none;
  auto path = [](const graphmend::validate::PythonChoice& c) { return c.path; };
  CHECK(path(discover_python("/x/python", dir / "proj" / "src" / "m.py", dir / "ws", none)) == "/x/python");
  CHECK(path(discover_python("", dir / "proj" / "src" / "deep" / "m.py", dir / "ws", none)) ==
        (dir / "proj" / ".venv" / "bin" / "python").string());
  CHECK(path(discover_python("", dir / "m.py", dir / "ws", none)) ==
        (dir / "ws" / ".venv" / "bin" / "python").string());
  CHECK(discover_python("", dir / "m.py", dir, none).source == "python3 on PATH");

  // graphmend installed in a venv with torch, run as <venv>/bin/graphmend without activating it: that
  // venv, before a .venv near the target that lacks torch.
  make_python(dir / "tool-env", true);
  std::ofstream(dir / "tool-env" / "pyvenv.cfg") << "home = /usr/bin\n";
  EnvironmentContext installed{dir / "tool-env" / "bin" / "graphmend", {}, {}};
  auto own = discover_python("", dir / "proj" / "src" / "m.py", dir / "ws", installed);
  CHECK(own.path == (dir / "tool-env" / "bin" / "python").string());
  CHECK(own.source == "the environment graphmend is installed in");
  // A build tree (no pyvenv.cfg beside bin/) is not an environment.
  EnvironmentContext build_tree{dir / "proj" / "src" / "graphmend", {}, {}};
  CHECK(path(discover_python("", dir / "proj" / "src" / "m.py", dir / "ws", build_tree)) ==
        (dir / "proj" / ".venv" / "bin" / "python").string());
  // graphmend's own environment without torch (pipx): an activated one with torch wins.
  make_python(dir / "pipx-env", false);
  std::ofstream(dir / "pipx-env" / "pyvenv.cfg") << "home = /usr/bin\n";
  make_python(dir / "active", true);
  EnvironmentContext pipx{dir / "pipx-env" / "bin" / "graphmend", dir / "active", {}};
  auto active = discover_python("", dir / "m.py", dir, pipx);
  CHECK(active.path == (dir / "active" / "bin" / "python").string());
  CHECK(active.source == "$VIRTUAL_ENV");
  EnvironmentContext conda{dir / "pipx-env" / "bin" / "graphmend", {}, dir / "active"};
  CHECK(discover_python("", dir / "m.py", dir, conda).source == "$CONDA_PREFIX");
  // The project's .venv comes before another one with torch: its probe then says torch is missing there.
  EnvironmentContext no_torch{dir / "pipx-env" / "bin" / "graphmend", {}, {}};
  CHECK(path(discover_python("", dir / "proj" / "m.py", dir / "tool-env", no_torch)) ==
        (dir / "proj" / ".venv" / "bin" / "python").string());
  // graphmend's own torchless environment alone: still that one.
  CHECK(path(discover_python("", dir / "m.py", dir, no_torch)) == (dir / "pipx-env" / "bin" / "python").string());
  CHECK(graphmend::validate::find_validator_dir() / "graphmend_validator" / "__init__.py" ==
        kRoot / "gpu-validator" / "graphmend_validator" / "__init__.py");
  fs::remove_all(dir);
}

TEST_CASE("report: the table and a self-contained HTML page") {
  const json arm_before = {{"graph_count", 4},
                           {"graph_break_count", 3},
                           {"fullgraph", false},
                           {"recompiles", 0},
                           {"compiled_matches_eager", true},
                           {"cold_start_s", 15.3},
                           {"cold_start_min_s", 14.0},
                           {"cold_start_max_s", 16.0},
                           {"steady_state_s", 9.2e-5},
                           {"eager_steady_state_s", 3e-5},
                           {"breaks", json::array({{{"file", "/p/model.py"},
                                                    {"line", 14},
                                                    {"type", "Data-dependent branching"},
                                                    {"registry_id", "GB0170"},
                                                    {"count", 2}}})}};
  const json arm_after = {{"graph_count", 1},         {"graph_break_count", 0},         {"fullgraph", true},
                          {"recompiles", 0},          {"compiled_matches_eager", true}, {"cold_start_s", 9.4},
                          {"steady_state_s", 4.1e-5}, {"breaks", json::array()}};
  const json result = {{"ok", true},
                       {"target", "/p/model.py::make<x>"},
                       {"device", "cpu"},
                       {"device_name", "CPU"},
                       {"torch_version", "2.13.0"},
                       {"backend", "inductor"},
                       {"mode", "eval"},
                       {"repeats", 3},
                       {"original", arm_before},
                       {"fixed", arm_after},
                       {"outputs_match", true},
                       {"outputs_max_abs_diff", 0.0},
                       {"cold_start_speedup", 15.3 / 9.4},
                       {"steady_state_speedup", 9.2 / 4.1}};
  const std::string table = graphmend::validate::format_table(result);
  CHECK(table.find("graph breaks                   3           0          -3") != std::string::npos);
  CHECK(table.find("15.30 s      9.40 s       1.63x") != std::string::npos);
  CHECK(table.find("92.0 us") != std::string::npos);
  CHECK(table.find("model.py:14  GB0170  Data-dependent branching  (x2)") != std::string::npos);
  CHECK(table.find("outputs (eager original vs eager fixed): equal") != std::string::npos);

  const std::string html = graphmend::validate::render_html(result);
  std::size_t svgs = 0;
  for (auto at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) ++svgs;
  CHECK(svgs == 4);
  CHECK(html.find("make&lt;x&gt;") != std::string::npos);
  CHECK(html.find("make<x>") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);

  json failed = {{"ok", false},
                 {"target", "t.py::f"},
                 {"error", {{"kind", "timeout"}, {"arm", "fixed"}, {"message", "fixed arm ran past its 5 s limit"}}}};
  CHECK(graphmend::validate::format_table(failed).find("validation failed: timeout in the fixed arm") !=
        std::string::npos);

  const fs::path dir = temp_folder("report");
  graphmend::validate::write_report(dir / "out", result);
  CHECK(json::parse(std::ifstream(dir / "out" / "validation.json"))["original"]["graph_count"] == 4);
  CHECK(fs::file_size(dir / "out" / "report.html") == html.size());
  fs::remove_all(dir);
}
