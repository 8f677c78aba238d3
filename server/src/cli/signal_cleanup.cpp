#include "cli/signal_cleanup.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>

namespace graphmend::cli {

namespace {

// Everything the handler touches is static and lock-free: it may only call async-signal-safe functions.
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

constexpr size_t kSlots = 256;  // more than the writers that run at once; a writer waits for a free one
enum SlotState : int { kFree, kClaimed, kTemp, kKeep };

struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
Slot g_slots[kSlots];

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr size_t kSignalCount = sizeof kSignals / sizeof kSignals[0];
struct sigaction g_previous[kSignalCount];
bool g_installed[kSignalCount];

// The handler and the writers meet through these (sequentially consistent, Dekker style): the handler
// sets g_stopping and then reads the counters; a writer raises a counter and then reads g_stopping, so
// either the handler sees the writer or the writer sees the handler.
std::atomic<bool> g_stopping{false};
std::atomic<int> g_creating{0};  // temporary files being created now
std::atomic<int> g_in_place{0};  // InPlaceWrite scopes open now
std::atomic<int> g_pending{0};   // a signal that waits for them
thread_local bool t_creating = false;

void say(const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

void remove_temp_files() {
  // A creation under way on another thread ends in microseconds; one on this thread (interrupted by
  // this very handler) has registered its path already. Bounded: never hang on the way out.
  for (int spin = 0; spin < 1000000 && g_creating.load() > (t_creating ? 1 : 0); ++spin) sched_yield();
  for (Slot& slot : g_slots) {
    int state = slot.state.load();
    if (state == kTemp) {
      ::unlink(slot.path);
    } else if (state == kKeep) {
      say("graphmend: interrupted while a file was rewritten in place; its new text is kept in ");
      say(slot.path);
      say("\n");
    }
  }
}

// Cleans up, then lets the previous action (the default: terminate) take the signal.
void reraise(int sig) {
  remove_temp_files();
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  const struct sigaction* previous = &fallback;
  for (size_t i = 0; i < kSignalCount; ++i)
    if (kSignals[i] == sig && g_installed[i]) previous = &g_previous[i];
  ::sigaction(sig, previous, nullptr);
  // Inside the handler the signal is blocked: it is delivered again when the handler returns.
  ::raise(sig);
}

extern "C" void on_cleanup_signal(int sig) {
  const int saved_errno = errno;
  g_stopping.store(true);
  if (g_in_place.load() > 0) {
    g_pending.store(sig);
    // The last in-place write may have ended between the test and the store: then take it back here.
    if (g_in_place.load() == 0) {
      if (int pending = g_pending.exchange(0)) reraise(pending);
    }
  } else {
    reraise(sig);
  }
  errno = saved_errno;
}

void leave_in_place() {
  if (g_in_place.fetch_sub(1) == 1) {
    if (int pending = g_pending.exchange(0)) reraise(pending);
  }
}

}  // namespace

SignalCleanup::SignalCleanup() {
  for (size_t i = 0; i < kSignalCount; ++i) {
    g_installed[i] = false;
    if (::sigaction(kSignals[i], nullptr, &g_previous[i]) != 0) continue;
    if (!(g_previous[i].sa_flags & SA_SIGINFO) && g_previous[i].sa_handler == SIG_IGN) continue;  // nohup
    struct sigaction action {};
    action.sa_handler = on_cleanup_signal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (int s : kSignals) sigaddset(&action.sa_mask, s);
    g_installed[i] = ::sigaction(kSignals[i], &action, nullptr) == 0;
  }
}

SignalCleanup::~SignalCleanup() {
  for (size_t i = 0; i < kSignalCount; ++i) {
    if (g_installed[i]) ::sigaction(kSignals[i], &g_previous[i], nullptr);
    g_installed[i] = false;
  }
}

bool interrupted() { return g_stopping.load(); }

TempFileSlot::TempFileSlot() {
  for (;;) {
    for (size_t i = 0; i < kSlots; ++i) {
      int expected = kFree;
      if (g_slots[i].state.compare_exchange_strong(expected, kClaimed)) {
        index_ = i;
        return;
      }
    }
    std::this_thread::yield();
  }
}

TempFileSlot::~TempFileSlot() { g_slots[index_].state.store(kFree); }

int TempFileSlot::create(const std::string& path, int flags, unsigned mode) {
  Slot& slot = g_slots[index_];
  slot.state.store(kClaimed);
  if (path.size() >= sizeof slot.path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  t_creating = true;
  g_creating.fetch_add(1);
  int fd = -1;
  int error = ECANCELED;
  if (!g_stopping.load()) {
    std::memcpy(slot.path, path.c_str(), path.size() + 1);
    slot.state.store(kTemp);
    fd = ::open(path.c_str(), flags | O_CREAT | O_EXCL, static_cast<mode_t>(mode));
    error = errno;
    if (fd < 0) slot.state.store(kClaimed);
  }
  g_creating.fetch_sub(1);
  t_creating = false;
  errno = error;
  return fd;
}

void TempFileSlot::keep() { g_slots[index_].state.store(kKeep); }

void TempFileSlot::release() { g_slots[index_].state.store(kClaimed); }

const char* TempFileSlot::path() const { return g_slots[index_].path; }

InPlaceWrite::InPlaceWrite() {
  g_in_place.fetch_add(1);
  allowed_ = !g_stopping.load();
  if (!allowed_) leave_in_place();  // a signal came first: it may be waiting for this scope to close
}

InPlaceWrite::~InPlaceWrite() {
  if (allowed_) leave_in_place();
}

}  // namespace graphmend::cli
