"""The results folder: one record per finished item, written atomically, and a lock per run.

Layout of DIR:
  plan.json            the items this folder's last run planned (with the shard and plan digest)
  items/ID.json        one record per finished item (written by rename: complete or absent)
  runs/ID/             the item's own `graphmend validate --report` (validation.json, report.html, fixed/)
  zoo.json, zoo.csv, report.html   the merged view, rewritten at the end of each run
A record is reused by a later run only when its key (the item, the target's and fixed file's content,
graphmend's binary, the torch version) is unchanged and it is final; so a killed run resumes and a
finished item is never run or counted twice.
"""

import errno
import fcntl
import json
import os
import tempfile


class StoreError(Exception):
    pass


def write_atomic(path, text):
    """Write `text` to `path` by a temporary file in the same folder, fsync and rename."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def write_json(path, value):
    write_atomic(path, json.dumps(value, indent=2, sort_keys=True, allow_nan=False, default=str) + "\n")


class ResultsFolder:
    def __init__(self, path):
        self.path = os.path.abspath(path)
        self._lock = None

    def lock(self):
        """Hold DIR/.lock for this run: a second run into the same folder is refused, not interleaved."""
        os.makedirs(os.path.join(self.path, "items"), exist_ok=True)
        handle = open(os.path.join(self.path, ".lock"), "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            handle.close()
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise StoreError(f"{self.path} is in use by another graphmend validate run") from exc
            raise
        self._lock = handle

    def unlock(self):
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def record_path(self, item_id):
        return os.path.join(self.path, "items", item_id + ".json")

    def records(self):
        """Every readable record in the folder, by item id (unreadable ones are skipped with a warning
        in `problems`: a record is only ever replaced whole, so these are not ours)."""
        found, problems = {}, []
        folder = os.path.join(self.path, "items")
        try:
            names = sorted(os.listdir(folder))
        except FileNotFoundError:
            return found, problems
        for name in names:
            if not name.endswith(".json") or name.startswith("."):
                continue
            path = os.path.join(folder, name)
            try:
                with open(path, encoding="utf-8") as handle:
                    record = json.load(handle)
                found[record["id"]] = record
            except (OSError, ValueError, KeyError, TypeError) as exc:
                problems.append(f"{path}: not a graphmend item record ({exc})")
        return found, problems

    def reusable(self, item, records):
        record = records.get(item["id"])
        return record is not None and record.get("key") == item["key"] and record.get("final", False)

    def save(self, record, files=None):
        """Write the item's report files (runs/ID/...) and then its record: the record is the commit."""
        for relative, text in (files or {}).items():
            target = os.path.normpath(os.path.join(self.path, "runs", record["id"], relative))
            if not target.startswith(os.path.join(self.path, "runs") + os.sep):
                continue  # a path that would leave the folder: never written
            write_atomic(target, text)
        write_json(self.record_path(record["id"]), record)
