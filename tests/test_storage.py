"""The durable metadata log, tested as storage engines are tested.

* every way a write can be cut short (the file truncated at every byte offset),
  then recovery and more appends: nothing acknowledged after recovery is lost;
* corruption at random offsets: detected by the checksum, reported with its
  position, and recovery keeps a valid prefix (point-in-time) or every valid
  batch (skip-corrupt), never a corrupt one;
* malformed content with a valid checksum, and unusable paths: refused or
  reported with a clear message, never an exception from deep inside;
* a failed append (disk full) leaves the file as it was and is answered with
  Kafka's error, not acknowledged; an I/O error at every call of each system
  call the log makes, in turn, is one clear error and loses nothing
  acknowledged; a file changed under an open log is not written after;
* crash injection: a coordinator process committing offsets and storing
  generations is SIGKILLed at random points, the tail of its log is torn at
  random, and after recovery every acknowledged write is served and nothing
  unacknowledged is (a commit is all its partitions or none).
"""
from __future__ import annotations

import copy
import errno
import gc
import logging
import multiprocessing as mp
import os
import pickle
import random
import signal
import sys
import time
import zlib

import pytest

from groupspec.impl import storage
from groupspec.impl.coordinator import GroupCoordinator
from groupspec.impl.requests import InvalidRequest
from groupspec.impl.storage import (MAGIC, FileLog, LogCorrupt, LogOpenError, StorageError, encode, replay)


def offset(p: str, v: int, group: str = "g") -> dict:
    return {"type": "offset", "group": group, "partition": p, "offset": v, "commit_ts": 0}


def commit(v: int, parts=("t-0", "t-1", "t-2")) -> list[dict]:
    return [offset(p, v) for p in parts]


def batches_of(path) -> list[tuple[int, int]]:
    """(start, end) byte ranges of each batch line (end includes the newline)."""
    data = path.read_bytes()
    out, pos = [], len(MAGIC)
    while pos < len(data):
        nl = data.index(b"\n", pos)
        out.append((pos, nl + 1))
        pos = nl + 1
    return out


def written(path, n: int) -> list[list[dict]]:
    with FileLog(path) as log:
        batches = [commit(i) for i in range(1, n + 1)]
        for b in batches:
            log.append(b)
    return batches


def flat(batches) -> list[dict]:
    return [r for b in batches for r in b]


# -- the format and its round trip ------------------------------------------------------

def test_a_batch_round_trips_and_a_commit_is_one_line(tmp_path):
    path = tmp_path / "log"
    batches = written(path, 3)
    assert path.read_bytes().startswith(MAGIC)
    assert len(batches_of(path)) == 3                      # three partitions, one line each commit
    with FileLog(path) as log:
        assert log.recovery.clean and log.recovery.batches == 3
        assert list(log.records()) == flat(batches)
        assert replay(log)["g"].offsets == {p: {"offset": 3, "commit_ts": 0} for p in ("t-0", "t-1", "t-2")}


# -- torn writes: every offset ------------------------------------------------------------

def test_a_write_cut_at_any_byte_recovers_to_the_whole_batches_and_later_appends_survive(tmp_path):
    path = tmp_path / "log"
    batches = written(path, 4)
    data = path.read_bytes()
    ends = [e for _, e in batches_of(path)]
    for cut in range(len(data) + 1):
        path.write_bytes(data[:cut])
        with FileLog(path) as log:
            whole = sum(e <= cut for e in ends)
            assert list(log.records()) == flat(batches[:whole]), cut
            torn = cut > len(MAGIC) and cut not in ends
            assert (log.recovery.torn_tail is not None) == torn, cut
            log.append(commit(99))                         # acknowledged after the restart
        with FileLog(path) as log:                        # ... and still there at the next one
            assert list(log.records()) == flat(batches[:whole] + [commit(99)]), cut
            assert log.recovery.clean


def test_a_tail_of_zeros_left_by_a_crash_is_truncated(tmp_path):
    path = tmp_path / "log"
    batches = written(path, 2)
    with open(path, "ab") as f:
        f.write(b"\0" * 4096)
    with FileLog(path) as log:
        assert log.recovery.torn_tail.length == 4096
        assert list(log.records()) == flat(batches)


