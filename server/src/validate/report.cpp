#include "validate/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace graphmend::validate {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string printf_string(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string pad_left(std::string_view text, std::size_t width) {
  return text.size() >= width ? std::string(text) : std::string(width - text.size(), ' ') + std::string(text);
}

std::string pad_right(std::string_view text, std::size_t width) {
  return text.size() >= width ? std::string(text) : std::string(text) + std::string(width - text.size(), ' ');
}

const json& field(const json& object, std::string_view key) {
  static const json null_value;
  if (!object.is_object()) return null_value;
  auto it = object.find(key);
  return it == object.end() ? null_value : *it;
}

std::string text_of(const json& value) {
  if (value.is_null()) return "-";
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer()) return std::to_string(value.get<long long>());
  if (value.is_number()) return printf_string("%.4g", value.get<double>());
  return value.dump();
}

std::string ratio_text(const json& value) {
  if (!value.is_number()) return "-";
  return printf_string("%.2fx", value.get<double>());
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string short_path(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string break_line(const json& brk) {
  std::string location = short_path(field(brk, "file").is_string() ? field(brk, "file").get<std::string>() : "?");
  if (field(brk, "line").is_number_integer()) location += ":" + std::to_string(field(brk, "line").get<long long>());
  std::string line = location;
  if (field(brk, "registry_id").is_string()) line += "  " + field(brk, "registry_id").get<std::string>();
  line += "  " + text_of(field(brk, "type"));
  const long long count = field(brk, "count").is_number_integer() ? field(brk, "count").get<long long>() : 1;
  if (count > 1) line += "  (x" + std::to_string(count) + ")";
  if (field(brk, "frame_skipped").is_boolean() && field(brk, "frame_skipped").get<bool>()) line += "  [frame skipped]";
  return line;
}

std::string now_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M UTC", &tm);
  return buffer;
}

// One chart: two bars (original, fixed), optional min-max whiskers, value labels.
std::string svg_chart(const std::string& title, const json& original, const json& fixed,
                      const std::string& original_label, const std::string& fixed_label, const json& original_range,
                      const json& fixed_range) {
  const double width = 300, height = 190, top = 34, bottom = 40, bar_width = 70;
  const double plot = height - top - bottom;
  auto number = [](const json& v) { return v.is_number() ? v.get<double>() : 0.0; };
  double maximum = std::max({number(original), number(fixed), 1e-12});
  for (const json* range : {&original_range, &fixed_range}) {
    if (range->is_array() && range->size() == 2 && (*range)[1].is_number())
      maximum = std::max(maximum, (*range)[1].get<double>());
  }
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << ' ' << height << "\" role=\"img\" aria-label=\"" << html_escape(title)
      << "\">";
  svg << "<text x=\"" << width / 2 << "\" y=\"20\" text-anchor=\"middle\" class=\"t\">" << html_escape(title)
      << "</text>";
  svg << "<line x1=\"30\" x2=\"" << width - 30 << "\" y1=\"" << top + plot << "\" y2=\"" << top + plot
      << "\" stroke=\"#888\"/>";
  struct Bar {
    const json* value;
    const json* range;
    const char* name;
    const std::string* label;
    const char* color;
    double x;
  };
  const Bar bars[] = {{&original, &original_range, "original", &original_label, "#c0504d", 65},
                      {&fixed, &fixed_range, "fixed", &fixed_label, "#4f81bd", 165}};
  for (const Bar& bar : bars) {
    const double v = number(*bar.value);
    const double h = bar.value->is_number() ? std::max(plot * v / maximum, 1.0) : 0.0;
    const double y = top + plot - h;
    if (bar.value->is_number()) {
      svg << "<rect x=\"" << bar.x << "\" y=\"" << y << "\" width=\"" << bar_width << "\" height=\"" << h
          << "\" fill=\"" << bar.color << "\"><title>" << bar.name << ": " << html_escape(*bar.label)
          << "</title></rect>";
    }
    if (bar.range->is_array() && bar.range->size() == 2 && (*bar.range)[0].is_number() && (*bar.range)[1].is_number()) {
      const double lo = top + plot - plot * (*bar.range)[0].get<double>() / maximum;
      const double hi = top + plot - plot * (*bar.range)[1].get<double>() / maximum;
      const double cx = bar.x + bar_width / 2;
      svg << "<line x1=\"" << cx << "\" x2=\"" << cx << "\" y1=\"" << lo << "\" y2=\"" << hi
          << "\" stroke=\"#222\"/><line x1=\"" << cx - 6 << "\" x2=\"" << cx + 6 << "\" y1=\"" << hi << "\" y2=\"" << hi
          << "\" stroke=\"#222\"/><line x1=\"" << cx - 6 << "\" x2=\"" << cx + 6 << "\" y1=\"" << lo << "\" y2=\"" << lo
          << "\" stroke=\"#222\"/>";
    }
    svg << "<text x=\"" << bar.x + bar_width / 2 << "\" y=\"" << std::max(y - 5, top - 2)
        << "\" text-anchor=\"middle\" class=\"v\">" << html_escape(*bar.label) << "</text>";
    svg << "<text x=\"" << bar.x + bar_width / 2 << "\" y=\"" << top + plot + 16 << "\" text-anchor=\"middle\">"
        << bar.name << "</text>";
  }
  svg << "</svg>";
  return svg.str();
}

std::string breaks_table_html(const json& arm) {
  const json& breaks = field(arm, "breaks");
  if (!breaks.is_array() || breaks.empty()) return "<p>none</p>";
  std::ostringstream out;
  out << "<table><tr><th>file:line</th><th>function</th><th>Dynamo type</th><th>id</th><th>events</th></tr>";
  for (const json& brk : breaks) {
    std::string location = text_of(field(brk, "file"));
    if (field(brk, "line").is_number_integer()) location += ":" + std::to_string(field(brk, "line").get<long long>());
    out << "<tr><td><code>" << html_escape(location) << "</code></td><td>"
        << html_escape(text_of(field(brk, "function"))) << "</td><td>" << html_escape(text_of(field(brk, "type")))
        << "</td><td>" << html_escape(text_of(field(brk, "registry_id"))) << "</td><td>"
        << html_escape(text_of(field(brk, "count"))) << "</td></tr>";
  }
  out << "</table>";
  return out.str();
}

json range_of(const json& arm, std::string_view lo, std::string_view hi) {
  if (field(arm, lo).is_number() && field(arm, hi).is_number()) return json::array({field(arm, lo), field(arm, hi)});
  return nullptr;
}

std::string milliseconds_text(const json& ms) {
  return ms.is_number() ? format_seconds(json(ms.get<double>() / 1e3)) : std::string("-");
}

bool flag_of(const json& value) { return value.is_boolean() && value.get<bool>(); }

// One row per step of the deploy proof (validate --deploy), the same for the table and the page.
struct DeployRow {
  std::string label;
  std::string original;
  std::string fixed;
};

std::string deploy_cell(const json& arm, std::string_view step) {
  if (!arm.is_object()) return "-";
  if (step == "exported") {
    if (!flag_of(field(arm, "exported"))) return "no";
    return "yes (" + text_of(field(arm, "export_mode")) + ")";
  }
  if (step == "packaged") return flag_of(field(arm, "exported")) ? text_of(field(arm, "packaged")) : "-";
  if (step == "cpp_ran") return flag_of(field(arm, "packaged")) ? text_of(field(arm, "cpp_ran")) : "-";
  if (step == "outputs_match") {
    if (!flag_of(field(arm, "cpp_ran"))) return "-";
    std::string cell = text_of(field(arm, "outputs_match"));
    if (field(arm, "max_abs_diff").is_number())
      cell += printf_string(" (max |diff| %.3g)", field(arm, "max_abs_diff").get<double>());
    return cell;
  }
  if (step == "cpp_latency") return milliseconds_text(field(arm, "cpp_latency_ms"));
  if (step == "python_steady") return milliseconds_text(field(arm, "python_steady_state_ms"));
  return "-";
}

std::vector<DeployRow> deploy_rows(const json& deploy) {
  const json& original = field(deploy, "original");
  const json& fixed = field(deploy, "fixed");
  const std::pair<const char*, const char*> steps[] = {{"torch.export", "exported"},
                                                       {"AOTInductor package", "packaged"},
                                                       {"C++ run (no Python)", "cpp_ran"},
                                                       {"C++ == eager", "outputs_match"},
                                                       {"C++ latency (median)", "cpp_latency"},
                                                       {"torch.compile steady", "python_steady"}};
  std::vector<DeployRow> rows;
  for (const auto& [label, step] : steps)
    rows.push_back({label, deploy_cell(original, step), deploy_cell(fixed, step)});
  return rows;
}

// Why an arm is not deployable, in one line: the first step that failed and its error.
std::string deploy_failure(const json& arm) {
  if (!arm.is_object()) return "";
  if (!flag_of(field(arm, "exported"))) {
    std::string why = "not exported: " + text_of(field(arm, "export_error"));
    const json& lenient = field(arm, "export_non_strict");
    if (field(lenient, "error").is_string() && field(lenient, "error") != field(field(arm, "export_strict"), "error")) {
      why += "; non-strict: " + field(lenient, "error").get<std::string>();
    }
    return why;
  }
  if (!flag_of(field(arm, "packaged"))) return "not packaged: " + text_of(field(arm, "package_error"));
  if (!flag_of(field(arm, "cpp_ran"))) return "C++ run failed: " + text_of(field(arm, "cpp_error"));
  if (!flag_of(field(arm, "outputs_match")))
    return "C++ outputs differ from eager: " + text_of(field(arm, "outputs_difference"));
  return "";
}

}  // namespace

