"""PEP 263 coding declarations: graphmend reads (and refuses) a file as CPython does, and `--fix` writes
it back in its declared encoding, byte for byte outside the fixes.

The reference is CPython itself: `compile(data, "f.py", "exec")` accepts or refuses each case, and
graphmend must accept (exit 0 or 1) or refuse (exit 2, "f.py:line:col: ...") the same bytes. Run as a
script to print the comparison table: `python tests/cli/test_source_encodings.py`.
"""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("GRAPHMEND_BIN", str(ROOT / "build" / "graphmend"))

BREAKING = """import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        y = x * 2  # {comment}
        if y.sum() > 0:
            y = y + 1
        y = y - 1
        return y
"""

BOM = b"\xef\xbb\xbf"
E_ACUTE = "# caf\u00e9\ns = 'caf\u00e9'\n"  # a comment and a string with a non-ASCII character


def body(text, encoding):
    return text.encode(encoding)


# (case, bytes). Every case is valid Python once decoded: CPython refuses one only for its encoding.
CASES = [
    ("latin-1", b"# -*- coding: latin-1 -*-\n" + body(E_ACUTE, "latin-1")),
    ("iso-8859-1 (vim modeline)", b"# vim: set fileencoding=iso-8859-1 :\n" + body(E_ACUTE, "latin-1")),
    ("latin1 (l1 on line 2)", b"# coding=latin1\n# coding: l1\n" + body(E_ACUTE, "latin-1")),
    ("Latin-1 after long name", b"# coding: latin-1-unix\n" + body(E_ACUTE, "latin-1")),
    ("cp1252 (euro, quotes)", b"# coding: cp1252\n" + body("s = '\u20ac \u201cq\u201d'\n", "cp1252")),
    ("windows-1252", b"# coding: windows-1252\n" + body("s = '\u20ac'\n", "cp1252")),
    ("iso-8859-15 (euro)", b"# coding: iso-8859-15\n" + body("s = '\u20ac \u0153'\n", "iso8859_15")),
    ("koi8-r", b"# -*- coding: koi8-r -*-\n" + body("s = '\u043f\u0440\u0438\u0432\u0435\u0442'\n", "koi8_r")),
    ("cp949 (Korean)", b"# coding: cp949\n" + body("s = '\ud55c\uad6d\uc5b4'\n", "cp949")),
    ("gb2312 (Chinese)", b"# coding: gb2312\n" + body("s = '\u4e2d\u6587'\n", "gb2312")),
    ("ascii", b"# coding: ascii\nx = 1\n"),
    ("iso_8859_1", b"# coding: iso_8859_1\n" + body(E_ACUTE, "latin-1")),
    ("utf-8", b"# coding: utf-8\n" + body(E_ACUTE, "utf-8")),
    ("UTF-8", b"# -*- coding: UTF-8 -*-\n" + body(E_ACUTE, "utf-8")),
    ("utf_8", b"# coding: utf_8\n" + body(E_ACUTE, "utf-8")),
    ("utf8", b"# coding: utf8\n" + body(E_ACUTE, "utf-8")),
    ("UTF8", b"# coding: UTF8\n" + body(E_ACUTE, "utf-8")),
    ("u8", b"# coding: u8\n" + body(E_ACUTE, "utf-8")),
    ("utf-8-unix", b"# coding: utf-8-unix\n" + body(E_ACUTE, "utf-8")),
    ("utf-8-sig", b"# coding: utf-8-sig\n" + body(E_ACUTE, "utf-8")),
    ("cp65001", b"# coding: cp65001\n" + body(E_ACUTE, "utf-8")),
    ("no declaration, UTF-8", body(E_ACUTE, "utf-8")),
    ("no declaration, latin-1 bytes", body(E_ACUTE, "latin-1")),
    ("utf-8 declared, latin-1 bytes", b"# coding: utf-8\n" + body(E_ACUTE, "latin-1")),
    ("line 2 after a shebang", b"#!/usr/bin/env python\n# -*- coding: latin-1 -*-\n" + body(E_ACUTE, "latin-1")),
    ("line 2 after a blank line", b"  \n# coding: latin-1\n" + body(E_ACUTE, "latin-1")),
    ("line 2 after code", b"x = 1\n# coding: latin-1\n" + body(E_ACUTE, "latin-1")),
    ("line 3", b"#!/usr/bin/env python\n#\n# coding: latin-1\n" + body(E_ACUTE, "latin-1")),
    ("line 2 after a utf-8 line 1", b"# coding: utf-8\n# coding: latin-1\n" + body(E_ACUTE, "latin-1")),
    ("line 2 after a latin-1 line 1", b"# coding: latin-1\n# coding: koi8-r\n" + body(E_ACUTE, "latin-1")),
    ("after code on the line", b"x = 1  # coding: latin-1\n" + body(E_ACUTE, "latin-1")),
    ("CR line endings, line 2", b"#!/usr/bin/env python\r# coding: latin-1\rs = '\xe9'\r"),
    ("CRLF line endings, line 2", b"#!/usr/bin/env python\r\n# coding: latin-1\r\ns = '\xe9'\r\n"),
    ("BOM", BOM + body(E_ACUTE, "utf-8")),
    ("BOM + utf-8", BOM + b"# coding: utf-8\n" + body(E_ACUTE, "utf-8")),
    ("BOM + UTF_8", BOM + b"# coding: UTF_8\n" + body(E_ACUTE, "utf-8")),
    ("BOM + utf8", BOM + b"# coding: utf8\n" + body(E_ACUTE, "utf-8")),
    ("BOM + latin-1", BOM + b"# coding: latin-1\nx = 1\n"),
    ("BOM + latin-1 on line 2", BOM + b"#!/usr/bin/env python\n# coding: latin-1\nx = 1\n"),
    ("unknown encoding", b"# coding: klingon\nx = 1\n"),
    ("unknown on line 2", b"#!/usr/bin/env python\n# coding: klingon\nx = 1\n"),
    ("unknown, no newline", b"# coding: klingon"),
    ("dotted name (latin.1)", b"# coding: latin.1\nx = 1\n"),
    ("not a text encoding (hex)", b"# coding: hex\nx = 1\n"),
    ("not a text encoding (rot13)", b"# coding: rot13\nx = 1\n"),
    ("invalid cp1252 byte 0x81", b"# coding: cp1252\ns = '\x81'\n"),
    ("invalid ascii byte", b"# coding: ascii\ns = '\xe9'\n"),
    ("invalid iso-8859-6 byte 0xA1", b"# coding: iso-8859-6\ns = '\xa1'\n"),
    ("invalid cp949 pair", b"# coding: cp949\ns = '\xc7\x22'\n"),
    ("cp949 cut at the end", b"# coding: cp949\ns = 1 #\xc7"),
    ("NUL byte", b"# coding: latin-1\nx = 1\x00\n"),
]

