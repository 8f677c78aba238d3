"""`graphmend check --fix` never loses a file: permissions, links, signals, stdin, special files, exit codes.

Permission cases need a user the kernel holds to permissions: as root they run the binary as `nobody`
(setuid in the child), as any other user they run it as that user.
"""
import os
import pathlib
import shutil
import signal
import stat
import subprocess
import tempfile
import time

import pytest

from cli_support import BIN, BREAKING
NOBODY = 65534

FIXED_MARK = b"torch.where(y.sum() > 0, y + 1, y)"


def run(*args, stdin=None, cwd=None, timeout=120, preexec_fn=None):
    return subprocess.run([BIN, *map(str, args)], input=stdin, capture_output=True, cwd=cwd, timeout=timeout,
                          preexec_fn=preexec_fn)


def write(path, text):
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def leftovers(*dirs):
    return [p for d in dirs for p in pathlib.Path(d).iterdir() if ".graphmend-" in p.name]


def _drop_to_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


@pytest.fixture
def shared_tmp():
    """A folder other users may enter (pytest's own is private to its user)."""
    path = pathlib.Path(tempfile.mkdtemp(prefix="graphmend-safety-"))
    path.chmod(0o755)
    yield path
    for p in [path, *path.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)
    shutil.rmtree(path)


def unprivileged(tmp_path):
    """preexec_fn that runs the binary as a user without root's rights; files under tmp_path become its own."""
    if os.geteuid() != 0:
        return None
    for parent in tmp_path.parents:
        if parent != pathlib.Path("/") and not parent.stat().st_mode & stat.S_IXOTH:
            pytest.skip(f"{parent} does not let other users in: cannot run as nobody")
    for p in [tmp_path, *tmp_path.rglob("*")]:
        os.lchown(p, NOBODY, NOBODY)
    return _drop_to_nobody


def test_read_only_file_is_refused_and_untouched(tmp_path):
    path = write(tmp_path / "ro.py", BREAKING)
    path.chmod(0o444)
    # No write bit at all: refused for everyone, root included.
    proc = run("check", "--fix", path)
    assert proc.returncode == 2, proc.stderr
    assert f"{path}: file is read-only (mode 0444); not written" in proc.stderr.decode()
    assert path.read_text() == BREAKING and stat.S_IMODE(path.stat().st_mode) == 0o444
    assert b"All checks passed!" not in proc.stdout
    assert leftovers(tmp_path) == []


def test_file_without_write_permission_for_the_user_is_refused(shared_tmp):
    tmp_path = shared_tmp
    sub = tmp_path / "w"
    sub.mkdir()
    path = write(sub / "theirs.py", BREAKING)
    as_user = unprivileged(tmp_path)
    if as_user is None:
        pytest.skip("needs root to give the file another owner")
    os.chown(path, 0, 0)  # root's file, 0644, in a folder nobody may write: rename would replace it
    path.chmod(0o644)
    proc = run("check", "--fix", path, preexec_fn=as_user)
    assert proc.returncode == 2, proc.stderr
    assert f"{path}: file is not writable (Permission denied); not written" in proc.stderr.decode()
    assert path.read_text() == BREAKING and path.stat().st_uid == 0
    assert leftovers(sub) == []


def test_other_owners_writable_file_keeps_its_owner(shared_tmp):
    tmp_path = shared_tmp
    sub = tmp_path / "shared"
    sub.mkdir()
    path = write(sub / "m.py", BREAKING)
    as_user = unprivileged(tmp_path)
    if as_user is None:
        pytest.skip("needs root to give the file another owner")
    os.chown(path, 0, 0)
    path.chmod(0o666)
    inode = path.stat().st_ino
    proc = run("check", "--fix", "--unsafe-fixes", path, preexec_fn=as_user)
    assert proc.returncode == 0, proc.stderr
    st = path.stat()
    assert FIXED_MARK in path.read_bytes()
    assert (st.st_uid, st.st_ino, stat.S_IMODE(st.st_mode)) == (0, inode, 0o666)  # rewritten in place
    assert leftovers(sub) == []


