// `graphmend check [PATH...]`: the engine over files, ruff-style.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dtl/dtl.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <variant>

#include "cli/add_noqa.h"
#include "cli/check_cache.h"
#include "cli/cli_app.h"
#include "cli/file_selection.h"
#include "cli/notebook.h"
#include "cli/report.h"
#include "cli/signal_cleanup.h"
#include "cli/source_file.h"
#include "commands.h"
#include "graphmend/analysis/analyzer.h"
#include "graphmend/analysis/phase_timing.h"
#include "graphmend/analysis/semantic.h"
#include "graphmend/analysis/workspace.h"
#include "graphmend/transforms/fixer.h"

namespace graphmend::cli {
namespace fs = std::filesystem;

namespace {

constexpr const char* kDescription =
    "Report where torch.compile (TorchDynamo) will break the graph, and fix what can be fixed safely.\n"
    "PATH may be files, notebooks (.ipynb) or folders (searched recursively); `-` reads standard input.";

constexpr const char* kFooter = R"(exit status: 0 no findings, 1 findings (or a diff with --diff, or fixes applied with
--exit-non-zero-on-fix), 2 an error: bad usage or configuration, a path that could not be read or a fix
that could not be written (reported on stderr; --exit-zero keeps 2). With `--fix -`, stdout carries the
input unchanged whenever the run fails.
environment: NO_COLOR / FORCE_COLOR (colour, unless --color says otherwise), GRAPHMEND_OUTPUT_FORMAT,
GRAPHMEND_CACHE_DIR.)";

enum class Color { Auto, Always, Never };

struct Options {
  std::vector<std::string> paths;
  bool fix = false, unsafe = false, diff = false, statistics = false, exit_zero = false, no_config = false;
  bool timings = false;
  bool exit_non_zero_on_fix = false, quiet = false, silent = false, no_cache = false;
  std::optional<bool> show_fixes;  // default: on for `text` output
  std::optional<std::vector<std::string>> select, extend_select, ignore;
  std::optional<Scope> scope;
  std::optional<TorchVersion> torch;  // --torch-version
  OutputFormat format = OutputFormat::Text;
  Color color = Color::Auto;
  std::optional<fs::path> output_file;
  std::optional<fs::path> cache_dir;
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

std::vector<std::string> rule_selectors(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  std::vector<std::string> codes;
  for (const RuleInfo* r : all_rules()) codes.emplace_back(r->code);
  for (std::string item : items) {
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty()) continue;
    bool known = item == "ALL" ||
                 std::any_of(codes.begin(), codes.end(), [&](const std::string& c) { return c.starts_with(item); });
    if (!known) {
      std::string message = "unknown rule selector `" + item + "`";
      if (auto match = closest_match(item, codes)) message += " (did you mean `" + *match + "`?)";
      throw UsageError(message + "; `graphmend rule --all` lists the rules");
    }
    out.push_back(item);
  }
  return out;
}

