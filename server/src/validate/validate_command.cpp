#include "validate/validate_command.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>
#include <variant>

#include "cli/cli_app.h"
#include "graphmend/analysis/config.h"
#include "graphmend/transforms/fixer.h"
#include "validate/process_tree.h"
#include "validate/report.h"
#include "validate/validator_client.h"
#include "validate/zoo_command.h"

namespace graphmend::validate {
namespace fs = std::filesystem;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitOutputsDiffer = 1;
constexpr int kExitUserCode = 2;
constexpr int kExitEnvironment = 3;
constexpr int kExitNotDeployable = 4;
constexpr int kExitInterrupted = 130;

constexpr const char* kDescription =
    "Runs the original and the fixed model under torch.compile, each measured arm in a fresh process,\n"
    "and reports graphs, graph breaks, output equality, cold-start and steady-state times.\n\n"
    "TARGET is path/to/file.py::factory, where factory() returns (callable_or_module, args) or\n"
    "(callable, args, kwargs).\n\n"
    "A model zoo (many targets, shards, merge, a baseline gate, Ray): graphmend validate --all --help.";

constexpr const char* kFooter =
    R"(exit status: 0 validated (outputs equal), 1 outputs differ, 2 user code raised, hung, exited or
crashed, 3 usage or environment error, 4 (--deploy) the fixed arm (the original without one) did
not export, package, run in C++ or match its eager outputs there, 130 interrupted)";

volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_interrupt(int) { g_interrupted = 1; }

struct Options {
  std::string target;
  std::string fixed = "auto";
  std::string fixed_module;
  std::string python;
  std::string device = "auto";
  std::string backend = "inductor";
  int repeats = 3;
  int threads = 0;
  double timeout_s = 600;
  std::string mode = "eval";
  bool json_output = false;
  bool quiet = false;
  bool progress_json = false;
  bool deploy = false;
  std::optional<fs::path> report_dir;
};

// The parsed options, or the exit status to stop with (help printed, or a usage error: 3).
std::variant<Options, int> parse_args(const std::vector<std::string>& args) {
  Options options;
  auto app = cli::make_app("validate", kDescription);
  app->footer(kFooter);
  app->add_option("TARGET", options.target, "path/to/file.py::factory")->type_name("TARGET");
  app->add_option("--fixed", options.fixed,
                  "the fixed source: a file, graphmend's safe fixes (auto, default), or none (measure the original "
                  "only)")
      ->type_name("FILE|auto|none");
  app->add_option("--fixed-module", options.fixed_module,
                  "the fixed source stands in for this module (library code such as "
                  "transformers.models.bert.modeling_bert) instead of the target file; with --fixed auto, graphmend "
                  "fixes the file that module is imported from")
      ->type_name("NAME");
  app->add_option("--python", options.python,
                  "interpreter with torch (default: the first with torch of graphmend's own environment, $VIRTUAL_ENV, "
                  "$CONDA_PREFIX, a .venv above the target or the current folder; then python3)")
      ->type_name("PY");
  app->add_option("--device", options.device, "auto (default: cuda when torch sees one), cpu or cuda[:N]")
      ->type_name("DEVICE")
      ->check(CLI::Validator(
          [](const std::string& v) {
            return v == "auto" || v == "cpu" || v.starts_with("cuda") ? std::string()
                                                                      : "must be auto, cpu or cuda, got `" + v + "`";
          },
          "", "device"));
  app->add_option("--backend", options.backend, "torch.compile backend: inductor (default) or eager")
      ->type_name("NAME")
      ->check(CLI::Validator(
          [](const std::string& v) { return v.empty() ? "needs a backend name (inductor or eager)" : std::string(); },
          "", "backend"));
  app->add_option("--repeats", options.repeats, "measured runs per arm, alternated (default 3)")
      ->type_name("N")
      ->check(cli::whole_number(1, 1000, "repeats"));
  app->add_option("--timeout", options.timeout_s, "time limit per arm in seconds (default 600)")
      ->type_name("S")
      ->check(cli::positive_seconds("timeout"));
  app->add_option("--mode", options.mode, "eval + no_grad (default) or train (forward and backward)")
      ->type_name("MODE")
      ->check(CLI::Validator(
          [](const std::string& v) {
            return v == "eval" || v == "train" ? std::string() : "must be eval or train, got `" + v + "`";
          },
          "", "mode"));
  app->add_option("--threads", options.threads,
                  "torch.set_num_threads(N) in every arm (steadier CPU numbers on a busy machine; default: torch's "
                  "own choice)")
      ->type_name("N")
      ->check(CLI::Validator(
          [](const std::string& v) {
            int n = 0;
            auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            return ec == std::errc() && end == v.data() + v.size() && n >= 1 && n <= 4096
                       ? std::string()
                       : "must be a positive whole number, got `" + v + "`";
          },
          "", "threads"));
  app->add_flag("--deploy", options.deploy,
                "also prove each arm deployable without Python: torch.export (strict, then non-strict), an "
                "AOTInductor package, and a C++ runner built against the torch's libtorch (cached) that runs it on "
                "the same inputs (eval mode only)");
  app->add_flag("--json", options.json_output, "print one JSON object instead of the table");
  app->add_option("--report", options.report_dir, "write DIR/validation.json and DIR/report.html")->type_name("DIR");
  app->add_flag("-q,--quiet", options.quiet, "no progress on stderr");
  app->add_flag("--progress-json", options.progress_json,
                "progress as JSON lines on stderr, one object per stage (for programs such as the language "
                "server): {\"progress\": {\"message\": \"original arm, run 1/2\", \"percentage\": 25}}");
  if (auto stop = cli::parse_command_line(*app, args, kExitEnvironment)) return *stop;
  if (options.target.empty())
    return cli::usage_error(*app, "missing TARGET (path/to/file.py::factory)", kExitEnvironment);
  if (options.deploy && options.mode != "eval")
    return cli::usage_error(*app, "--deploy exports the model for inference: it needs --mode eval", kExitEnvironment);
  return options;
}

