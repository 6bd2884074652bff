"""How a trace record is written and read back: JSON text, a Parquet row, and the simulator's bugs file.

`groupspec simulate` writes records (JSON Lines through impl/trace.py's sink, or Parquet rows
here) and the trace checker reads them (records.py, in process; spark.py, on Spark): each
encoding and its inverse are here, once, so that what is written is what is read.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson

# Parquet columns: the common fields typed, the rest (nested values, extensions) JSON text
BASE_COLUMNS = ("v", "group", "seq", "ts_ms", "source", "kind")
JSON_COLUMNS = ("request", "response", "members", "config", "extra")
SCALAR_COLUMNS = ("id", "api", "timer", "member", "result", "event", "state", "generation", "leader",
                  "protocol", "reason", "issued", "at_once")
# A record's group, found in its JSON text without parsing it: the first `"group": "..."` of the line.  The
# Spark job finds it in the JVM (Java's regex), the in-process reader here (Python's), and both file a line by
# it, so they must agree on every line: the pattern says what it means in both (JSON's four blanks, not \s,
# which each defines otherwise; any character after a backslash, not `.`, which Java stops at \r and U+2028),
# and each piece of text is taken by a possessive quantifier, never backtracked into.
GROUP_PATTERN = r'"group"[ \t\r\n]*+:[ \t\r\n]*+"((?:[^"\\]++|\\[\s\S])*+)"'
GROUP_RE = re.compile(GROUP_PATTERN)
# No field of the format nests deeper than 7 (a `load`'s loaded members' protocols); a line nested far deeper
# is refused before anything walks it, which would exhaust Python's stack (json itself does, past about 1,000)
MAX_DEPTH = 64


class TooDeep(ValueError):
    """A JSON text nested more than MAX_DEPTH levels."""

    def __init__(self):
        super().__init__(f"nested more than {MAX_DEPTH} levels deep (no field of the format nests deeper than 7)")


def loads(text: str) -> Any:
    """A JSON value, by orjson (a third of json's time; parsing is most of reading).  What orjson
    refuses (NaN, a lone surrogate, a number beyond a double, text that is not JSON) goes to json,
    so such a value, and every error, is json's.  One difference is left: an integer past 64 bits,
    which no field of the format holds (Kafka's are INT64 at most), orjson reads as a float, so a
    record with one is refused by its field's check instead of read as a Python int (looking for such
    a number in every line would cost more than orjson saves).

    A text nested more than MAX_DEPTH levels is TooDeep (a ValueError), whether or not it parses."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            value = json.loads(text)
        except RecursionError:
            raise TooDeep() from None
    # counting brackets (in C) spares the walk on every line shallower than the limit
    if text.count("[") + text.count("{") > MAX_DEPTH and _deeper_than(value, MAX_DEPTH):
        raise TooDeep()
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` has containers nested more than `limit` deep (a loop: no recursion to exhaust)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > limit:
                return True
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
    return False


def from_row(row: dict) -> dict:
    """A Parquet row (nested values as JSON text) back to a record."""
    rec: dict = {}
    for k, v in row.items():
        if v is None:
            continue
        if k in JSON_COLUMNS:
            try:
                v = loads(v)
            except (TypeError, ValueError):
                pass
            if k == "extra" and isinstance(v, dict):
                rec.update(v)
                continue
        rec[k] = v
    for k in ("v", "seq", "ts_ms", "generation"):
        if isinstance(rec.get(k), float) and rec[k].is_integer():
            rec[k] = int(rec[k])
    return rec


def parquet_schema():
    import pyarrow as pa
    fields = [("v", pa.int64()), ("group", pa.string()), ("seq", pa.int64()), ("ts_ms", pa.int64()),
              ("source", pa.string()), ("kind", pa.string())]
    fields += [(c, pa.int64() if c == "generation" else pa.bool_() if c == "at_once" else pa.string())
               for c in SCALAR_COLUMNS]
    fields += [(c, pa.string()) for c in JSON_COLUMNS]
    return pa.schema(fields)


def to_row(rec: dict) -> dict:
    """A record as a Parquet row (see from_row)."""
    row = {c: rec.get(c) for c in BASE_COLUMNS}
    extra = {}
    for k, v in rec.items():
        if k in BASE_COLUMNS:
            continue
        if k in JSON_COLUMNS:
            row[k] = json.dumps(v, separators=(",", ":"))
        elif k == "generation" and isinstance(v, int) and not isinstance(v, bool):
            row[k] = v
        elif k == "at_once" and isinstance(v, bool):
            row[k] = v
        elif k in SCALAR_COLUMNS and k not in ("generation", "at_once") and isinstance(v, (str, int)) \
                and not isinstance(v, bool):
            row[k] = str(v)
        else:
            extra[k] = v
    if extra:
        row["extra"] = json.dumps(extra, separators=(",", ":"))
    return row


class ParquetSink:
    """Trace records as Parquet rows (nested values as JSON text), written in row groups."""

    def __init__(self, path: Path, batch: int = 100_000):
        import pyarrow.parquet as pq
        self.schema = parquet_schema()
        self.w = pq.ParquetWriter(str(path), self.schema, compression="zstd")
        self.rows: list = []
        self.batch = batch
        self.count = 0

    def __call__(self, rec: dict) -> None:
        self.rows.append(to_row(rec))
        self.count += 1
        if len(self.rows) >= self.batch:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        if self.rows:
            self.w.write_table(pa.Table.from_pylist(self.rows, schema=self.schema))
            self.rows = []

    def close(self) -> None:
        self._flush()
        self.w.close()


def write_bugs(path: Path, info: list[dict]) -> None:
    """The bugs file: one JSON object a line for each group run with a bug ({group, bug, fired,
    first_fired_ts_ms})."""
    Path(path).write_text("".join(json.dumps(b) + "\n" for b in info), encoding="utf-8")


def read_bugs(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
