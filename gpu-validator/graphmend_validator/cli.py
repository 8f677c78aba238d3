"""`python -m graphmend_validator validate TARGET [--fixed FILE] ...`: one validation, JSON on stdout.

For machines without the graphmend binary (the GPU check falls back to it). Same exit status as
`graphmend validate`: 0 validated (outputs equal), 1 outputs differ, 2 user code failed, 3 usage or
environment error, 4 (with --deploy) the fixed arm did not export, package, run in C++ or match.
`--fixed auto` needs graphmend's engine and is not available here.
"""

import argparse
import json
import sys

from graphmend_validator.server import _finite, probe_interpreter
from graphmend_validator.validate import Cancelled, ValidateError, Validation


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m graphmend_validator validate")
    parser.add_argument("target")
    parser.add_argument("--fixed", default=None, help="fixed source file (default: measure the original only)")
    parser.add_argument("--fixed-module", default=None, help="dotted module the fixed source stands in for")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--mode", default="eval", choices=["eval", "train"])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--deploy", action="store_true",
                        help="also torch.export, package with AOTInductor and run each arm in C++")
    args = parser.parse_args(argv)

    def fail(kind, message):
        print(json.dumps({"ok": False, "error": {"kind": kind, "message": message}, "exit_code": 3}, indent=2))
        print(f"graphmend_validator: {message}", file=sys.stderr)
        return 3

    if args.fixed == "auto":
        return fail("bad_params", "--fixed auto needs the graphmend binary; give a fixed file or none")
    probe = probe_interpreter(sys.executable)
    if probe.get("error"):
        return fail(probe["error"]["kind"], probe["error"]["message"])
    params = {"target": args.target, "fixed_source": None if args.fixed in (None, "none") else args.fixed,
              "fixed_module": args.fixed_module, "device": args.device, "backend": args.backend, "repeats": args.repeats,
              "timeout_s": args.timeout, "mode": args.mode, "threads": args.threads,
              "deploy": args.deploy}

    def progress(message, percentage):
        print(f"graphmend_validator: {message} ({percentage}%)", file=sys.stderr)

    try:
        result = Validation(params, probe, progress=progress).run()
    except ValidateError as exc:
        return fail(exc.kind, str(exc))
    except (Cancelled, KeyboardInterrupt):
        return 130
    if not result.get("ok"):
        kind = result["error"].get("kind")
        code = 3 if kind in ("bad_target", "bad_factory") else 2
    elif result.get("outputs_match") is False:
        code = 1
    else:
        code = 4 if result.get("deployable") is False else 0
    result["fixed_mode"] = "file" if params["fixed_source"] else "none"
    result["validator"] = probe
    result["exit_code"] = code
    print(json.dumps(_finite(result), indent=2, allow_nan=False, default=str))
    return code
