"""`traces check` given what a hostile user gives it (issue 25): never a traceback, never a silent pass.

A line no group owns (not JSON, null, a scalar, an array, NUL bytes, no string `group`, a lone
surrogate, not UTF-8, nested tens of thousands deep) is counted and named by file and line, exit 2,
and the other groups are still checked; a record of the wrong type makes its group `invalid`, naming
the record; a file that cannot be read, or input in which nothing was checked, is one line, exit 2.
Hypothesis writes random JSON values and lines, and records with a field of the wrong type.  The same
inputs on Spark: tests/test_traces_spark.py."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from test_cli_input import refused, run_cli

from groupspec.checkers.traces.simulate import simulate
from groupspec.impl.trace import ListSink

DEEP = "[" * 30_000 + "]" * 30_000


def _good() -> list[dict]:
    sink = ListSink()
    simulate(1, sink, seed=2, events_per_group=25)
    return list(sink)


GOOD = _good()
GOOD_GROUP = GOOD[0]["group"]


def lines(records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def renamed(group: str) -> list[dict]:
    """The good group's trace as `group`'s (its id wherever it is: in requests, in the loaded log records)."""
    return json.loads(json.dumps(GOOD).replace(json.dumps(GOOD_GROUP), json.dumps(group)))


def other(at: str, changes: dict, group: str = "bad") -> str:
    """The good group's trace as `group`, its first record of kind `at` changed."""
    recs = renamed(group)
    first = next(i for i, r in enumerate(recs) if r["kind"] == at)
    recs[first] = {**recs[first], **changes}
    return lines(recs)


# a line beside the good group's trace that no group owns: (what is in the line, what the message says)
UNOWNED = [
    ("not json at all", "not JSON (Expecting value at column 1"),
    ("null", "a JSON null, not an object"),
    ("42", "a JSON number, not an object"),
    ('"text"', "a JSON string, not an object"),
    ("[1, 2]", "a JSON array, not an object"),
    ("\0\0\0\0", "holds NUL bytes"),
    (DEEP, "nested more than 64 levels deep"),
    ('{"v": 1, "seq": 1}', "a JSON object without a `group`"),
    ('{"v": 1, "group": ["g"], "seq": 1}', "`group` must be a string (the group id), got ['g']"),
    ('{"v": 1, "group": {"id": "g"}, "seq": 1}', "`group` must be a string (the group id)"),
    ('{"v": 1, "group": "g\\ud800", "seq": 1}', "holds a lone surrogate"),
    ('{"v": 1, "group": "g\\x", "seq": 1}', "is not a JSON string (a bad escape)"),
]


@pytest.mark.parametrize("line,says", UNOWNED, ids=[u[1][:30] for u in UNOWNED])
def test_a_line_no_group_owns_is_named_by_file_and_line(monkeypatch, capsys, tmp_path, line, says):
    f = tmp_path / "t.jsonl"
    f.write_text(lines(GOOD[:10]) + line + "\n" + lines(GOOD[10:]), encoding="utf-8", errors="surrogatepass")
    code, out, err = run_cli(monkeypatch, capsys, "traces", "check", str(f), "--out", str(tmp_path / "o"),
                             "--in-process", "--json")
    assert code == 2 and "Traceback" not in out + err, (code, err)
    assert json.loads(out)["verdicts"] == {"ok": 1, "violation": 0, "invalid": 0}     # the good group checked
    assert err.count("\n") == 1 and err.startswith(f"groupspec: {f}:11: ") and says in err, err
    assert "fix or remove such lines" in err


