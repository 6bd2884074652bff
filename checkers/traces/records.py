"""Trace records (contracts/trace-format.md, version 1): reading, checking, ordering.

A record that breaks the format is not fatal: it makes its group's verdict
`invalid`, naming the record and what is wrong, and every other group is
checked as usual.  That holds for every line that names its group, readable
JSON or not (a line cut short).  A line that cannot be tied to a group (not
JSON and no group in it, JSON null, a scalar, an array, an object without a
string `group`, a group id with a lone surrogate, bytes that are not UTF-8)
is bad input: counted and named with its file and line (`Unrouted`), and the
command exits 2.  A file that cannot be read at all (a gzip cut short or
corrupt, a Parquet file without the format's columns) is a TraceInputError.

Both ways of checking file a line under the same group, by the same rule
(`parse_line`): the first `"group": "..."` of its text (codec.GROUP_PATTERN;
the Spark job finds it in the JVM), so the record's own `group` must be that
one: a record whose nested object names another group first is invalid.
"""
from __future__ import annotations

import gzip
import heapq
import io
import json
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from groupspec.impl.storage import record_problem
from groupspec.spec.kafka import ERRORS, INT64_MAX, INT64_MIN, brief

from .codec import BASE_COLUMNS, GROUP_RE, TooDeep, from_row, loads

KINDS = ("request", "response", "timer", "storage", "coordinator", "observe")
TIMER_NAMES = ("heartbeat", "pending-member", "join", "initial-join", "sync")
EVENTS = ("load", "unload", "begin_load", "mark_dead", "expire_offsets")
# `gap` extends the format: records of the group were left out there (a log excerpt's `...`), so no
# checker judges across it
OBSERVE_EVENTS = ("rebalance-start", "join-complete", "leader-sync", "member-removed", "member-left",
                  "member-added", "empty", "dead", "loaded", "unloaded", "fenced", "gap")


# The records of one group a Spark task holds at most: about 2 KB each once read (a parsed record and its
# place in the history), so a million is about 2 GB of a Python worker's memory; `--max-group-records`
MAX_GROUP_RECORDS = 1_000_000


class TraceInputError(Exception):
    """A file that cannot be read at all (one line: the file, where, and what to do)."""