// The parsed options, or the exit status to stop with (help printed, or a usage error).
std::variant<Options, int> parse(const std::vector<std::string>& args) {
  Options o;
  auto app = make_app("check", kDescription);
  app->footer(kFooter);
  app->add_option("PATH", o.paths, "files, notebooks or folders to check (default: .)")->type_name("PATH");
  app->add_flag("--fix,!--no-fix", o.fix,
                "apply safe fixes in place (atomic writes; links, line endings, BOM, mode kept)");
  app->add_flag("--unsafe-fixes,!--no-unsafe-fixes", o.unsafe, "also apply fixes marked unsafe");
  app->add_flag("--diff", o.diff, "print the fixes as a unified diff and write nothing (exit 1 if any)");
  bool show_fixes = false;
  auto* show = app->add_flag("--show-fixes,!--no-show-fixes", show_fixes,
                             "show each finding's fix (or why there is none); on by default in `text` output, and "
                             "with --fix it lists what was fixed");
  std::vector<std::string> select, extend_select, ignore;
  auto* select_opt = app->add_option("--select", select,
                                     "rule codes or prefixes to enable, comma-separated or repeated "
                                     "(replaces the configuration's)")
                         ->delimiter(',')
                         ->allow_extra_args(false)
                         ->type_name("CODES");
  auto* extend_opt = app->add_option("--extend-select", extend_select, "codes or prefixes to enable in addition")
                         ->delimiter(',')
                         ->allow_extra_args(false)
                         ->type_name("CODES");
  auto* ignore_opt = app->add_option("--ignore", ignore, "codes or prefixes to disable")
                         ->delimiter(',')
                         ->allow_extra_args(false)
                         ->type_name("CODES");
  std::string scope;
  app->add_option("--scope", scope, "only code torch.compile traces (default), or every function")
      ->check(CLI::IsMember({"compiled", "all"}))
      ->type_name("SCOPE");
  std::string torch_version;
  app->add_option("--torch-version", torch_version,
                  "the torch whose Dynamo facts apply: 2.13, 2.14 or 2.15 (default: `torch-version`, else the torch "
                  "installed near the checked files, else the newest)")
      ->check([](const std::string& v) {
        return parse_torch_version(v) ? std::string() : "not a torch release such as 2.15: " + v;
      })
      ->type_name("X.Y");
  const std::map<std::string, OutputFormat> formats{
      {"text", OutputFormat::Text},       {"full", OutputFormat::Text},    {"concise", OutputFormat::Concise},
      {"grouped", OutputFormat::Grouped}, {"json", OutputFormat::Json},    {"json-lines", OutputFormat::JsonLines},
      {"junit", OutputFormat::Junit},     {"sarif", OutputFormat::Sarif},  {"github", OutputFormat::Github},
      {"gitlab", OutputFormat::Gitlab},   {"pylint", OutputFormat::Pylint}};
  app->add_option("--output-format", o.format,
                  "text (default), concise, grouped, json, json-lines, junit, sarif, github, gitlab, pylint")
      ->transform(CLI::CheckedTransformer(formats))
      ->envname("GRAPHMEND_OUTPUT_FORMAT")
      ->option_text("FORMAT");
  app->add_option("-o,--output-file", o.output_file, "write the report to FILE instead of stdout")->type_name("FILE");
  std::string color = "auto";
  app->add_option("--color", color, "colour the text report: auto (a terminal, unless NO_COLOR), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->type_name("WHEN");
  app->add_flag("--statistics", o.statistics, "print counts per rule instead of findings");
  app->add_flag("--timings", o.timings,
                "print where the time went (CPU seconds per phase: read, parse, semantic, rules, fixes, cache, "
                "output) on stderr");
  app->add_flag("-e,--exit-zero", o.exit_zero, "exit 0 even when graph breaks are found");
  app->add_flag("--exit-non-zero-on-fix", o.exit_non_zero_on_fix,
                "exit 1 when fixes were applied, even if none remain");
  app->add_flag("-q,--quiet", o.quiet, "print findings only, no summary");
  app->add_flag("-s,--silent", o.silent, "print nothing (exit status only)");
  app->add_flag("--add-noqa", o.add_noqa, "add `# noqa: CODES` to every line with findings");
  app->add_option("--stdin-filename", o.stdin_filename,
                  "the name to report for `-` (and to look up configuration from)")
      ->type_name("NAME");
  app->add_option("--config", o.config_file, "use this pyproject.toml instead of searching upward")->type_name("FILE");
  app->add_flag("--no-config,--isolated", o.no_config, "ignore pyproject.toml files");
  std::vector<std::string> exclude;
  auto* exclude_opt =
      app->add_option("--exclude", exclude, "glob patterns of paths to skip (replaces the configuration's list)")
          ->delimiter(',')
          ->allow_extra_args(false)
          ->type_name("GLOBS");
  app->add_option("--extend-exclude", o.extend_exclude, "glob patterns of paths to skip in addition")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->type_name("GLOBS");
  bool respect_gitignore = true, force_exclude = false;
  auto* gitignore_opt = app->add_flag("--respect-gitignore,!--no-respect-gitignore", respect_gitignore,
                                      "skip files that .gitignore excludes (default: on)");
  auto* force_opt = app->add_flag("--force-exclude,!--no-force-exclude", force_exclude,
                                  "apply exclusions to paths given on the command line too");
  app->add_flag("-n,--no-cache", o.no_cache, "neither read nor write the cache");
  app->add_option("--cache-dir", o.cache_dir, "the cache's folder (default: .graphmend_cache in the current folder)")
      ->envname("GRAPHMEND_CACHE_DIR")
      ->type_name("DIR");
  app->add_option("-j,--jobs", o.jobs, "files checked in parallel (default: number of cores)")
      ->check(CLI::Range(1, 4096))
      ->type_name("N");
  if (auto stop = parse_command_line(*app, args)) return *stop;
  try {
    if (select_opt->count()) o.select = rule_selectors(select);
    if (extend_opt->count()) o.extend_select = rule_selectors(extend_select);
    if (ignore_opt->count()) o.ignore = rule_selectors(ignore);
  } catch (const UsageError& e) {
    return usage_error(*app, e.what());
  }
  // As ruff: adding directives is a run of its own, never combined with fixing.
  if (o.add_noqa && (o.fix || o.diff || o.unsafe))
    return usage_error(*app, "--add-noqa cannot be combined with --fix, --unsafe-fixes or --diff");
  if (!scope.empty()) o.scope = scope == "all" ? Scope::All : Scope::Compiled;
  if (!torch_version.empty()) o.torch = nearest_supported(*parse_torch_version(torch_version));
  if (show->count()) o.show_fixes = show_fixes;
  if (exclude_opt->count()) o.exclude = exclude;
  if (gitignore_opt->count()) o.respect_gitignore = respect_gitignore;
  if (force_opt->count()) o.force_exclude = force_exclude;
  o.color = color == "always" ? Color::Always : color == "never" ? Color::Never : Color::Auto;
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
    Config c = configured(fs::absolute(file).parent_path());
    if (options_.select) c.select = *options_.select;
    if (options_.extend_select)
      c.extend_select.insert(c.extend_select.end(), options_.extend_select->begin(), options_.extend_select->end());
    if (options_.ignore) c.ignore.insert(c.ignore.end(), options_.ignore->begin(), options_.ignore->end());
    if (options_.scope) c.scope = *options_.scope;
    if (options_.torch) {
      c.torch = *options_.torch;
      c.torch_source = "--torch-version";
    } else {
      apply_detected_torch(c, torch_.near(fs::absolute(file).parent_path()));
    }
    return c;
  }

  // The file selection for the entries of `dir` (absolute): its configuration's, with the command
  // line's --exclude (replacing the configuration's exclude), --extend-exclude (both relative to the
  // current folder, as ruff has them) and booleans. A configuration that cannot be read selects with
  // the defaults here; the error is reported for each file it applies to.
  FileSelection selection_for(const fs::path& dir) {
    Config c;
    try {
      c = configured(dir);
    } catch (const ConfigError&) {
    }
    if (options_.exclude) c.exclude.clear();
    FileSelection s = selection_of(c);
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec).lexically_normal();
    if (options_.exclude)
      for (const auto& glob : *options_.exclude) s.exclude.push_back({glob, cwd});
    for (const auto& glob : options_.extend_exclude) s.exclude.push_back({glob, cwd});
    if (options_.respect_gitignore) s.respect_gitignore = *options_.respect_gitignore;
    if (options_.force_exclude) s.force_exclude = *options_.force_exclude;
    return s;
  }

 private:
  // --config's configuration, else the nearest pyproject.toml's for `dir`, else the defaults.
  Config configured(const fs::path& folder) {
    if (base_) return *base_;
    if (options_.no_config) return Config{};
    const DiscoveredConfig found = discovered_.discover(folder);
    if (!found.pyproject) return Config{};
    if (!found.config) throw ConfigError(found.error);
    return *found.config;
  }

  const Options& options_;
  std::optional<Config> base_;
  ConfigCache discovered_;
  TorchDetector torch_;
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

