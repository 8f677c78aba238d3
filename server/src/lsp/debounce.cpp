#include "lsp/debounce.h"

#include <algorithm>
#include <vector>

namespace graphmend::lsp {

void DebouncePolicy::record(Duration analysis_time) {
  recent_.push_back(analysis_time);
  while (recent_.size() > history_) recent_.pop_front();
}

DebouncePolicy::Duration DebouncePolicy::next(std::optional<int> fixed_ms) const {
  if (fixed_ms) return std::chrono::milliseconds(std::max(0, *fixed_ms));
  if (recent_.empty()) return min_;
  std::vector<Duration> sorted(recent_.begin(), recent_.end());
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  const auto median = sorted[sorted.size() / 2];
  const double scaled_count = static_cast<double>(median.count()) * ratio_;
  const auto scaled =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double, Duration::period>(scaled_count));
  return std::clamp(scaled, min_, max_);
}

}  // namespace graphmend::lsp