# -- corruption ---------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(40))
def test_corruption_is_detected_reported_and_never_served(tmp_path, seed, caplog):
    rnd = random.Random(seed)
    path = tmp_path / "log"
    batches = written(path, 8)
    ranges = batches_of(path)
    data = bytearray(path.read_bytes())
    at = rnd.randrange(len(MAGIC), len(data))
    data[at] = (data[at] + rnd.randrange(1, 256)) % 256    # a different byte
    hit = next(k for k, (s, e) in enumerate(ranges) if s <= at < e)
    # the batch hit is lost; hitting its newline merges it with the next one
    lost = {hit} | ({hit + 1} if at == ranges[hit][1] - 1 and hit + 1 < len(ranges) else set())

    path.write_bytes(bytes(data))
    with pytest.raises(LogCorrupt, match=rf"line {hit + 2} \(byte {ranges[hit][0]},"):
        FileLog(path, recovery="strict")
    assert path.read_bytes() == bytes(data)                # strict changes nothing

    with caplog.at_level(logging.WARNING, logger="groupspec.storage"):
        log = FileLog(path, recovery="skip-corrupt")
    with log:
        kept = [b for k, b in enumerate(batches) if k not in lost]
        assert list(log.records()) == flat(kept)
        assert log.recovery.corrupt and log.recovery.corrupt[0].offset == ranges[hit][0]
        # rewritten without the corrupt bytes, which are saved beside it
        assert path.read_bytes() == MAGIC + b"".join(map(encode, kept))
        cut = ranges[min(lost)][0], ranges[max(lost)][1]
        assert open(log.recovery.saved_to, "rb").read() == bytes(data[cut[0]:cut[1]])
    assert f"corrupt batch at line {hit + 2} (byte {ranges[hit][0]}" in caplog.text

    path.write_bytes(bytes(data))                          # the same corruption, recovered point-in-time
    with FileLog(path) as log:                             # point-in-time: the prefix before it
        assert list(log.records()) == flat(batches[:hit])
        rec = log.recovery
        assert rec.valid_batches_dropped == len(batches) - hit - len(lost)
        saved = open(rec.saved_to, "rb").read()
        assert path.read_bytes() + saved == bytes(data)    # nothing destroyed: the cut-off part is saved
        log.append(commit(100))
    with FileLog(path) as log:
        assert log.recovery.clean and list(log.records()) == flat(batches[:hit] + [commit(100)])


def line(payload: bytes) -> bytes:
    """A line whose checksum is right, whatever its payload: what only a buggy writer or a hand
    edit could leave."""
    return b"%08x %d " % (zlib.crc32(payload), len(payload)) + payload + b"\n"


@pytest.mark.parametrize("payload, reason", [
    (b"\xff\xfe not utf-8", "not a JSON batch"),
    (b"42", "not a non-empty list"),
    (b"[]", "not a non-empty list"),
    (b"[42]", "a record must be a JSON object, not int"),
    (b"[[1, 2]]", "a record must be a JSON object, not list"),
    (b'[{"group": "g", "partition": "t-0", "offset": 1, "commit_ts": 0}]', "unknown record type"),
    (b'[{"type": "offset", "partition": "t-0", "offset": 1, "commit_ts": 0}]', "'offset' needs 'group'"),
    (b'[{"type": "offset", "group": "g", "partition": "t-0", "commit_ts": 0}]', "'offset' needs 'offset'"),
    (b'[{"type": "offset", "group": "g", "partition": "t-0", "offset": "x", "commit_ts": 0}]', "'offset.offset' must be an integer"),
    (b'[{"type": "offset", "group": "g", "partition": "t-0", "offset": NaN, "commit_ts": 0}]', "NaN"),
    (b'[{"type": "offset", "group": "g", "partition": "t-0", "offset": true, "commit_ts": 0}]', "'offset.offset' must be an integer"),
    (b'[{"type": "offset", "group": "g", "partition": "t0", "offset": 1, "commit_ts": 0}]', "'offset.partition' must be a partition"),
    (b'[{"type": "offset", "group": "g", "partition": "t-0", "offset": 99999999999999999999, "commit_ts": 0}]',
     "'offset.offset' must be an integer"),
    (b'[{"type": "group", "group": "g", "generation": 1, "protocol_type": "consumer", "protocol": "range", '
     b'"leader": "m", "members": [{"member": "m"}], "ts": 0}]', "'group.members[0]' needs 'instance'"),
    (b"[" * 100_000 + b"]" * 100_000, "not a JSON batch"),
])
def test_malformed_content_with_a_valid_checksum_is_reported_with_its_position(tmp_path, payload, reason):
    path = tmp_path / "log"
    batches = written(path, 2)
    with open(path, "ab") as f:
        f.write(line(payload))
        f.write(encode(commit(3)))
    with pytest.raises(LogCorrupt, match="line 4"):
        FileLog(path, recovery="strict")
    with FileLog(path, recovery="skip-corrupt") as log:
        assert reason in log.recovery.corrupt[0].reason
        assert list(log.records()) == flat(batches + [commit(3)])


