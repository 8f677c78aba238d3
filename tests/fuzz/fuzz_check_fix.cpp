// libFuzzer target: the engine on arbitrary bytes read as a Python file.
//
// For each input: parse, analyse (compiled scope and `all` scope), attach fixes, then fix_all with safe
// fixes and with unsafe ones. Asserted (abort, so libFuzzer saves the input):
//   * no crash, no sanitizer report, no exception escapes the engine;
//   * every attached fix has edits inside the text that apply_edits accepts;
//   * when the input parses without errors, the fixed text parses without errors too;
//   * fix_all on the fixed text changes nothing (the fix loop reached its fixpoint: idempotence);
//   * the language server's incremental analysis of an edit (a slice of the input inserted, then
//     removed again, at a place the input's first bytes choose) gives the whole-file analysis's findings,
//     unless it held the last findings because the edit broke the syntax.
//   * the CLI's `check --fix` on the input as a real file (on tmpfs when /dev/shm exists; plain, hard-linked
//     or behind a symlink, writable or mode 0444, as the input's size chooses) writes fix_all's text on the
//     decoded source as encode_source gives it (the BOM; the PEP 263 encoding the input declares), or
//     leaves the file as it was (bytes invalid in the encoding, an unknown encoding, a fix the encoding
//     cannot represent, read-only files: exit 2), keeps links, mode and the other name's contents, and
//     leaves no temporary file; `check --fix -` prints those bytes, or the input unchanged whenever it
//     fails.
// With GRAPHMEND_FUZZ_EACH_FIX=1 in the environment, also: every fix offered on a file that parses, applied
// alone, gives a file that parses (fix_all drops a whole pass when one fix breaks the file, so a broken
// fix silently costs every other fix of that pass).
// scripts/fuzz.sh builds it (clang, ASan) and seeds it from tests/fixtures.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "cli/source_file.h"
#include "commands.h"
#include "graphmend/analysis/analyzer.h"
#include "graphmend/analysis/document.h"
#include "graphmend/transforms/fixer.h"

namespace {

using namespace graphmend;

[[noreturn]] void fail(const char* what, const std::string& input, const std::string& detail) {
  std::fprintf(stderr, "\n== graphmend fuzz: %s\n-- input (%zu bytes):\n%s\n-- detail:\n%s\n", what, input.size(),
               input.c_str(), detail.c_str());
  std::abort();
}

const bool each_fix = [] {
  const char* v = std::getenv("GRAPHMEND_FUZZ_EACH_FIX");
  return v && *v && std::string(v) != "0";
}();

void check_fixes(const std::string& input, const Config& config) {
  Document document("fuzz.py", input);
  const bool parsed_clean = !document.has_syntax_errors();
  Analysis analysis = analyze(document, config);
  attach_fixes(document, analysis);
  for (const Finding& f : analysis.findings) {
    if (f.range.start > f.range.end || f.range.end > input.size())
      fail("finding range outside the text", input, f.message);
    if (!f.fix) continue;
    for (const TextEdit& e : f.fix->edits) {
      if (e.range.start > e.range.end || e.range.end > input.size())
        fail("fix edit outside the text", input, f.fix->title);
    }
    std::string applied;
    try {
      applied = apply_edits(input, f.fix->edits);
    } catch (const std::exception& ex) {
      fail("a fix's own edits do not apply", input, f.fix->title + ": " + ex.what());
    }
    if (each_fix && parsed_clean && Document("fuzz.py", applied).has_syntax_errors())
      fail("a fix applied alone breaks the file", input, f.fix->title + "\n-- result:\n" + applied);
  }
}

FixAllResult check_fix_all(const std::string& input, bool parsed_clean, const Config& config, bool unsafe) {
  FixOptions options;
  options.unsafe = unsafe;
  const char* mode = unsafe ? "unsafe" : "safe";
  FixAllResult first = fix_all("fuzz.py", input, config, options);
  if (!first.changed) {
    if (first.text != input) fail("fix_all changed the text but says it did not", input, mode);
    return first;
  }
  if (!parsed_clean) fail("fix_all edited a file with syntax errors", input, first.text);
  Document fixed("fuzz.py", first.text);
  if (fixed.has_syntax_errors()) fail("the fixed text does not parse", input, std::string(mode) + "\n" + first.text);
  FixAllResult second = fix_all("fuzz.py", first.text, config, options);
  if (second.changed || second.text != first.text)
    fail("fix_all is not idempotent", input,
         std::string(mode) + "\n-- after one fix_all:\n" + first.text + "\n-- after two:\n" + second.text);
  return first;
}

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spill(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// A scratch folder for the whole run, on tmpfs when there is one; removed at exit.
fs::path g_scratch;

const fs::path& scratch() {
  if (g_scratch.empty()) {
    std::string base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
    std::string tmpl = base + "/graphmend-fuzz-XXXXXX";
    if (!::mkdtemp(tmpl.data())) std::abort();
    g_scratch = tmpl;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(g_scratch, ec);
    });
  }
  return g_scratch;
}

