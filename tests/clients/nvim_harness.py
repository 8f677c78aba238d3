"""Running headless Neovim with clients/nvim on 'runtimepath' (or, with plugin=None, a script that puts
it there itself, as a plugin manager would) and reading back what a Lua script found."""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from clients_env import NVIM_PLUGIN

# Prepended to every script: the plugin on 'runtimepath', filetype detection, a result table, and
# finish() that writes it as JSON and quits (also when the script fails).
PRELUDE = r"""
%(rtp)s
vim.opt.swapfile = false
vim.cmd('filetype on')
RESULT = { errors = {} }
OUT = %(out)s
function finish()
  vim.fn.writefile({ vim.fn.json_encode(RESULT) }, OUT)
  vim.cmd('qa!')
end
"""

RUNNER = r"""
local ok, err = xpcall(function() dofile(%(script)s) end, debug.traceback)
if not ok then table.insert(RESULT.errors, tostring(err)) end
finish()
"""


def lua_string(value: str | Path) -> str:
    return json.dumps(str(value))  # a JSON string literal is a valid Lua string literal here


def run_nvim(nvim: str, script: str, *, files: list[Path] = (), cwd: Path | None = None,
             env: dict[str, str] | None = None, timeout: float = 90,
             plugin: Path | None = NVIM_PLUGIN) -> dict:
    """Runs `script` (Lua) in `nvim --headless` after opening `files`; returns RESULT. `plugin` is
    prepended to 'runtimepath' first (None: left to the script)."""
    with tempfile.TemporaryDirectory(prefix="gm-nvim-") as tmp:
        tmpdir = Path(tmp)
        out = tmpdir / "result.json"
        init = tmpdir / "minimal_init.lua"
        body = tmpdir / "script.lua"
        rtp = f"vim.opt.runtimepath:prepend({lua_string(plugin)})" if plugin is not None else ""
        init.write_text(PRELUDE % {"rtp": rtp, "out": lua_string(out)})
        body.write_text(script)
        runner = tmpdir / "runner.lua"
        runner.write_text(RUNNER % {"script": lua_string(body)})
        full_env = dict(os.environ)
        # Keep the user's config, data and state out of the test.
        for var, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state"),
                         ("XDG_CACHE_HOME", "cache")):
            full_env[var] = str(tmpdir / sub)
        full_env.update(env or {})
        cmd = [nvim, "--headless", "-n", "-i", "NONE", "-u", str(init), *map(str, files),
               "-c", f"luafile {runner}"]
        proc = subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)
        if not out.exists():
            raise AssertionError(
                f"nvim wrote no result (exit {proc.returncode})\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        result = json.loads(out.read_text())
        result["_stderr"] = proc.stderr
        return result