def test_unreadable_and_read_only_directories_exit_2(shared_tmp):
    tmp_path = shared_tmp
    locked = tmp_path / "locked"
    ro = tmp_path / "ro"
    locked.mkdir()
    ro.mkdir()
    write(locked / "m.py", BREAKING)
    path = write(ro / "m.py", BREAKING)
    as_user = unprivileged(tmp_path)
    locked.chmod(0)
    ro.chmod(0o555)
    try:
        proc = run("check", locked, preexec_fn=as_user)
        assert proc.returncode == 2
        assert f"{locked}: cannot read directory (Permission denied)" in proc.stderr.decode()
        assert b"All checks passed!" not in proc.stdout
        proc = run("check", "--exit-zero", tmp_path, preexec_fn=as_user)
        assert proc.returncode == 2 and b"cannot read directory" in proc.stderr  # --exit-zero hides findings only
        proc = run("check", "--fix", ro, preexec_fn=as_user)
        assert proc.returncode == 2
        message = f"{path}: cannot create a temporary file next to it (Permission denied); not written"
        assert message in proc.stderr.decode()
        assert b"All checks passed!" not in proc.stdout and b"1 error" in proc.stdout
        assert path.read_text() == BREAKING
    finally:
        locked.chmod(0o755)
        ro.chmod(0o755)


def test_unreadable_file_exits_2(shared_tmp):
    path = write(shared_tmp / "m.py", BREAKING)
    as_user = unprivileged(shared_tmp)
    path.chmod(0)
    proc = run("check", path, preexec_fn=as_user)
    assert proc.returncode == 2
    assert f"{path}: cannot read file (Permission denied)" in proc.stderr.decode()
    assert b"All checks passed!" not in proc.stdout


def test_missing_path_exits_2_without_claiming_success(tmp_path):
    proc = run("check", tmp_path / "nope.py")
    assert proc.returncode == 2
    assert b"nope.py: no such file or directory" in proc.stderr
    assert b"All checks passed!" not in proc.stdout and b"1 error" in proc.stdout
    good = write(tmp_path / "good.py", "x = 1\n")
    proc = run("check", "--exit-zero", good, tmp_path / "nope.py")
    assert proc.returncode == 2 and b"All checks passed!" not in proc.stdout


def test_syntax_error_is_not_counted_as_a_graph_break(tmp_path):
    path = write(tmp_path / "se.py", "def f(:\n    pass\n")
    proc = run("check", path)
    assert proc.returncode == 1
    out = proc.stdout.decode()
    assert "Found 1 syntax error." in out and "graph break" not in out
    both = write(tmp_path / "both.py", BREAKING + "\n\ndef broken(:\n    pass\n")
    assert "Found 2 graph breaks, 1 syntax error." in run("check", both).stdout.decode()


def test_hard_link_keeps_its_link_crlf_bom_and_mode(tmp_path):
    src = "\ufeff" + BREAKING.replace("\n", "\r\n")
    a = write(tmp_path / "a.py", src)
    a.chmod(0o751)
    other = tmp_path / "elsewhere"
    other.mkdir()
    b = other / "b.py"
    os.link(a, b)
    proc = run("check", "--fix", "--unsafe-fixes", a)
    assert proc.returncode == 0, proc.stdout
    assert os.path.samefile(a, b) and a.stat().st_nlink == 2
    data = b.read_bytes()
    assert data == a.read_bytes() and FIXED_MARK in data
    assert data.startswith(b"\xef\xbb\xbf") and b"\n" not in data.replace(b"\r\n", b"")
    assert stat.S_IMODE(a.stat().st_mode) == 0o751
    assert leftovers(tmp_path, other) == []
    run("check", "--fix", a)
    assert b.read_bytes() == data  # idempotent


def test_symlink_stays_a_link_and_its_target_is_fixed_in_place(tmp_path):
    target_dir = tmp_path / "real"
    target_dir.mkdir()
    target = write(target_dir / "model.py", BREAKING)
    target.chmod(0o640)
    inode = target.stat().st_ino
    link = tmp_path / "link.py"
    link.symlink_to(os.path.relpath(target, tmp_path))
    proc = run("check", "--fix", "--unsafe-fixes", link)
    assert proc.returncode == 0, proc.stdout
    assert link.is_symlink() and os.readlink(link) == os.path.relpath(target, tmp_path)
    assert FIXED_MARK in target.read_bytes()
    assert target.stat().st_ino == inode and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert leftovers(tmp_path, target_dir) == []


