"""Trace records (contracts/trace-format.md, version 1): reading, checking, ordering.

A record that breaks the format is not fatal: it makes its group's verdict
`invalid`, naming the record and what is wrong, and every other group is
checked as usual.  What cannot be tied to a group at all (a line that is not
JSON and names no group) is counted and reported with its file and line.
"""
from __future__ import annotations

import gzip
import heapq
import json
from pathlib import Path
from typing import Any, Iterator

from groupspec.impl.storage import record_problem
from groupspec.spec.kafka import brief

from .codec import BASE_COLUMNS, GROUP_RE, from_row, loads

KINDS = ("request", "response", "timer", "storage", "coordinator", "observe")
TIMER_NAMES = ("heartbeat", "pending-member", "join", "initial-join", "sync")
EVENTS = ("load", "unload", "begin_load", "mark_dead", "expire_offsets")
# `gap` extends the format: records of the group were left out there (a log excerpt's `...`), so no
# checker judges across it
OBSERVE_EVENTS = ("rebalance-start", "join-complete", "leader-sync", "member-removed", "member-left",
                  "member-added", "empty", "dead", "loaded", "unloaded", "fenced", "gap")


class TraceInputError(Exception):
    """A file that cannot be read at all (one line: the file, where, and what to do)."""


class BadRecord(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def _int(rec: dict, key: str, where: str) -> None:
    v = rec.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise BadRecord(f"{where}: `{key}` must be an integer, got {json.dumps(v)[:40]}")


def _one_of(where: str, what: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        raise BadRecord(f"{where}: unknown {what} {json.dumps(value)[:40]} (one of {', '.join(allowed)})")


def check_record(rec: Any, where: str) -> dict:
    """The record, or BadRecord saying what is wrong with it."""
    if not isinstance(rec, dict):
        raise BadRecord(f"{where}: not a JSON object")
    if rec.get("v") != 1:
        raise BadRecord(f"{where}: format version `v` must be 1, got {json.dumps(rec.get('v'))[:40]}")
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
        if "id" not in rec:
            raise BadRecord(f"{where}: a request record needs an `id`")
        if rec.get("response") is not None and not isinstance(rec["response"], dict):
            raise BadRecord(f"{where}: `response` must be an object or null")
    elif kind == "response":
        if "id" not in rec or not isinstance(rec.get("response"), dict):
            raise BadRecord(f"{where}: a response record needs `id` and `response` (an object)")
    elif kind == "timer":
        _one_of(where, "timer", rec.get("timer"), TIMER_NAMES)
    elif kind == "storage":
        if not isinstance(rec.get("result"), str):
            raise BadRecord(f"{where}: a storage record needs `result` (an error name)")
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

def open_text(path: Path):
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8", errors="strict", newline="")
    return open(path, "r", encoding="utf-8", errors="strict", newline="")


def expand(paths: list[str]) -> list[Path]:
    """Files under the given paths (folders: their *.jsonl, *.json, *.gz, *.parquet files, sorted)."""
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(q for q in path.rglob("*") if q.is_file() and not q.name.startswith((".", "_"))
                           and q.suffix in (".jsonl", ".json", ".gz", ".parquet", ".ndjson"))
            if not found:
                raise TraceInputError(f"{path}: a folder with no trace files (*.jsonl, *.jsonl.gz, *.parquet)")
            out += found
        elif path.is_file():
            out.append(path)
        else:
            raise TraceInputError(f"{path}: no such file or folder")
    return out


def is_parquet(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    try:
        with open_text(path) as f:
            for n, line in enumerate(f, 1):
                yield n, line
    except UnicodeDecodeError as e:
        raise TraceInputError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start} of a line); "
                              f"give JSON Lines, gzip'ed JSON Lines or Parquet") from None
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise TraceInputError(f"{path}: cannot be read ({getattr(e, 'strerror', None) or e}); "
                              f"a gzip file cut short must be recompressed") from None


def parse_line(line: str, file: str) -> tuple[str | None, Any]:
    """(group, record) from a JSON line of `file`; a line that is not JSON gives (its group if one is
    visible, a BadRecord naming the file and the record by its first characters: Spark reads
    lines without their numbers, and both ways of checking must say the same)."""
    line = line.rstrip("\r\n")
    try:
        rec = loads(line)
    except ValueError as e:
        m = GROUP_RE.search(line)
        group = _unescape(m.group(1)) if m else None
        return (group, BadRecord(f"{file}: the record {line[:70]!r}{'...' if len(line) > 70 else ''} is not valid "
                                 f"JSON ({e.msg} at column {e.colno}): cut short or corrupt"))
    if isinstance(rec, dict) and isinstance(rec.get("group"), str):
        return rec["group"], rec
    return None, BadRecord(f"{file}: the record {line[:70]!r} has no string `group`")


def _unescape(text: str) -> str | None:
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


def parquet_columns_missing(path: Path) -> list[str]:
    import pyarrow.parquet as pq
    try:
        names = set(pq.read_schema(path).names)
    except Exception as e:  # noqa: BLE001 - pyarrow raises several kinds for a bad file
        raise TraceInputError(f"{path}: not a readable Parquet file ({str(e)[:120]})") from None
    return [c for c in BASE_COLUMNS if c not in names]


def read_groups(paths: list[str], skipped: list | None = None) -> tuple[dict[str, list], list[str]]:
    """Every record of the files by group, in input order (a BadRecord where a line is bad), and
    the problems no group can own (a line that is not JSON and names no group).  A file that cannot
    be read at all raises TraceInputError, or, given a `skipped` list, is skipped and named there."""
    groups: dict[str, list] = {}
    orphans: list[str] = []
    for path in expand(paths):
        if skipped is None:
            _read_file(path, groups, orphans)
            continue
        mark = {g: len(r) for g, r in groups.items()}
        try:
            _read_file(path, groups, orphans)
        except TraceInputError as e:
            skipped.append(str(e))
            for g in list(groups):              # what the file gave before its bad part goes too
                if g not in mark:
                    del groups[g]
                else:
                    del groups[g][mark[g]:]
    return groups, orphans


def _read_file(path: Path, groups: dict, orphans: list) -> None:
    if is_parquet(path):
        import pyarrow.parquet as pq
        missing = parquet_columns_missing(path)
        if missing:
            raise TraceInputError(f"{path}: Parquet file without the columns {', '.join(missing)} "
                                  f"(trace-format.md lists the fields every record has)")
        for i, row in enumerate(pq.read_table(path).to_pylist(), 1):
            rec = from_row(row)
            g = rec.get("group")
            if isinstance(g, str):
                groups.setdefault(g, []).append(rec)
            else:
                orphans.append(f"{path}: row {i}: no group")
        return
    name = str(path.resolve())
    for n, line in read_lines(path):
        if not line.strip():
            continue
        g, rec = parse_line(line, name)
        if g is None:
            orphans.append(rec.message)
        else:
            groups.setdefault(g, []).append(rec)
