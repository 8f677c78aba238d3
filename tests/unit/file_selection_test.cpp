// File discovery (cli/file_selection.h): the extensions it returns and the selection callback; the CLI
// tests (tests/cli/test_file_selection.py) cover exclude, gitignore and force-exclude end to end.
#include "cli/file_selection.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <fstream>

namespace fs = std::filesystem;
using namespace graphmend::cli;

namespace {

fs::path fresh_tree(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("graphmend-unit-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (const char* rel : {"a.py", "b.ipynb", "c.pyi", "d.txt", "sub/e.py", "sub/f.ipynb", "gen/g.py"}) {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel) << "x = 1\n";
  }
  return dir;
}

std::vector<std::string> names(const std::vector<fs::path>& files, const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(f.lexically_relative(root).generic_string());
  return out;
}

}  // namespace

TEST_CASE("discover_files: Python files and notebooks by default, or the extensions asked for") {
  const fs::path root = fresh_tree("discover");
  std::vector<std::string> errors;
  const SelectionFor defaults = [](const fs::path&) { return FileSelection{}; };
  CHECK(names(discover_files({root}, defaults, errors), root) ==
        std::vector<std::string>{"a.py", "b.ipynb", "gen/g.py", "sub/e.py", "sub/f.ipynb"});
  constexpr std::array<std::string_view, 1> only_py{".py"};
  CHECK(names(discover_files({root}, defaults, errors, only_py), root) ==
        std::vector<std::string>{"a.py", "gen/g.py", "sub/e.py"});
  // An explicit file is returned whatever its extension.
  CHECK(discover_files({root / "d.txt"}, defaults, errors) == std::vector<fs::path>{root / "d.txt"});
  CHECK(errors.empty());
  fs::remove_all(root);
}

TEST_CASE("discover_files: each folder's entries are judged by that folder's selection") {
  const fs::path root = fresh_tree("selection");
  std::vector<std::string> errors;
  std::vector<fs::path> asked;
  const SelectionFor exclude_gen = [&](const fs::path& dir) {
    asked.push_back(dir);
    FileSelection s;
    s.root = root;
    s.exclude.push_back({"gen", root});
    s.exclude.push_back({"sub/*.ipynb", root});
    return s;
  };
  CHECK(names(discover_files({root}, exclude_gen, errors), root) ==
        std::vector<std::string>{"a.py", "b.ipynb", "sub/e.py"});
  CHECK(std::find(asked.begin(), asked.end(), root / "sub") != asked.end());
  CHECK(std::find(asked.begin(), asked.end(), root / "gen") == asked.end());  // never walked
  FileSelection forced;
  forced.root = root;
  forced.force_exclude = true;
  forced.exclude.push_back({"gen", root});
  CHECK(is_excluded(root / "gen" / "g.py", forced));
  CHECK_FALSE(is_excluded(root / "a.py", forced));
  CHECK(discover_files(
            {root / "gen" / "g.py"}, [&](const fs::path&) { return forced; }, errors)
            .empty());
  CHECK(errors.empty());
  fs::remove_all(root);
}
