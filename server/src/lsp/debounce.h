// How long to wait after an edit before re-analysing: like clangd, adaptive to recent analysis
// times (the median of the last few, clamped), or a fixed value from the settings.
#pragma once

#include <chrono>
#include <deque>
#include <optional>

namespace graphmend::lsp {

class DebouncePolicy {
 public:
  using Duration = std::chrono::steady_clock::duration;

  DebouncePolicy(std::chrono::milliseconds min = std::chrono::milliseconds(50),
                 std::chrono::milliseconds max = std::chrono::milliseconds(500), double ratio = 1.0,
                 std::size_t history = 5)
      : min_(min), max_(max), ratio_(ratio), history_(history) {}

  void record(Duration analysis_time);
  // The delay before the next analysis; `fixed_ms` (from the settings) wins when set.
  Duration next(std::optional<int> fixed_ms) const;

 private:
  Duration min_;
  Duration max_;
  double ratio_;
  std::size_t history_;
  std::deque<Duration> recent_;
};

}  // namespace graphmend::lsp