def test_bytes_that_are_not_utf8_are_named_by_line(monkeypatch, capsys, tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_bytes(lines(GOOD).encode() + b'{"v": 1, "group": "\xff\xfe"}\n')
    code, out, err = run_cli(monkeypatch, capsys, "traces", "check", str(f), "--out", str(tmp_path / "o"),
                             "--in-process")
    assert code == 2 and f"{f}:{len(GOOD) + 1}: not UTF-8 text (invalid start byte at byte 20" in err


# a record of another group with one field of the wrong type (the first of its kind): its group is invalid,
# the good one ok
INVALID = [
    ("request", dict(id=[1]), "`id` must be a string or an integer, got [1]"),
    ("response", dict(id={"n": 1}), "`id` must be a string or an integer"),
    ("timer", dict(member=["c1"]), "`member` (the member whose timer fired) must be a string or null"),
    ("timer", dict(member={"m": 1}), "`member` (the member whose timer fired) must be a string or null"),
    ("storage", dict(result="NO_SUCH_ERROR"), "`result` must be one of Kafka's error names"),
    ("storage", dict(result=7), "`result` must be one of Kafka's error names"),
    ("request", dict(seq=2**70), "`seq` must be an integer"),
    ("request", dict(seq=True), "`seq` must be an integer, got True"),
    ("timer", dict(v=True), "format version `v` must be 1, got True"),
    ("request", dict(kind=["request"]), "unknown kind ['request']"),
    ("request", dict(issued=5), "`issued` (the member id the JoinGroup was given) must be a string or null"),
    ("request", dict(extra=json.loads(DEEP[:200] + DEEP[-200:])), "nested more than 64 levels deep"),
]


@pytest.mark.parametrize("at,change,says", INVALID, ids=[i[2][:30] for i in INVALID])
def test_a_record_of_the_wrong_type_makes_its_group_invalid(monkeypatch, capsys, tmp_path, at, change, says):
    f = tmp_path / "t.jsonl"
    f.write_text(lines(GOOD) + other(at, change), encoding="utf-8")
    code, out, err = run_cli(monkeypatch, capsys, "traces", "check", str(f), "--out", str(tmp_path / "o"),
                             "--in-process", "--json")
    assert code == 1 and err == "", err
    s = json.loads(out)
    assert s["verdicts"] == {"ok": 1, "violation": 0, "invalid": 1}
    (bad,) = s["worst"]
    assert bad["group"] == "bad" and says in bad["detail"], bad["detail"]
    assert bad["detail"].startswith(("record seq", str(f))), bad["detail"]       # the record, or its file


def _gz(data: bytes) -> bytes:
    return gzip.compress(data)


def _parquet(path: Path, columns: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table(columns), str(path))


def _trace_parquet(path: Path, group_type=None, rows=None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from groupspec.checkers.traces.codec import parquet_schema, to_row
    schema = parquet_schema()
    if group_type is not None:
        schema = schema.set(schema.get_field_index("group"), pa.field("group", group_type))
    table = pa.Table.from_pylist([to_row(r) for r in (rows or [])], schema=schema) if rows else schema.empty_table()
    pq.write_table(table, str(path))


# a file that gives nothing to check, or cannot be read: (name, how to write it, what the one line says)
FILES = [
    ("t.jsonl", lambda p: p.write_bytes(b""), "nothing was checked: {f} holds no trace record"),
    ("t.jsonl", lambda p: p.write_bytes(b"\n  \n\t\n\r\n"), "nothing was checked: {f} holds no trace record"),
    ("t.jsonl.gz", lambda p: p.write_bytes(_gz(b"")), "nothing was checked: {f} holds no trace record"),
    ("t.jsonl.gz", lambda p: p.write_bytes(_gz(lines(GOOD).encode())[:-30]),
     "{f}: a gzip file cut short or corrupt after line"),
    ("t.jsonl.gz", lambda p: p.write_bytes(_gz(lines(GOOD).encode())[:10] + b"\x00garbage" * 20),
     "{f}: a gzip file cut short or corrupt"),
    ("t.parquet", lambda p: _trace_parquet(p), "nothing was checked: {f} holds no trace record"),
    ("t.parquet", lambda p: _trace_parquet(p, __import__("pyarrow").int64(), [{**r, "group": 7} for r in GOOD]),
     "the `group` column is int64, not a string"),
    ("t.parquet", lambda p: _parquet(p, {"group": ["g"], "seq": [1]}), "Parquet file without the columns"),
    ("t.jsonl", lambda p: p.write_text("null\n[]\n"), "nothing was checked: {f}:1: a JSON null"),
]


@pytest.mark.parametrize("name,write,says", FILES, ids=[f"{n}: {s[:40]}" for n, _, s in FILES])
def test_a_file_with_nothing_to_check_is_one_line(monkeypatch, capsys, tmp_path, name, write, says):
    f = tmp_path / name
    write(f)
    err = refused(monkeypatch, capsys, "traces", "check", str(f), "--out", str(tmp_path / "o"), "--in-process")
    assert says.format(f=f) in err, err
    assert not (tmp_path / "o").exists()


def test_a_broken_file_beside_a_good_one_is_skipped_and_named(monkeypatch, capsys, tmp_path):
    (tmp_path / "good.jsonl").write_text(lines(GOOD))
    (tmp_path / "cut.jsonl.gz").write_bytes(_gz(lines(GOOD).encode())[:-30])
    code, out, err = run_cli(monkeypatch, capsys, "traces", "check", str(tmp_path / "good.jsonl"),
                             str(tmp_path / "cut.jsonl.gz"), "--out", str(tmp_path / "o"), "--in-process", "--json")
    assert code == 2 and json.loads(out)["verdicts"]["ok"] == 1
    assert f"groupspec: skipped {tmp_path / 'cut.jsonl.gz'}: a gzip file cut short" in err and "recompress" in err


@pytest.mark.parametrize("args,says", [
    (["--partitions", "-1"], "--partitions -1: a number of shuffle partitions, at least 1"),
    (["--master", ""], "--master '' names no Spark master; give local[N]"),
    (["--master", "  "], "names no Spark master; give local[N]"),
    (["--max-group-records", "0"], "--max-group-records 0: at least 1"),
])
def test_spark_flags_are_refused_before_spark_starts(monkeypatch, capsys, tmp_path, args, says):
    (tmp_path / "t.jsonl").write_text(lines(GOOD))
    err = refused(monkeypatch, capsys, "traces", "check", str(tmp_path / "t.jsonl"), "--out", str(tmp_path / "o"),
                  *args)
    assert says in err, err


def test_one_group_asked_for_with_lines_no_group_owns(monkeypatch, capsys, tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text(lines(GOOD) + "null\n")
    code, out, err = run_cli(monkeypatch, capsys, "traces", "check", str(f), "--group", GOOD_GROUP)
    assert code == 2 and f"group {GOOD_GROUP}: ok" in out and f"{f}:{len(GOOD) + 1}: a JSON null" in err
    f.write_text("null\n")
    err = refused(monkeypatch, capsys, "traces", "check", str(f), "--group", GOOD_GROUP)
    assert f"nothing was checked: {f}:1: a JSON null" in err


# -- Hypothesis ----------------------------------------------------------------------------------------

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=6)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8)
# a record's field with values of any other type than the format's
WRONG = {"v": json_values.filter(lambda x: x != 1 or isinstance(x, bool)),
         "group": json_values.filter(lambda x: not isinstance(x, str)),
         "seq": json_values.filter(lambda x: not isinstance(x, int) or isinstance(x, bool)),
         "ts_ms": json_values.filter(lambda x: not isinstance(x, int) or isinstance(x, bool)),
         "source": json_values.filter(lambda x: not isinstance(x, str)),
         "kind": json_values.filter(lambda x: x not in ("request", "response", "timer", "storage", "coordinator",
                                                        "observe")),
         "id": json_values.filter(lambda x: not isinstance(x, (str, int)) or isinstance(x, bool)),
         "timer": json_values.filter(lambda x: x not in ("heartbeat", "pending-member", "join", "initial-join",
                                                          "sync")),
         "result": json_values.filter(lambda x: not isinstance(x, str) or not x.isupper()),
         "event": json_values.filter(lambda x: x not in ("load", "unload", "begin_load", "mark_dead",
                                                         "expire_offsets"))}
hostile_line = st.one_of(
    json_values.map(json.dumps),
    st.text(max_size=40),
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
    st.integers(65, 3000).map(lambda n: "[" * n + "]" * n),
    st.builds(lambda k, v: json.dumps({"v": 1, "group": GOOD_GROUP, k: v}), st.text(max_size=4), json_values))


def _check(monkeypatch, capsys, f: Path, out: Path):
    code, stdout, err = run_cli(monkeypatch, capsys, "traces", "check", str(f), "--out", str(out), "--in-process",
                                "--json")
    assert "Traceback" not in stdout + err and code in (1, 2), (code, err)
    return code, (json.loads(stdout) if code == 1 or stdout else None), err


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(hostile_line.filter(lambda x: x.strip(" \t\r\n\ufeff\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")),
                min_size=1, max_size=3), st.data())
