"""The group-metadata log (Kafka's `__consumer_offsets` partition, for our groups).

What a completed append leaves behind: group records (the group with every
member and its assignment, as GroupMetadataManager.storeGroup writes it),
committed offsets, and tombstones.  A coordinator that takes over replays
the log (`replay`): each group's last record and its offsets.

The unit of writing is a *batch*, as in Kafka's log: one append (the group
record of a SyncGroup, every partition of one OffsetCommit, the tombstones of
one DeleteGroups) is one batch, written whole or not at all.

Two implementations: in memory, and `FileLog`, a durable file a restarted
coordinator loads from.  Its format (version 1):

    GSLOG 1\\n                                  the header: what this file is
    <crc32 8 hex> <length> <payload>\\n          one line per batch

where the payload is the batch as a JSON array of records, ASCII only (so it
holds no newline), `length` its size in bytes and the CRC-32 is over the
payload.  A batch is acknowledged once its line is written and fsync'ed.

Recovery, when a FileLog is opened, follows Kafka's log recovery
(LogSegment.recover) and RocksDB's WAL recovery modes:

* a torn tail (bytes after the last newline: a write a crash interrupted,
  never acknowledged) is truncated;
* a batch that fails its length, checksum or record checks is corruption,
  reported with its byte offset and line.  `point-in-time` (the default, as
  Kafka and RocksDB do) keeps the longest valid prefix: the log is truncated
  at the first corrupt batch, so what is served is a state the coordinator
  really had, and the bytes cut off are first saved beside the log
  (`<log>.corrupt-<offset>`), so nothing is destroyed.  `skip-corrupt` keeps
  every valid batch and skips the corrupt ones (salvage, as LevelDB does
  without paranoid checks).  `strict` refuses to open a corrupt log.

Every problem is reported in `FileLog.recovery` and to the `groupspec.storage`
logger; none is silent.
"""
from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import re
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Protocol

log = logging.getLogger("groupspec.storage")

MAGIC = b"GSLOG 1\n"
RECOVERY_MODES = ("point-in-time", "skip-corrupt", "strict")
INT64 = (-(1 << 63), (1 << 63) - 1)
INT32 = (-(1 << 31), (1 << 31) - 1)
_PARTITION = re.compile(r"^.+-(0|[1-9][0-9]*)$")
_LINE = re.compile(rb"^([0-9a-f]{8}) (0|[1-9][0-9]{0,9}) ")


class StorageError(OSError):
    """An append could not be made durable (Kafka: KAFKA_STORAGE_ERROR)."""


class LogOpenError(ValueError):
    """The log cannot be used at this path (a directory, not ours, locked, unwritable)."""


class LogCorrupt(ValueError):
    """A batch failed its checks (raised on open in `strict` mode)."""


# -- records -------------------------------------------------------------------------------

def _is_int(v, lo_hi=INT64) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo_hi[0] <= v <= lo_hi[1]


def _is_str(v) -> bool:
    return isinstance(v, str)


def _is_opt_str(v) -> bool:
    return v is None or isinstance(v, str)


def _is_partition(v) -> bool:
    return isinstance(v, str) and bool(_PARTITION.match(v))


def _member_problem(m) -> str | None:
    if not isinstance(m, dict):
        return "a member is not an object"
    for k, ok in (("member", _is_str), ("instance", _is_opt_str), ("client", _is_str), ("host", _is_str),
                  ("session_ms", lambda v: _is_int(v, INT32)), ("rebalance_ms", lambda v: _is_int(v, INT32))):
        if k not in m or not ok(m[k]):
            return f"member field {k!r} is missing or of the wrong type"
    protos = m.get("protocols")
    if not isinstance(protos, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(map(_is_str, p)) for p in protos):
        return "member field 'protocols' must be a list of [name, metadata]"
    parts = m.get("assignment")
    if not isinstance(parts, list) or not all(map(_is_partition, parts)):
        return "member field 'assignment' must be a list of partitions (topic-N)"
    return None


# the fields of each record type, with their checks
_RECORD_FIELDS = {
    "group": {"generation": lambda v: _is_int(v, (0, INT32[1])), "protocol_type": _is_opt_str,
              "protocol": _is_opt_str, "leader": _is_opt_str, "members": lambda v: isinstance(v, list),
              "ts": _is_int},
    "offset": {"partition": _is_partition, "offset": _is_int, "commit_ts": _is_int},
    "offset_tombstone": {"partition": _is_partition},
    "group_tombstone": {},
}