// run_check with its streams captured (stdin from `in`): exit status, stdout.
std::pair<int, std::string> run_cli(const std::vector<std::string>& args, const std::string& in) {
  std::istringstream stdin_text(in);
  std::ostringstream out, err;
  auto* cin_buf = std::cin.rdbuf(stdin_text.rdbuf());
  auto* cout_buf = std::cout.rdbuf(out.rdbuf());
  auto* cerr_buf = std::cerr.rdbuf(err.rdbuf());
  int rc = graphmend::cli::run_check(args);
  std::cin.rdbuf(cin_buf);
  std::cout.rdbuf(cout_buf);
  std::cerr.rdbuf(cerr_buf);
  std::cin.clear();
  return {rc, out.str()};
}

// `safe`: fix_all with `config` and safe fixes on the input; the CLI runs it on the decoded input (less
// its BOM, from its declared encoding) and encodes the fixed text back.
void check_cli_fix(const std::string& input, const Config& config, const FixAllResult& safe) {
  auto decoded = graphmend::cli::source_from_bytes("fuzz.py", input);
  const auto* source = std::get_if<graphmend::cli::SourceFile>(&decoded);
  std::string expected = input;  // what the file holds afterwards
  bool unencodable = false;      // the fixed text cannot be written in the file's encoding
  if (source) {
    // Encoded back, the unchanged text must give the input's bytes (then the bytes outside the fixes stay).
    if (source->encoding && source->encoding->round_trips) {
      auto same = graphmend::cli::encode_source(*source, source->text);
      if (!std::holds_alternative<std::string>(same) || std::get<std::string>(same) != input)
        fail("the decoded source does not encode back to the input", input, source->encoding->declared);
    }
    FixAllResult fixed = source->text != input ? fix_all("fuzz.py", source->text, config, FixOptions{}) : safe;
    if (fixed.changed) {
      auto bytes = graphmend::cli::encode_source(*source, fixed.text);
      if (auto* text = std::get_if<std::string>(&bytes))
        expected = std::move(*text);
      else
        unencodable = true;
    }
  }
  const bool changes = expected != input;
  const bool unreadable = source == nullptr || unencodable;  // exit 2 whatever the file's mode

  // --fix -: the fixed text, or the input itself.
  // The torch whose facts apply is the harness's (the CLI would otherwise read the torch installed beside it).
  const std::string torch = config.torch.str();
  auto [stdin_rc, printed] = run_cli({"--fix", "--no-config", "--torch-version", torch, "-j1", "-"}, input);
  if (stdin_rc == 2 ? printed != input : printed != expected)
    fail("`check --fix -` printed something else than the fixed text or the input", input,
         "exit " + std::to_string(stdin_rc) + "\n-- printed:\n" + printed + "\n-- expected:\n" + expected);
  if ((stdin_rc == 2) != unreadable) fail("`check --fix -` exit status", input, std::to_string(stdin_rc));

  // --fix FILE, in one of the layouts.
  const fs::path& dir = scratch();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir)) fs::remove_all(entry.path(), ec);
  const size_t layout = input.size() % 3, mode_choice = input.size() / 3 % 4;
  const mode_t mode = mode_choice == 3 ? 0444 : mode_choice == 2 ? 0600 : 0644;
  fs::create_directories(dir / "real");
  const fs::path target = dir / "real" / "m.py", other = dir / "other.py", link = dir / "link.py";
  spill(target, input);
  ::chmod(target.c_str(), mode);
  if (layout == 1) fs::create_hard_link(target, other);
  if (layout == 2) fs::create_symlink("real/m.py", link);
  const fs::path given = layout == 2 ? link : target;
  const bool read_only = mode == 0444;
  auto [rc, ignored] = run_cli({"--fix", "--no-config", "--torch-version", torch, "-j1", given.string()}, "");
  (void)ignored;
  const std::string after = slurp(target);
  std::string detail = "layout " + std::to_string(layout) + ", mode " + std::to_string(mode) + ", exit " +
                       std::to_string(rc) + "\n-- file:\n" + after;
  if (rc < 0 || rc > 2) fail("`check --fix` exit status out of range", input, detail);
  const bool refused = unreadable || (read_only && changes);
  if (refused != (rc == 2)) fail("`check --fix` exit 2 exactly when the file cannot be read or written", input, detail);
  if (after != (refused ? input : expected))
    fail("`check --fix` wrote something else than the fixed text", input, detail);
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0 || (st.st_mode & 07777) != mode)
    fail("`check --fix` changed the mode", input, detail);
  if (layout == 1 && (st.st_nlink != 2 || slurp(other) != after))
    fail("`check --fix` broke a hard link", input, detail);
  if (layout == 2 && !fs::is_symlink(link)) fail("`check --fix` replaced a symlink", input, detail);
  for (const fs::path& d : {dir, dir / "real"})
    for (const auto& entry : fs::directory_iterator(d))
      if (entry.path().filename().string().find(".graphmend-") != std::string::npos)
        fail("`check --fix` left a temporary file", input, entry.path().string());
  ::chmod(target.c_str(), 0644);
}