void write_unified_diff(std::ostream& out, const std::string& path, const std::string& before,
                        const std::string& after) {
  std::vector<std::string> a = split_lines(before), b = split_lines(after);
  dtl::Diff<std::string, std::vector<std::string>> diff(a, b);
  diff.compose();
  diff.composeUnifiedHunks();
  out << "--- " << path << "\n+++ " << path << "\n";
  diff.printUnifiedFormat(out);
}

struct Outcome {
  FileReport report;
  std::string error;    // read, config or write error for this file
  std::string diff;     // --diff output
  std::string warning;  // the fix loop's pass bound was reached (like ruff's "failed to converge")
  bool changed = false;
  std::vector<std::pair<std::string, std::string>> imported_calls;  // (module, function) called from traced code
};

// The configuration of `path` with the functions other files trace into it, or nullopt with `out.error`
// set (a bad pyproject.toml names itself and the position).
std::optional<Config> file_config(const fs::path& path, ConfigResolver& configs,
                                  const std::vector<std::string>& traced_from_workspace, Outcome& out) {
  try {
    Config config = configs.for_file(path);
    config.traced_from_workspace = traced_from_workspace;
    out.report.docs_url = config.docs_url;
    return config;
  } catch (const ConfigError& e) {
    out.error = e.what();
    return std::nullopt;
  }
}
// Where a fixed file goes: `diff` (--diff, rendered by the caller) is shown; from stdin, the fixed bytes
// go to stdout in the input's BOM and encoding; otherwise the file is written back in place (atomically,
// keeping its line endings, permissions and links). `fixed_bytes` is what the file would hold.
void deliver_fix(Outcome& out, const SourceFile& source, bool from_stdin, const std::string& fixed_bytes,
                 const FixAllResult& fixed, std::optional<std::string> diff) {
  out.changed = true;
  if (diff) {
    out.diff = std::move(*diff);
  } else if (from_stdin) {
    auto encoded = encode_source(source, fixed_bytes);
    if (auto* err = std::get_if<EncodeError>(&encoded)) {
      out.error = err->message;
      out.changed = false;
    } else {
      out.diff = std::get<std::string>(std::move(encoded));
    }
  } else if (auto err = write_source(source, fixed_bytes)) {
    out.error = *err;
    out.changed = false;
  } else {
    out.report.fixed = fixed.applied;
    out.report.fixed_by_rule = fixed.applied_by_rule;
  }
}