def test_a_record_the_coordinator_would_not_write_is_refused_before_it_reaches_the_file(tmp_path):
    with FileLog(tmp_path / "log") as log:
        for bad in ([], [{"type": "offset", "group": "g"}], [offset("t-0", float("nan"))]):
            with pytest.raises(ValueError):
                log.append(bad)
        assert list(log.records()) == []


# -- paths --------------------------------------------------------------------------------

def test_unusable_paths_are_refused_when_the_log_is_opened(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "legacy.jsonl").write_text('{"type": "offset", "group": "g"}\n')
    os.mkfifo(tmp_path / "fifo")
    cases = [(tmp_path, "is a directory"),
             (tmp_path / "file" / "log", "cannot create its folder"),
             (tmp_path / "legacy.jsonl", "not a groupspec log"),
             (tmp_path / "fifo", "not a regular file")]
    for path, message in cases:
        with pytest.raises(LogOpenError, match=message) as e:
            FileLog(path)
        assert str(path) in str(e.value) and "\n" not in str(e.value)
    assert (tmp_path / "legacy.jsonl").read_text() == '{"type": "offset", "group": "g"}\n'   # untouched


def test_one_writer_at_a_time(tmp_path):
    with FileLog(tmp_path / "log"):
        with pytest.raises(LogOpenError, match="another process"):
            FileLog(tmp_path / "log")
    FileLog(tmp_path / "log").close()                      # released on close


# -- a failed append ----------------------------------------------------------------------

