// `graphmend check [PATH...]`: the engine over files, ruff-style.
#include <dtl/dtl.hpp>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <variant>

#include "cli/report.h"
#include "cli/signal_cleanup.h"
#include "cli/source_file.h"
#include "commands.h"
#include "graphmend/analysis/analyzer.h"
#include "graphmend/analysis/semantic.h"
#include "graphmend/transforms/fixer.h"

namespace graphmend::cli {
namespace fs = std::filesystem;

namespace {

constexpr const char* kUsage = R"(usage: graphmend check [OPTIONS] [PATH...]

Report where torch.compile (TorchDynamo) will break the graph, and fix what can be fixed safely.
PATH may be files or folders (searched recursively); `-` reads standard input.

options:
  --fix                    apply safe fixes in place (atomic writes; links, line endings, BOM, mode kept)
  --unsafe-fixes           also apply fixes marked unsafe
  --diff                   print the fixes as a unified diff and write nothing (exit 1 if any)
  --select CODES           comma-separated rule codes or prefixes to enable (replaces the configuration's)
  --extend-select CODES    codes or prefixes to enable in addition
  --ignore CODES           codes or prefixes to disable
  --scope compiled|all     only code torch.compile traces (default), or every function
  --output-format FORMAT   text (default), concise, json, sarif, github
  --statistics             print counts per rule instead of findings
  --exit-zero              exit 0 even when graph breaks are found
  --stdin-filename NAME    the name to report for `-` (and to look up configuration from)
  --config FILE            use this pyproject.toml instead of searching upward
  --no-config              ignore pyproject.toml files
  -j, --jobs N             files checked in parallel (default: number of cores)

exit status: 0 no findings, 1 findings (or a diff with --diff), 2 an error: bad usage or configuration, a
path that could not be read or a fix that could not be written (reported on stderr; --exit-zero keeps 2).
With `--fix -`, stdout carries the input unchanged whenever the run fails.
)";

struct Options {
  std::vector<std::string> paths;
  bool fix = false, unsafe = false, diff = false, statistics = false, exit_zero = false, no_config = false;
  std::optional<std::vector<std::string>> select, extend_select, ignore;
  std::optional<Scope> scope;
  OutputFormat format = OutputFormat::Text;
  std::string stdin_filename = "-";
  std::optional<fs::path> config_file;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  // File selection (ruff's options of the same names): exclude replaces the configuration's list,
  // extend-exclude adds to it; absent booleans leave the configuration's value.
  std::optional<std::vector<std::string>> exclude;
  std::vector<std::string> extend_exclude;
  std::optional<bool> respect_gitignore, force_exclude;
  bool add_noqa = false;  // --add-noqa: write `# noqa: CODES` on every line with findings
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<std::string> split_codes(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty()) continue;
    bool known = item == "ALL" || std::any_of(all_rules().begin(), all_rules().end(), [&](const RuleInfo* r) {
                   return r->code.starts_with(item);
                 });
    if (!known) throw UsageError("unknown rule selector `" + item + "` (see `graphmend rule --all`)");
    out.push_back(item);
  }
  return out;
}

Options parse(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& name) -> std::string {
      auto eq = a.find('=');
      if (eq != std::string::npos && a.starts_with("--")) return a.substr(eq + 1);
      if (i + 1 >= args.size()) throw UsageError(name + " needs a value");
      return args[++i];
    };
    std::string key = a.starts_with("--") ? a.substr(0, a.find('=')) : a;
    if (a.size() > 2 && a.starts_with("-j") && std::isdigit(static_cast<unsigned char>(a[2]))) {
      o.jobs = static_cast<unsigned>(std::max(1, std::atoi(a.c_str() + 2)));
      continue;
    }
    if (key == "--fix") o.fix = true;
    else if (key == "--unsafe-fixes") o.unsafe = true;
    else if (key == "--diff") o.diff = true;
    else if (key == "--statistics") o.statistics = true;
    else if (key == "--exit-zero") o.exit_zero = true;
    else if (key == "--no-config") o.no_config = true;
    else if (key == "--select") o.select = split_codes(value(key));
    else if (key == "--extend-select") o.extend_select = split_codes(value(key));
    else if (key == "--ignore") o.ignore = split_codes(value(key));
    else if (key == "--stdin-filename") o.stdin_filename = value(key);
    else if (key == "--config") o.config_file = value(key);
    else if (key == "--scope") {
      std::string s = value(key);
      if (s != "compiled" && s != "all") throw UsageError("--scope must be `compiled` or `all`");
      o.scope = s == "all" ? Scope::All : Scope::Compiled;
    } else if (key == "-j" || key == "--jobs") {
      std::string s = value(key);
      try {
        o.jobs = static_cast<unsigned>(std::max(1, std::stoi(s)));
      } catch (const std::exception&) {
        throw UsageError("--jobs takes a number, not `" + s + "`");
      }
    } else if (key == "--output-format") {
      std::string f = value(key);
      static const std::map<std::string, OutputFormat> formats{{"text", OutputFormat::Text},
                                                               {"full", OutputFormat::Text},
                                                               {"concise", OutputFormat::Concise},
                                                               {"json", OutputFormat::Json},
                                                               {"sarif", OutputFormat::Sarif},
                                                               {"github", OutputFormat::Github}};
      auto it = formats.find(f);
      if (it == formats.end()) throw UsageError("unknown output format `" + f + "` (text, concise, json, sarif, github)");
      o.format = it->second;
    } else if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a.starts_with("-") && a != "-") {
      throw UsageError("unknown option `" + a + "`");
    } else {
      o.paths.push_back(a);
    }
  }
  if (o.paths.empty()) o.paths.push_back(".");
  if (o.fix && o.diff) o.fix = false;  // --diff wins: it never writes
  return o;
}

