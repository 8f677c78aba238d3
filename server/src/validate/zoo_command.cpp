#include "validate/zoo_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli/cli_app.h"
#include "graphmend/analysis/config.h"
#include "validate/validator_client.h"
#include "validate/zoo_manifest.h"

namespace graphmend::validate {
namespace fs = std::filesystem;

namespace {

constexpr int kExitUsage = 3;

constexpr const char* kRunDescription =
    "Validates a model zoo: every target of the manifest (a zoo file given with --targets, else the\n"
    "[tool.graphmend] validate list of the nearest pyproject.toml) in each of its modes, as items run in\n"
    "fresh processes on a local pool or on Ray. Results go to a resumable folder; --shard runs a\n"
    "deterministic slice for a CI matrix or a SLURM array, `graphmend validate merge` joins the shards.";

constexpr const char* kRunFooter =
    R"(exit status: 0 every item validated, 1 a fixed arm's outputs differ (with --baseline: the gate found a
regression), 2 an item failed or did not finish, 3 usage or manifest error, 130 interrupted)";

struct ZooOptions {
  bool all = false;
  std::string targets;
  std::string report = "graphmend-zoo";
  std::string shard;
  std::string need = "all";
  int jobs = 0;
  std::string ray;
  int retries = 1;
  std::string baseline;
  bool update_baseline = false;
  std::string python;
  std::string modes;
  std::string backend;
  int repeats = 0;
  double timeout_s = 0;
  bool json_output = false;
  bool quiet = false;
  std::vector<std::string> folders;  // merge
};

void add_common(CLI::App& app, ZooOptions& options) {
  app.add_option("--baseline", options.baseline,
                 "compare with this CSV (zoo.csv's shape; PyTorch's name,accuracy,graph_breaks at least) and exit 1 "
                 "on a regression: more breaks, accuracy lost, no longer one graph or fullgraph")
      ->type_name("FILE");
  app.add_flag("--update-baseline", options.update_baseline,
               "rewrite the --baseline file from this run instead of comparing (timing columns left out)");
  app.add_option("--python", options.python, "interpreter with torch (default: discovered as for one target)")
      ->type_name("PY");
  app.add_flag("--json", options.json_output, "print the merged report (zoo.json) instead of the summary");
  app.add_flag("-q,--quiet", options.quiet, "no progress on stderr");
}

// Replaces this process with `python -m graphmend_validator zoo ...`; returns only on failure.
int exec_driver(const std::string& python, std::vector<std::string> rest) {
  const fs::path validator = find_validator_dir();
  if (validator.empty()) {
    std::cerr << "graphmend validate: cannot find the graphmend_validator package (set GRAPHMEND_VALIDATOR_DIR)\n";
    return kExitUsage;
  }
  std::vector<std::string> argv_strings{python, "-m", "graphmend_validator", "zoo"};
  argv_strings.insert(argv_strings.end(), rest.begin(), rest.end());
  std::vector<std::string> env_strings = child_environment(validator);
  std::vector<char*> argv, envp;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  ::execvpe(argv[0], argv.data(), envp.data());
  std::cerr << "graphmend validate: cannot start " << python << ": " << std::strerror(errno) << "\n";
  return kExitUsage;
}

void append_common(std::vector<std::string>& rest, const ZooOptions& options) {
  if (options.update_baseline) {
    rest.insert(rest.end(), {"--update-baseline", fs::absolute(options.baseline).string()});
  } else if (!options.baseline.empty()) {
    rest.insert(rest.end(), {"--baseline", fs::absolute(options.baseline).string()});
  }
  if (options.json_output) rest.push_back("--json");
  if (options.quiet) rest.push_back("--quiet");
}

int write_text(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path temporary = path.string() + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) {
      std::cerr << "graphmend validate: cannot write " << temporary.string() << "\n";
      return kExitUsage;
    }
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    std::cerr << "graphmend validate: cannot write " << path.string() << ": " << ec.message() << "\n";
    return kExitUsage;
  }
  return 0;
}

