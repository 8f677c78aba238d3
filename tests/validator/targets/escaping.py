"""Targets whose user code starts processes that leave the arm's process group: `setsid sleep 300`
(a session of its own) and a daemon made by a double fork (its parent gone, so re-parented). Every
pid goes to GRAPHMEND_TEST_PIDFILE, one a line ("role pid"), once per process running forward();
then forward() hangs, returns, or crashes.
"""
import os
import signal
import subprocess
import sys
import time

import torch
from torch import nn

_DAEMON = """
import os, sys, time
if os.fork():
    os._exit(0)  # the middle process goes: the daemon is an orphan
os.setsid()
with open(sys.argv[1], "a") as handle:
    handle.write(f"daemon {os.getpid()}\\n")
time.sleep(300)
"""

_started = False


def _escape():
    global _started
    if _started:
        return
    _started = True
    pidfile = os.environ["GRAPHMEND_TEST_PIDFILE"]
    with open(pidfile, "a") as handle:
        handle.write(f"arm {os.getpid()}\n")
    # The shell writes its own pid, then becomes sleep: the pid is the sleeping process's.
    subprocess.Popen(["setsid", "sh", "-c", f"echo setsid $$ >> '{pidfile}'; exec sleep 300"])
    subprocess.Popen([sys.executable, "-c", _DAEMON, pidfile], start_new_session=True).wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # both are running before forward() goes on
        with open(pidfile) as handle:
            roles = [line.split()[0] for line in handle if line.strip()]
        if roles.count("arm") <= roles.count("setsid") and roles.count("arm") <= roles.count("daemon"):
            return
        time.sleep(0.05)


class Hangs(nn.Module):
    def forward(self, x):
        _escape()
        while True:
            time.sleep(0.1)


class Returns(nn.Module):
    def forward(self, x):
        _escape()
        return x * 2


class Crashes(nn.Module):
    def forward(self, x):
        _escape()
        os.kill(os.getpid(), signal.SIGSEGV)
        return x


def hangs():
    return Hangs(), (torch.ones(2, 3),)


def returns():
    return Returns(), (torch.ones(2, 3),)


def crashes():
    return Crashes(), (torch.ones(2, 3),)
