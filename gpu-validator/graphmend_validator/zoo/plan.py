"""Items of work from a manifest, their resume keys, and deterministic shards.

An item is one target in one mode with one device need:
- `cpu`: graphs, graph breaks, `fullgraph=True`, output equality (both arms, compared with one eager
  reference, so the arms stay together in one item);
- `gpu`: cold-start and steady-state timing on the GPU, only for targets whose manifest entry asks
  for `timing`.
"""

import hashlib
import json
import re

NEEDS = ("cpu", "gpu")
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class PlanError(Exception):
    """A manifest or shard specification that cannot be run; the message says which and why."""


def file_digest(path):
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def safe_name(text):
    """A file-name-safe, readable form of a target name (letters, digits, '.', '_', '-')."""
    return _SAFE.sub("_", text).strip("_") or "target"


def expand(manifest, environment):
    """The manifest's targets as items, sorted by id. `environment` (graphmend's binary digest, the
    torch version) enters every key: a result computed by another binary or torch is not reused."""
    items = []
    seen = {}
    for entry in manifest.get("targets", []):
        name = entry["name"]
        if name in seen:
            raise PlanError(f"two targets are named {name!r} ({seen[name]} and {entry['target']}): names must be unique")
        seen[name] = entry["target"]
        target_file = entry["target"].rsplit("::", 1)[0]
        sources = {"target": file_digest(target_file)}
        if entry.get("fixed") not in (None, "auto", "none"):
            sources["fixed"] = file_digest(entry["fixed"])
        for mode in entry["modes"]:
            needs = ["cpu"] + (["gpu"] if entry.get("timing") else [])
            for need in needs:
                item = {
                    "id": f"{safe_name(name)}.{mode}.{need}",
                    "name": name,
                    "target": entry["target"],
                    "label": entry.get("label", entry["target"]),
                    "mode": mode,
                    "need": need,
                    "device": "cpu" if need == "cpu" else entry.get("timing_device", "cuda"),
                    "backend": entry["backend"],
                    "repeats": entry["repeats"] if need == "cpu" else entry.get("timing_repeats", 3),
                    "timeout_s": entry["timeout_s"],
                    "fixed": entry.get("fixed", "auto"),
                    "fixed_module": entry.get("fixed_module"),
                    "threads": entry.get("threads"),
                }
                spec = {k: v for k, v in item.items() if k != "id"}
                blob = json.dumps({"item": spec, "sources": sources, "environment": environment}, sort_keys=True)
                item["key"] = hashlib.sha256(blob.encode()).hexdigest()[:20]
                items.append(item)
    ids = [i["id"] for i in items]
    clashes = sorted({i for i in ids if ids.count(i) > 1})
    if clashes:
        raise PlanError(f"target names collide once made file-safe: {', '.join(clashes)}")
    return sorted(items, key=lambda i: i["id"])


def digest(items):
    """One hash of the whole plan: shards of one plan carry the same digest."""
    return hashlib.sha256("\n".join(f"{i['id']} {i['key']}" for i in items).encode()).hexdigest()[:16]


def parse_shard(text):
    """'i/N' (1 <= i <= N) -> (i, N)."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match:
        raise PlanError(f"--shard must be I/N (for example 2/3), got {text!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise PlanError(f"--shard {text}: I must be between 1 and N")
    return index, count


def shard(items, index, count):
    """Items of shard `index` of `count`: every count-th item of the id-sorted plan, starting at
    index-1. Deterministic, disjoint, and together the whole plan; round robin keeps the shards of a
    zoo whose names cluster (bert_*, gpt_*) of similar cost."""
    return [item for position, item in enumerate(items) if position % count == index - 1]


def select_need(items, need):
    if need == "all":
        return list(items)
    return [i for i in items if i["need"] == need]