def test_a_file_with_two_names_in_the_tree_is_fixed_once(tmp_path):
    (tmp_path / "shared").mkdir()
    target = write(tmp_path / "shared" / "model.py", BREAKING)
    (tmp_path / "alias.py").symlink_to("shared/model.py")
    os.link(target, tmp_path / "hard.py")
    proc = run("check", "--fix", "--unsafe-fixes", "-j3", tmp_path)
    assert proc.returncode == 0, proc.stderr  # not "changed on disk" for the second name
    assert proc.stdout.decode().count("Fixed 2 graph breaks.") == 1
    assert FIXED_MARK in target.read_bytes() and (tmp_path / "alias.py").is_symlink()
    assert os.path.samefile(target, tmp_path / "hard.py")


def test_explicit_fifo_is_refused_without_opening_it(tmp_path):
    fifo = tmp_path / "p.py"
    os.mkfifo(fifo)
    proc = run("check", fifo, timeout=20)  # opening it would block until a writer came
    assert proc.returncode == 2
    assert f"{fifo}: is a FIFO, not a regular file; not read" in proc.stderr.decode()
    assert b"All checks passed!" not in proc.stdout
    # In a folder it is skipped, like ruff skips what is not a file.
    write(tmp_path / "m.py", BREAKING)
    proc = run("check", "--output-format", "concise", tmp_path, timeout=20)
    assert proc.returncode == 1 and proc.stderr == b""
    assert proc.stdout.decode().count("GM101") == 1


def test_too_large_file_is_refused_by_name(tmp_path):
    path = tmp_path / "huge.py"
    with open(path, "wb") as f:
        f.truncate(2**32)  # sparse: offsets are 32-bit, so this cannot be analysed
    proc = run("check", path)
    assert proc.returncode == 2
    assert f"{path}: too large to analyse (4294967296 bytes" in proc.stderr.decode()


@pytest.mark.parametrize("data", [b"x = 1\ns = '\xe9'\n", b"x = 1\x00\n", b"\xef\xbb\xbfs = '\xff'\r\n"])
def test_stdin_fix_gives_back_the_input_on_error(data):
    proc = run("check", "--fix", "-", "--stdin-filename", "model.py", stdin=data)
    assert proc.returncode == 2
    assert proc.stdout == data
    assert b"error: model.py:" in proc.stderr and b"All checks passed!" not in proc.stderr


def test_stdin_fix_gives_back_the_input_on_usage_and_config_errors(tmp_path):
    data = BREAKING.encode()
    proc = run("check", "--fix", "--no-such-option", "-", stdin=data)
    assert proc.returncode == 2 and proc.stdout == data
    bad = write(tmp_path / "pyproject.toml", "[tool.graphmend\n")
    proc = run("check", "--fix", "--config", bad, "-", stdin=data)
    assert proc.returncode == 2 and proc.stdout == data and b"pyproject.toml:1:" in proc.stderr


def test_stdin_fix_keeps_bom_and_crlf():
    data = ("\ufeff" + BREAKING.replace("\n", "\r\n")).encode()
    proc = run("check", "--fix", "--unsafe-fixes", "-", stdin=data)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(b"\xef\xbb\xbf") and FIXED_MARK in proc.stdout
    assert b"\n" not in proc.stdout.replace(b"\r\n", b"")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_during_fix_leaves_no_temporary_file(tmp_path, sig):
    count = 1500
    expected = None
    for attempt, delay in enumerate([0.15, 0.25, 0.35, 0.45, 0.55, 0.2, 0.3, 0.4]):
        tree = tmp_path / f"run{attempt}"
        tree.mkdir()
        for i in range(count):
            write(tree / f"m{i:04}.py", BREAKING)
        # A job started in the background by a shell (`cmd &`, nohup) inherits SIGINT ignored, and graphmend
        # rightly leaves an ignored signal alone: give the child the default action, as a terminal would.
        proc = subprocess.Popen(["env", f"--default-signal={sig.name}", BIN, "check", "--fix", "-j4", tree],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(sig)
        rc = proc.wait(timeout=120)
        assert leftovers(tree) == [], f"after {sig.name} at {delay}s"
        if rc == 0:
            continue  # finished before the signal came
        assert rc == -sig, rc  # the signal still ends the run, as the default action would
        if expected is None:
            one = write(tmp_path / "one.py", BREAKING)
            run("check", "--fix", one)
            expected = one.read_text()
        # Each file is whole: the original or the fixed text.
        texts = {p.read_text() for p in tree.iterdir()}
        assert texts <= {BREAKING, expected}