def record_problem(r) -> str | None:
    """What is wrong with a record, or None if it is one the coordinator writes."""
    if not isinstance(r, dict):
        return f"a record must be a JSON object, not {type(r).__name__}"
    kind = r.get("type")
    fields = _RECORD_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        return f"unknown record type {str(kind)[:40]!r} (known: {', '.join(_RECORD_FIELDS)})"
    if not _is_str(r.get("group")):
        return f"{kind} record: 'group' is missing or not a string"
    for k, ok in fields.items():
        if k not in r or not ok(r[k]):
            return f"{kind} record: {k!r} is missing or of the wrong type"
    if kind == "group":
        for m in r["members"]:
            problem = _member_problem(m)
            if problem:
                return f"group record: {problem}"
    return None


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a number a record may hold")


def encode(batch: list[dict]) -> bytes:
    """One batch as a log line (header, payload, newline); the records are checked first."""
    if not isinstance(batch, list) or not batch:
        raise ValueError("a batch is a non-empty list of records")
    for r in batch:
        problem = record_problem(r)
        if problem:
            raise ValueError(f"refusing to write a malformed record: {problem}")
    payload = json.dumps(batch, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                         allow_nan=False).encode("ascii")
    return b"%08x %d " % (zlib.crc32(payload), len(payload)) + payload + b"\n"