class BadRecord(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def _int(rec: dict, key: str, where: str) -> None:
    v = rec.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise BadRecord(f"{where}: `{key}` must be an integer, got {brief(v)}")
    if not INT64_MIN <= v <= INT64_MAX:
        raise BadRecord(f"{where}: `{key}` {v} is beyond Kafka's INT64 ({INT64_MIN} to {INT64_MAX})")


def _one_of(where: str, what: str, value: Any, allowed: tuple) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise BadRecord(f"{where}: unknown {what} {brief(value)} (one of {', '.join(allowed)})")


def _optional_string(rec: dict, key: str, where: str, what: str) -> None:
    if rec.get(key) is not None and not isinstance(rec[key], str):
        raise BadRecord(f"{where}: `{key}` ({what}) must be a string or null, got {brief(rec[key])}")


def _request_id(rec: dict, where: str) -> None:
    """A request's `id` pairs its parked request with the answer: a string or an integer, so that it
    can be looked up (a list or an object cannot)."""
    if "id" not in rec:
        raise BadRecord(f"{where}: a {rec['kind']} record needs an `id`")
    rid = rec["id"]
    if not isinstance(rid, (str, int)) or isinstance(rid, bool):
        raise BadRecord(f"{where}: `id` must be a string or an integer, got {brief(rid)}")


def check_record(rec: Any, where: str) -> dict:
    """The record, or BadRecord saying what is wrong with it."""
    if not isinstance(rec, dict):
        raise BadRecord(f"{where}: not a JSON object")
    if rec.get("v") != 1 or isinstance(rec.get("v"), bool):
        raise BadRecord(f"{where}: format version `v` must be 1, got {brief(rec.get('v'))}")
    if not isinstance(rec.get("group"), str):
        raise BadRecord(f"{where}: `group` must be a string")
    _int(rec, "seq", where)
    _int(rec, "ts_ms", where)
    if not isinstance(rec.get("source"), str):
        raise BadRecord(f"{where}: `source` must be a string")
    kind = rec.get("kind")
    _one_of(where, "kind", kind, KINDS)
    if kind == "request":
        if not isinstance(rec.get("api"), str) or not isinstance(rec.get("request"), dict):
            raise BadRecord(f"{where}: a request record needs `api` (a string) and `request` (an object)")
        _request_id(rec, where)
        if rec.get("response") is not None and not isinstance(rec["response"], dict):
            raise BadRecord(f"{where}: `response` must be an object or null")
        _optional_string(rec, "issued", where, "the member id the JoinGroup was given")
    elif kind == "response":
        _request_id(rec, where)
        if not isinstance(rec.get("response"), dict):
            raise BadRecord(f"{where}: a response record needs `id` and `response` (an object)")
    elif kind == "timer":
        _one_of(where, "timer", rec.get("timer"), TIMER_NAMES)
        _optional_string(rec, "member", where, "the member whose timer fired")
    elif kind == "storage":
        result = rec.get("result")
        if not isinstance(result, str) or result not in ERRORS:
            raise BadRecord(f"{where}: a storage record's `result` must be one of Kafka's error names (NONE, "
                            f"NOT_LEADER_OR_FOLLOWER, ...: Errors.java), got {brief(result)}")
    elif kind == "coordinator":
        _one_of(where, "coordinator event", rec.get("event"), EVENTS)
        if "loaded" in rec:
            _loaded(rec, where)
    elif kind == "observe":
        if rec.get("event") is not None:
            _one_of(where, "observed event", rec["event"], OBSERVE_EVENTS)
        if rec.get("generation") is not None:
            _int(rec, "generation", where)
    return rec


def _loaded(rec: dict, where: str) -> None:
    """`loaded` (an extension on a `load`): the group's records the log held, as the storage writes them."""
    loaded = rec["loaded"]
    if rec["event"] != "load" or not isinstance(loaded, list):
        raise BadRecord(f"{where}: `loaded` is a list of log records, on a `load` event only")
    for i, r in enumerate(loaded):
        problem = record_problem(r)
        if problem is None and r["group"] != rec["group"]:
            problem = f"it is group {brief(r['group'])}'s"
        if problem:
            raise BadRecord(f"{where}: `loaded[{i}]` is not a log record of this group: {problem}")


def where_of(rec: dict) -> str:
    return f"record seq {rec.get('seq')} (source {rec.get('source')})"


def order(records: list[dict]) -> list[dict]:
    """The group's history: each source's records in `seq` order, sources merged by time (then seq).

    `records` come in input order; a source whose `seq` does not increase in input order is an
    error (BadRecord), so is a record that breaks the format."""
    by_source: dict[str, list[dict]] = {}
    for i, rec in enumerate(records):
        check_record(rec, f"record {i + 1} of the group" if not isinstance(rec, dict) or "seq" not in rec
                     else where_of(rec))
        lst = by_source.setdefault(rec["source"], [])
        if lst and rec["seq"] <= lst[-1]["seq"]:
            raise BadRecord(f"{where_of(rec)}: `seq` goes backwards or repeats (after seq {lst[-1]['seq']}); "
                            f"records of one source and group must have strictly increasing seq")
        lst.append(rec)
    if len(by_source) == 1:
        return next(iter(by_source.values()))
    # by time; at the same millisecond, by seq (exact for one writer that changes source, as the
    # runtime's does when its group moves; a fair guess between independent brokers)
    return list(heapq.merge(*by_source.values(), key=lambda r: (r["ts_ms"], r["seq"])))


# -- reading files (in process) ------------------------------------------------------------

@dataclass
class Unrouted:
    """Lines no group owns (bad input): how many, and the first few, each `file:line: what is wrong`."""
    count: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, message: str, n: int = 1) -> None:
        self.count += n
        if len(self.examples) < 5:
            self.examples.append(message)

    def first_line(self) -> str:
        """The problem in one line: the first, and how many more."""
        more = self.count - 1
        return self.examples[0] + (f" (and {more:,} more line{'s' if more > 1 else ''} that no group owns)"
                                   if more else "")


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def open_text(path: Path):
    """The file's lines as text, gunzipped if it is gzip: opened once and peeked at, so that a pipe
    (`<(zcat ...)`) is read from its first byte."""
    raw = open(path, "rb")
    try:
        gz = raw.peek(2)[:2] == b"\x1f\x8b"
        binary = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
    except BaseException:
        raw.close()
        raise
    # lines as bytes: each is decoded alone, so that one that is not UTF-8 is named by its line
    return raw, binary


