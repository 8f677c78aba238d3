"""graphmend's validator: runs the original and the fixed model under torch.compile and measures them.

Runs inside the user's own Python environment. Importing this package must not import torch: the
server answers `initialize` with a clear error when torch is missing or too old.
"""

__version__ = "0.1.0"
PROTOCOL_VERSION = 1
MIN_TORCH = (2, 2)
