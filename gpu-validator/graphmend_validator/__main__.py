"""`python -m graphmend_validator`: the JSON-RPC server on stdio (LSP framing).

`python -m graphmend_validator validate TARGET ...` runs one validation instead (see cli.py);
`python -m graphmend_validator zoo run|merge ...` a model zoo (zoo/cli.py).
"""

import sys

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "validate":
        from graphmend_validator.cli import main as cli_main

        sys.exit(cli_main(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] == "zoo":
        from graphmend_validator.zoo.cli import main as zoo_main

        sys.exit(zoo_main(sys.argv[2:]))
    from graphmend_validator.server import main

    sys.exit(main(sys.argv[1:]))