# Encodings CPython reads that graphmend refuses on purpose: glibc's table differs from CPython's on some
# bytes (or the encoding is not ASCII-compatible), so graphmend could not read them exactly as CPython.
UNSUPPORTED = [
    ("gbk", b"# coding: gbk\n" + body("s = '\u4e2d\u6587'\n", "gbk")),
    ("shift_jis", b"# coding: shift_jis\n" + body("s = '\u65e5\u672c'\n", "shift_jis")),
    ("cp1258", b"# coding: cp1258\nx = 1\n"),
    ("utf-16", b"# coding: utf-16\n"),
]

# Single-byte codecs graphmend reads with iconv: their tables must be CPython's, byte for byte.
SINGLE_BYTE = (["ascii", "latin_1", "charmap", "cp437", "cp737", "cp775", "cp850", "cp852", "cp855", "cp857",
                "cp858", "cp860", "cp861", "cp862", "cp863", "cp865", "cp866", "cp869", "cp874", "cp1125",
                "cp1250", "cp1251", "cp1252", "cp1253", "cp1254", "cp1256", "cp1257", "hp_roman8", "koi8_r",
                "koi8_t", "koi8_u", "kz1048", "mac_latin2", "ptcp154"]
               + [f"iso8859_{n}" for n in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16]])


def run(*args, stdin=None, cwd=None):
    return subprocess.run([BIN, *map(str, args)], input=stdin, capture_output=True, cwd=cwd, timeout=120)


def cpython_accepts(data):
    try:
        compile(data, "f.py", "exec")
        return True
    except (SyntaxError, ValueError):
        return False


