// ConfigCache: the nearest pyproject.toml with [tool.graphmend] per folder, each file read once, a broken one
// reported once until clear().
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "graphmend/analysis/config.h"

using namespace graphmend;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

}  // namespace

TEST_CASE("config discovery finds the nearest graphmend table per folder and reads each file once") {
  const fs::path root = fs::temp_directory_path() / ("gm-config-cache-" + std::to_string(::getpid()));
  fs::remove_all(root);
  write(root / "pyproject.toml", "[tool.graphmend]\nignore = [\"GM104\"]\n");
  write(root / "pkg" / "pyproject.toml", "[project]\nname = \"no-graphmend-table\"\n");
  write(root / "broken" / "pyproject.toml", "[tool.graphmend]\nselect = 3\n");
  fs::create_directories(root / "pkg" / "sub");

  ConfigCache cache;
  const DiscoveredConfig deep = cache.discover(root / "pkg" / "sub");
  REQUIRE(deep.pyproject);
  CHECK(*deep.pyproject == root / "pyproject.toml");  // pkg's has no [tool.graphmend]: the walk goes on
  REQUIRE(deep.config);
  CHECK(deep.config->ignore == std::vector<std::string>{"GM104"});
  CHECK(deep.first_read);
  CHECK_FALSE(cache.discover(root / "pkg").first_read);  // the same file: read once

  const DiscoveredConfig broken = cache.discover(root / "broken");
  CHECK(broken.pyproject == root / "broken" / "pyproject.toml");
  CHECK_FALSE(broken.config);
  CHECK(broken.error.find("pyproject.toml") != std::string::npos);
  CHECK(broken.first_read);
  CHECK_FALSE(cache.discover(root / "broken").first_read);  // reported once

  write(root / "broken" / "pyproject.toml", "[tool.graphmend]\nselect = [\"GM1\"]\n");
  CHECK_FALSE(cache.discover(root / "broken").config);  // cached until told
  cache.clear();
  const DiscoveredConfig mended = cache.discover(root / "broken");
  REQUIRE(mended.config);
  CHECK(mended.config->select == std::vector<std::string>{"GM1"});
  fs::remove_all(root);
}