def expand(paths: list[str]) -> list[Path]:
    """Files under the given paths (folders: their *.jsonl, *.json, *.gz, *.parquet files, sorted)."""
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if not p.strip():
            raise TraceInputError("a trace path is empty; give a file or a folder")
        if path.is_dir():
            found = sorted(q for q in path.rglob("*") if q.is_file() and not q.name.startswith((".", "_"))
                           and q.suffix in (".jsonl", ".json", ".gz", ".parquet", ".ndjson"))
            if not found:
                raise TraceInputError(f"{path}: a folder with no trace files (*.jsonl, *.jsonl.gz, *.parquet)")
            out += found
        elif path.exists():
            out.append(path)          # a file, or a pipe or device (read as text, in process only)
        else:
            raise TraceInputError(f"{path}: no such file or folder")
    return out


def is_parquet(path: Path) -> bool:
    """Whether a regular file begins as Parquet does (a pipe is never Parquet: Parquet is read from its end)."""
    if not _is_regular(path):
        return False
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def read_lines(path: Path) -> Iterator[tuple[int, str | None, str]]:
    """(line number, the line as text or None if it is not UTF-8, what is wrong with it then) for each
    line of a JSON Lines file, plain or gzip'ed; TraceInputError if the file cannot be read on."""
    n = 0
    try:
        raw, binary = open_text(path)
        with raw, binary:
            # newline handling as Spark's text reader (Hadoop's LineReader): \n, \r\n or \r ends a line
            for n, line in enumerate(io.TextIOWrapper(binary, encoding="latin-1", newline=""), 1):
                try:
                    yield n, line.encode("latin-1").decode("utf-8"), ""
                except UnicodeDecodeError as e:
                    yield n, None, f"not UTF-8 text ({e.reason} at byte {e.start + 1} of the line)"
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise _broken_gzip(path, n, e) from None
    except OSError as e:
        raise TraceInputError(f"{path}: cannot be read{f' after line {n:,}' if n else ''} "
                              f"({e.strerror or e})") from None


def _broken_gzip(path: Path, lines: int, e: Exception) -> TraceInputError:
    cut = f"or cut it at the last good line (zcat {path.name} | head -n {lines})" if lines else \
        "no line of it can be read"
    return TraceInputError(f"{path}: a gzip file cut short or corrupt after line {lines:,} ({e or type(e).__name__}); "
                           f"recompress it from the source, {cut}")