std::string format_seconds(const json& seconds) {
  if (!seconds.is_number()) return "-";
  const double s = seconds.get<double>();
  if (s >= 1.0) return printf_string("%.2f s", s);
  if (s >= 1e-3) return printf_string("%.2f ms", s * 1e3);
  return printf_string("%.1f us", s * 1e6);
}

std::string format_table(const json& result) {
  std::ostringstream out;
  out << "target   " << text_of(field(result, "target")) << "\n";
  out << "device   " << text_of(field(result, "device")) << " (" << text_of(field(result, "device_name"))
      << ") · torch " << text_of(field(result, "torch_version")) << " · backend " << text_of(field(result, "backend"))
      << " · " << text_of(field(result, "mode")) << " · repeats " << text_of(field(result, "repeats")) << "\n";
  if (field(result, "fixed_mode") == "auto") {
    out << "fixed    graphmend's safe fixes, " << text_of(field(result, "fixes_applied")) << " applied\n";
  } else if (field(result, "fixed_source").is_string()) {
    out << "fixed    " << field(result, "fixed_source").get<std::string>() << "\n";
  }
  if (!field(result, "ok").is_boolean() || !field(result, "ok").get<bool>()) {
    const json& error = field(result, "error");
    out << "\nvalidation failed: " << text_of(field(error, "kind")) << " in the " << text_of(field(error, "arm"))
        << " arm: " << text_of(field(error, "message")) << "\n";
    if (field(error, "file").is_string()) {
      out << "  at " << field(error, "file").get<std::string>() << ":" << text_of(field(error, "line")) << "\n";
    }
    return out.str();
  }
  const json& original = field(result, "original");
  const json& fixed = field(result, "fixed");
  const bool has_fixed = fixed.is_object();
  const std::size_t w0 = 20, w = 12;
  auto row = [&](std::string_view name, const std::string& a, const std::string& b, const std::string& change) {
    out << pad_right(name, w0) << pad_left(a, w);
    if (has_fixed) out << pad_left(b, w) << pad_left(change, w);
    out << "\n";
  };
  out << "\n";
  row("", "original", "fixed", "change");
  auto count_change = [&](std::string_view key) -> std::string {
    if (!has_fixed || !field(original, key).is_number_integer() || !field(fixed, key).is_number_integer()) return "";
    const long long d = field(fixed, key).get<long long>() - field(original, key).get<long long>();
    return d == 0 ? "0" : (d > 0 ? "+" : "") + std::to_string(d);
  };
  row("graphs", text_of(field(original, "graph_count")), text_of(field(fixed, "graph_count")),
      count_change("graph_count"));
  row("graph breaks", text_of(field(original, "graph_break_count")), text_of(field(fixed, "graph_break_count")),
      count_change("graph_break_count"));
  row("fullgraph", text_of(field(original, "fullgraph")), text_of(field(fixed, "fullgraph")), "");
  row("recompiles", text_of(field(original, "recompiles")), text_of(field(fixed, "recompiles")), "");
  row("compiled == eager", text_of(field(original, "compiled_matches_eager")),
      text_of(field(fixed, "compiled_matches_eager")), "");
  row("cold start", format_seconds(field(original, "cold_start_s")), format_seconds(field(fixed, "cold_start_s")),
      ratio_text(field(result, "cold_start_speedup")));
  row("steady state", format_seconds(field(original, "steady_state_s")), format_seconds(field(fixed, "steady_state_s")),
      ratio_text(field(result, "steady_state_speedup")));
  row("eager steady state", format_seconds(field(original, "eager_steady_state_s")),
      format_seconds(field(fixed, "eager_steady_state_s")), "");
  if (has_fixed) {
    const bool match = field(result, "outputs_match").is_boolean() && field(result, "outputs_match").get<bool>();
    out << "\noutputs (eager original vs eager fixed): " << (match ? "equal" : "DIFFERENT");
    if (field(result, "outputs_max_abs_diff").is_number()) {
      out << "  max |diff| " << printf_string("%.3g", field(result, "outputs_max_abs_diff").get<double>());
    }
    if (!match && field(result, "outputs_difference").is_string())
      out << "  (" << field(result, "outputs_difference").get<std::string>() << ")";
    out << "\n";
  }
  if (const json& deploy = field(result, "deploy"); deploy.is_object()) {
    // Wider cells than the table above: "yes (non-strict)", "yes (max |diff| 1.2e-07)".
    out << "\n" << pad_right("deploy (eval)", w0 + 2) << pad_left("original", 26);
    if (has_fixed) out << pad_left("fixed", 26);
    out << "\n";
    for (const DeployRow& r : deploy_rows(deploy)) {
      out << pad_right(r.label, w0 + 2) << pad_left(r.original, 26);
      if (has_fixed) out << pad_left(r.fixed, 26);
      out << "\n";
    }
    for (const auto& [name, key] :
         {std::pair<std::string_view, const char*>{"original", "original"}, {"fixed", "fixed"}}) {
      const std::string why = deploy_failure(field(deploy, key));
      if (!why.empty()) out << name << ": " << why << "\n";
    }
    const std::string arm = has_fixed ? "the fixed arm" : "the original";
    if (flag_of(field(result, "deployable"))) {
      out << "deployable: yes (" << arm << " exports, packages, runs in C++ and matches eager)\n";
    } else {
      out << "deployable: NO (" << arm << " stops at a step above)\n";
    }
  }
  // Honest numbers: say so when the repeats' medians disagree so much that the steady-state ratio means little.
  for (const auto& [name, arm] : {std::pair<std::string_view, const json*>{"original", &original}, {"fixed", &fixed}}) {
    const json& samples = field(*arm, "steady_state_samples_s");
    if (!samples.is_array() || samples.size() < 2) continue;
    double lo = 0, hi = 0;
    for (const json& sample : samples) {
      if (!sample.is_number()) continue;
      const double v = sample.get<double>();
      lo = lo == 0 ? v : std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (lo > 0 && hi / lo > 2.0) {
      out << "warning: " << name << " steady state varied from " << format_seconds(json(lo)) << " to "
          << format_seconds(json(hi))
          << " between repeats (a busy machine? try --threads 1): read its ratio with care\n";
    }
  }
  if (const json& sites = field(result, "break_sites"); sites.is_object()) {
    out << "break sites (matched by function and statement): " << text_of(field(sites, "removed")) << " removed, "
        << text_of(field(sites, "remaining")) << " remaining, " << text_of(field(sites, "new")) << " new\n";
  }
  if (field(result, "reference_deterministic").is_boolean() && !field(result, "reference_deterministic").get<bool>()) {
    out << "warning: the original's eager output differs between runs (nondeterministic model)\n";
  }
  for (const auto& [name, arm] : {std::pair<std::string_view, const json*>{"original", &original}, {"fixed", &fixed}}) {
    const json& breaks = field(*arm, "breaks");
    if (!breaks.is_array() || breaks.empty()) continue;
    out << "\nbreaks in " << name << ":\n";
    for (const json& brk : breaks) out << "  " << break_line(brk) << "\n";
  }
  return out.str();
}

std::string render_html(const json& result) {
  const json& original = field(result, "original");
  const json& fixed = field(result, "fixed");
  std::ostringstream html;
  html
      << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>graphmend validate: "
      << html_escape(text_of(field(result, "target"))) << "</title>\n<style>"
      << "body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1000px}"
      << "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
      << "th{background:#f3f3f3}.charts{display:flex;flex-wrap:wrap;gap:12px}svg{border:1px solid #ddd;background:#fff}"
      << "svg text{font-size:12px}svg "
         ".t{font-weight:600;font-size:13px}.ok{color:#1a7f37}.bad{color:#c0392b;font-weight:600}"
      << "pre{background:#f6f6f6;padding:1em;overflow:auto;font-size:12px}"
      << "</style></head><body>\n";
  html << "<h1>graphmend validate</h1>\n<table>";
  const std::pair<const char*, std::string> meta[] = {
      {"target", text_of(field(result, "target"))},
      {"fixed source", text_of(field(result, "fixed_source"))},
      {"device", text_of(field(result, "device")) + " (" + text_of(field(result, "device_name")) + ")"},
      {"torch", text_of(field(result, "torch_version"))},
      {"backend / mode", text_of(field(result, "backend")) + " / " + text_of(field(result, "mode"))},
      {"repeats", text_of(field(result, "repeats"))},
      {"generated", now_utc()},
  };
  for (const auto& [key, value] : meta) html << "<tr><th>" << key << "</th><td>" << html_escape(value) << "</td></tr>";
  html << "</table>\n";
  const bool ok = field(result, "ok").is_boolean() && field(result, "ok").get<bool>();
  if (!ok) {
    const json& error = field(result, "error");
    html << "<p class=\"bad\">Validation failed: " << html_escape(text_of(field(error, "kind"))) << " in the "
         << html_escape(text_of(field(error, "arm"))) << " arm: " << html_escape(text_of(field(error, "message")))
         << "</p>\n";
    if (field(error, "traceback").is_string())
      html << "<pre>" << html_escape(field(error, "traceback").get<std::string>()) << "</pre>";
  } else {
    if (fixed.is_object()) {
      const bool match = field(result, "outputs_match").is_boolean() && field(result, "outputs_match").get<bool>();
      html << "<p>Outputs (eager original vs eager fixed, same weights and inputs): <span class=\""
           << (match ? "ok\">equal" : "bad\">DIFFERENT") << "</span>";
      if (field(result, "outputs_max_abs_diff").is_number()) {
        html << ", max |diff| " << printf_string("%.3g", field(result, "outputs_max_abs_diff").get<double>());
      }
      html << ". Cold start " << ratio_text(field(result, "cold_start_speedup")) << ", steady state "
           << ratio_text(field(result, "steady_state_speedup")) << " (original / fixed).</p>\n";
    }
    html << "<div class=\"charts\">";
    html << svg_chart("graphs", field(original, "graph_count"), field(fixed, "graph_count"),
                      text_of(field(original, "graph_count")), text_of(field(fixed, "graph_count")), nullptr, nullptr);
    html << svg_chart("graph breaks", field(original, "graph_break_count"), field(fixed, "graph_break_count"),
                      text_of(field(original, "graph_break_count")), text_of(field(fixed, "graph_break_count")),
                      nullptr, nullptr);
    html << svg_chart("cold start (median, min-max)", field(original, "cold_start_s"), field(fixed, "cold_start_s"),
                      format_seconds(field(original, "cold_start_s")), format_seconds(field(fixed, "cold_start_s")),
                      range_of(original, "cold_start_min_s", "cold_start_max_s"),
                      range_of(fixed, "cold_start_min_s", "cold_start_max_s"));
    html << svg_chart("steady state (median per call)", field(original, "steady_state_s"),
                      field(fixed, "steady_state_s"), format_seconds(field(original, "steady_state_s")),
                      format_seconds(field(fixed, "steady_state_s")), nullptr, nullptr);
    html << "</div>\n<h2>Per arm</h2><table><tr><th></th><th>original</th><th>fixed</th></tr>";
    const std::pair<const char*, const char*> rows[] = {{"graphs", "graph_count"},
                                                        {"graph breaks (events)", "graph_break_count"},
                                                        {"fullgraph=True compiles", "fullgraph"},
                                                        {"recompiles", "recompiles"},
                                                        {"compiled output == eager", "compiled_matches_eager"},
                                                        {"counting-backend graphs", "counting_backend_graphs"},
                                                        {"peak RSS (MiB)", "peak_rss_mb"}};
    for (const auto& [label, key] : rows) {
      html << "<tr><th>" << label << "</th><td>" << html_escape(text_of(field(original, key))) << "</td><td>"
           << html_escape(text_of(field(fixed, key))) << "</td></tr>";
    }
    for (const auto& [label, key] : {std::pair<const char*, const char*>{"cold start (median)", "cold_start_s"},
                                     {"steady state (median)", "steady_state_s"},
                                     {"eager steady state", "eager_steady_state_s"}}) {
      html << "<tr><th>" << label << "</th><td>" << format_seconds(field(original, key)) << "</td><td>"
           << format_seconds(field(fixed, key)) << "</td></tr>";
    }
    html << "</table>\n";
    if (const json& deploy = field(result, "deploy"); deploy.is_object()) {
      const bool deployable = flag_of(field(result, "deployable"));
      html << "<h2>Deploy: torch.export, AOTInductor, C++ runner</h2><p>Deployable without Python: <span class=\""
           << (deployable ? "ok\">yes" : "bad\">no")
           << "</span></p><table><tr><th></th><th>original</th><th>fixed</th></tr>";
      for (const DeployRow& r : deploy_rows(deploy)) {
        html << "<tr><th>" << html_escape(r.label) << "</th><td>" << html_escape(r.original) << "</td><td>"
             << html_escape(r.fixed) << "</td></tr>";
      }
      html << "</table>";
      for (const char* key : {"original", "fixed"}) {
        const std::string why = deploy_failure(field(deploy, key));
        if (!why.empty()) html << "<p>" << key << ": " << html_escape(why) << "</p>";
      }
      html << "\n";
    }
    html << "<h2>Breaks in the original</h2>" << breaks_table_html(original);
    if (fixed.is_object()) html << "<h2>Breaks left in the fixed version</h2>" << breaks_table_html(fixed);
  }
  html << "\n<h2>Raw result</h2><details><summary>validation.json</summary><pre>" << html_escape(result.dump(2))
       << "</pre></details>\n</body></html>\n";
  return html.str();
}

void write_report(const fs::path& dir, const json& result) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir.string() + ": " + ec.message());
  auto write = [](const fs::path& path, const std::string& text) {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file << text;
    if (!file) throw std::runtime_error("cannot write " + path.string());
  };
  write(dir / "validation.json", result.dump(2) + "\n");
  write(dir / "report.html", render_html(result));
}

}  // namespace graphmend::validate
