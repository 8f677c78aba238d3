"""The cluster engine: items as Ray tasks with resource requests, on an existing cluster
(`--ray ADDRESS`, `--ray auto`) or on a local Ray started for the run (`--ray local`).

CPU items ask for one CPU, timing items for one GPU as well, so GPU workers get only timing work.
graphmend_validator travels to the workers with the job (`runtime_env.py_modules`); the target
files, graphmend's executable and the interpreter with torch must be at the same paths on every
node (a shared file system or one image), as for a SLURM array. Results come back as task return
values and are written by this driver alone, so workers need no shared results folder.
Worker crashes and node loss are retried by Ray (`max_retries`); what still fails is reported per
item as `lost` (not final: the next run redoes it) and never touches the other items' results.
"""

import os
import socket
import sys
import threading
import time

from graphmend_validator.zoo.execute import item_deadline, run_item


CONNECT_TIMEOUT_S = 120.0


class RayUnavailable(Exception):
    pass


def _probe(address):
    """A HOST:PORT that refuses a TCP connection is a typo or a stopped head: say so at once, since
    ray.init retries a dead address for a long time."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "://" in address:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
    except OSError as exc:
        raise RayUnavailable(f"no Ray head answers at {address} ({exc.strerror or exc})") from exc


def _task(item, graphmend, python, threads):
    return run_item(item, graphmend, python, engine="ray", threads=threads)


class RayEngine:
    name = "ray"

    def __init__(self, graphmend, python, address, workers, retries):
        try:
            import ray  # noqa: F401  (optional: pip install 'graphmend[ray]')
        except ImportError as exc:
            raise RayUnavailable(
                f"--ray needs Ray in the validator's interpreter ({exc}); install it with: "
                "pip install 'graphmend[ray]'") from exc
        self.ray = ray
        self.graphmend = graphmend
        self.python = python
        self.address = address
        self.workers = workers
        self.retries = retries

    def connect(self):
        ray = self.ray
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        runtime_env = {"py_modules": [package], "env_vars": {"PYTHONUNBUFFERED": "1"}}
        kwargs = {"runtime_env": runtime_env, "include_dashboard": False, "log_to_driver": False,
                  "configure_logging": False}
        if self.address != "local":
            _probe(self.address)
        connected = threading.Event()

        def watchdog():
            # ray.init cannot be interrupted from Python: a head that accepts but never answers ends the run.
            if not connected.wait(CONNECT_TIMEOUT_S):
                print(f"graphmend validate: Ray did not start or answer at {self.address} within "
                      f"{CONNECT_TIMEOUT_S:.0f} s", file=sys.stderr, flush=True)
                os._exit(3)

        threading.Thread(target=watchdog, daemon=True).start()
        if self.address == "local":
            # A Ray of our own for this run: `workers` CPUs, no GPUs unless this machine shows some.
            ray.init(address="local", num_cpus=self.workers, **kwargs)
        else:
            ray.init(address=self.address, **kwargs)
        connected.set()
        return ray.cluster_resources()

    def gpus(self):
        return int(self.ray.cluster_resources().get("GPU", 0))

    def run(self, items, on_done):
        ray = self.ray
        remote = ray.remote(_task)
        pending = {}
        for item in items:
            options = {"num_cpus": 1, "max_retries": self.retries, "retry_exceptions": False}
            if item["need"] == "gpu":
                options["num_gpus"] = 1
            ref = remote.options(**options).remote(item, self.graphmend, self.python, item.get("threads") or 1)
            pending[ref] = (item, time.monotonic())
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
                for ref in ready:
                    item, _ = pending.pop(ref)
                    try:
                        record, files = ray.get(ref)
                        record["attempts"] = record.get("attempts", 1)
                    except ray.exceptions.RayError as exc:
                        record, files = self._lost(item, f"Ray task failed after {self.retries} retries: "
                                                         f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"), {}
                    on_done(record, files)
                now = time.monotonic()
                for ref, (item, submitted) in list(pending.items()):
                    # Queue time counts too: a task that never gets a worker is reported, not awaited forever.
                    if now - submitted > item_deadline(item) * 3:
                        ray.cancel(ref, force=True)
                        pending.pop(ref)
                        on_done(self._lost(item, "no result from the cluster in time (cancelled)"), {})
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise

    def _lost(self, item, message):
        now = time.time()
        return {"id": item["id"], "key": item["key"], "item": item, "engine": "ray", "host": None,
                "started": now, "finished": now, "wall_s": 0.0, "status": "lost", "exit_code": None,
                "result": None, "final": False, "message": message, "attempts": self.retries + 1}

    def close(self):
        self.ray.shutdown()
