"""Nothing user code starts outlives a `graphmend validate` run: not a `setsid sleep 300` (a session
of its own, outside the arm's process group), not a daemon made by a double fork (re-parented when
its parent exits). targets/escaping.py records every such pid; each must be gone once the command
returns, whether the arm hung past --timeout, returned, crashed, or the run was interrupted.
"""
import json
import os
import signal
import subprocess
import time

from validator_support import BIN, PY, TARGETS, base_env, pid_alive, run_json

ESCAPING = TARGETS / "escaping.py"


def recorded(pidfile):
    """{role: [pid, ...]} from the target's pid file."""
    roles = {}
    for line in pidfile.read_text().splitlines():
        if line.strip():
            role, pid = line.split()
            roles.setdefault(role, []).append(int(pid))
    return roles


def assert_all_gone(pidfile):
    roles = recorded(pidfile)
    assert roles.get("setsid") and roles.get("daemon"), roles  # the target did detach its processes
    alive = {role: [pid for pid in pids if pid_alive(pid)] for role, pids in roles.items()}
    for pid in sum(alive.values(), []):  # a failing test leaves nothing behind either
        os.kill(pid, signal.SIGKILL)
    assert all(not pids for pids in alive.values()), f"still running after the run: {alive}"


def test_timeout_kills_what_user_code_detached(tmp_path):
    pidfile = tmp_path / "pids"
    rc, out, done = run_json(f"{ESCAPING}::hangs", "--fixed", "none", "--backend", "eager", "--timeout", "15",
                             env=base_env(GRAPHMEND_TEST_PIDFILE=pidfile))
    assert rc == 2, done.stderr
    assert out["error"]["kind"] == "timeout"
    assert_all_gone(pidfile)


def test_arms_that_return_leave_nothing_running(tmp_path):
    pidfile = tmp_path / "pids"
    rc, out, done = run_json(f"{ESCAPING}::returns", "--fixed", "none", "--backend", "eager", "--repeats", "1",
                             env=base_env(GRAPHMEND_TEST_PIDFILE=pidfile))
    assert rc == 0, done.stderr
    assert len(recorded(pidfile)["arm"]) == 2  # prepare and the measured arm
    assert_all_gone(pidfile)


def test_a_crashed_arm_leaves_nothing_running(tmp_path):
    pidfile = tmp_path / "pids"
    rc, out, done = run_json(f"{ESCAPING}::crashes", "--fixed", "none", "--backend", "eager",
                             env=base_env(GRAPHMEND_TEST_PIDFILE=pidfile))
    assert rc == 2, done.stderr
    assert out["error"]["kind"] == "crashed"
    assert_all_gone(pidfile)


def test_interrupt_kills_what_user_code_detached(tmp_path):
    pidfile = tmp_path / "pids"
    proc = subprocess.Popen([BIN, "validate", f"{ESCAPING}::hangs", "--fixed", "none", "--backend", "eager",
                             "--timeout", "300", "--python", PY, "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=base_env(GRAPHMEND_TEST_PIDFILE=pidfile))
    try:
        deadline = time.monotonic() + 120
        while not (pidfile.exists() and {"setsid", "daemon"} <= set(recorded(pidfile))):
            assert time.monotonic() < deadline and proc.poll() is None, "the target never detached its processes"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert json.loads(stdout)["error"]["kind"] == "cancelled"
    assert_all_gone(pidfile)


def test_the_validators_own_cli_kills_what_user_code_detached(tmp_path):
    # `python -m graphmend_validator validate`, without the graphmend binary around it.
    pidfile = tmp_path / "pids"
    env = base_env(GRAPHMEND_TEST_PIDFILE=pidfile, PYTHONPATH=TARGETS.parents[2] / "gpu-validator")
    done = subprocess.run([PY, "-m", "graphmend_validator", "validate", f"{ESCAPING}::hangs", "--backend", "eager",
                           "--timeout", "15"], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout)["error"]["kind"] == "timeout"
    assert_all_gone(pidfile)