std::vector<std::string> split_modes(const std::string& text) {
  std::vector<std::string> modes;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty() && std::find(modes.begin(), modes.end(), part) == modes.end()) modes.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return modes;
}

int run_merge(const std::vector<std::string>& args) {
  ZooOptions options;
  options.report = "";
  auto app = cli::make_app("validate merge",
                           "Joins zoo results folders (the shards of one plan) into one report: zoo.json, zoo.csv "
                           "(PyTorch's name,accuracy,graph_breaks plus graphmend's columns) and report.html.");
  app->footer(kRunFooter);
  app->add_option("DIR", options.folders, "results folders of `graphmend validate --all --report DIR`")
      ->required()
      ->type_name("DIR");
  app->add_option("--report", options.report, "folder for the merged report")->required()->type_name("OUT");
  add_common(*app, options);
  if (auto stop = cli::parse_command_line(*app, args, kExitUsage)) return *stop;
  if (options.update_baseline && options.baseline.empty())
    return cli::usage_error(*app, "--update-baseline needs --baseline FILE", kExitUsage);
  std::vector<std::string> rest{"merge"};
  for (const auto& folder : options.folders) rest.push_back(fs::absolute(folder).string());
  rest.insert(rest.end(), {"--report", fs::absolute(options.report).string()});
  append_common(rest, options);
  std::error_code ec;
  const PythonChoice choice =
      discover_python(options.python, fs::absolute(options.folders.front()) / "plan.json", fs::current_path(ec));
  return exec_driver(choice.path, rest);
}

}  // namespace

bool is_zoo_command(const std::vector<std::string>& args) {
  if (!args.empty() && args.front() == "merge") return true;
  return std::find(args.begin(), args.end(), "--all") != args.end();
}

