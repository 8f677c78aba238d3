#include "cli/cli_app.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iostream>

namespace graphmend::cli {

namespace {

// CLI11's layout without the `{false}` it prints after a negatable flag's names.
class Formatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* option, bool positional) const override {
    std::string name = CLI::Formatter::make_option_name(option, positional);
    for (auto open = name.find('{'); open != std::string::npos; open = name.find('{')) {
      auto close = name.find('}', open);
      if (close == std::string::npos) break;
      name.erase(open, close - open + 1);
    }
    return name;
  }
};

}  // namespace

std::unique_ptr<CLI::App> make_app(const std::string& command, const std::string& description) {
  auto app = std::make_unique<CLI::App>(description, "graphmend " + command);
  app->option_defaults()->always_capture_default(false);
  app->formatter(std::make_shared<Formatter>());
  app->get_formatter()->column_width(32);
  // `--select A --select B` adds to the list (as ruff does); a flag given twice is still one flag.
  app->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->allow_windows_style_options(false);
  return app;
}

int usage_error(const CLI::App& app, const std::string& message, int status) {
  std::cerr << app.get_name() << ": error: " << message << "\n\nFor more information, try '" << app.get_name()
            << " --help'.\n";
  return status;
}

std::optional<int> parse_command_line(CLI::App& app, const std::vector<std::string>& args, int usage_status) {
  // CLI11 takes the arguments in reverse order.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ExtrasError&) {
    // Name the first unknown option, and the known one it most likely meant.
    std::vector<std::string> names;
    for (const CLI::Option* o : app.get_options()) {
      for (const auto& n : o->get_lnames()) names.push_back("--" + n);
      for (const auto& n : o->get_snames()) names.push_back("-" + n);
    }
    for (const auto& extra : app.remaining()) {
      std::string word = extra.substr(0, extra.find('='));
      std::string message = "unexpected argument '" + extra + "'";
      if (auto match = word.starts_with("-") ? closest_match(word, names) : std::nullopt)
        message += "\n\n  tip: a similar argument exists: '" + *match + "'";
      return usage_error(app, message, usage_status);
    }
    return usage_error(app, "unexpected arguments", usage_status);
  } catch (const CLI::ParseError& e) {
    return usage_error(app, e.what(), usage_status);
  }
  return std::nullopt;
}

CLI::Validator whole_number(int low, int high, const std::string& name) {
  return CLI::Validator(
      [low, high](const std::string& v) {
        int n = 0;
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        return ec == std::errc() && end == v.data() + v.size() && n >= low && n <= high
                   ? std::string()
                   : "must be a whole number from " + std::to_string(low) + " to " + std::to_string(high) + ", got `" +
                         v + "`";
      },
      "", name);
}

CLI::Validator positive_seconds(const std::string& name) {
  return CLI::Validator(
      [](const std::string& v) {
        char* end = nullptr;
        const double seconds = std::strtod(v.c_str(), &end);
        return !v.empty() && end == v.c_str() + v.size() && std::isfinite(seconds) && seconds > 0
                   ? std::string()
                   : "must be a positive number of seconds, got `" + v + "`";
      },
      "", name);
}

}  // namespace graphmend::cli
