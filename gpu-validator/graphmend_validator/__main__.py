"""`python -m graphmend_validator`: the JSON-RPC server on stdio (LSP framing)."""

import sys

from graphmend_validator.server import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
