"""Processes below a process (through the parent links in /proc), and the means to end them all.

User code can leave its process group (`setsid`, `start_new_session=True`) and its parent (a double
fork), but not the tree of a subreaper above it: orphans are re-parented to the nearest subreaper
(prctl PR_SET_CHILD_SUBREAPER), not to init. The arm is one, so while it lives everything user code
started is below it; the validator is one, so what a dead arm left comes to it and is swept. The
standard library only; without /proc or prctl (not Linux) these do less, never fail.
"""

import ctypes
import os
import signal
import threading
import time

_PR_SET_CHILD_SUBREAPER = 36

# Children this process started and still waits for (their pids): a sweep leaves them alone.
_owned = set()
_owned_lock = threading.Lock()


def become_subreaper():
    """Orphans below this process are re-parented to it. False when the kernel refuses."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def process_table():
    """{pid: (parent pid, exited)} of every process."""
    table = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # gone meanwhile
        # "pid (comm) S ppid ...": comm may hold anything, so read after its last ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) < 2:
            continue
        table[int(entry)] = (int(fields[1]), fields[0] in (b"Z", b"X"))
    return table


def live_descendants(root, table=None):
    """Processes below `root` that have not exited, nearest first."""
    table = process_table() if table is None else table
    children = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, frontier, seen = [], [root], {root}
    while frontier:
        following = []
        for parent in frontier:
            for child in children.get(parent, ()):
                if child not in seen:
                    seen.add(child)
                    following.append(child)
                    if not table[child][1]:
                        found.append(child)
        frontier = following
    return found


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def kill_tree(root, and_root=True):
    """SIGKILLs everything below `root`, round after round until nothing below it is alive, then
    `root` (and its process group) when `and_root`. `root` is stopped first: it forks nothing more
    and, as a subreaper, keeps holding what its dying descendants orphan."""
    if and_root:
        _signal(root, signal.SIGSTOP)
    for _ in range(400):  # about 2 s at most
        pids = live_descendants(root)
        if not pids:
            break
        for pid in pids:
            _signal(pid, signal.SIGKILL)
        time.sleep(0.005)  # SIGKILL takes effect asynchronously
    if and_root:
        try:
            os.killpg(root, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        _signal(root, signal.SIGKILL)


def own(pid):
    """Marks `pid` as a child this process waits for itself (sweep_orphans leaves it alone)."""
    with _owned_lock:
        _owned.add(pid)


def disown(pid):
    with _owned_lock:
        _owned.discard(pid)


def sweep_orphans():
    """Kills the tree of each child of this process that nobody waits for (orphans re-parented to
    this subreaper) and reaps it."""
    me = os.getpid()
    stuck = set()  # not reaped in time (uninterruptible sleep): not waited for again here
    for _ in range(50):  # killing one tree may orphan more to us
        with _owned_lock:
            owned = set(_owned)
        orphans = [(pid, exited) for pid, (parent, exited) in process_table().items()
                   if parent == me and pid not in owned and pid not in stuck]
        if not orphans:
            return
        for pid, exited in orphans:
            if not exited:
                kill_tree(pid)
            deadline = time.monotonic() + 2
            while True:
                try:
                    if os.waitpid(pid, os.WNOHANG)[0] == pid:
                        break
                except ChildProcessError:
                    break
                if time.monotonic() > deadline:
                    stuck.add(pid)
                    break
                time.sleep(0.005)


def kill_descendants():
    """For a process about to exit: kills everything below it, then reaps its children."""
    kill_tree(os.getpid(), and_root=False)
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def run_owned(args, timeout, **kwargs):
    """subprocess.run(args, capture_output=True, timeout=timeout, start_new_session=True) with the
    child owned while it runs (a sweep in another thread leaves it alone) and its tree killed on a
    time-out (subprocess.TimeoutExpired is raised then, as subprocess.run does)."""
    import subprocess

    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **kwargs)
    own(proc.pid)
    try:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(proc.pid)
            proc.communicate()
            raise
        return subprocess.CompletedProcess(args, proc.returncode, stdout, stderr)
    finally:
        if proc.poll() is None:
            kill_tree(proc.pid)
            proc.wait()
        disown(proc.pid)