// Configuration per folder: nearest pyproject.toml with [tool.graphmend], then command-line overrides.
class ConfigResolver {
 public:
  explicit ConfigResolver(const Options& o) : options_(o) {
    if (o.config_file) base_ = load_pyproject(*o.config_file);
  }

  Config for_file(const fs::path& file) {
    Config c;
    if (base_) {
      c = *base_;
    } else if (!options_.no_config) {
      fs::path dir = fs::absolute(file).parent_path();
      std::lock_guard lock(mutex_);
      auto it = cache_.find(dir);
      if (it == cache_.end()) {
        auto found = find_pyproject(dir);
        it = cache_.emplace(dir, found ? load_pyproject(*found) : Config{}).first;
      }
      c = it->second;
    }
    if (options_.select) c.select = *options_.select;
    if (options_.extend_select) c.extend_select.insert(c.extend_select.end(), options_.extend_select->begin(), options_.extend_select->end());
    if (options_.ignore) c.ignore.insert(c.ignore.end(), options_.ignore->begin(), options_.ignore->end());
    if (options_.scope) c.scope = *options_.scope;
    return c;
  }

 private:
  const Options& options_;
  std::optional<Config> base_;
  std::mutex mutex_;
  std::map<fs::path, Config> cache_;
};

// Lines without their ends ("\n", "\r\n" or a lone "\r", as CPython reads them).
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string cur;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      lines.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) lines.push_back(cur);
  return lines;
}

void write_unified_diff(std::ostream& out, const std::string& path, const std::string& before, const std::string& after) {
  std::vector<std::string> a = split_lines(before), b = split_lines(after);
  dtl::Diff<std::string, std::vector<std::string>> diff(a, b);
  diff.compose();
  diff.composeUnifiedHunks();
  out << "--- " << path << "\n+++ " << path << "\n";
  diff.printUnifiedFormat(out);
}

struct Outcome {
  FileReport report;
  std::string error;      // read, config or write error for this file
  std::string diff;       // --diff output
  std::string warning;    // the fix loop's pass bound was reached (like ruff's "failed to converge")
  bool changed = false;
  std::vector<std::pair<std::string, std::string>> imported_calls;  // (module, function) called from traced code
};

// Dotted module name of a file inside packages (folders with __init__.py), e.g. "transformers.utils.generic".
std::string module_name_of(const fs::path& file) {
  std::error_code ec;
  fs::path p = fs::absolute(file, ec).lexically_normal();
  std::string name = p.stem().string();
  std::vector<std::string> parts;
  if (name != "__init__") parts.push_back(name);
  for (fs::path dir = p.parent_path(); fs::exists(dir / "__init__.py", ec); dir = dir.parent_path()) {
    parts.push_back(dir.filename().string());
    if (dir == dir.parent_path()) break;
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) out += (out.empty() ? "" : ".") + *it;
  return out;
}