def graphmend_reads(tmp, data):
    """(accepted, stderr) of `graphmend check` on `data` as f.py."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "f.py").write_bytes(data)
    proc = run("check", "--no-config", "--exit-zero", "--output-format", "concise", "f.py", cwd=tmp)
    assert proc.returncode in (0, 2), proc.stderr
    return proc.returncode == 0, proc.stderr.decode()


@pytest.mark.parametrize("case,data", CASES, ids=[c for c, _ in CASES])
def test_accepts_and_refuses_as_cpython_does(tmp_path, case, data):
    accepted, err = graphmend_reads(tmp_path, data)
    assert accepted == cpython_accepts(data), err
    if not accepted:
        # An error naming the file, line and column; the file is left alone.
        assert err.startswith("error: f.py:") and err.split(":")[2].isdigit() and err.split(":")[3].isdigit(), err
        assert (tmp_path / "f.py").read_bytes() == data


def test_error_positions(tmp_path):
    cases = {
        b"# coding: klingon\nx = 1\n": "f.py:1:11: unknown encoding: klingon",
        b"#!/usr/bin/env python\n# coding: klingon\n": "f.py:2:11: unknown encoding: klingon",
        BOM + b"# coding: latin-1\nx = 1\n": "f.py:1:11: the file starts with a UTF-8 BOM but declares the encoding latin-1",
        b"# coding: cp1252\ns = '\x81'\n": "f.py:2:6: invalid cp1252 byte 0x81",
        b"# coding: cp949\ns = 1 #\xc7": "f.py:2:8: incomplete cp949 sequence at the end of the file",
        b"# coding: hex\n": "f.py:1:11: encoding hex is not a text encoding",
        b"# coding: gbk\n": "f.py:1:11: encoding gbk is not supported by graphmend",
        b"x = 1\n# coding: latin-1\ns = '\xe9'\n": "f.py:3:6: invalid UTF-8 byte 0xE9",
    }
    for data, message in cases.items():
        accepted, err = graphmend_reads(tmp_path, data)
        assert not accepted and f"error: {message}" in err, (data, err)


@pytest.mark.parametrize("case,data", UNSUPPORTED, ids=[c for c, _ in UNSUPPORTED])
def test_unsupported_encodings_are_refused_clearly(tmp_path, case, data):
    accepted, err = graphmend_reads(tmp_path, data)
    assert not accepted and "is not supported by graphmend" in err, err


@pytest.mark.parametrize("codec", SINGLE_BYTE)
def test_single_byte_tables_are_cpythons(tmp_path, codec):
    """Every byte CPython decodes in `codec` is read as CPython reads it, every other one refused."""
    defined, undefined = [], []
    for b in range(0x80, 0x100):
        try:
            bytes([b]).decode(codec)
            defined.append(b)
        except UnicodeDecodeError:
            undefined.append(b)
    # One file with every defined byte, in a comment and in a string; one file per undefined byte.
    high = bytes(defined)
    files = {"all.py": b"# coding: " + codec.encode() + b"\n# " + high + b"\ns = '" + high + b"'\n"}
    for b in undefined:
        files[f"u{b:02x}.py"] = b"# coding: " + codec.encode() + b"\ns = '" + bytes([b]) + b"'\n"
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        assert cpython_accepts(data) == (name == "all.py")
    proc = run("check", "--no-config", "--exit-zero", "--output-format", "json", *files, cwd=tmp_path)
    err = proc.stderr.decode()
    for b in undefined:
        assert f"error: u{b:02x}.py:2:6: invalid {codec} byte 0x{b:02X}" in err
    assert "all.py" not in err
    # What graphmend read is CPython's text: --diff is empty, --fix - gives the bytes back.
    proc = run("check", "--no-config", "--fix", "-", "--stdin-filename", "all.py", stdin=files["all.py"],
               cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == files["all.py"], proc.stderr
    text = files["all.py"].decode(codec)
    fixable = text + BREAKING.format(comment=high.decode(codec))
    proc = run("check", "--no-config", "--diff", "-", stdin=fixable.encode(codec), cwd=tmp_path)
    assert proc.returncode == 1 and high.decode(codec).encode("utf-8") in proc.stdout, proc.stderr
    # Fixed, every byte outside the fix comes back as it was.
    proc = run("check", "--no-config", "--fix", "-", stdin=fixable.encode(codec), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    before, after = fixable.encode(codec).split(b"\n"), proc.stdout.split(b"\n")
    assert after[:10] == before[:10] and after[-2:] == before[-2:] and b"torch.where" in proc.stdout


def fixed_as_utf8(tmp_path, text):
    """What `check --fix` makes of `text` (str) in a UTF-8 file (the declaration line made utf-8)."""
    lines = text.split("\n")
    lines[0] = "# coding: utf-8"
    path = tmp_path / "utf8.py"
    path.write_bytes("\n".join(lines).encode("utf-8"))
    proc = run("check", "--no-config", "--fix", path)
    assert proc.returncode == 0, proc.stderr
    fixed = path.read_bytes().decode("utf-8").split("\n")
    fixed[0] = text.split("\n")[0]
    return "\n".join(fixed)


@pytest.mark.parametrize("encoding,comment", [
    ("latin-1", "caf\u00e9"),
    ("cp1252", "\u20ac \u201cquoted\u201d"),
    ("iso-8859-15", "\u20ac \u0153uvre"),
    ("koi8-r", "\u043f\u0440\u0438\u0432\u0435\u0442"),
    ("cp949", "\ud55c\uad6d\uc5b4"),
    ("gb2312", "\u4e2d\u6587"),
])
def test_fix_writes_the_declared_encoding_back(tmp_path, encoding, comment):
    text = f"# -*- coding: {encoding} -*-\n# {comment}\n" + BREAKING.format(comment=comment) + f"# {comment}\n"
    original = text.encode(encoding)
    expected = fixed_as_utf8(tmp_path, text).encode(encoding)
    assert expected != original
    path = tmp_path / "m.py"
    path.write_bytes(original)
    proc = run("check", "--no-config", "--fix", path)
    assert proc.returncode == 0, proc.stderr
    after = path.read_bytes()
    assert after == expected
    # The bytes outside the fix are the file's own: the lines before and after it are unchanged.
    before_lines, after_lines = original.split(b"\n"), after.split(b"\n")
    assert after_lines[:9] == before_lines[:9]  # declaration, comment, imports, the commented line
    assert after_lines[-3:] == before_lines[-3:]  # `return y`, the last comment
    # --fix - prints the same bytes; --diff shows the decoded (UTF-8) text.
    proc = run("check", "--no-config", "--fix", "-", stdin=original)
    assert proc.returncode == 0 and proc.stdout == expected, proc.stderr
    proc = run("check", "--no-config", "--diff", "-", stdin=original)
    assert proc.returncode == 1 and f"y = x * 2  # {comment}".encode("utf-8") in proc.stdout


def test_latin1_fix_round_trip_byte_for_byte(tmp_path):
    # The file: a latin-1 comment with é (the single byte 0xE9) near a fixable break.
    original = b"# -*- coding: latin-1 -*-\n" + BREAKING.format(comment="caf\u00e9").encode("latin-1")
    assert original.count(b"\xe9") == 1 and b"\xc3\xa9" not in original
    path = tmp_path / "m.py"
    path.write_bytes(original)
    proc = run("check", "--no-config", "--fix", path)
    assert proc.returncode == 0, proc.stderr
    after = path.read_bytes()
    assert after.count(b"\xe9") == 1 and b"\xc3" not in after
    assert after.startswith(b"# -*- coding: latin-1 -*-\n")
    # Byte-identical but for the fix: a common prefix through the é line, a common suffix after it.
    prefix = original[: original.index(b"\xe9\n") + 2]
    assert after.startswith(prefix)
    assert after.endswith(b"        return y\n")
    assert b"torch.where" in after
    assert run("check", "--no-config", path).returncode == 0  # and graphmend reads its own output


def test_line2_declaration_and_crlf_are_kept(tmp_path):
    text = "#!/usr/bin/env python\r\n# coding: cp1252\r\n" + BREAKING.format(comment="\u20ac").replace("\n", "\r\n")
    original = text.encode("cp1252")
    path = tmp_path / "m.py"
    path.write_bytes(original)
    proc = run("check", "--no-config", "--fix", path)
    assert proc.returncode == 0, proc.stderr
    after = path.read_bytes()
    assert after.startswith(original[: original.index(b"\x80") + 3]) and b"\n" not in after.replace(b"\r\n", b"")
    assert after.count(b"\x80") == 1


def test_stdin_refusals_give_the_input_back(tmp_path):
    for data in [b"# coding: klingon\nx = 1\n", b"# coding: cp1252\ns = '\x81'\n", BOM + b"# coding: latin-1\n"]:
        proc = run("check", "--no-config", "--fix", "-", "--stdin-filename", "m.py", stdin=data)
        assert proc.returncode == 2 and proc.stdout == data and b"error: m.py:" in proc.stderr


def table():
    import tempfile
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (case, data) in enumerate(CASES + UNSUPPORTED):
            accepted, err = graphmend_reads(pathlib.Path(tmp) / str(i), data)
            cp = "accepts" if cpython_accepts(data) else "refuses"
            gm = "accepts" if accepted else "refuses: " + err.strip().removeprefix("error: ").split("\n")[0]
            rows.append((case, cp, gm))
    width = max(len(r[0]) for r in rows)
    for case, cp, gm in rows:
        print(f"{case:{width}}  {cp:8} {gm}")


if __name__ == "__main__":
    sys.exit(table())