def gzip_problem(path: Path) -> str | None:
    """For a local file read by its name, as Spark reads it (gunzipped if and only if it is named .gz):
    what makes it read otherwise than the in-process reader reads it (by its first bytes), or not at
    all (a gzip cut short or corrupt: read through here, so that the job does not fail on it), or None."""
    if not _is_regular(path) or is_parquet(path):
        return None
    named = path.name.endswith(".gz")
    try:
        with open(path, "rb") as raw:
            gz = raw.peek(2)[:2] == b"\x1f\x8b"
            if gz and not named:
                return (f"{path}: gzip'ed, but its name does not end in .gz, and Spark reads a file by its name: "
                        f"rename it {path.name}.gz, or check it with --in-process")
            if named and not gz and raw.peek(1):
                return (f"{path}: named .gz but not gzip'ed, and Spark reads a file by its name: rename it without "
                        f".gz, or check it with --in-process")
            if not gz:
                return None
            lines = 0
            try:
                with gzip.GzipFile(fileobj=raw, mode="rb") as f:
                    while chunk := f.read(1 << 20):
                        lines += chunk.count(b"\n")
            except (EOFError, gzip.BadGzipFile, zlib.error) as e:
                return str(_broken_gzip(path, lines, e))
    except OSError as e:
        return f"{path}: cannot be read ({e.strerror or e})"
    return None


def parse_line(line: str, file: str) -> tuple[str | None, Any]:
    """The group a JSON Lines line belongs to, and its record (a BadRecord if it breaks the format).
    A line that is blank gives (None, None); one no group owns gives (None, what is wrong with it).

    The group is the first `"group": "..."` of the text (both ways of checking file a line by it);
    a BadRecord names the file and the record by its first characters (Spark reads lines without
    their numbers, and both ways must give the same verdicts)."""
    line = line.rstrip("\r\n")
    if line.startswith("\ufeff"):            # a byte-order mark, as Windows tools begin UTF-8 files
        line = line[1:]
    if not line.strip(" \t"):
        return None, None
    m = GROUP_RE.search(line)
    if m is None:
        return None, _no_group(line)
    group = _unescape(m.group(1))
    if group is None:
        return None, f"its `group` {m.group(1)[:40]!r} is not a JSON string (a bad escape)"
    if "\\" in m.group(1) and any("\ud800" <= c <= "\udfff" for c in group):
        return None, (f"its `group` {brief(group)} holds a lone surrogate, which no UTF-8 text does: not a "
                      f"Kafka group id")
    shown = f"{line[:70]!r}{'...' if len(line) > 70 else ''}"
    try:
        rec = loads(line)
    except TooDeep as e:
        return group, BadRecord(f"{file}: the record {shown} is {e}")
    except ValueError as e:
        return group, BadRecord(f"{file}: the record {shown} is not valid JSON ({e.msg} at column {e.colno}): cut "
                                f"short or corrupt")
    if not isinstance(rec, dict):
        return group, BadRecord(f"{file}: the line {shown} is a JSON {_json_type(rec)}, not an object")
    if rec.get("group") != group:
        return group, BadRecord(f"{file}: the record {shown} has `group` {brief(rec.get('group'))}, but its line "
                                f"names group {brief(group)} before it (in a nested object, or a repeated key); a "
                                f"record's own `group` must come first in its line (the Spark job reads it from "
                                f"the text)")
    return group, rec


def _no_group(line: str) -> str:
    """What is wrong with a line that names no group."""
    if "\x00" in line:
        return "holds NUL bytes (as a file preallocated or cut by a crash does), not a JSON object"
    try:
        value = loads(line)
    except TooDeep as e:
        return f"a JSON value {e}, not a record"
    except ValueError as e:
        return f"not JSON ({e.msg} at column {e.colno}: {line[:40]!r}) and names no group"
    if not isinstance(value, dict):
        return f"a JSON {_json_type(value)}, not an object: a trace is one JSON object a line"
    if "group" not in value:
        return "a JSON object without a `group`: every record names its group"
    if isinstance(value["group"], str):
        return "its `group` key is written with escapes; write it as plain `\"group\"` (readers find it by its text)"
    return f"`group` must be a string (the group id), got {brief(value['group'])}"


def _json_type(value: Any) -> str:
    return {type(None): "null", bool: "boolean", list: "array", str: "string"}.get(type(value), "number")