// `.utils` imported from `pkg.models.bert.modeling_bert` -> `pkg.models.bert.utils`.
std::string resolve_module(const std::string& importer, bool importer_is_package, const std::string& module) {
  if (!module.starts_with(".")) return module;
  size_t dots = module.find_first_not_of('.');
  if (dots == std::string::npos) dots = module.size();
  std::string base = importer;
  size_t up = importer_is_package ? dots - 1 : dots;
  for (size_t i = 0; i < up; ++i) {
    auto d = base.rfind('.');
    base = d == std::string::npos ? "" : base.substr(0, d);
  }
  std::string rest = module.substr(dots);
  if (rest.empty()) return base;
  return base.empty() ? rest : base + "." + rest;
}

Outcome check_one(const fs::path& path, const std::optional<std::string>& stdin_bytes, const Options& o,
                  ConfigResolver& configs, const std::vector<std::string>& traced_from_workspace) {
  Outcome out;
  out.report.path = path.string();
  auto read = stdin_bytes ? source_from_bytes(path, *stdin_bytes) : read_source(path);
  if (auto* err = std::get_if<ReadError>(&read)) {
    out.error = err->message;
    return out;
  }
  SourceFile source = std::get<SourceFile>(std::move(read));
  Config config;
  try {
    config = configs.for_file(path);
    config.traced_from_workspace = traced_from_workspace;
    out.report.docs_url = config.docs_url;
  } catch (const ConfigError& e) {
    out.error = e.what();
    return out;
  }
  {
    // A syntax tree takes 20 to 80 times the source: this one is freed before the fix loop parses its own.
    Document document(path.string(), source.text);
    Analysis analysis = analyze(document, config);
    out.report.problems = analysis.problems;
    out.imported_calls = analysis.model->imported_calls_from_traced_code();
    // Never fix a file we could not fully read (syntax errors, regions too deep); report what we can.
    if (!(o.fix || o.diff) || !analysis.fully_read()) {
      attach_fixes(document, analysis);
      out.report.findings = std::move(analysis.findings);
      out.report.text = std::move(source.text);
      return out;
    }
  }
  // The remaining findings come with their fixes: for an unchanged text they are the analysis's own.
  FixAllResult fixed = fix_all(path.string(), source.text, config, FixOptions{o.unsafe, 0});
  out.report.findings = std::move(fixed.remaining);
  if (!fixed.converged)
    out.warning = path.string() + ": fixes were still being found when the fix loop stopped; run --fix again";
  if (!fixed.changed) {
    out.report.text = std::move(source.text);
    return out;
  }
  out.changed = true;
  if (o.diff) {
    std::ostringstream ss;
    write_unified_diff(ss, path.string(), source.text, fixed.text);
    out.diff = ss.str();
  } else if (stdin_bytes) {
    // --fix on stdin writes the fixed text to stdout, in the input's BOM and encoding.
    auto bytes = encode_source(source, fixed.text);
    if (auto* err = std::get_if<EncodeError>(&bytes)) {
      out.error = err->message;
      out.changed = false;
    } else {
      out.diff = std::get<std::string>(std::move(bytes));
    }
  } else if (auto err = write_source(source, fixed.text)) {
    out.error = *err;
    out.changed = false;
  } else {
    out.report.fixed = fixed.applied;
  }
  out.report.text = std::move(fixed.text);
  return out;
}

bool has_arg(const std::vector<std::string>& args, const std::string& arg) {
  return std::find(args.begin(), args.end(), arg) != args.end();
}

}  // namespace

