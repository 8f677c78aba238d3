"""The embedded engine: a bounded pool of threads on this machine, each running one item's
`graphmend validate` child at a time. No service to start."""

import concurrent.futures
import subprocess
import sys
import threading

from graphmend_validator.zoo.execute import run_item


class LocalEngine:
    name = "local"

    def __init__(self, graphmend, python, jobs, retries, threads=None):
        self.graphmend = graphmend
        self.python = python
        self.jobs = max(1, jobs)
        self.retries = retries
        self.threads = threads
        self.cancel = threading.Event()

    def gpus(self):
        """GPUs torch sees in the items' interpreter (0 when it sees none or cannot tell)."""
        try:
            out = subprocess.run([self.python or sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
                                 capture_output=True, text=True, timeout=120)
            return int(out.stdout.strip() or 0)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            return 0

    def run(self, items, on_done):
        """Runs `items`, calling on_done(record, files) in this thread as each ends. An item that ends
        `lost` (a signal not ours, no result) is run again up to `retries` times."""
        def attempt(item):
            record, files = None, {}
            for number in range(1, self.retries + 2):
                record, files = run_item(item, self.graphmend, self.python, engine="local", cancel=self.cancel,
                                         threads=self.threads)
                record["attempts"] = number
                if record["status"] != "lost" or self.cancel.is_set():
                    break
            return record, files

        with concurrent.futures.ThreadPoolExecutor(max_workers=self.jobs) as pool:
            futures = [pool.submit(attempt, item) for item in items]
            try:
                for future in concurrent.futures.as_completed(futures):
                    record, files = future.result()
                    if record["status"] == "interrupted":
                        continue
                    on_done(record, files)
            except BaseException:
                self.cancel.set()
                for future in futures:
                    future.cancel()
                raise
