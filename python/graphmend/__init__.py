"""graphmend's wheel: the `graphmend` executable lives in the environment's scripts folder (bin/)."""

import os
import shutil
import sys
import sysconfig


def find_graphmend() -> str:
    """The installed `graphmend` executable: this environment's scripts folder, the user scheme's, then PATH."""
    schemes = [sysconfig.get_default_scheme(), f"{os.name}_user"] if hasattr(sysconfig, "get_default_scheme") else []
    candidates = [os.path.join(os.path.dirname(sys.executable), "graphmend")]
    for scheme in schemes:
        try:
            candidates.append(os.path.join(sysconfig.get_path("scripts", scheme), "graphmend"))
        except KeyError:
            pass
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which("graphmend")
    if found is None:
        raise FileNotFoundError("the graphmend executable is not installed in this environment")
    return found