std::string describe(const std::vector<Finding>& findings) {
  std::string out;
  for (const Finding& f : findings) {
    out += std::string(f.rule->code) + " " + std::to_string(f.range.start) + "-" + std::to_string(f.range.end) + " " +
           f.message + "\n";
    for (const auto& r : f.related)
      out += "  " + std::to_string(r.range.start) + "-" + std::to_string(r.range.end) + "\n";
  }
  return out;
}

void check_incremental(const std::string& input, const Config& config) {
  if (input.size() < 4) return;
  const auto at = static_cast<uint32_t>(
      (static_cast<unsigned char>(input[0]) << 8 | static_cast<unsigned char>(input[1])) % input.size());
  const auto length =
      std::min<uint32_t>(static_cast<unsigned char>(input[2]) % 24 + 1, static_cast<uint32_t>(input.size()) - at);
  const std::string slice = input.substr(at, length);
  std::string before = input;
  before.erase(at, length);
  Document document("fuzz.py", before);
  IncrementalAnalyzer analyzer;
  analyzer.run(document, config, 1);
  auto compare = [&](const char* what) {
    Document fresh("fuzz.py", document.text());
    // The tokenizer check is rescanned around the edit only: it must equal a scan of the whole text.
    auto tokenizer = [](const Document& d) {
      const auto& e = d.tokenizer_error();
      return e ? std::to_string(e->range.start) + "-" + std::to_string(e->range.end) + " " + e->message : "none";
    };
    if (tokenizer(document) != tokenizer(fresh))
      fail("the edited document's tokenizer check differs from a fresh one", input,
           std::string(what) + "\n-- edited: " + tokenizer(document) + "\n-- fresh: " + tokenizer(fresh));
    auto result = analyzer.run(document, config, 1);
    if (result.held) return;
    std::string expected = describe(analyze(fresh, config).findings), got = describe(result.analysis.findings);
    if (expected != got)
      fail("incremental analysis differs from the whole-file one", input,
           std::string(what) + "\n-- text:\n" + document.text() + "\n-- whole file:\n" + expected +
               "-- incremental:\n" + got);
  };
  document.apply_edit({at, at}, slice);  // the input itself
  compare("after inserting the slice");
  document.apply_edit({at, at + length}, "");
  compare("after removing it again");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return -1;  // keep inputs small; large files are the CLI tests' business
  const std::string input(reinterpret_cast<const char*>(data), size);
  Config compiled;
  Config all;
  all.scope = Scope::All;
  bool parsed_clean = false;
  try {
    parsed_clean = !Document("fuzz.py", input).has_syntax_errors();
    check_fixes(input, compiled);
    check_fixes(input, all);
    FixAllResult safe = check_fix_all(input, parsed_clean, compiled, false);
    check_fix_all(input, parsed_clean, all, true);
    check_incremental(input, compiled);
    check_cli_fix(input, compiled, safe);
  } catch (const std::exception& ex) {
    fail("exception escaped the engine", input, ex.what());
  }
  return 0;
}
