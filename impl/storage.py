"""The group-metadata log (Kafka's `__consumer_offsets` partition, for our groups).

What a completed append leaves behind: group records (the group with every
member and its assignment, as GroupMetadataManager.storeGroup writes it),
committed offsets, and tombstones.  A coordinator that takes over replays
the log (`groups()`): each group's last record and its offsets.

Two implementations: in memory, and a durable append-only JSON-lines file
that a restarted coordinator loads from.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Protocol


class MetadataLog(Protocol):
    def write(self, record: dict) -> None: ...
    def records(self) -> Iterable[dict]: ...


class InMemoryLog:
    def __init__(self) -> None:
        self._records: list[dict] = []

    def write(self, record: dict) -> None:
        self._records.append(json.loads(json.dumps(record)))

    def records(self) -> Iterable[dict]:
        return list(self._records)


class FileLog:
    """Append-only JSON lines, flushed and fsync'ed on every write."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch(exist_ok=True)

    def write(self, record: dict) -> None:
        line = json.dumps(record, sort_keys=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def records(self) -> Iterable[dict]:
        with open(self.path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    # a torn last write: what precedes it is the log
                    break


@dataclass
class LoadedGroup:
    group: str
    record: dict | None = None                    # the last group record (None: offsets only)
    offsets: dict[str, dict] = field(default_factory=dict)   # partition -> {offset, commit_ts}


def replay(log: MetadataLog) -> dict[str, LoadedGroup]:
    """Fold the log into each group's last record and live offsets."""
    out: dict[str, LoadedGroup] = {}
    for r in log.records():
        g = out.setdefault(r["group"], LoadedGroup(r["group"]))
        kind = r["type"]
        if kind == "group":
            g.record = r
        elif kind == "offset":
            g.offsets[r["partition"]] = {"offset": r["offset"], "commit_ts": r["commit_ts"]}
        elif kind == "offset_tombstone":
            g.offsets.pop(r["partition"], None)
        elif kind == "group_tombstone":
            g.record = None      # offsets have tombstones of their own
    return {k: v for k, v in out.items() if v.record is not None or v.offsets}