// Splits and checks `path::factory`; returns the absolute file, or an error message.
std::optional<std::pair<fs::path, std::string>> split_target(const std::string& target, std::string& error) {
  const auto sep = target.rfind("::");
  if (sep == std::string::npos) {
    error = "target must be path/to/file.py::factory, got `" + target + "`";
    return std::nullopt;
  }
  fs::path file = target.substr(0, sep);
  std::string factory = target.substr(sep + 2);
  if (factory.empty()) {
    error = "target `" + target + "` names no factory after `::`";
    return std::nullopt;
  }
  if (file.extension() != ".py") {
    error = "target file `" + file.string() + "` is not a .py file";
    return std::nullopt;
  }
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    error = "target file `" + file.string() + "` does not exist";
    return std::nullopt;
  }
  return std::make_pair(fs::absolute(file, ec).lexically_normal(), factory);
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A private temporary folder, removed when this object goes.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "graphmend-fixed-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

int fail(const Options* options, const std::string& kind, const std::string& message, int code) {
  if (options != nullptr && options->json_output) {
    json out = {{"ok", false}, {"error", {{"kind", kind}, {"message", message}}}, {"exit_code", code}};
    std::cout << out.dump(2) << "\n";
  }
  std::cerr << "graphmend validate: " << message << "\n";
  return code;
}

int exit_code_for(const json& result) {
  if (!result.value("ok", false)) {
    const json& error = result.contains("error") ? result["error"] : json::object();
    const std::string kind = error.is_object() ? error.value("kind", std::string()) : std::string();
    if (kind == "bad_target" || kind == "bad_factory") return kExitEnvironment;
    return kExitUserCode;
  }
  if (result.contains("outputs_match") && result["outputs_match"].is_boolean() &&
      !result["outputs_match"].get<bool>()) {
    return kExitOutputsDiffer;
  }
  if (result.contains("deployable") && result["deployable"].is_boolean() && !result["deployable"].get<bool>()) {
    return kExitNotDeployable;
  }
  return kExitOk;
}

// A stage of the run on stderr: a JSON line with --progress-json, else a line of text unless --quiet.
void progress(const Options& options, const std::string& message, int percentage) {
  if (options.progress_json) {
    json line = {{"progress", {{"message", message}}}};
    if (percentage >= 0) line["progress"]["percentage"] = percentage;
    std::cerr << line.dump() << std::endl;
    return;
  }
  if (options.quiet) return;
  std::cerr << "graphmend validate: " << message;
  if (percentage >= 0) std::cerr << " (" << percentage << "%)";
  std::cerr << "\n";
}

