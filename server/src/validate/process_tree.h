// Processes below a process, found through the parent links in /proc, and the means to end them
// all. User code can leave its process group (setsid) and its parent (a double fork), but not the
// tree of a subreaper above it: orphans are re-parented to the nearest subreaper, not to init.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <set>
#include <vector>

namespace graphmend::validate {

// Makes this process a child subreaper (Linux 3.4+; prctl(PR_SET_CHILD_SUBREAPER)), so that what
// its descendants orphan stays below it. False when the kernel refuses.
bool become_subreaper();

// Processes below `root` that have not exited (zombies left out), nearest first.
std::vector<pid_t> live_descendants(pid_t root);

// SIGKILLs everything below `root`, round after round until nothing below it is alive (what is
// forked meanwhile is found in the next round; about 2 s at most), and then `root` itself when
// `and_root`. With `and_root`, `root` is stopped first: it forks nothing more, and, as a subreaper,
// keeps holding what its dying descendants orphan. Returns how many processes were signalled.
std::size_t kill_tree(pid_t root, bool and_root);

// For a subreaper: kills the tree of each child of this process not in `keep` (orphans that were
// re-parented to it, or children nobody waits for any more) and reaps them.
void sweep_orphans(const std::set<pid_t>& keep = {});

}  // namespace graphmend::validate
