// TorchDetector: the torch installed near each folder, asked from the worker threads of `check --jobs N`
// at once (an unguarded map crashed 1 run in 30-60 of `check` over torchvision's 185 files on 2 cores).
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "graphmend/analysis/torch_version.h"

using namespace graphmend;
namespace fs = std::filesystem;

TEST_CASE("torch detection near many folders from many threads at once gives each folder's answer") {
  const fs::path root = fs::temp_directory_path() / ("gm-torch-detector-" + std::to_string(::getpid()));
  fs::remove_all(root);
  // A venv with torch 2.14 for the folders under `with`, none for those under `without`.
  const fs::path venv = root / "with" / ".venv";
  fs::create_directories(venv / "bin");
  std::ofstream(venv / "pyvenv.cfg") << "home = /usr/bin\n";
  std::ofstream(venv / "bin" / "python") << "#!/bin/sh\n";
  fs::permissions(venv / "bin" / "python", fs::perms::owner_all);
  const fs::path site = venv / "lib" / "python3.11" / "site-packages" / "torch";
  fs::create_directories(site);
  std::ofstream(site / "__init__.py") << "\n";
  std::ofstream(site / "version.py") << "__version__ = '2.14.1+cpu'\n";
  constexpr int kFolders = 400;
  for (int i = 0; i < kFolders; ++i) {
    fs::create_directories(root / "with" / ("f" + std::to_string(i)));
    fs::create_directories(root / "without" / ("f" + std::to_string(i)));
  }

  // Several rounds, each with a fresh detector: an unguarded map fails about one round in two.
  for (int round = 0; round < 6; ++round) {
    TorchDetector detector(EnvironmentContext{});
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kFolders; ++i) {
          const int k = (i * 7 + t * 53) % kFolders;  // each thread its own order: inserts overlap
          const bool with = (k + t) % 2 == 0;
          const auto found = detector.near(root / (with ? "with" : "without") / ("f" + std::to_string(k)));
          if (found.has_value() != with) ++wrong;
        }
      });
    }
    for (auto& thread : threads) thread.join();
    CHECK(wrong.load() == 0);
    const auto found = detector.near(root / "with" / "f0");
    REQUIRE(found);
    CHECK(found->version == TorchVersion{2, 14});
  }
  fs::remove_all(root);
}