// Ctrl-C / SIGTERM from the moment the command starts: the flag is set, and `token()` is stopped,
// so that a run being cancelled (the language server sends SIGTERM to the child's process group)
// cancels the validator, which kills the running arm's process group. Restores the old handlers.
class InterruptGuard {
 public:
  InterruptGuard() {
    g_interrupted = 0;
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
    watcher_ = std::jthread([this](std::stop_token stop) {
      while (!stop.stop_requested()) {
        if (g_interrupted != 0) {
          cancel_.request_stop();
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  ~InterruptGuard() {
    watcher_.request_stop();
    if (watcher_.joinable()) watcher_.join();
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  bool interrupted() const { return g_interrupted != 0; }
  std::stop_token token() const { return cancel_.get_token(); }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  std::stop_source cancel_;
  std::jthread watcher_;
};

// Nothing the run starts outlives the command: this process is a subreaper, so what user code
// detaches (setsid, double forks) is re-parented to it when its parent dies, and whatever is left
// below it at the end, on every way out, is killed and reaped.
class ProcessTreeGuard {
 public:
  ProcessTreeGuard() { become_subreaper(); }
  ~ProcessTreeGuard() {
    kill_tree(::getpid(), false);
    sweep_orphans();
  }
  ProcessTreeGuard(const ProcessTreeGuard&) = delete;
  ProcessTreeGuard& operator=(const ProcessTreeGuard&) = delete;
};

}  // namespace

int run_validate_command(const std::vector<std::string>& args) {
  if (is_zoo_command(args)) return run_zoo_command(args);
  std::string error;
  auto parsed = parse_args(args);
  if (auto* stop = std::get_if<int>(&parsed)) return *stop;
  Options options = std::get<Options>(std::move(parsed));
  auto target = split_target(options.target, error);
  if (!target) return fail(&options, "bad_target", error, kExitEnvironment);
  const auto& [target_file, factory] = *target;

  if (!options.fixed_module.empty() && options.fixed == "none") {
    return fail(&options, "bad_params", "--fixed-module needs a fixed source (a file or auto)", kExitEnvironment);
  }
  // Before any child starts; destroyed after the client (declared below), which stops the validator.
  ProcessTreeGuard process_tree;
  InterruptGuard interrupt;
  auto interrupted = [&] { return fail(&options, "cancelled", "interrupted before the arms ran", kExitInterrupted); };
  std::error_code ec;
  const PythonChoice choice = discover_python(options.python, target_file, fs::current_path(ec));
  const std::string& python = choice.path;
  progress(options, "starting the validator (" + python + ", " + choice.source + ")", 0);
  ValidatorClient client;
  json info;
  try {
    info = client.start(python);
    info["python_source"] = choice.source;
  } catch (const ValidatorError& e) {
    return fail(&options, e.kind(),
                std::string(e.what()) + " (interpreter: " + choice.source + "; choose one with --python)",
                kExitEnvironment);
  }
  if (interrupt.interrupted()) {
    client.stop();
    return interrupted();
  }

  // The fixed arm's source.
  std::optional<TempDir> temp;
  std::string fixed_mode = options.fixed;
  json fixed_source = nullptr;
  int fixes_applied = 0;
  if (options.fixed == "none") {
    fixed_mode = "none";
  } else if (options.fixed == "auto") {
    fs::path to_fix = target_file;
    if (!options.fixed_module.empty()) {
      try {
        to_fix = client.locate(options.fixed_module, target_file.string() + "::" + factory);
      } catch (const ValidatorError& e) {
        return fail(&options, e.kind(), e.what(), kExitEnvironment);
      }
    }
    auto text = read_file(to_fix);
    if (!text) return fail(&options, "bad_target", "cannot read " + to_fix.string(), kExitEnvironment);
    Config config;
    if (auto pyproject = find_pyproject(to_fix)) {
      try {
        config = load_pyproject(*pyproject);
      } catch (const ConfigError& e) {
        return fail(&options, "config", e.what(), kExitEnvironment);
      }
    }
    const FixAllResult fixed = fix_all(to_fix.string(), *text, config, FixOptions{});
    fixes_applied = fixed.applied;
    fs::path folder;
    if (options.report_dir) {
      folder = *options.report_dir / "fixed";
      fs::create_directories(folder, ec);
    } else {
      temp.emplace();
      folder = temp->path();
    }
    if (folder.empty() || ec)
      return fail(&options, "io", "cannot create a folder for the fixed source", kExitEnvironment);
    const fs::path fixed_path = fs::absolute(folder / to_fix.filename(), ec);
    {
      std::ofstream out(fixed_path, std::ios::binary | std::ios::trunc);
      out << fixed.text;
      if (!out) return fail(&options, "io", "cannot write " + fixed_path.string(), kExitEnvironment);
    }
    fixed_source = fixed_path.string();
    if (options.progress_json || !options.json_output) {
      progress(options,
               std::to_string(fixes_applied) + " safe fix" + (fixes_applied == 1 ? "" : "es") + " applied to " +
                   to_fix.filename().string() + " (" + std::to_string(fixed.remaining.size()) + " finding" +
                   (fixed.remaining.size() == 1 ? "" : "s") + " left)",
               0);
    }
  } else {
    fixed_mode = "file";
    if (!fs::is_regular_file(options.fixed, ec)) {
      return fail(&options, "bad_fixed", "fixed source `" + options.fixed + "` does not exist", kExitEnvironment);
    }
    fixed_source = fs::absolute(options.fixed, ec).lexically_normal().string();
  }

  json params = {
      {"target", target_file.string() + "::" + factory},
      {"fixed_source", fixed_source},
      {"fixed_module", options.fixed_module.empty() ? json(nullptr) : json(options.fixed_module)},
      {"device", options.device},
      {"backend", options.backend},
      {"repeats", options.repeats},
      {"timeout_s", options.timeout_s},
      {"mode", options.mode},
  };
  if (options.threads > 0) params["threads"] = options.threads;
  if (options.deploy) params["deploy"] = true;

  if (interrupt.interrupted()) {
    client.stop();
    return interrupted();
  }

  const int arms = fixed_source.is_null() ? 1 : 2;
  const int arm_runs = options.repeats * arms + 1 + (options.deploy ? arms : 0);
  const auto deadline = std::chrono::seconds(static_cast<long long>((options.timeout_s + 120.0) * arm_runs) + 300);
  // The validator's own stages: "prepare: ...", "original arm, run 1/2", ..., "done".
  auto on_progress = [&](const Progress& p) {
    if (p.kind == "report" && !p.message.empty()) progress(options, p.message, p.percentage);
  };
  json result;
  try {
    result = client.validate(params, on_progress, interrupt.token(), deadline);
  } catch (const ValidatorError& e) {
    client.stop();
    if (e.kind() == "cancelled")
      return fail(&options, "cancelled", "interrupted; the running arm was killed", kExitInterrupted);
    const int code = (e.kind() == "validator_died" || e.kind() == "timeout" || e.kind() == "internal")
                         ? kExitUserCode
                         : kExitEnvironment;
    return fail(&options, e.kind(), e.what(), code);
  }
  client.stop();

  result["fixed_mode"] = fixed_mode;
  if (fixed_mode == "auto") result["fixes_applied"] = fixes_applied;
  result["validator"] = info;
  const int code = exit_code_for(result);
  result["exit_code"] = code;
  if (options.report_dir) {
    try {
      write_report(*options.report_dir, result);
    } catch (const std::exception& e) {
      return fail(&options, "io", e.what(), kExitEnvironment);
    }
  }
  if (options.json_output) {
    std::cout << result.dump(2) << "\n";
  } else {
    std::cout << format_table(result);
    if (options.report_dir) std::cout << "\nreport: " << (*options.report_dir / "report.html").string() << "\n";
  }
  if (!result.value("ok", false) && !options.json_output) {
    const json& err = result["error"];
    const std::string stderr_tail = err.is_object() ? err.value("stderr_tail", std::string()) : std::string();
    const std::string traceback = err.is_object() ? err.value("traceback", std::string()) : std::string();
    const std::string& detail = traceback.empty() ? stderr_tail : traceback;
    if (!detail.empty()) {
      // The last lines are the ones that say what happened.
      std::string tail = detail.size() > 1500 ? detail.substr(detail.size() - 1500) : detail;
      std::cerr << tail << (tail.ends_with('\n') ? "" : "\n");
    }
  }
  return code;
}

}  // namespace graphmend::validate