int run_zoo_command(const std::vector<std::string>& args) {
  if (!args.empty() && args.front() == "merge") return run_merge({args.begin() + 1, args.end()});
  ZooOptions options;
  auto app = cli::make_app("validate --all", kRunDescription);
  app->footer(kRunFooter);
  app->add_flag("--all", options.all, "validate every target of the manifest")->required();
  app->add_option("--targets", options.targets,
                  "a zoo file (TOML: [defaults] and [[target]] tables; docs/validator.md); default: [tool.graphmend] "
                  "validate of the nearest pyproject.toml")
      ->type_name("FILE");
  app->add_option("--report", options.report, "results folder, resumable (default graphmend-zoo)")->type_name("DIR");
  app->add_option("--shard", options.shard, "run only shard I of N (every N-th item of the sorted plan)")
      ->type_name("I/N");
  app->add_option("--need", options.need, "run only the items that need this: cpu (breaks, outputs), gpu (timing)")
      ->type_name("all|cpu|gpu")
      ->check(CLI::Validator(
          [](const std::string& v) {
            return v == "all" || v == "cpu" || v == "gpu" ? std::string() : "must be all, cpu or gpu, got `" + v + "`";
          },
          "", "need"));
  app->add_option("--jobs", options.jobs,
                  "items at once: local pool size, or the CPUs of a local Ray (default: the cores, at most one per "
                  "4 GiB of memory)")
      ->type_name("N")
      ->check(cli::whole_number(1, 4096, "jobs"));
  app->add_option("--ray", options.ray,
                  "run the items as Ray tasks: on the cluster at ADDRESS, `auto` (the running one), or without a "
                  "value on a local Ray started for the run")
      ->type_name("ADDRESS")
      ->expected(0, 1)
      ->default_str("local");
  app->add_option("--retries", options.retries, "reruns of an item whose worker died (default 1)")
      ->type_name("N")
      ->check(cli::whole_number(0, 100, "retries"));
  app->add_option("--mode", options.modes, "modes for every target (eval, train or eval,train), over the manifest's")
      ->type_name("MODES")
      ->check(CLI::Validator(
          [](const std::string& v) {
            for (const auto& mode : split_modes(v))
              if (mode != "eval" && mode != "train") return "modes are eval and train, got `" + mode + "`";
            return split_modes(v).empty() ? std::string("needs eval, train or eval,train") : std::string();
          },
          "", "mode"));
  app->add_option("--backend", options.backend, "torch.compile backend for every target, over the manifest's")
      ->type_name("NAME");
  app->add_option("--repeats", options.repeats, "measured runs per arm of a CPU item, over the manifest's")
      ->type_name("N")
      ->check(cli::whole_number(1, 1000, "repeats"));
  app->add_option("--timeout", options.timeout_s, "time limit per arm in seconds, over the manifest's")
      ->type_name("S")
      ->check(cli::positive_seconds("timeout"));
  add_common(*app, options);
  if (auto stop = cli::parse_command_line(*app, args, kExitUsage)) return *stop;
  if (options.update_baseline && options.baseline.empty())
    return cli::usage_error(*app, "--update-baseline needs --baseline FILE", kExitUsage);
  if (options.update_baseline && !options.shard.empty())
    return cli::usage_error(*app,
                            "--update-baseline with --shard would write this shard's rows alone; update the baseline "
                            "from `graphmend validate merge`",
                            kExitUsage);
  if (app->count("--ray") > 0 && options.ray.empty()) options.ray = "local";

  ZooOverrides overrides;
  overrides.modes = split_modes(options.modes);
  overrides.backend = options.backend;
  overrides.repeats = options.repeats;
  overrides.timeout_s = options.timeout_s;
  nlohmann::json manifest;
  std::error_code ec;
  fs::path manifest_file;
  try {
    if (!options.targets.empty()) {
      manifest_file = fs::absolute(options.targets, ec);
      if (!fs::is_regular_file(manifest_file, ec)) {
        std::cerr << "graphmend validate: zoo file `" << options.targets << "` does not exist\n";
        return kExitUsage;
      }
      manifest = read_zoo_file(manifest_file, overrides);
    } else {
      auto pyproject = find_pyproject(fs::current_path(ec) / "pyproject.toml");
      if (!pyproject) {
        std::cerr
            << "graphmend validate: --all found no pyproject.toml here or above; give a zoo file with --targets\n";
        return kExitUsage;
      }
      Config config;
      try {
        config = load_pyproject(*pyproject);
      } catch (const ConfigError& e) {
        std::cerr << "graphmend validate: " << e.what() << "\n";
        return kExitUsage;
      }
      if (config.validate_targets.empty()) {
        std::cerr << "graphmend validate: " << pyproject->string()
                  << " has no [tool.graphmend] validate targets; add some, or give a zoo file with --targets\n";
        return kExitUsage;
      }
      manifest_file = *pyproject;
      manifest = zoo_from_pyproject(*pyproject, config.validate_targets, overrides);
    }
  } catch (const ManifestError& e) {
    std::cerr << "graphmend validate: " << e.what() << "\n";
    return kExitUsage;
  }

  const fs::path report = fs::absolute(options.report, ec).lexically_normal();
  const fs::path manifest_json = report / "manifest.json";
  if (int code = write_text(manifest_json, manifest.dump(2) + "\n"); code != 0) return code;
  const fs::path self = executable_path();
  const PythonChoice choice = discover_python(options.python, manifest_file, fs::current_path(ec));
  if (!options.quiet)
    std::cerr << "graphmend validate: starting the zoo driver (" << choice.path << ", " << choice.source << ")\n";
  std::vector<std::string> rest{"run",
                                "--manifest",
                                manifest_json.string(),
                                "--graphmend",
                                self.string(),
                                "--report",
                                report.string(),
                                "--need",
                                options.need,
                                "--retries",
                                std::to_string(options.retries)};
  if (!options.python.empty() || choice.source != "python3 on PATH") rest.insert(rest.end(), {"--python", choice.path});
  if (!options.shard.empty()) rest.insert(rest.end(), {"--shard", options.shard});
  if (options.jobs > 0) rest.insert(rest.end(), {"--jobs", std::to_string(options.jobs)});
  if (!options.ray.empty()) rest.insert(rest.end(), {"--ray", options.ray});
  append_common(rest, options);
  return exec_driver(choice.path, rest);
}

}  // namespace graphmend::validate
