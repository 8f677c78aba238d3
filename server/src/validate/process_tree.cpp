#include "validate/process_tree.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

namespace graphmend::validate {
namespace {

struct ProcessInfo {
  pid_t parent = 0;
  bool zombie = false;
};

// Every process, by pid: its parent and whether it has exited.
std::map<pid_t, ProcessInfo> process_table() {
  std::map<pid_t, ProcessInfo> table;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return table;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0) continue;
    const std::string path = "/proc/" + std::string(entry->d_name) + "/stat";
    std::FILE* file = std::fopen(path.c_str(), "r");
    if (file == nullptr) continue;  // gone meanwhile
    char buffer[1024];
    const std::size_t n = std::fread(buffer, 1, sizeof buffer - 1, file);
    std::fclose(file);
    buffer[n] = '\0';
    // "pid (comm) S ppid ...": comm may hold anything, so read after its last ')'.
    const std::string stat(buffer, n);
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 4 >= stat.size()) continue;
    ProcessInfo info;
    info.zombie = stat[close + 2] == 'Z' || stat[close + 2] == 'X';
    info.parent = static_cast<pid_t>(std::strtol(stat.c_str() + close + 4, nullptr, 10));
    table[static_cast<pid_t>(pid)] = info;
  }
  ::closedir(proc);
  return table;
}

std::vector<pid_t> below(const std::map<pid_t, ProcessInfo>& table, pid_t root, bool live_only) {
  std::multimap<pid_t, pid_t> children;
  for (const auto& [pid, info] : table) children.emplace(info.parent, pid);
  std::vector<pid_t> found;
  std::vector<pid_t> frontier{root};
  std::set<pid_t> seen{root};
  while (!frontier.empty()) {
    std::vector<pid_t> next;
    for (const pid_t parent : frontier) {
      const auto [first, last] = children.equal_range(parent);
      for (auto it = first; it != last; ++it) {
        if (!seen.insert(it->second).second) continue;
        next.push_back(it->second);
        if (!live_only || !table.at(it->second).zombie) found.push_back(it->second);
      }
    }
    frontier = std::move(next);
  }
  return found;
}

}  // namespace

bool become_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

std::vector<pid_t> live_descendants(pid_t root) { return below(process_table(), root, true); }

std::size_t kill_tree(pid_t root, bool and_root) {
  if (and_root) ::kill(root, SIGSTOP);
  std::size_t signalled = 0;
  for (int round = 0; round < 400; ++round) {
    const std::vector<pid_t> pids = live_descendants(root);
    if (pids.empty()) break;
    for (const pid_t pid : pids) {
      if (::kill(pid, SIGKILL) == 0) ++signalled;
    }
    // SIGKILL takes effect asynchronously: give the kernel a moment before looking again.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (and_root && ::kill(root, SIGKILL) == 0) ++signalled;
  return signalled;
}

void sweep_orphans(const std::set<pid_t>& keep) {
  const pid_t self = ::getpid();
  std::set<pid_t> stuck;  // not reaped in time (uninterruptible sleep): not waited for again here
  // Killing one tree may orphan more below it to us: look again until nothing new turns up.
  for (int round = 0; round < 50; ++round) {
    bool any = false;
    for (const auto& [pid, info] : process_table()) {
      if (info.parent != self || keep.count(pid) != 0 || stuck.count(pid) != 0) continue;
      any = true;
      if (!info.zombie) kill_tree(pid, true);
      // Reaped within a bound: the caller may hold a lock the server's I/O thread waits for.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      int status = 0;
      for (;;) {
        const pid_t got = ::waitpid(pid, &status, WNOHANG);
        if (got == pid || (got < 0 && errno != EINTR)) break;
        if (std::chrono::steady_clock::now() > deadline) {
          stuck.insert(pid);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    if (!any) return;
  }
}

}  // namespace graphmend::validate