// A Jupyter notebook (cli/notebook.h): its Python code cells are analysed as one text, reported per cell
// and fixed cell by cell; the file is written back with nothing changed but the fixed cells' sources.
Outcome check_notebook(const fs::path& path, const std::optional<std::string>& stdin_bytes, const Options& o,
                       ConfigResolver& configs, const std::vector<std::string>& traced_from_workspace) {
  Outcome out;
  out.report.path = path.string();
  std::optional<timing::Scope> reading(std::in_place, timing::Phase::Read);
  auto read = stdin_bytes ? source_from_bytes(path, *stdin_bytes) : read_source(path);
  if (auto* err = std::get_if<ReadError>(&read)) {
    out.error = err->message;
    return out;
  }
  SourceFile source = std::get<SourceFile>(std::move(read));
  auto parsed = parse_notebook(path.string(), source.text);
  reading.reset();
  if (auto* err = std::get_if<NotebookError>(&parsed)) {
    out.error = err->message;
    return out;
  }
  const Notebook notebook = std::get<Notebook>(std::move(parsed));
  if (!notebook.python) return out;  // a notebook in another language: nothing to check
  auto configured = file_config(path, configs, traced_from_workspace, out);
  if (!configured) return out;
  Config config = std::move(*configured);
  const VirtualText& virt = notebook.virt;
  out.report.cell_starts = virt.cell_starts();
  out.report.cell_numbers = virt.cell_numbers();
  Document document(path.string(), virt.text);
  Analysis analysis = check(document, config);
  out.report.problems = analysis.problems;
  out.imported_calls = analysis.model->imported_calls_from_traced_code();
  if (!(o.fix || o.diff) || !analysis.fully_read()) {
    drop_cross_cell_fixes(analysis.findings, virt.protected_ranges);
    out.report.findings = std::move(analysis.findings);
    out.report.text = virt.text;
    return out;
  }
  FixOptions options{o.unsafe, 0};
  options.protected_ranges = virt.protected_ranges;
  FixAllResult fixed = fix_all(document, std::move(analysis), config, options);
  VirtualText after = moved_virtual_text(virt, fixed.text, fixed.protected_ranges);
  drop_cross_cell_fixes(fixed.remaining, after.protected_ranges);
  out.report.findings = std::move(fixed.remaining);
  if (!fixed.converged)
    out.warning = path.string() + ": fixes were still being found when the fix loop stopped; run --fix again";
  if (!fixed.changed) {
    out.report.text = virt.text;
    return out;
  }
  const std::vector<std::string> before = split_virtual_text(virt, virt.text, virt.protected_ranges);
  const std::vector<std::string> cells = split_virtual_text(virt, fixed.text, fixed.protected_ranges);
  auto bytes = write_notebook(path.string(), notebook, cells);
  if (auto* err = std::get_if<NotebookError>(&bytes)) {
    out.error = err->message;  // --diff too: it shows what --fix would write
    return out;
  }
  std::optional<std::string> diff;
  if (o.diff) {
    // One diff per changed cell, headed `path:cell N` (as ruff does).
    std::ostringstream ss;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (cells[i] != before[i])
        write_unified_diff(ss, path.string() + ":cell " + std::to_string(virt.cells[i].number), before[i], cells[i]);
    }
    diff = ss.str();
  }
  deliver_fix(out, source, stdin_bytes.has_value(), std::get<std::string>(bytes), fixed, std::move(diff));
  out.report.text = after.text;
  out.report.cell_starts = after.cell_starts();
  return out;
}

