"""`python -m graphmend ARGS...` runs the installed `graphmend ARGS...`."""

import os
import sys

from graphmend import find_graphmend

if __name__ == "__main__":
    exe = find_graphmend()
    os.execv(exe, [exe, *sys.argv[1:]])