int run_check(const std::vector<std::string>& args) {
  // An editor piping its buffer through `--fix -` replaces the buffer with stdout: whatever goes wrong,
  // stdout then carries the input unchanged (and the error goes to stderr).
  std::optional<std::string> stdin_bytes;
  auto read_stdin = [&] {
    if (stdin_bytes) return;
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    stdin_bytes = ss.str();
  };
  // (Before the options are parsed `-` may be another option's value: never wait for a terminal then.)
  const bool fix_stdin = has_arg(args, "-") && has_arg(args, "--fix") && !has_arg(args, "--diff") && !::isatty(0);
  auto fail = [&](int code) {
    if (fix_stdin) {
      read_stdin();
      std::cout << *stdin_bytes << std::flush;
    }
    return code;
  };
  Options o;
  try {
    o = parse(args);
  } catch (const UsageError& e) {
    std::cerr << "graphmend check: " << e.what() << "\n\n" << kUsage;
    return fail(2);
  }
  std::unique_ptr<ConfigResolver> configs;
  try {
    configs = std::make_unique<ConfigResolver>(o);
  } catch (const ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return fail(2);
  }

  std::vector<std::string> errors;
  std::vector<fs::path> files;
  std::vector<fs::path> roots;
  for (const auto& p : o.paths) {
    if (p == "-") read_stdin();
    else roots.emplace_back(p);
  }
  if (stdin_bytes && !roots.empty()) {
    std::cerr << "graphmend check: `-` cannot be combined with other paths\n";
    return fail(2);
  }
  if (stdin_bytes) files.push_back(o.stdin_filename);
  else files = discover_python_files(roots, errors);
  // Files being written: a signal removes our temporary files before it ends the run.
  std::optional<SignalCleanup> cleanup;
  if (o.fix && !stdin_bytes) cleanup.emplace();

  std::vector<Outcome> outcomes(files.size());
  std::vector<std::vector<std::string>> traced(files.size());  // per file: functions traced from other files
  auto run_pass = [&](const std::vector<size_t>& which) {
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t k = next++; k < which.size(); k = next++) {
        size_t i = which[k];
        try {
          outcomes[i] = check_one(files[i], stdin_bytes, o, *configs, traced[i]);
        } catch (const std::exception& e) {
          outcomes[i] = Outcome{};
          outcomes[i].report.path = files[i].string();
          outcomes[i].error = files[i].string() + ": internal error: " + e.what();
        }
      }
    };
    unsigned n_threads = std::min<unsigned>(o.jobs, static_cast<unsigned>(std::max<size_t>(1, which.size())));
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < n_threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
  };
  std::vector<size_t> all(files.size());
  for (size_t i = 0; i < files.size(); ++i) all[i] = i;
  run_pass(all);
  // Workspace pass: functions that traced code imports from other checked files are traced too. Files
  // that gain such functions are checked again (a few rounds: helpers of helpers).
  if (!stdin_bytes && files.size() > 1) {
    std::map<std::string, size_t> by_module;
    std::vector<std::string> modules(files.size());
    for (size_t i = 0; i < files.size(); ++i) {
      modules[i] = module_name_of(files[i]);
      by_module.emplace(modules[i], i);
    }
    for (int round = 0; round < 3; ++round) {
      std::set<size_t> again;
      for (size_t i = 0; i < files.size(); ++i) {
        bool is_package = files[i].filename() == "__init__.py";
        for (const auto& [module, function] : outcomes[i].imported_calls) {
          auto it = by_module.find(resolve_module(modules[i], is_package, module));
          if (it == by_module.end() || it->second == i) continue;
          auto& names = traced[it->second];
          if (std::find(names.begin(), names.end(), function) != names.end()) continue;
          names.push_back(function);
          again.insert(it->second);
        }
      }
      if (again.empty()) break;
      run_pass(std::vector<size_t>(again.begin(), again.end()));
    }
  }

  std::vector<FileReport> reports;
  bool any_diff = false;
  for (auto& out : outcomes) {
    if (!out.warning.empty()) std::cerr << "warning: " << out.warning << "\n";
    if (!out.error.empty()) {
      errors.push_back(out.error);
      if (o.fix && stdin_bytes) std::cout << *stdin_bytes;  // the input, unchanged
      continue;
    }
    if (o.diff && out.changed) {
      std::cout << out.diff;
      any_diff = true;
    } else if (o.fix && stdin_bytes) {
      std::cout << (out.changed ? out.diff : *stdin_bytes);
    }
    reports.push_back(std::move(out.report));
  }
  for (const auto& e : errors) std::cerr << "error: " << e << "\n";

  size_t findings = 0;
  for (const auto& r : reports) findings += r.findings.size() + r.problems.size();
  if (o.diff) {
    if (!any_diff && errors.empty()) std::cerr << "No fixes available.\n";
  } else if (o.fix && stdin_bytes) {
    // stdout carries the fixed source; the summary goes to stderr.
    write_report(std::cerr, OutputFormat::Concise, reports, false, errors.size());
  } else if (o.statistics) {
    write_statistics(std::cout, reports, o.format == OutputFormat::Json);
  } else {
    write_report(std::cout, o.format, reports, true, errors.size());
  }
  // Like ruff: a path that could not be checked or written is an error whatever --exit-zero says.
  if (!errors.empty()) return 2;
  if (o.diff) return any_diff && !o.exit_zero ? 1 : 0;
  return findings > 0 && !o.exit_zero ? 1 : 0;
}

}  // namespace graphmend::cli