Outcome check_one(const fs::path& path, const std::optional<std::string>& stdin_bytes, const Options& o,
                  ConfigResolver& configs, const std::vector<std::string>& traced_from_workspace,
                  const CheckCache* cache) {
  Outcome out;
  out.report.path = path.string();
  if (is_notebook_path(path)) return check_notebook(path, stdin_bytes, o, configs, traced_from_workspace);
  std::optional<timing::Scope> reading(std::in_place, timing::Phase::Read);
  auto read = stdin_bytes ? source_from_bytes(path, *stdin_bytes) : read_source(path);
  if (auto* err = std::get_if<ReadError>(&read)) {
    out.error = err->message;
    return out;
  }
  SourceFile source = std::get<SourceFile>(std::move(read));
  reading.reset();
  auto configured = file_config(path, configs, traced_from_workspace, out);
  if (!configured) return out;
  Config config = std::move(*configured);
  // A run that only reports reads an unchanged file's findings back from the cache.
  std::string cache_key;
  if (cache && !(o.fix || o.diff || o.add_noqa)) {
    timing::Scope caching(timing::Phase::Cache);
    // The torch whose facts apply is part of the key: a break and its id may differ between releases.
    std::vector<std::string> key_parts = traced_from_workspace;
    key_parts.push_back("\x01torch " + config.torch.str());
    cache_key = cache->key(path, source.text, config.source, std::move(key_parts));
    if (auto hit = cache->get(path, cache_key)) {
      out.report.findings = std::move(hit->findings);
      for (Finding& f : out.report.findings) f.torch = config.torch;
      out.report.problems = std::move(hit->problems);
      out.imported_calls = std::move(hit->imported_calls);
      out.report.text = std::move(source.text);
      return out;
    }
  }
  Document document(path.string(), source.text);
  Analysis analysis = check(document, config);
  out.report.problems = analysis.problems;
  out.imported_calls = analysis.model->imported_calls_from_traced_code();
  // Never fix a file we could not fully read (syntax errors, regions too deep); report what we can.
  if (!(o.fix || o.diff) || !analysis.fully_read()) {
    out.report.findings = std::move(analysis.findings);
    out.report.text = std::move(source.text);
    if (!cache_key.empty()) {
      timing::Scope caching(timing::Phase::Cache);
      cache->put(path, cache_key, {out.report.findings, out.report.problems, out.imported_calls});
    }
    return out;
  }
  // The fix loop starts from this analysis. The remaining findings come with their fixes: for an
  // unchanged text they are the analysis's own.
  FixAllResult fixed = fix_all(document, std::move(analysis), config, FixOptions{o.unsafe, 0});
  out.report.findings = std::move(fixed.remaining);
  if (!fixed.converged)
    out.warning = path.string() + ": fixes were still being found when the fix loop stopped; run --fix again";
  if (!fixed.changed) {
    out.report.text = std::move(source.text);
    return out;
  }
  std::optional<std::string> diff;
  if (o.diff) {
    std::ostringstream ss;
    write_unified_diff(ss, path.string(), source.text, fixed.text);
    diff = ss.str();
  }
  deliver_fix(out, source, stdin_bytes.has_value(), fixed.text, fixed, std::move(diff));
  out.report.text = std::move(fixed.text);
  return out;
}

// --color, then FORCE_COLOR and NO_COLOR (https://no-color.org), then whether stdout is a terminal.
bool use_color(Color color, bool to_stdout) {
  if (color != Color::Auto) return color == Color::Always;
  auto set = [](const char* name) {
    const char* v = std::getenv(name);
    return v && *v;
  };
  if (set("FORCE_COLOR")) return true;
  if (set("NO_COLOR")) return false;
  const char* term = std::getenv("TERM");
  return to_stdout && ::isatty(1) && !(term && std::string_view(term) == "dumb");
}

