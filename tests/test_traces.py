"""Trace validation (issue 12) without Spark: the runtime's traces, the replay checker, injected bugs,
the Kafka log reader, bad input.  The one Spark test is tests/test_traces_spark.py."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from groupspec.checkers.traces.check import check_group
from groupspec.checkers.traces.codec import loads, read_bugs
from groupspec.checkers.traces.records import parse_line, read_groups
from groupspec.checkers.traces.simulate import choose_bugs, simulate
from groupspec.impl.coordinator import GroupCoordinator
from groupspec.impl.trace import ListSink

HERE = Path(__file__).parent
LOGS = HERE / "data" / "kafka-logs"
CLI = [sys.executable, "-m", "groupspec.checkers.cli"]


def by_group(records):
    groups = defaultdict(list)
    for r in records:
        groups[r["group"]].append(r)
    return groups


def run(*args, **kw):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=300, **kw)


def test_tracing_is_off_by_default():
    c = GroupCoordinator({})
    assert c.trace is None


def test_every_scenario_of_the_suite_traced_on_the_runtime_validates():
    from groupspec.checkers.traces.suite import check_records, scenario_files, trace_scenario
    from groupspec.checkers.scenarios.model import load_file
    checked = 0
    for f in scenario_files(HERE / "scenarios"):
        for sc in load_file(f):
            _, recs = trace_scenario(sc)
            for v in check_records(recs):
                assert v["verdict"] == "ok", (f.name, sc.name, v)
                checked += 1
    assert checked > 150


def test_a_violation_is_explained():
    sink = ListSink()
    info = simulate(12, sink, seed=11, events_per_group=150, bugs=["sync-in-preparing"], fraction=1.0)
    g = next(b["group"] for b in info if b["fired"])
    v = check_group(g, by_group(sink)[g])
    assert v["verdict"] == "violation" and v["rule"] == "SyncGroup: during PreparingRebalance"
    e = json.loads(v["explain"])
    assert e["states_before"] and e["states_before"][0]["state"] == "PreparingRebalance"
    assert e["record"]["api"] == "SyncGroup" and e["leading_up"]


def _write(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_bad_records_get_a_verdict_and_spare_the_other_groups(tmp_path):
    sink = ListSink()
    simulate(4, sink, seed=3, events_per_group=40)
    groups = by_group(sink)
    names = sorted(groups)
    lines = [json.dumps(r) for r in sink]
    # a truncated line of group 0, an unknown kind in group 1, seq backwards in group 2
    first0 = next(i for i, r in enumerate(sink) if r["group"] == names[0] and r["seq"] == 3)
    lines[first0] = lines[first0][:40]
    first1 = next(i for i, r in enumerate(sink) if r["group"] == names[1] and r["seq"] == 2)
    lines[first1] = json.dumps({**sink[first1], "kind": "gossip"})
    first2 = next(i for i, r in enumerate(sink) if r["group"] == names[2] and r["seq"] == 5)
    lines[first2] = json.dumps({**sink[first2], "seq": 1})
    lines.insert(0, "not json at all")
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    read, orphans = read_groups([str(p)])
    verdicts = {g: check_group(g, recs) for g, recs in read.items()}
    assert verdicts[names[0]]["verdict"] == "invalid" and "not valid JSON" in verdicts[names[0]]["detail"]
    assert str(p) in verdicts[names[0]]["detail"]
    assert verdicts[names[1]]["verdict"] == "invalid" and "unknown kind" in verdicts[names[1]]["detail"]
    assert verdicts[names[2]]["verdict"] == "invalid" and "seq" in verdicts[names[2]]["detail"]
    assert verdicts[names[3]]["verdict"] == "ok"
    assert orphans.count == 1 and orphans.examples[0].startswith(f"{p}:1: not JSON")


@pytest.mark.parametrize("text", [
    '{"seq": 18446744073709551615, "x": -9223372036854775808}', '{"ts_ms": NaN}', '{"v": 1e400}', '{"group": "\\ud800"}', '{"a": 1, "a": 2}', '{"v": 1.0, "w": -0}',
    '{"group": "g", "seq": 3', '{"group": "g"} x', '', '[1, 2]'])
def test_trace_lines_read_as_json_reads_them(text):
    """codec.loads (orjson where it agrees with json) gives json's value, or json's error."""
    try:
        want = json.loads(text)
    except ValueError as e:
        with pytest.raises(ValueError) as got:
            loads(text)
        assert (got.value.msg, got.value.colno) == (e.msg, e.colno)
        return
    assert repr(loads(text)) == repr(want)       # repr: an int read as a float, or nan, shows


def test_an_integer_past_64_bits_is_refused_by_the_field_check():
    """The one place codec.loads reads otherwise than json: no field of the format holds such a number."""
    rec = {"v": 1, "group": "g", "seq": 1, "ts_ms": 5, "source": "b", "kind": "timer", "timer": "heartbeat"}
    line = json.dumps(rec).replace('"seq": 1', '"seq": 123456789012345678901234567890')
    v = check_group("g", [parse_line(line, "t.jsonl")[1]])
    assert v["verdict"] == "invalid" and "`seq` must be an integer" in v["detail"]


def test_cli_check_in_process_and_one_group(tmp_path):
    r = run("simulate", "--groups", 6, "--events-per-group", 60, "--seed", 5, "--inject-bug", "generation-not-bumped",
            "--fraction", 0.5, "--out", tmp_path / "t.jsonl.gz", "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    bugs = read_bugs(res["bugs_file"])
    fired = {b["group"] for b in bugs if b["fired"]}
    assert fired
    r = run("traces", "check", tmp_path / "t.jsonl.gz", "--out", tmp_path / "out", "--in-process", "--json")
    assert r.returncode == 1, r.stderr
    s = json.loads(r.stdout)
    assert s["verdicts"]["violation"] == len(fired)
    for name in ("verdicts.parquet", "summary.md", "summary.json", "report.html"):
        assert (tmp_path / "out" / name).is_file()
    assert "<svg" in (tmp_path / "out" / "report.html").read_text()
    g = sorted(fired)[0]
    r = run("traces", "check", tmp_path / "t.jsonl.gz", "--group", g)
    assert r.returncode == 1 and "VIOLATION" in r.stdout and "states still possible just before" in r.stdout
    assert "generation: spec" in r.stdout


def test_parquet_traces_check_like_json_lines(tmp_path):
    args = ["--groups", 5, "--events-per-group", 60, "--seed", 9, "--inject-bug", "all", "--fraction", 0.6]
    assert run("simulate", *args, "--out", tmp_path / "a.jsonl").returncode == 0
    assert run("simulate", *args, "--out", tmp_path / "a.parquet").returncode == 0
    ja, _ = read_groups([str(tmp_path / "a.jsonl")])
    pa, _ = read_groups([str(tmp_path / "a.parquet")])
    strip = lambda v: (v["group"], v["verdict"], v["seq"], v["rule"])  # noqa: E731
    assert sorted(strip(check_group(g, r)) for g, r in ja.items()) == \
        sorted(strip(check_group(g, r)) for g, r in pa.items())


def test_parquet_with_missing_columns_is_one_line(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"group": ["g"], "seq": [1]}), str(tmp_path / "bad.parquet"))
    r = run("traces", "check", tmp_path / "bad.parquet", "--out", tmp_path / "o", "--in-process")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "bad.parquet" in r.stderr and "ts_ms" in r.stderr and "Traceback" not in r.stderr
    # beside a good file it is skipped, named, and the good file's groups are checked
    assert run("simulate", "--groups", 2, "--events-per-group", 30, "--out", tmp_path / "good.jsonl").returncode == 0
    r = run("traces", "check", tmp_path / "bad.parquet", tmp_path / "good.jsonl", "--out", tmp_path / "o",
            "--in-process", "--json")
    assert r.returncode == 2 and "skipped" in r.stderr and "bad.parquet" in r.stderr
    s = json.loads(r.stdout)
    assert s["verdicts"]["ok"] == 2 and len(s["skipped_files"]) == 1


def test_kafka_logs_of_several_versions_and_layouts(tmp_path):
    r = run("traces", "from-kafka-log", LOGS, "--out", tmp_path / "k.jsonl", "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["unrecognised_coordinator_lines"] == 1 and s["groups"] == 3
    recs = [json.loads(x) for x in (tmp_path / "k.jsonl").read_text().splitlines()]
    orders = [r for r in recs if r["group"] == "orders"]
    assert {r["source"] for r in orders} == {"broker-1", "broker-2"}       # one history across a move
    # the wrapped, docker-prefixed line was read whole
    assert any(r.get("event") == "rebalance-start" and r["source"] == "broker-2" for r in orders)
    verdicts = {g: check_group(g, rs) for g, rs in by_group(recs).items()}
    assert verdicts["orders"]["verdict"] == "ok" and verdicts["billing"]["verdict"] == "ok"
    assert verdicts["payments"]["verdict"] == "violation"          # generation 4 -> 7 with one rebalance
    assert verdicts["payments"]["rule"] == "observed join-complete"


def test_partial_checker_catches_impossible_sequences():
    def obs(seq, **f):
        return {"v": 1, "group": "g", "seq": seq, "ts_ms": seq, "source": "b", "kind": "observe", **f}
    ok = [obs(1, event="rebalance-start", generation=3), obs(2, event="join-complete", generation=4),
          obs(3, event="leader-sync", generation=4), obs(4, event="member-removed"),
          obs(5, event="rebalance-start", generation=4), obs(6, event="empty", generation=5)]
    assert check_group("g", ok)["verdict"] == "ok"
    twice = ok[:2] + [obs(3, event="join-complete", generation=5)]
    assert check_group("g", twice)["verdict"] == "violation"
    sync_in_pr = ok[:1] + [obs(2, event="leader-sync", generation=3)]
    assert check_group("g", sync_in_pr)["verdict"] == "violation"
    # a coordinator move: the new coordinator goes on from the generation it loaded, not without loading
    moved = ok[:3] + [obs(4, event="unloaded", generation=4), obs(5, event="loaded", generation=4),
                      obs(6, event="rebalance-start", generation=4)]
    assert check_group("g", moved)["verdict"] == "ok"
    unloaded = moved[:4] + [obs(6, event="rebalance-start", generation=4)]
    assert check_group("g", unloaded)["verdict"] == "violation"


def test_malformed_log_files_are_one_line(tmp_path):
    (tmp_path / "server.log").write_bytes(b"[2024-03-01 10:00:00,001] INFO ok (kafka.server.KafkaServer)\n\xff\xfe\x00\n")
    r = run("traces", "from-kafka-log", tmp_path / "server.log", "--out", tmp_path / "k.jsonl")
    assert r.returncode == 2 and "server.log:2" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    (tmp_path / "server.log.1.gz").write_bytes(gzip.compress(b"[2024-03-01 10:00:00,001] INFO x\n")[:-8])
    r = run("traces", "from-kafka-log", tmp_path / "server.log.1.gz", "--out", tmp_path / "k.jsonl")
    assert r.returncode == 2 and "server.log.1.gz" in r.stderr and "Traceback" not in r.stderr
    bad_date = tmp_path / "d" / "server.log"
    bad_date.parent.mkdir()
    bad_date.write_text("[2024-13-45 10:00:00,001] INFO [GroupCoordinator 1]: x (kafka.coordinator.group.GroupCoordinator)\n")
    r = run("traces", "from-kafka-log", bad_date, "--out", tmp_path / "k.jsonl")
    assert r.returncode == 2 and "server.log:1" in r.stderr


@pytest.mark.slow
def test_correctness_at_scale_in_process():
    sink = ListSink()
    info = simulate(600, sink, seed=21, events_per_group=250, bugs=choose_bugs("all"), fraction=0.2)
    fired = {b["group"] for b in info if b["fired"]}
    flagged = {g for g, recs in by_group(sink).items() if check_group(g, recs)["verdict"] != "ok"}
    assert flagged == fired


def _restarted_trace() -> list[dict]:
    """A group formed and committed on one coordinator; a second coordinator on the same log, traced from its
    load, where the member joins again."""
    from groupspec.impl.storage import InMemoryLog
    from groupspec.impl.trace import TraceWriter
    log = InMemoryLog()
    cfg = {"group.initial.rebalance.delay.ms": 0}
    join = {"group": "g", "member": "m", "client": "c", "session_timeout_ms": 6000, "protocol_type": "consumer",
            "protocols": ["range"], "require_known_member_id": False}
    first = GroupCoordinator(cfg, log=log)
    got = []
    first.send("JoinGroup", {**join, "member": ""}, on_response=got.append)
    first.advance(1)
    member = got[0]["member"]
    first.send("SyncGroup", {"group": "g", "member": member, "generation": 1, "assignments": {member: ["t-0"]}})
    first.send("OffsetCommit", {"group": "g", "member": member, "generation": 1, "offsets": {"t-0": 5}})
    second = GroupCoordinator(cfg, log=log)
    sink = ListSink()
    TraceWriter(sink, config=cfg).attach(second)
    second.begin_load()
    second.load()
    second.send("JoinGroup", {**join, "member": member})
    return list(sink)


def test_a_trace_that_begins_at_a_load_is_checked_from_what_was_loaded():
    recs = _restarted_trace()
    assert recs[0]["event"] == "load" and recs[0]["loaded"][0]["generation"] == 1
    assert check_group("g", recs)["verdict"] == "ok"
    # what the load says decides: a generation it did not have is caught at the next answer
    tampered = [dict(r) for r in recs]
    tampered[0]["loaded"] = [{**tampered[0]["loaded"][0], "generation": 7}, *tampered[0]["loaded"][1:]]
    v = check_group("g", tampered)
    assert v["verdict"] == "violation" and "generation: spec 8, trace 2" in v["detail"], v
    # and a `loaded` that is no log record is an invalid trace, said so
    broken = [dict(r) for r in recs]
    broken[0]["loaded"] = [{"type": "group"}]
    v = check_group("g", broken)
    assert v["verdict"] == "invalid" and "`loaded[0]` is not a log record of this group" in v["detail"], v
