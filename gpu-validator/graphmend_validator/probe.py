"""`python -m graphmend_validator.probe`: one JSON line describing the interpreter and its torch.

Run in a subprocess by the server, so a broken torch install cannot take the server down.
"""

import json
import platform
import sys

from graphmend_validator import MIN_TORCH


def _version_tuple(text):
    parts = []
    for piece in text.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def probe():
    info = {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "torch_version": None,
        "cuda_available": False,
        "device_name": None,
        "cpu_model": _cpu_model_name() or platform.processor() or platform.machine(),
        "error": None,
    }
    try:
        import torch
    except Exception as exc:  # ImportError, or a broken install raising anything else
        info["error"] = {
            "kind": "torch_missing",
            "message": f"torch cannot be imported by {sys.executable}: {type(exc).__name__}: {exc}",
        }
        return info
    info["torch_version"] = torch.__version__
    if _version_tuple(torch.__version__) < MIN_TORCH:
        info["error"] = {
            "kind": "torch_too_old",
            "message": f"torch {torch.__version__} in {sys.executable} is older than the required "
            f"{'.'.join(map(str, MIN_TORCH))}",
        }
        return info
    try:
        info["cuda_available"] = bool(torch.cuda.is_available())
        if info["cuda_available"]:
            info["device_name"] = torch.cuda.get_device_name(0)
            info["cuda_version"] = torch.version.cuda
    except Exception as exc:
        info["cuda_available"] = False
        info["cuda_error"] = f"{type(exc).__name__}: {exc}"
    if not info["device_name"]:
        info["device_name"] = info["cpu_model"] or "cpu"
    return info


def _cpu_model_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


if __name__ == "__main__":
    sys.stdout.write(json.dumps(probe()) + "\n")