// `--fix --show-fixes`: what was fixed, per file and rule (ruff's listing), on stderr.
void write_fix_listing(std::ostream& out, const std::vector<FileReport>& reports) {
  size_t total = 0;
  for (const auto& r : reports) total += static_cast<size_t>(r.fixed);
  if (total == 0) return;
  out << "Applied " << total << " fix" << (total == 1 ? "" : "es") << ":\n";
  for (const auto& r : reports) {
    if (r.fixed_by_rule.empty()) continue;
    out << "- " << r.path << ":\n";
    for (const auto& [code, n] : r.fixed_by_rule) {
      const RuleInfo* rule = find_rule(code);
      out << "    " << n << " \u00d7 " << code << " (" << (rule ? rule->name : "") << ")\n";
    }
  }
}

bool has_arg(const std::vector<std::string>& args, const std::string& arg) {
  return std::find(args.begin(), args.end(), arg) != args.end();
}

}  // namespace

// `--timings`: on the way out of run_check, the CPU time of each phase (summed over threads) beside the
// run's wall time, on stderr.
class TimingsReport {
 public:
  TimingsReport(std::ostream& out, unsigned jobs) : out_(out), jobs_(jobs), start_(std::chrono::steady_clock::now()) {}
  TimingsReport(const TimingsReport&) = delete;
  TimingsReport& operator=(const TimingsReport&) = delete;
  ~TimingsReport() {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const timing::Totals totals = timing::totals();
    double cpu = 0;
    for (uint64_t ns : totals.cpu_ns) cpu += static_cast<double>(ns) / 1e9;
    char line[160];
    std::snprintf(line, sizeof line, "graphmend check: %.3f s wall, %.3f s CPU in the phases below (%u jobs)\n", wall,
                  cpu, jobs_);
    out_ << line;
    for (size_t i = 0; i < totals.cpu_ns.size(); ++i) {
      const double s = static_cast<double>(totals.cpu_ns[i]) / 1e9;
      const std::string name(timing::name(static_cast<timing::Phase>(i)));
      std::snprintf(line, sizeof line, "  %-9s %8.3f s %5.1f%% %8llu entries\n", name.c_str(), s,
                    cpu > 0 ? 100.0 * s / cpu : 0.0, static_cast<unsigned long long>(totals.entries[i]));
      out_ << line;
    }
  }