def _unescape(text: str) -> str | None:
    if "\\" not in text:
        return text
    try:
        return json.loads(f'"{text}"')
    except ValueError:
        return None


def file_name(uri: str) -> str:
    """A file as both ways of reading name it (Spark gives a file: URI)."""
    from urllib.parse import unquote
    if uri.startswith("file:"):
        uri = unquote(uri[5:])
        while uri.startswith("//"):
            uri = uri[1:]
    return uri


def parquet_problem(path: Path) -> str | None:
    """What makes a Parquet file unusable as a trace (unreadable, a column of the format missing, `group`
    not text), or None."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as e:
        return f"not a readable Parquet file ({str(e)[:120]})"
    missing = [c for c in BASE_COLUMNS if c not in schema.names]
    if missing:
        return (f"Parquet file without the columns {', '.join(missing)} (trace-format.md lists the fields every "
                f"record has)")
    kind = schema.field("group").type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return (f"the `group` column is {kind}, not a string: the group id is text (write it as a string "
                f"column)")
    return None


def read_groups(paths: list[str], skipped: list | None = None) -> tuple[dict[str, list], Unrouted]:
    """Every record of the files by group, in input order (a BadRecord where a line is bad), and
    the lines no group owns.  A file that cannot be read at all raises TraceInputError, or, given a
    `skipped` list, is skipped and named there."""
    groups: dict[str, list] = {}
    unrouted = Unrouted()
    for path in expand(paths):
        if skipped is None:
            _read_file(path, groups, unrouted)
            continue
        mark = {g: len(r) for g, r in groups.items()}
        seen = (unrouted.count, len(unrouted.examples))
        try:
            _read_file(path, groups, unrouted)
        except TraceInputError as e:
            skipped.append(str(e))
            unrouted.count = seen[0]
            del unrouted.examples[seen[1]:]
            for g in list(groups):              # what the file gave before its bad part goes too
                if g not in mark:
                    del groups[g]
                else:
                    del groups[g][mark[g]:]
    return groups, unrouted


def _read_file(path: Path, groups: dict, unrouted: Unrouted) -> None:
    for group, got in _entries(path):
        if group is None:
            unrouted.add(got)
        else:
            groups.setdefault(group, []).append(got)


def _entries(path: Path) -> Iterator[tuple[str | None, Any]]:
    """(group, its record or a BadRecord) for each line or row of a file that a group owns, (None, `file:line:
    what is wrong`) for one no group owns; blank lines give nothing.  TraceInputError if the file cannot be
    read on."""
    if is_parquet(path):
        yield from _parquet_entries(path)
        return
    name = str(path.resolve())
    for n, line, problem in read_lines(path):
        if line is None:
            yield None, f"{name}:{n}: {problem}"
            continue
        g, rec = parse_line(line, name)
        if g is not None:
            yield g, rec
        elif rec is not None:
            yield None, f"{name}:{n}: {rec}"


def _parquet_entries(path: Path) -> Iterator[tuple[str | None, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    problem = parquet_problem(path)
    if problem:
        raise TraceInputError(f"{path}: {problem}")
    name, n = str(path.resolve()), 0
    try:
        for batch in pq.ParquetFile(path).iter_batches():
            for row in batch.to_pylist():
                n += 1
                rec = from_row(row)
                g = rec.get("group")
                if g is None:
                    yield None, f"{name}: row {n}: `group` is null: every record names its group"
                else:
                    yield g, rec
    except (OSError, pa.ArrowException) as e:
        raise TraceInputError(f"{path}: a Parquet file that cannot be read on after row {n:,} ({str(e)[:120]})") \
            from None


def first_unrouted(path: Path) -> str | None:
    """The first line of a local file that no group owns, as the in-process reader names it (the Spark
    job knows its lines without their numbers); read up to that line only."""
    try:
        return next((got for group, got in _entries(path) if group is None), None)
    except TraceInputError:
        return None
