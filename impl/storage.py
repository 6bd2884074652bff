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
  (`<log>.corrupt-<offset>`, or `.corrupt-<offset>.<n>`: never over an
  existing file), so nothing is destroyed.  `skip-corrupt` keeps every valid
  batch and skips the corrupt ones (salvage, as LevelDB does without
  paranoid checks), then rewrites the log without them (saved beside it
  too), so that no later open, in any mode, cuts at them and drops what was
  acknowledged after them.  `strict` refuses to open a corrupt log.

Every problem is reported in `FileLog.recovery` and to the `groupspec.storage`
logger; none is silent.  A disk error while opening or recovering is a
`LogOpenError`; while appending or reading, a `StorageError`: one line each.
A failed append is cut off the file before anything is written after it,
and an open log writes nothing after bytes it did not write itself (the
file truncated, appended to, removed or replaced by someone else, or the
log inherited by a forked child).
"""
from __future__ import annotations

import errno
import fcntl
import itertools
import json
import logging
import os
import re
import stat
import weakref
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Protocol

from groupspec.spec.kafka import brief

from .requests import INT32, INT64, OPT_STRING, PARTITION_NAME, PARTITIONS, STRING, ListOf, Record, Scalar

log = logging.getLogger("groupspec.storage")

MAGIC = b"GSLOG 1\n"
RECOVERY_MODES = ("point-in-time", "skip-corrupt", "strict")
_LINE = re.compile(rb"^([0-9a-f]{8}) (0|[1-9][0-9]{0,9}) ")


class StorageError(OSError):
    """An append could not be made durable (Kafka: KAFKA_STORAGE_ERROR)."""


class LogOpenError(ValueError):
    """The log cannot be used at this path (a directory, not ours, locked, unwritable)."""


class LogCorrupt(ValueError):
    """A batch failed its checks (raised on open in `strict` mode)."""


# -- records -------------------------------------------------------------------------------
# What the coordinator writes, in the shapes requests are checked with (one notion of an INT32,
# a partition name, ...): a record that is not one of these is corrupt.

_GENERATION = Scalar("a generation (0 to 2147483647)", lambda v: INT32.test(v) and v >= 0)
_PROTOCOL = ListOf("[name, metadata]", STRING)
_MEMBER = dict(member=STRING, instance=OPT_STRING, client=STRING, host=STRING, session_ms=INT32,
                  rebalance_ms=INT32, protocols=ListOf("a list of [name, metadata]", _PROTOCOL), assignment=PARTITIONS)
_RECORD_FIELDS = {
    "group": dict(generation=_GENERATION, protocol_type=OPT_STRING, protocol=OPT_STRING, leader=OPT_STRING,
                     members=ListOf("a list of members", Record("a member", _MEMBER, _MEMBER)), ts=INT64),
    "offset": dict(partition=PARTITION_NAME, offset=INT64, commit_ts=INT64),
    "offset_tombstone": dict(partition=PARTITION_NAME),
    "group_tombstone": dict(),
}
_RECORDS = {kind: Record(f"a {kind} record", {"type": STRING, "group": STRING, **fields},
                         ("type", "group", *fields))
            for kind, fields in _RECORD_FIELDS.items()}


def record_problem(r) -> str | None:
    """What is wrong with a record, or None if it is one the coordinator writes."""
    if not isinstance(r, dict):
        return f"a record must be a JSON object, not {type(r).__name__}"
    kind = r.get("type")
    shape = _RECORDS.get(kind) if isinstance(kind, str) else None
    if shape is None:
        return f"unknown record type {brief(kind)} (known: {', '.join(_RECORDS)})"
    problem = None if shape.ok(r) else shape.problem(r, kind)
    if problem is None and kind == "group":
        problem = next((f"'group.members[{i}].protocols[{k}]' must be [name, metadata]"
                        for i, m in enumerate(r["members"]) for k, p in enumerate(m["protocols"]) if len(p) != 2),
                       None)
    return problem


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a number a record may hold")


_JSON = json.JSONDecoder(parse_constant=_reject_constant)   # made once: json.loads makes one a call


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
        batch = _JSON.decode(payload.decode("ascii"))
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

    def __deepcopy__(self, memo) -> "InMemoryLog":
        # the spec target copies its worlds at every step: the batches are bytes, a copy of the list does
        new = InMemoryLog()
        new._batches = list(self._batches)
        return new


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
        where, out = _show(self.path), []
        saved = _show(self.saved_to) if self.saved_to else None
        if self.torn_tail:
            out.append(f"{where}: truncated a torn tail at {self.torn_tail} (a write that did not finish; "
                       f"it was never acknowledged)")
        for d in self.corrupt:
            out.append(f"{where}: corrupt batch at {d}")
        if self.corrupt and self.mode == "point-in-time":
            out.append(f"{where}: truncated at the first corrupt batch (byte {self.corrupt[0].offset}), "
                       f"dropping it and {self.valid_batches_dropped} valid batch(es) after it"
                       + (f"; the cut-off bytes are saved in {saved}" if saved else ""))
        elif self.corrupt:
            out.append(f"{where}: skipped {len(self.corrupt)} corrupt batch(es); kept {self.batches}"
                       + (f"; the log is rewritten without them, saved in {saved}" if saved else ""))
        return out


class FileLog:
    """The durable log: one line per batch, checksummed, fsync'ed before an append returns.

    Opening it takes an exclusive lock (one writer, as one partition leader
    writes a Kafka partition), creates the file if needed and recovers it.
    While it is open, an append or a read checks that the file is still the
    one it wrote (not removed, replaced, truncated or appended to by someone
    else); if not, it fails with StorageError rather than acknowledge a batch
    the next open would not serve.
    """

    _fd: int | None = None        # a class default: close() and __del__ work whatever __init__ got to
    _closed_as = "closed"

    def __init__(self, path: str | os.PathLike, recovery: str = "point-in-time"):
        if recovery not in RECOVERY_MODES:
            raise ValueError(f"recovery mode {recovery!r}: use one of {', '.join(RECOVERY_MODES)}")
        self.path = Path(path)
        self.mode = recovery
        self._where = f"metadata log {_show(self.path)}"
        self._end = 0                 # the size of what this log wrote: batches whole, nothing else
        self._torn = False            # a failed append's bytes could not be cut off yet
        try:
            self._fd = self._open()
            self._abs = os.path.abspath(self.path)   # a later chdir must not change which file is checked
            self.recovery = self._recover()
        except OSError as e:          # the disk failed us while opening or recovering
            self.close()
            raise LogOpenError(f"{self._where}: cannot open and recover it ({_strerror(e)})") from None
        except BaseException:
            self.close()
            raise
        _OPEN.add(self)
        for msg in self.recovery.messages():
            log.warning("%s", msg)

    # -- opening

    def _open(self) -> int:
        p = self.path
        where = self._where
        if "\0" in os.fsdecode(p):
            raise LogOpenError(f"{where}: a path cannot hold a NUL character")
        if p.is_dir():
            raise LogOpenError(f"{where}: is a directory; give the path of a file (it is created if missing)")
        new_folders = [d for d in (p.parent, *p.parent.parents) if not d.exists()]
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise LogOpenError(f"{where}: cannot create its folder {_show(p.parent)} ({e.strerror})") from None
        for d in new_folders:         # a new folder's name is durable once its parent is fsync'ed
            _fsync_dir(d.parent)
        created = not p.exists()
        try:
            fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise LogOpenError(f"{where}: cannot open it for reading and appending ({e.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise LogOpenError(f"{where}: cannot lock it ({e.strerror})") from None
            raise LogOpenError(f"{where}: another process (or coordinator) has it open; one writer at a "
                               f"time") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise LogOpenError(f"{where}: not a regular file")
            if created:               # the folder that holds the new file (through a symlink, the target's)
                _fsync_dir(Path(os.path.realpath(p)).parent)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _recover(self) -> Recovery:
        rec = Recovery(str(self.path), self.mode)
        data = _read_all(self._fd)
        if len(data) < len(MAGIC) and MAGIC.startswith(data):
            # new, or a header torn while the file was created
            os.ftruncate(self._fd, 0)
            _write_all(self._fd, MAGIC)
            os.fsync(self._fd)
            self._end = len(MAGIC)
            return rec
        if not data.startswith(MAGIC):
            raise LogOpenError(f"{self._where}: not a groupspec log (it does not start with "
                               f"{MAGIC.strip().decode()!r}); refusing to append to it — give a new path")
        keep_until, cut = len(MAGIC), False   # cut: point-in-time, past the first corrupt batch
        for end, batch in _batches(data, rec):
            cut = cut or (batch is None and self.mode == "point-in-time")
            if cut:
                rec.valid_batches_dropped += batch is not None
            else:
                rec.batches += batch is not None
                keep_until = end
        if rec.corrupt and self.mode == "strict":
            raise LogCorrupt(f"{self._where}: corrupt batch at {rec.corrupt[0]}"
                             + (f" (and {len(rec.corrupt) - 1} more)" if len(rec.corrupt) > 1 else "")
                             + "; open it with recovery='point-in-time' or 'skip-corrupt' to recover")
        if rec.corrupt and self.mode == "skip-corrupt":
            keep_until = self._rewrite_without_corrupt(data, rec)
        elif keep_until < len(data):
            if rec.corrupt:
                rec.saved_to = str(_save_beside(self.path, data[keep_until:], keep_until))
            os.ftruncate(self._fd, keep_until)
            os.fsync(self._fd)
        self._end = keep_until
        return rec

    def _rewrite_without_corrupt(self, data: bytes, rec: Recovery) -> int:
        """skip-corrupt: the log rewritten without its corrupt batches (saved beside it first).  Left
        in the file, they would make the next open in point-in-time mode cut there and drop every batch
        acknowledged after them.  A new file renamed over the old one: the log is either.  Returns its size."""
        bad = b"".join(data[d.offset:d.offset + d.length] for d in rec.corrupt)
        rec.saved_to = str(_save_beside(self.path, bad, rec.corrupt[0].offset))
        real = Path(os.path.realpath(self.path))      # through a symlink: replace the file, not the link
        tmp = real.with_name(real.name + ".rewrite")
        try:
            os.unlink(tmp)                            # left by a rewrite a crash interrupted
        except FileNotFoundError:
            pass
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # locked before it can be opened as the log
            view, pos = memoryview(data), 0
            for d in rec.corrupt:
                _write_all(fd, view[pos:d.offset])
                pos = d.offset + d.length
            _write_all(fd, view[pos:rec.torn_tail.offset if rec.torn_tail else len(data)])
            os.fsync(fd)
            os.rename(tmp, real)
            _fsync_dir(real.parent)
        except BaseException:
            os.close(fd)
            raise
        os.close(self._fd)
        self._fd = fd
        return os.fstat(fd).st_size

    # -- use

    def append(self, batch: list[dict]) -> None:
        """Write one batch whole, fsync it; on any failure leave the file as it was and raise StorageError."""
        line = encode(batch)
        try:
            self._check()
        except OSError as e:
            raise StorageError(e.errno, f"{self._where}: append refused ({_strerror(e)})") from None
        try:
            _write_all(self._fd, line)
            os.fsync(self._fd)
            self._check_same_file()       # written to a file no longer at the path: not durable there
        except OSError as e:
            self._take_back()
            raise StorageError(e.errno, f"{self._where}: append failed ({_strerror(e)})") from None
        self._end += len(line)

    def _take_back(self) -> None:
        """Cut off a failed append's bytes: a batch written after them would be read back merged with
        them, one corrupt line, and lost.  If that fails too, the next append or read tries again."""
        try:
            os.ftruncate(self._fd, self._end)
            os.fsync(self._fd)
            self._torn = False
        except OSError:
            self._torn = True

    def _check(self) -> None:
        """The log is open in this process and its file holds exactly what it wrote (OSError if not)."""
        if self._fd is None:
            raise OSError(errno.EBADF, f"the log is {self._closed_as}")
        if self._torn:
            self._take_back()
            if self._torn:
                raise OSError(errno.EIO, "a failed append could not be taken back; reopen the log to recover")
        size = os.fstat(self._fd).st_size
        if size != self._end:
            raise OSError(errno.ESTALE, f"the file is {size} bytes, but this log wrote {self._end}: someone "
                                        f"else truncated or appended to it; reopen the log to recover")
        self._check_same_file()

    def _check_same_file(self) -> None:
        try:
            st = os.stat(self._abs)
        except FileNotFoundError:
            st = None
        ours = os.fstat(self._fd)
        if st is None or (st.st_dev, st.st_ino) != (ours.st_dev, ours.st_ino):
            raise OSError(errno.ESTALE, "the file was removed or replaced by someone else; reopen the log")

    def records(self) -> Iterable[dict]:
        """Every record of every batch kept, in order (the log as a loading coordinator reads it)."""
        try:
            self._check()
            data = _read_all(self._fd)
        except OSError as e:
            raise StorageError(e.errno, f"{self._where}: cannot read it ({_strerror(e)})") from None
        return self._records(data)

    def _records(self, data: bytes) -> Iterable[dict]:
        # a generator: a loading coordinator folds the records one by one, without a list of them all
        rec = Recovery(str(self.path), self.mode)
        cut = False
        for _, batch in _batches(data, rec):
            cut = cut or (batch is None and self.mode == "point-in-time")
            if cut:
                rec.valid_batches_dropped += batch is not None
            elif batch is not None:
                rec.batches += 1
                yield from batch
        for msg in rec.messages():          # damage that appeared while the log was open
            log.warning("%s", msg)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)              # releases the lock
            self._fd = None

    def _close_in_forked_child(self) -> None:
        # the child shares the parent's open file and lock: it must not write the log as a second
        # writer, nor keep the lock held after the parent closes it.  Closing our descriptor does
        # neither harm the parent's lock (it is released only when the last descriptor closes).
        self.close()
        self._closed_as = "the parent's: it was opened before this process forked"

    def __reduce_ex__(self, protocol):
        # a copy would share the open file: closing either would close the other's descriptor,
        # whose number may then name another file
        raise TypeError(f"{self._where} cannot be copied or pickled: it owns an open file and its lock")

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> "FileLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_OPEN: "weakref.WeakSet[FileLog]" = weakref.WeakSet()      # the logs open in this process


def _after_fork_in_child() -> None:
    for f in list(_OPEN):
        f._close_in_forked_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _batches(data: bytes, rec: Recovery):
    """Each line after the header: (the offset after it, its batch or None if corrupt).  What is wrong
    is added to `rec`."""
    pos, line_no = len(MAGIC), 1
    while pos < len(data):
        line_no += 1
        nl = data.find(b"\n", pos)
        if nl < 0:                    # no newline: a write that did not finish
            rec.torn_tail = Damage(pos, line_no, len(data) - pos, "no newline at the end of the file")
            return
        try:
            batch = decode(data[pos:nl])
        except ValueError as e:
            batch = None
            rec.corrupt.append(Damage(pos, line_no, nl + 1 - pos, str(e)))
        yield nl + 1, batch
        pos = nl + 1


def _show(path) -> str:
    """A path as a message shows it: as it is, or quoted if it holds a newline or another character
    that is not printable (a message is one line)."""
    s = os.fsdecode(path)
    return s if s.isprintable() else repr(s)


def _strerror(e: OSError) -> str:
    return (e.strerror or str(e)) + (f": {_show(e.filename)}" if e.filename else "")


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    parts, pos = [], 0
    while pos < size:                 # a read may return less than asked (Linux: 2 GiB at most)
        part = os.pread(fd, size - pos, pos)
        if not part:
            raise OSError(errno.EIO, f"the file ended at byte {pos}, before its size {size}")
        parts.append(part)
        pos += len(part)
    return b"".join(parts)


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:                    # a write that makes no progress would be retried forever
            raise OSError(errno.EIO, "the file system took no bytes of a write")
        view = view[n:]


def _fsync_dir(path: Path) -> None:
    try:
        dfd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _save_beside(path: Path, data: bytes, offset: int) -> Path:
    """Save bytes recovery cuts off in a new file `<log>.corrupt-<offset>[.n]`: never over an existing
    file (an earlier recovery's, or anyone's; O_EXCL follows no symlink), except that a recovery run
    again after a crash finds the file it saved and keeps it."""
    for n in itertools.count():
        saved = path.with_name(f"{path.name}.corrupt-{offset}" + (f".{n}" if n else ""))
        try:
            fd = os.open(saved, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            if saved.is_file() and saved.stat().st_size == len(data) and saved.read_bytes() == data:
                return saved
            continue
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except BaseException:
            os.unlink(saved)          # a part of the bytes is no copy of them
            raise
        finally:
            os.close(fd)
        _fsync_dir(path.parent)
        return saved


# -- replay --------------------------------------------------------------------------------

@dataclass
class LoadedGroup:
    group: str
    record: dict | None = None                    # the last group record (None: offsets only)
    offsets: dict[str, dict] = field(default_factory=dict)   # partition -> {offset, commit_ts}

    def records(self) -> list[dict]:
        """Records whose log loads as this group: its group record, then one record per live offset."""
        group = [self.record] if self.record is not None else []
        return group + [{"type": "offset", "group": self.group, "partition": p, **o} for p, o in self.offsets.items()]


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
