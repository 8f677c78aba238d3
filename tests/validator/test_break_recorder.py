"""graphmend_validator.break_recorder, the Dynamo break recorder shared by the oracle and the HF benchmark.

The validator's arms read Dynamo's `graph_breaks` log records instead (arm.BreakRecorder): the validator
supports torch >= 2.2, and the recorder's hook needs a torch that hands `log_graph_break` the exception.
On the torch under test both must see the same breaks.
"""
import json
import subprocess
import textwrap

from validator_support import PY, TARGETS, VALIDATOR_DIR, base_env


def test_importing_the_recorder_does_not_import_torch(torchless_python):
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import graphmend_validator.break_recorder as b; "
              "assert 'torch' not in sys.modules; print(b.LOOP_GB_TYPE)")
    done = subprocess.run([torchless_python, "-c", script, str(VALIDATOR_DIR)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "graph break in loop"


AGREEMENT = textwrap.dedent('''\
    import json, os, sys
    sys.path[:0] = [sys.argv[1], sys.argv[2]]
    import torch
    from graphmend_validator import arm
    from graphmend_validator.break_recorder import BreakRecorder

    torch_dir = os.path.dirname(torch.__file__) + os.sep
    out = {}
    for name in ("branchy", "libuse"):
        module = __import__(name)
        fn, args = module.make()
        torch._dynamo.reset()
        logs = arm.install_recorder(torch)
        with BreakRecorder() as rec:
            torch.compile(fn, backend="eager")(*args)
        logs.enabled = False
        shared = []
        for e in rec.events:
            user = [f for f in e.frames if not f.filename.startswith(torch_dir)]
            inner = user[-1] if user else e.innermost
            shared.append([inner.filename, inner.lineno, e.gb_type, e.gb_id or None])
        out[name] = {"logs": [[b["file"], b["line"], b["type"], b["registry_id"]] for b in logs.breaks],
                     "shared": shared}
    print(json.dumps(out))
    ''')


def test_arm_log_records_and_the_shared_recorder_see_the_same_breaks():
    done = subprocess.run([PY, "-c", AGREEMENT, str(VALIDATOR_DIR), str(TARGETS)], capture_output=True, text=True,
                          timeout=300, env=base_env())
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    branchy = out["branchy"]
    assert branchy["logs"] == branchy["shared"]
    assert {tuple(b[2:]) for b in branchy["shared"]} == {
        ("Data-dependent branching", "GB0170"), ("Failed to trace builtin operator", "GB0059"),
        ("Unsupported Tensor.item() call with capture_scalar_outputs=False", "GB0124")}
    libuse = out["libuse"]  # a break in another module: two events (the call site, then the helper's frame)
    assert libuse["logs"] == libuse["shared"] and len(libuse["shared"]) == 2
    assert {b[0] for b in libuse["shared"]} == {str(TARGETS / "helperlib.py")}