def test_random_lines_are_never_a_silent_pass(monkeypatch, capsys, tmp_path, bad, data):
    """Random JSON values and text among the good group's lines: the group they name is not `ok`, or
    the run exits 2 naming the lines no group owns; never a traceback."""
    text = lines(GOOD).splitlines()
    for b in bad:
        text.insert(data.draw(st.integers(0, len(text)), label="at"), b)
    f = tmp_path / "t.jsonl"
    f.write_bytes(("\n".join(text) + "\n").encode("utf-8", "surrogatepass"))
    code, s, err = _check(monkeypatch, capsys, f, tmp_path / "o")
    assert code == 2 or s["verdicts"]["invalid"] + s["verdicts"]["violation"] >= 1, (code, s, err)
    if code == 2:
        assert str(f) in err and err.count("\n") == 1


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.data())
def test_a_field_of_the_wrong_type_is_never_a_silent_pass(monkeypatch, capsys, tmp_path, data):
    """One record of the good group with a field of the wrong type (one the record's kind is checked for):
    the group is invalid (or, for `group`, the line is no group's, exit 2); never a traceback."""
    recs = [dict(r) for r in GOOD]
    i = data.draw(st.integers(0, len(recs) - 1), label="record")
    fields = ["v", "group", "seq", "ts_ms", "source", "kind"] + [
        k for k in ("id", "timer", "result", "event") if k in recs[i]]
    key = data.draw(st.sampled_from(fields), label="field")
    recs[i][key] = data.draw(WRONG[key], label="value")
    f = tmp_path / "t.jsonl"
    f.write_text(lines(recs), encoding="utf-8")
    code, s, err = _check(monkeypatch, capsys, f, tmp_path / "o")
    if code == 2:
        assert key == "group" and f"{f}:{i + 1}: " in err, err
    else:
        assert s["verdicts"]["invalid"] == 1 and s["worst"][0]["rule"] == "bad-record", s