def decode(line: bytes) -> list[dict]:
    """A log line (without its newline) back to its batch; ValueError says what is wrong."""
    m = _LINE.match(line)
    if m is None:
        raise ValueError("no batch header (<crc32> <length>)")
    crc, length = int(m.group(1), 16), int(m.group(2))
    payload = line[m.end():]
    if len(payload) != length:
        raise ValueError(f"payload is {len(payload)} bytes, its header says {length}")
    if zlib.crc32(payload) != crc:
        raise ValueError("checksum mismatch")
    try:
        batch = json.loads(payload.decode("ascii"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ValueError(f"payload is not a JSON batch ({str(e)[:80]})") from None
    if not isinstance(batch, list) or not batch:
        raise ValueError("payload is not a non-empty list of records")
    for r in batch:
        problem = record_problem(r)
        if problem:
            raise ValueError(problem)
    return batch


# -- the two logs -------------------------------------------------------------------------

class MetadataLog(Protocol):
    def append(self, batch: list[dict]) -> None: ...
    def records(self) -> Iterable[dict]: ...


class InMemoryLog:
    """Batches kept in memory (checked and copied as the file log would store them)."""

    def __init__(self) -> None:
        self._batches: list[bytes] = []

    def append(self, batch: list[dict]) -> None:
        self._batches.append(encode(batch))

    def records(self) -> Iterable[dict]:
        return [r for line in self._batches for r in decode(line[:-1])]


@dataclass
class Damage:
    """Bytes of the log recovery did not keep, and why."""
    offset: int            # byte offset in the file
    line: int              # line number (the header is line 1)
    length: int            # bytes
    reason: str

    def __str__(self) -> str:
        return f"line {self.line} (byte {self.offset}, {self.length} bytes): {self.reason}"


@dataclass
class Recovery:
    """What opening the log found and did."""
    path: str
    mode: str
    batches: int = 0                                  # batches kept
    torn_tail: Damage | None = None                   # truncated: a write that never finished
    corrupt: list[Damage] = field(default_factory=list)
    valid_batches_dropped: int = 0                    # valid batches after a corruption (point-in-time)
    saved_to: str | None = None                       # where the cut-off bytes were saved

    @property
    def clean(self) -> bool:
        return self.torn_tail is None and not self.corrupt

    def messages(self) -> list[str]:
        out = []
        if self.torn_tail:
            out.append(f"{self.path}: truncated a torn tail at {self.torn_tail} (a write that did not finish; "
                       f"it was never acknowledged)")
        for d in self.corrupt:
            out.append(f"{self.path}: corrupt batch at {d}")
        if self.corrupt and self.mode == "point-in-time":
            out.append(f"{self.path}: truncated at the first corrupt batch (byte {self.corrupt[0].offset}), "
                       f"dropping it and {self.valid_batches_dropped} valid batch(es) after it; the cut-off bytes "
                       f"are saved in {self.saved_to}")
        elif self.corrupt:
            out.append(f"{self.path}: skipped {len(self.corrupt)} corrupt batch(es); kept {self.batches}")
        return out


class FileLog:
    """The durable log: one line per batch, checksummed, fsync'ed before an append returns.

    Opening it takes an exclusive lock (one writer, as one partition leader
    writes a Kafka partition), creates the file if needed and recovers it.
    """

    def __init__(self, path: str | os.PathLike, recovery: str = "point-in-time"):
        if recovery not in RECOVERY_MODES:
            raise ValueError(f"recovery mode {recovery!r}: use one of {', '.join(RECOVERY_MODES)}")
        self.path = Path(path)
        self.mode = recovery
        self._fd: int | None = None
        self._fd = self._open()
        try:
            self.recovery = self._recover()
        except BaseException:
            self.close()
            raise
        for msg in self.recovery.messages():
            log.warning("%s", msg)

    # -- opening

    def _open(self) -> int:
        p = self.path
        where = f"metadata log {p}"
        if p.is_dir():
            raise LogOpenError(f"{where}: is a directory; give the path of a file (it is created if missing)")
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise LogOpenError(f"{where}: cannot create its folder {p.parent} ({e.strerror})") from None
        created = not p.exists()
        try:
            fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise LogOpenError(f"{where}: cannot open it for reading and appending ({e.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise LogOpenError(f"{where}: another process (or coordinator) has it open; one writer at a "
                               f"time") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise LogOpenError(f"{where}: not a regular file")
        if created:
            _fsync_dir(p.parent)
        return fd

    def _recover(self) -> Recovery:
        rec = Recovery(str(self.path), self.mode)
        data = _read_all(self._fd)
        if len(data) < len(MAGIC) and MAGIC.startswith(data):
            # new, or a header torn while the file was created
            os.ftruncate(self._fd, 0)
            self._write(MAGIC)
            return rec
        if not data.startswith(MAGIC):
            raise LogOpenError(f"metadata log {self.path}: not a groupspec log (it does not start with "
                               f"{MAGIC.strip().decode()!r}); refusing to append to it — give a new path")
        keep_until, batches, _ = self._scan(data, rec)
        if rec.corrupt and self.mode == "strict":
            raise LogCorrupt(f"metadata log {self.path}: corrupt batch at {rec.corrupt[0]}"
                             + (f" (and {len(rec.corrupt) - 1} more)" if len(rec.corrupt) > 1 else "")
                             + "; open it with recovery='point-in-time' or 'skip-corrupt' to recover")
        if keep_until < len(data):
            if rec.corrupt and self.mode == "point-in-time":
                saved = self.path.with_name(f"{self.path.name}.corrupt-{keep_until}")
                _write_durably(saved, data[keep_until:])
                rec.saved_to = str(saved)
            os.ftruncate(self._fd, keep_until)
            os.fsync(self._fd)
        rec.batches = batches
        return rec

    def _scan(self, data: bytes, rec: Recovery):
        """Walk the lines after the header.  Returns (bytes to keep, batches kept, their records)."""
        pos, line_no, keep_until, kept = len(MAGIC), 1, len(MAGIC), []
        batches = 0
        cut = False                       # point-in-time: past the first corrupt batch
        while pos < len(data):
            line_no += 1
            nl = data.find(b"\n", pos)
            if nl < 0:                    # no newline: a write that did not finish
                rec.torn_tail = Damage(pos, line_no, len(data) - pos, "no newline at the end of the file")
                break
            try:
                batch = decode(data[pos:nl])
                ok = True
            except ValueError as e:
                ok = False
                rec.corrupt.append(Damage(pos, line_no, nl + 1 - pos, str(e)))
                cut = cut or self.mode == "point-in-time"
            if ok and cut:
                rec.valid_batches_dropped += 1
            elif ok:
                batches += 1
                kept.extend(batch)
            if not cut:
                keep_until = nl + 1
            pos = nl + 1
        return keep_until, batches, kept

    # -- use

    def append(self, batch: list[dict]) -> None:
        """Write one batch whole, fsync it; on any failure leave the file as it was and raise StorageError."""
        line = encode(batch)
        if self._fd is None:
            raise StorageError(errno.EBADF, f"metadata log {self.path} is closed")
        size = os.fstat(self._fd).st_size
        try:
            self._write(line)
        except OSError as e:
            try:                              # take back a partly written batch
                os.ftruncate(self._fd, size)
                os.fsync(self._fd)
            except OSError:
                pass                          # the torn tail is truncated at the next open
            raise StorageError(e.errno, f"metadata log {self.path}: append failed ({e.strerror})") from None

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        os.fsync(self._fd)

    def records(self) -> Iterable[dict]:
        """Every record of every batch kept, in order (the log as a loading coordinator reads it)."""
        if self._fd is None:
            raise StorageError(errno.EBADF, f"metadata log {self.path} is closed")
        rec = Recovery(str(self.path), self.mode)
        _, _, records = self._scan(_read_all(self._fd), rec)
        for msg in rec.messages():          # damage that appeared while the log was open
            log.warning("%s", msg)
        return records

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)              # releases the lock
            self._fd = None

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> "FileLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""


def _fsync_dir(path: Path) -> None:
    try:
        dfd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _write_durably(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    _fsync_dir(path.parent)


# -- replay --------------------------------------------------------------------------------

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


__all__ = ["FileLog", "InMemoryLog", "MetadataLog", "StorageError", "LogOpenError", "LogCorrupt", "Recovery",
           "Damage", "replay", "record_problem", "encode", "decode", "RECOVERY_MODES"]