 private:
  std::ostream& out_;
  unsigned jobs_;
  std::chrono::steady_clock::time_point start_;
};

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
  auto parsed = parse(args);
  if (auto* stop = std::get_if<int>(&parsed)) return *stop == 0 ? 0 : fail(*stop);
  Options o = std::get<Options>(std::move(parsed));
  std::optional<TimingsReport> timings;
  if (o.timings) timings.emplace(std::cerr, o.jobs);
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
    if (p == "-")
      read_stdin();
    else
      roots.emplace_back(p);
  }
  if (stdin_bytes && !roots.empty()) {
    std::cerr << "graphmend check: `-` cannot be combined with other paths\n";
    return fail(2);
  }
  if (stdin_bytes)
    files.push_back(o.stdin_filename);
  else
    files = discover_files(
        roots, [&](const fs::path& dir) { return configs->selection_for(dir); }, errors);
  // The cache (ruff's .ruff_cache): in the current folder unless --cache-dir or GRAPHMEND_CACHE_DIR.
  std::optional<CheckCache> cache;
  if (!o.no_cache && !stdin_bytes) {
    std::ostringstream key;  // the options that change findings
    auto list = [&](const char* name, const std::optional<std::vector<std::string>>& v) {
      key << name << (v ? "=" : "-");
      for (const auto& c : v.value_or(std::vector<std::string>{})) key << c << ",";
      key << ";";
    };
    list("select", o.select);
    list("extend-select", o.extend_select);
    list("ignore", o.ignore);
    key << "scope=" << (o.scope ? static_cast<int>(*o.scope) : -1) << ";no-config=" << o.no_config
        << ";config=" << (o.config_file ? fs::absolute(*o.config_file).string() : "") << ";";
    cache.emplace(o.cache_dir.value_or(fs::path(".graphmend_cache")), key.str());
  }
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
          outcomes[i] = check_one(files[i], stdin_bytes, o, *configs, traced[i], cache ? &*cache : nullptr);
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
  // that gain such functions are checked again (a few rounds: helpers of helpers, overrides down a chain of
  // classes in several files).
  if (!stdin_bytes && files.size() > 1) {
    std::map<std::string, size_t> by_module;
    std::vector<std::string> modules(files.size());
    for (size_t i = 0; i < files.size(); ++i) {
      modules[i] = workspace::module_name_of(files[i]);
      by_module.emplace(modules[i], i);
    }
    workspace::PackageIndex packages;
    for (int round = 0; round < 6; ++round) {
      std::set<size_t> again;
      auto add = [&](size_t file, const std::string& entry) {
        auto& names = traced[file];
        if (std::find(names.begin(), names.end(), entry) != names.end()) return;
        names.push_back(entry);
        again.insert(file);
      };
      for (size_t i = 0; i < files.size(); ++i) {
        bool is_package = files[i].filename() == "__init__.py";
        for (const auto& [module, function] : outcomes[i].imported_calls) {
          if (module.empty()) continue;  // an announcement (module classes, returns), read by the askers
          const std::string name(traced_entry_function(function));
          std::string resolved = workspace::resolve_module(modules[i], is_package, module);
          auto it = by_module.find(resolved);
          // A package's name: the module its __init__.py imports it from, also when the __init__.py is checked
          // (it holds the import, not the definition).
          if (it == by_module.end() || files[it->second].filename() == "__init__.py") {
            const std::string origin = packages.reexporting_module(files[i], modules[i], resolved, name);
            if (auto defining = origin.empty() ? by_module.end() : by_module.find(origin); defining != by_module.end())
              it = defining;
          }
          if (it == by_module.end() || it->second == i) continue;
          if (!is_workspace_query(function) && workspace_entry_wanted(function, outcomes[it->second].imported_calls))
            add(it->second, function);
          for (std::string& answer : workspace_answers(module, function, outcomes[it->second].imported_calls))
            add(i, answer);
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
  if (files.empty() && errors.empty() && !o.silent)
    std::cerr << "warning: No Python files found under the given path(s)\n";
  // --add-noqa writes the directives instead of reporting the findings, as ruff's does.
  if (o.add_noqa) {
    if (stdin_bytes) {
      std::cerr << "error: --add-noqa cannot edit standard input\n";
      return 2;
    }
    return add_noqa(reports, errors.size(), std::cerr);
  }

  timing::Scope writing(timing::Phase::Output);
  size_t findings = 0, fixes_applied = 0;
  for (const auto& r : reports) {
    findings += r.findings.size() + r.problems.size();
    fixes_applied += static_cast<size_t>(r.fixed);
  }
  // The report goes to stdout or --output-file; --silent drops it (the exit status stays).
  std::ofstream output_file;
  std::ostringstream discarded;
  std::ostream* report_out = &std::cout;
  if (o.silent) {
    report_out = &discarded;
  } else if (o.output_file) {
    output_file.open(*o.output_file, std::ios::binary | std::ios::trunc);
    if (!output_file) {
      std::cerr << "error: " << o.output_file->string() << ": cannot write the report: " << std::strerror(errno)
                << "\n";
      return 2;
    }
    report_out = &output_file;
  }
  ReportStyle style;
  style.errors = errors.size();
  style.summary = !o.quiet;
  style.show_fixes = o.show_fixes.value_or(true);
  style.color = use_color(o.color, report_out == &std::cout);
  if (o.diff) {
    if (!any_diff && errors.empty() && !o.silent) std::cerr << "No fixes available.\n";
  } else if (o.fix && stdin_bytes) {
    // stdout carries the fixed source; the summary goes to stderr.
    style.show_fixes = false;
    style.color = use_color(o.color, false);
    if (!o.silent) write_report(std::cerr, OutputFormat::Concise, reports, style);
  } else if (o.statistics) {
    write_statistics(*report_out, reports, o.format == OutputFormat::Json);
  } else {
    if (o.fix && o.show_fixes.value_or(false) && !o.silent) write_fix_listing(std::cerr, reports);
    write_report(*report_out, o.format, reports, style);
  }
  if (output_file.is_open()) {
    output_file.close();
    if (!output_file) {
      std::cerr << "error: " << o.output_file->string() << ": cannot write the report\n";
      return 2;
    }
  }
  // Like ruff: a path that could not be checked or written is an error whatever --exit-zero says.
  if (!errors.empty()) return 2;
  if (o.exit_non_zero_on_fix && fixes_applied > 0) return 1;
  if (o.diff) return any_diff && !o.exit_zero ? 1 : 0;
  return findings > 0 && !o.exit_zero ? 1 : 0;
}

}  // namespace graphmend::cli