def test_a_full_disk_fails_the_append_whole_and_the_commit_is_not_acknowledged(tmp_path, monkeypatch):
    path = tmp_path / "log"
    log = FileLog(path)
    c = GroupCoordinator({"group.min.session.timeout.ms": 10}, log=log)
    ok = c.send("OffsetCommit", dict(group="g", member="", generation=-1, offsets={"t-0": 1, "t-1": 1}))
    assert ok["errors"] == {"t-0": "NONE", "t-1": "NONE"}
    before = path.read_bytes()
    real_write = os.write

    def half_then_full(fd, data):                          # the disk fills mid-batch
        real_write(fd, bytes(data[:len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(storage.os, "write", half_then_full)
    failed = c.send("OffsetCommit", dict(group="g", member="", generation=-1, offsets={"t-0": 2, "t-1": 2}))
    # KAFKA_STORAGE_ERROR from the append, as GroupMetadataManager maps it for OffsetCommit
    assert failed["errors"] == {"t-0": "NOT_COORDINATOR", "t-1": "NOT_COORDINATOR"}
    assert path.read_bytes() == before                     # the half batch was taken back
    with pytest.raises(StorageError, match="No space left"):
        log.append(commit(3))
    monkeypatch.setattr(storage.os, "write", real_write)
    log.close()
    c2 = GroupCoordinator({"group.min.session.timeout.ms": 10}, log=FileLog(path))
    c2.begin_load()
    c2.load()
    assert c2.snapshot("g")["offsets"] == {"t-0": 1, "t-1": 1}


# -- a failed append, and a file changed under the log --------------------------------------

def _fail_half(real_write):
    def write(fd, data):                                   # half the batch reaches the file, then EIO
        real_write(fd, bytes(data[:len(data) // 2]))
        raise OSError(errno.EIO, "Input/output error")
    return write


def _eio(*args):
    raise OSError(errno.EIO, "Input/output error")


def test_a_failed_append_whose_take_back_fails_too_does_not_cost_the_next_append(tmp_path, monkeypatch):
    # the half batch stays in the file; an append written after it would be read back merged with
    # it, as one corrupt line, and lost at the next open although it was acknowledged
    path = tmp_path / "log"
    log = FileLog(path)
    log.append(commit(1))
    real_write, real_truncate = os.write, os.ftruncate
    monkeypatch.setattr(storage.os, "write", _fail_half(real_write))
    monkeypatch.setattr(storage.os, "ftruncate", _eio)
    with pytest.raises(StorageError):
        log.append(commit(2))
    monkeypatch.setattr(storage.os, "write", real_write)
    with pytest.raises(StorageError, match="could not be taken back"):
        log.append(commit(3))                              # still cannot cut it: refused, not written after it
    monkeypatch.setattr(storage.os, "ftruncate", real_truncate)
    log.append(commit(4))                                  # the half batch is cut first, then this is written
    log.close()
    with FileLog(path) as log:
        assert log.recovery.clean and list(log.records()) == flat([commit(1), commit(4)])


def test_a_write_that_makes_no_progress_fails_the_append_instead_of_hanging(tmp_path, monkeypatch):
    calls = []

    def no_progress(fd, data):
        calls.append(1)
        assert len(calls) < 100, "the append loops on a write that writes nothing"
        return 0
    with FileLog(tmp_path / "log") as log:
        monkeypatch.setattr(storage.os, "write", no_progress)
        with pytest.raises(StorageError):
            log.append(commit(1))


@pytest.mark.parametrize("change", ["removed", "replaced", "truncated", "appended"])
def test_a_log_file_changed_by_someone_else_while_open_is_not_written_after(tmp_path, change):
    # an append acknowledged into a removed or replaced file, or after bytes this log did not write,
    # is not what the next open serves: refuse it (and reading), with a clear error
    path = tmp_path / "log"
    log = FileLog(path)
    log.append(commit(1))
    log.append(commit(2))
    if change == "removed":
        path.unlink()
    elif change == "replaced":
        other = tmp_path / "other"
        written(other, 1)
        os.replace(other, path)
    elif change == "truncated":
        os.truncate(path, batches_of(path)[1][0] + 10)
    else:
        with open(path, "ab") as f:
            f.write(encode(commit(9)))
    with pytest.raises(StorageError) as e:
        log.append(commit(3))
    assert str(path) in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(StorageError):
        log.records()
    log.close()
    with FileLog(path) as log:                             # nothing the first log acknowledged after the change
        assert commit(3)[0] not in list(log.records())

def test_every_folder_the_log_creates_is_made_durable(tmp_path, monkeypatch):
    # a new file's name is durable once its folder is fsync'ed; a new folder's once its parent is
    synced = []
    real = storage._fsync_dir
    monkeypatch.setattr(storage, "_fsync_dir", lambda d: (synced.append(str(d)), real(d)))
    FileLog(tmp_path / "a" / "b" / "log").close()
    assert {str(tmp_path), str(tmp_path / "a"), str(tmp_path / "a" / "b")} <= set(synced)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere" / "log")   # created through a dangling symlink
    synced.clear()
    FileLog(tmp_path / "link").close()
    assert str(tmp_path / "elsewhere") in synced


def test_a_file_log_cannot_be_copied(tmp_path):
    # a copy would share the open file: closing either (or its garbage collection) closes the other's,
    # and the descriptor number may then name another file
    with FileLog(tmp_path / "log") as log:
        for copier in (copy.copy, copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="cannot be copied"):
                copier(log)
        log.append(commit(1))


# -- opening and recovering: every failure a one-line LogOpenError ----------------------------

def _corrupt_second(path) -> int:
    """Flip a byte of the second batch; returns its offset (where point-in-time cuts)."""
    at = batches_of(path)[1][0]
    data = bytearray(path.read_bytes())
    data[at + 20] ^= 1
    path.write_bytes(bytes(data))
    return at


def test_the_bytes_recovery_cuts_off_never_overwrite_a_file(tmp_path):
    path = tmp_path / "log"
    batches = written(path, 3)
    at = _corrupt_second(path)
    data = path.read_bytes()
    taken = tmp_path / f"log.corrupt-{at}"                # what an earlier recovery (or anyone) saved there
    taken.write_bytes(b"saved by an earlier recovery")
    link = tmp_path / f"log.corrupt-{at}.1"              # and a symlink to a file of someone else's
    victim = tmp_path / "victim"
    victim.write_bytes(b"not the log's")
    link.symlink_to(victim)
    with FileLog(path) as log:
        assert list(log.records()) == flat(batches[:1])
        saved = log.recovery.saved_to
    assert taken.read_bytes() == b"saved by an earlier recovery" and victim.read_bytes() == b"not the log's"
    assert saved not in (str(taken), str(link)) and path.read_bytes() + open(saved, "rb").read() == data
    # recovery run again after a crash between saving and truncating: its own file is reused, not copied
    path.write_bytes(data)
    with FileLog(path) as log:
        assert log.recovery.saved_to == saved
    assert sorted(p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name) == sorted(
        {taken.name, link.name, os.path.basename(saved)})


@pytest.mark.parametrize("syscall, which", [("write", "new"), ("fsync", "new"), ("ftruncate", "new"),
                                             ("fsync", "torn"), ("ftruncate", "torn"), ("pread", "torn")])
def test_recovery_that_cannot_read_or_write_is_a_one_line_open_error(tmp_path, monkeypatch, syscall, which):
    # a new log's header, a torn tail's truncation: recovery writes, and the disk may refuse
    path = tmp_path / which
    if which == "torn":
        written(path, 2)
        with open(path, "ab") as f:
            f.write(b"0badc0de 12 [")
    monkeypatch.setattr(storage.os, syscall, _eio)
    with pytest.raises(LogOpenError, match="Input/output error") as e:
        FileLog(path)
    assert str(path) in str(e.value) and "\n" not in str(e.value)
    monkeypatch.undo()
    with FileLog(path) as log:                             # usable once the disk is
        assert len(list(log.records())) == (6 if which == "torn" else 0)
    with FileLog(path) as log:
        assert log.recovery.clean


def test_a_corrupt_log_whose_cut_off_bytes_cannot_be_saved_is_refused_untouched(tmp_path):
    path = tmp_path / ("L" * 250)                          # no room for ".corrupt-<offset>" in the name
    written(path, 2)
    _corrupt_second(path)
    data = path.read_bytes()
    with pytest.raises(LogOpenError, match="File name too long") as e:
        FileLog(path)
    assert "\n" not in str(e.value) and path.read_bytes() == data


def test_a_log_longer_than_one_read_returns_is_read_whole(tmp_path, monkeypatch):
    # pread may return fewer bytes than asked (Linux: at most 2 GiB a call); the rest is not a torn tail
    path = tmp_path / "log"
    batches = written(path, 6)
    real_pread = os.pread
    monkeypatch.setattr(storage.os, "pread", lambda fd, n, at: real_pread(fd, min(n, 100), at))
    with FileLog(path) as log:
        assert log.recovery.clean and list(log.records()) == flat(batches)
    assert len(batches_of(path)) == 6


def test_a_bad_recovery_mode_is_refused_and_leaves_nothing_behind(tmp_path, monkeypatch):
    leftovers = []
    monkeypatch.setattr(sys, "unraisablehook", leftovers.append)
    with pytest.raises(ValueError, match="recovery mode 'paranoid'"):
        FileLog(tmp_path / "log", recovery="paranoid")
    gc.collect()
    assert leftovers == []                                 # no "Exception ignored in __del__" traceback


def test_paths_with_odd_characters(tmp_path):
    odd = tmp_path / "grüße ✓ 'x' $y"
    batches = written(odd, 2)
    with FileLog(odd) as log:
        assert list(log.records()) == flat(batches)
    newline = tmp_path / "a\nb"
    newline.mkdir()
    for path, message in ((newline, "is a directory"), (tmp_path / "nul\0", "NUL")):
        with pytest.raises(LogOpenError, match=message) as e:
            FileLog(path)
        assert "\n" not in str(e.value)
    written(newline / "log", 1)                            # a usable path, shown on one line
    with open(newline / "log", "ab") as f:
        f.write(b"torn")
    with FileLog(newline / "log") as log:
        assert all("\n" not in m for m in log.recovery.messages())


def test_a_lock_that_fails_for_another_reason_is_not_blamed_on_another_writer(tmp_path, monkeypatch):
    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")
    monkeypatch.setattr(storage.fcntl, "flock", no_locks)
    with pytest.raises(LogOpenError, match="No locks available") as e:
        FileLog(tmp_path / "log")
    assert "another process" not in str(e.value)


def test_batches_acknowledged_after_skipping_corruption_survive_a_reopen_in_any_mode(tmp_path):
    # skip-corrupt keeps serving past a corrupt batch; if the batch stayed in the file, the next
    # open in point-in-time mode (the default) would cut there and drop what was acknowledged since
    path = tmp_path / "log"
    batches = written(path, 3)
    at = _corrupt_second(path)
    bad = path.read_bytes()[at:batches_of(path)[1][1]]
    with FileLog(path, recovery="skip-corrupt") as log:
        assert list(log.records()) == flat([batches[0], batches[2]])
        assert open(log.recovery.saved_to, "rb").read() == bad       # the corrupt batch, saved beside
        log.append(commit(4))                                         # acknowledged
    for mode in ("point-in-time", "strict", "skip-corrupt"):
        with FileLog(path, recovery=mode) as log:
            assert log.recovery.clean, mode
            assert list(log.records()) == flat([batches[0], batches[2], commit(4)]), mode


def test_a_forked_child_neither_writes_the_parents_log_nor_keeps_it_locked(tmp_path):
    path = tmp_path / "log"
    log = FileLog(path)
    log.append(commit(1))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                           # the child: try to write, then linger
        try:
            try:
                log.append(commit(2))
                answer = b"appended"
            except BaseException as e:
                answer = f"refused: {type(e).__name__}: {e}".encode()
            os.write(w, answer)
            time.sleep(5)
        finally:
            os._exit(0)
    try:
        os.close(w)
        answer = os.read(r, 4096).decode()
        log.close()
        with FileLog(path) as again:                       # the child still runs: the lock is free all the same
            assert list(again.records()) == commit(1)
        assert answer.startswith("refused") and "fork" in answer, answer
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)


SYSCALLS = ("open", "fstat", "stat", "pread", "write", "fsync", "ftruncate", "rename")


@pytest.mark.parametrize("syscall, mode", [(s, m) for s in SYSCALLS for m in ("point-in-time", "skip-corrupt")
                                           # but for calls the scenario never makes
                                           if (s, m) not in {("rename", "point-in-time"), ("ftruncate", "skip-corrupt")}])
def test_a_disk_error_at_any_call_is_one_clear_error_and_loses_nothing_acknowledged(tmp_path, monkeypatch,
                                                                                   syscall, mode):
    """A log to recover (a corrupt batch, a torn tail), opened, appended to three times and read,
    with an I/O error at the k-th call of one system call, for every k: each error is a one-line
    LogOpenError or StorageError, and the next open serves every acknowledged batch."""
    def scenario(path, acked):
        with FileLog(path, recovery=mode) as log:
            for v in (10, 11, 12):
                try:
                    log.append(commit(v))
                    acked.append(v)
                except StorageError as e:
                    assert str(path) in str(e) and "\n" not in str(e)
            list(log.records())

    original = tmp_path / "original"
    written(original, 3)
    _corrupt_second(original)
    with open(original, "ab") as f:
        f.write(encode(commit(7))[:30])
    kept = {1, 3} if mode == "skip-corrupt" else {1}
    real = getattr(os, syscall)
    calls = 0

    def failing(*args, **kw):
        nonlocal calls
        calls += 1
        if calls == fail_at:
            if syscall == "write":                         # half the bytes reach the file first
                real(args[0], bytes(args[1][:len(args[1]) // 2]))
            raise OSError(errno.EIO, "Input/output error")
        return real(*args, **kw)

    fail_at, k = 0, 0
    while True:
        k += 1
        path = tmp_path / f"log-{k}"
        path.write_bytes(original.read_bytes())
        acked = []
        calls, fail_at = 0, k
        monkeypatch.setattr(storage.os, syscall, failing)
        try:
            scenario(path, acked)
        except (LogOpenError, StorageError) as e:
            assert "\n" not in str(e), (k, e)
        finally:
            monkeypatch.undo()
        if calls < k:                                      # the k-th call never came: every k is done
            break
        with FileLog(path, recovery=mode) as log:
            served = {r["offset"] for r in log.records()}
        assert kept | set(acked) <= served <= kept | {10, 11, 12}, (k, sorted(acked), sorted(served))
    assert k > 1                                           # it failed at least one call


# -- crash injection ----------------------------------------------------------------------

CFG = {"group.min.session.timeout.ms": 10, "group.initial.rebalance.delay.ms": 0}
PARTS = ("t-0", "t-1", "t-2")


def _call(c, api: str, **req) -> dict:
    """A request's response, whether answered at once or (parked) by the end of the call."""
    got = {}
    return c.send(api, req, on_response=got.update) or got


def _join(c, member=""):
    return _call(c, "JoinGroup", group="g", member=member, client="c", session_timeout_ms=30_000,
                 rebalance_timeout_ms=30_000, protocol_type="consumer", protocols=["range"])


def _worker(path: str, ack_fd: int, first: int) -> None:
    """A coordinator process: commits of every partition at once, and generations of group g,
    each acknowledged on the pipe only once its response says it is stored."""
    c = GroupCoordinator(CFG, log=FileLog(path))
    c.begin_load()
    c.load()
    loaded = c.snapshot("g")
    if loaded:                                     # the member of the last stored generation goes on
        mid = loaded["leader"]
    else:
        mid = _join(c)["member"]
        _join(c, mid)
        c.advance(0)
    os.write(ack_fd, b"ready\n")
    i = first
    while True:
        r = c.send("OffsetCommit", dict(group="offsets", member="", generation=-1, offsets={p: i for p in PARTS}))
        if set(r["errors"].values()) == {"NONE"}:
            os.write(ack_fd, b"c %d\n" % i)
        i += 1
        if i % 3 == 0:                             # a new generation; its record is acknowledged by sync
            gen = _join(c, mid)["generation"]
            r = _call(c, "SyncGroup", group="g", member=mid, generation=gen, assignments={mid: [_part(gen)]})
            if r["error"] == "NONE":
                os.write(ack_fd, b"g %d\n" % gen)


def _part(gen: int) -> str:
    return f"t-{gen % 3}"


def _run_and_kill(path, first: int, rnd: random.Random) -> list[tuple]:
    """Start a worker, SIGKILL it at a random moment, return what it acknowledged."""
    r, w = os.pipe()
    p = mp.get_context("fork").Process(target=_worker, args=(str(path), w, first), daemon=True)
    p.start()
    os.close(w)
    acks, buf = [], b""
    deadline = time.monotonic() + 20
    while b"ready\n" not in buf and time.monotonic() < deadline:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        buf += chunk
    assert b"ready\n" in buf, "the worker did not start"
    time.sleep(rnd.uniform(0, 0.15))
    os.kill(p.pid, signal.SIGKILL)
    p.join()
    assert p.exitcode == -signal.SIGKILL, f"the worker stopped by itself (exit code {p.exitcode})"
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        buf += chunk
    os.close(r)
    for ln in buf.decode().splitlines():
        kind, *rest = ln.split()
        if kind == "c":
            acks.append(("c", int(rest[0])))
        elif kind == "g":
            acks.append(("g", int(rest[0])))
    return acks


def _tear(path, rnd: random.Random) -> None:
    """What a crash mid-write can leave: a prefix of the next batch, or zeros, without a newline."""
    with open(path, "ab") as f:
        if rnd.random() < 0.5:
            full = encode(commit(10**9))
            f.write(full[:rnd.randrange(1, len(full) - 1)])
        else:
            f.write(b"\0" * rnd.randrange(1, 512))


def _served(path):
    """What a coordinator that loads the log serves (the commit value, group g), and the history
    the log holds: each commit value with the partitions it was stored for, each generation stored."""
    log = FileLog(path)
    history: dict[int, set] = {}
    gens = []
    for r in log.records():
        if r["type"] == "offset":
            history.setdefault(r["offset"], set()).add(r["partition"])
        elif r["type"] == "group":
            gens.append(r["generation"])
    c = GroupCoordinator(CFG, log=log)
    c.begin_load()
    c.load()
    offs = (c.snapshot("offsets") or {}).get("offsets", {})
    log.close()
    assert all(parts == set(PARTS) for parts in history.values()), f"a commit stored in part: {history}"
    return (next(iter(offs.values())) if offs else None), c.snapshot("g"), set(history), gens


def _trial(tmp_path, seed: int) -> tuple[set, set]:
    """Crash, tear the tail, recover, go on, crash again: after each crash every acknowledged
    write is in the log and served, and beyond them at most the one write that was in flight."""
    rnd = random.Random(seed)
    path = tmp_path / f"log-{seed}"
    commit_v, gen = None, None                    # what the last recovery served
    acked, in_flight = set(), set()               # commit values, over every round
    acked_gens, in_flight_gens = set(), set()
    for _ in range(3):
        acks = _run_and_kill(path, (commit_v or 0) + 1, rnd)
        if rnd.random() < 0.7:
            _tear(path, rnd)
        served_v, g, stored, stored_gens = _served(path)
        commits = [a[1] for a in acks if a[0] == "c"]
        acked.update(commits)
        last = commits[-1] if commits else commit_v
        in_flight.add((last or 0) + 1)
        assert acked <= stored <= acked | in_flight, (sorted(acked - stored), sorted(stored - acked - in_flight))
        assert served_v in (last, (last or 0) + 1), f"acknowledged {last}, served {served_v}"
        gens = [a[1] for a in acks if a[0] == "g"]
        acked_gens.update(gens)
        last_gen = gens[-1] if gens else gen
        in_flight_gens.add((last_gen or 0) + 1)
        assert acked_gens <= set(stored_gens) <= acked_gens | in_flight_gens, (acked_gens, stored_gens)
        if last_gen is not None:
            assert g is not None and g["generation"] in (last_gen, last_gen + 1), (last_gen, g)
        if g is not None:
            assert g["state"] == "Stable" and list(g["assignment"].values()) == [[_part(g["generation"])]], g
        commit_v, gen = served_v, (g["generation"] if g else None)
    return acked, stored            # every commit acknowledged, and what the last recovery holds


@pytest.mark.parametrize("seed", range(12))
def test_crash_injection_loses_nothing_acknowledged(tmp_path, seed):
    acked, stored = _trial(tmp_path, seed)
    assert acked <= stored


@pytest.mark.slow
def test_crash_injection_many_trials(tmp_path):
    lost = {seed: sorted(a - s) for seed in range(1000, 1300) for a, s in [_trial(tmp_path, seed)] if a - s}
    assert not lost


# -- records the coordinator builds from requests the log refuses ------------------------------

def test_a_value_the_log_could_not_hold_is_refused_at_the_door(tmp_path):
    # the log holds Kafka's int32 timeouts and int64 offsets; a request with a wider value could
    # never be decoded by Kafka, so it is refused before the coordinator or the log sees it
    c = GroupCoordinator(CFG, log=FileLog(tmp_path / "log"))
    with pytest.raises(InvalidRequest, match="INT32"):
        c.send("JoinGroup", dict(group="g", member="", client="c", session_timeout_ms=30_000,
                                 rebalance_timeout_ms=1 << 31, protocol_type="consumer", protocols=["range"]))
    with pytest.raises(InvalidRequest, match="INT64"):
        c.send("OffsetCommit", dict(group="o", member="", generation=-1, offsets={"t-0": 1 << 63, "t-1": 5}))
    r = c.send("OffsetCommit", dict(group="o", member="", generation=-1, offsets={"t-1": 5}))
    assert r["errors"] == {"t-1": "NONE"}                 # the coordinator goes on
    assert [rec["offset"] for rec in c.log.records()] == [5]


def test_unicode_and_control_characters_in_ids_round_trip(tmp_path):
    c = GroupCoordinator(CFG, log=FileLog(tmp_path / "log"))
    gid = "grüppe ✓\n\u2028\ud800\0"
    assert c.send("OffsetCommit", dict(group=gid, member="", generation=-1, offsets={"tö\u2028pic-0": 3}))["errors"] \
        == {"tö\u2028pic-0": "NONE"}
    c.log.close()
    c2 = GroupCoordinator(CFG, log=FileLog(tmp_path / "log"))
    c2.begin_load()
    c2.load()
    assert c2.snapshot(gid)["offsets"] == {"tö\u2028pic-0": 3}
