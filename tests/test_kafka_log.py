"""`groupspec traces from-kafka-log` keeps the promise (issue 25): hostile input gets one line and
exit 2, changing no file; malformed logs never end in a traceback; the layouts logs take once
copied around (grep -r, a terminal UI's frame, wrapping) read like the logs themselves; lines an
excerpt left out are a gap the checker does not judge across; a crashed broker and times before
1970 raise no false alarm; signals stop it at once; its time is linear in its input."""
from __future__ import annotations

import gzip
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from groupspec.checkers import cli as CLI
from groupspec.checkers.traces import kafka_log as K
from groupspec.checkers.traces.check import check_group
from groupspec.checkers.traces.records import check_record
from groupspec.checkers.traces.simulate import simulate
from groupspec.impl.trace import ListSink

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "data" / "kafka-logs"
LOGGER = "(kafka.coordinator.group.GroupCoordinator)"


def entry(msg: str, ts: str = "2024-03-01 10:00:00,001", broker: int = 1, level: str = "INFO") -> str:
    return f"[{ts}] {level} [GroupCoordinator {broker}]: {msg} {LOGGER}\n"


OK = entry("Stabilized group g generation 1 (__consumer_offsets-1) with 1 members")


class Hung(Exception):
    """The command ran past its deadline (it once hung on a pipe, and on a run of blanks)."""


def run_cli(monkeypatch, capsys, *args: str, deadline: int = 60) -> tuple[int, str, str]:
    """`groupspec ARGS` in this process: (exit code, stdout, stderr); Hung past `deadline` seconds."""
    def late(*_):
        raise Hung(f"groupspec {' '.join(map(str, args))}: still running after {deadline} s")
    monkeypatch.setattr(sys, "argv", ["groupspec", *map(str, args)])
    saved = [signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM)]
    signal.signal(signal.SIGALRM, late)
    signal.alarm(deadline)
    try:
        with pytest.raises(SystemExit) as e:
            CLI.main()
    finally:
        signal.alarm(0)
        for sig, handler in zip((signal.SIGTERM, signal.SIGINT, signal.SIGALRM), saved):
            signal.signal(sig, handler)
    out, err = capsys.readouterr()
    return e.value.code, out, err


def records_of(monkeypatch, capsys, *inputs: Path | str, out: Path) -> list[dict]:
    code, _, err = run_cli(monkeypatch, capsys, "traces", "from-kafka-log", *inputs, "--out", out)
    assert code == 0, err
    return [json.loads(x) for x in out.read_text().splitlines()]


def by_group(recs: list[dict]) -> dict[str, list[dict]]:
    groups: dict = {}
    for r in recs:
        groups.setdefault(r["group"], []).append(r)
    return groups


# -- hostile input: one line naming the file and line (or the flag), exit 2, no file changed -----

def _file(name: str, content: str | bytes):
    def setup(tmp: Path) -> tuple[list, Path]:
        f = tmp / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(content if isinstance(content, bytes) else content.encode())
        return [f], tmp / "trace.jsonl"
    return setup


def _special(make):
    def setup(tmp: Path) -> tuple[list, Path]:
        return [make(tmp)], tmp / "trace.jsonl"
    return setup


def _out(make_out):
    """A good log, and an --out made by `make_out(tmp, log)`."""
    def setup(tmp: Path) -> tuple[list, Path]:
        log = tmp / "logs" / "server.log"
        log.parent.mkdir()
        log.write_text(OK)
        return [log.parent], make_out(tmp, log)
    return setup


def _fifo(p: Path) -> Path:
    os.mkfifo(p)
    return p


def _socket(p: Path) -> Path:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))
    s.close()
    return p


def _link(p: Path, to) -> Path:
    p.symlink_to(to)
    return p


def _hard(p: Path, to: Path) -> Path:
    os.link(to, p)
    return p


def _folder(p: Path) -> Path:
    p.mkdir()
    return p


LONG = K.ENTRY_LIMIT + 5
# name -> (setup, fragment of the message, what the message names: a file and line, or the flag)
BAD = {
    # bytes no broker writes
    "latin-1": (_file("server.log", OK.encode() + "caf\xe9\n".encode("latin-1")), "not UTF-8 text (byte 3",
                "server.log:2:"),
    "utf-16": (_file("server.log", OK.encode("utf-16")), "binary data (NUL bytes)", "server.log:1:"),
    "nul-bytes": (_file("server.log", OK + "[2024-03-01 10:00:00,002] INFO a\x00b\n"), "binary data (NUL bytes)",
                  "server.log:2:"),
    "nul-past-the-entry-limit": (_file("server.log", OK + "x" * LONG + "\x00\n"), "binary data", "server.log:2:"),
    "not-utf8-past-the-entry-limit": (_file("server.log", OK.encode() + b"x" * LONG + b"\xff\n"),
                                      f"not UTF-8 text (byte {LONG} of the line)", "server.log:2:"),
    "gzip-cut-short": (_file("server.log.1.gz", gzip.compress(OK.encode() * 50)[:-12]), "a broken gzip file",
                       "server.log.1.gz:"),
    "gzip-magic-then-junk": (_file("server.log.gz", b"\x1f\x8bnot gzip at all"), "a broken gzip file",
                             "server.log.gz:"),
    # headers no broker writes
    "level-unknown": (_file("server.log", "[2024-03-01 10:00:00,001] NOTICE x\n"),
                      "a log4j line whose header cannot be read", "server.log:1:"),
    "31-february": (_file("server.log", OK.replace("03-01", "02-31")), "a timestamp that is no date",
                    "server.log:1:"),
    "month-13": (_file("server.log", OK + OK.replace("03-01", "13-01")), "a timestamp that is no date",
                 "server.log:2:"),
    "year-0": (_file("server.log", OK.replace("2024", "0000")), "a timestamp that is no date", "server.log:1:"),
    "hour-24": (_file("server.log", OK.replace("10:00", "24:00")), "a timestamp that is no date", "server.log:1:"),
    # numbers and ids beyond Kafka's types (a 5000-digit one was a traceback)
    "generation-5000-digits": (_file("server.log", entry("Stabilized group g generation " + "9" * 5000)),
                               "generation 999999999999999999999999... is beyond Kafka's INT32", "server.log:1:"),
    "generation-2**32": (_file("server.log", entry("Group g with generation 4294967296 is now empty")),
                         "generation 4294967296 is beyond Kafka's INT32", "server.log:1:"),
    "group-id-40000-bytes": (_file("server.log", entry(f"Stabilized group {'g' * 40_000} generation 1")),
                             "a group id of 40,000 bytes (Kafka's are at most 32,767)", "server.log:1:"),
    "member-id-40000-bytes": (_file("server.log", entry(f"Member {'m' * 40_000} in group g has failed, removing it")),
                              "a member id of 40,000 bytes", "server.log:1:"),
    # nothing to trace is not a pass
    "empty-file": (_file("server.log", ""), "nothing to trace", "server.log:"),
    "blank-lines": (_file("server.log", "\n  \n\t\n"), "nothing to trace", "server.log:"),
    "empty-gzip": (_file("server.log.gz", gzip.compress(b"")), "nothing to trace", "server.log.gz:"),
    "json-lines": (_file("trace.log", '{"v": 1, "group": "g"}\n'), "among 1 log entries (0 coordinator lines)",
                   "trace.log:"),
    "other-loggers-only": (_file("server.log", "[2024-03-01 10:00:00,001] INFO [KafkaServer id=1] started "
                                               "(kafka.server.KafkaServer)\n"), "nothing to trace", "server.log:"),
    "no-group-in-coordinator-lines": (_file("server.log", entry("Elected as the group coordinator for partition 3")),
                                      "(1 coordinator lines)", "server.log:"),
    # what is not a log file is named for what it is (all were "no such file or folder")
    "fifo": (_special(lambda t: _fifo(t / "server.log")), "a named pipe (FIFO), not a log file", "server.log:"),
    "socket": (_special(lambda t: _socket(t / "s.log")), "a socket, not a log file", "s.log:"),
    "dev-null": (_special(lambda t: "/dev/null"), "a character device (like /dev/null), not a log file",
                 "/dev/null:"),
    "fifo-in-a-folder": (_special(lambda t: _fifo(_folder(t / "logs") / "server.log").parent),
                         "a named pipe (FIFO)", "logs/server.log:"),
    "dangling-link": (_special(lambda t: _link(t / "server.log", t / "gone.log")), "a symbolic link to",
                      "server.log:"),
    "link-loop": (_special(lambda t: _link(t / "server.log", t / "server.log")),
                  "cannot be read (Too many levels of symbolic links)", "server.log:"),
    "missing": (_special(lambda t: t / "nothing.log"), "no such file or folder", "nothing.log:"),
    "empty-folder": (_special(lambda t: _folder(t / "logs")), "a folder with no log files in it", "logs:"),
    "empty-path": (_special(lambda t: ""), "an input path is empty", "groupspec:"),
    # --out: never one of the logs read (it overwrote the broker's log), never a hang
    "out-is-the-input": (_out(lambda t, log: log), "is one of the logs read", "--out"),
    "out-hard-link-to-the-input": (_out(lambda t, log: _hard(t / "trace.jsonl", log)), "is one of the logs read",
                                   "--out"),
    "out-symlink-to-the-input": (_out(lambda t, log: _link(t / "trace.jsonl", log)), "is one of the logs read",
                                 "--out"),
    "out-a-pipe-nobody-reads": (_out(lambda t, log: _fifo(t / "trace.jsonl")), "a named pipe no process reads",
                                "--out"),
    "out-a-folder": (_out(lambda t, log: log.parent), "is a folder", "--out"),
    "out-parquet": (_out(lambda t, log: t / "trace.parquet"), "written as JSON Lines", "--out"),
    "out-empty": (_out(lambda t, log: ""), "--out is empty", "--out"),
}


def _contents(tmp: Path) -> dict:
    return {p: p.read_bytes() for p in tmp.rglob("*") if p.is_file() and not p.is_symlink()}


@pytest.mark.parametrize("name", sorted(BAD))
def test_hostile_input_is_one_line_and_exit_2_and_changes_no_file(monkeypatch, capsys, tmp_path, name):
    setup, fragment, where = BAD[name]
    inputs, out = setup(tmp_path)
    before = _contents(tmp_path)
    code, stdout, err = run_cli(monkeypatch, capsys, "traces", "from-kafka-log", *inputs, "--out", out)
    assert code == 2, (code, stdout, err)
    assert stdout == "" and err.count("\n") == 1 and err.startswith("groupspec: "), err
    assert fragment in err and where in err and "Traceback" not in err, err
    assert _contents(tmp_path) == before          # no log overwritten, no trace (or part of one) written


# -- malformed logs: exit 0 or 2 and nothing else, and what is written is a valid trace ------------

DATES = st.sampled_from(["2024-03-01 10:00:00,001", "2024-03-01T10:00:01.002", "1969-12-31 23:59:59,999",
                         "1970-01-01 00:00:00,000", "2024-02-31 10:00:00,000", "2024-13-01 00:00:00,000",
                         "9999-12-31 23:59:60,999", "0000-01-01 00:00:00,000"])
IDS = st.sampled_from(["g", "orders", "é", "g.1-x", "c-1-6f1c0d3e-8a3b-4b8a-9a4e-1f2d3c4b5a69", "\u2028", "(x)"])
GENS = st.one_of(st.integers(-2, 12).map(str), st.sampled_from(["2147483647", "2147483648", "1" + "0" * 30,
                                                                  "9" * 5000]))
MESSAGES = [
    "Preparing to rebalance group {g} in state PreparingRebalance with old generation {n} (__consumer_offsets-1) "
    "(reason: {m})",
    "Stabilized group {g} generation {n} (__consumer_offsets-1) with 1 members",
    "Assignment received from leader {m} for group {g} for generation {n}. The group has 1 members, 0 of which "
    "are static.",
    "Group {g} with generation {n} is now empty (__consumer_offsets-1)",
    "Member {m} in group {g} has failed, removing it from the group",
    "Loading group metadata for {g} with generation {n}",
    "Unloading group metadata for {g} with generation {n}",
    "Dynamic member with unknown member id joins group {g} in Empty state. Created a new member id {m} and "
    "request the member to rejoin with this id.",
    "The following groups were deleted: {g}, {m}. A total of 0 offsets were removed.",
    "Group {g} transitioned to Dead in generation {n}",
    "Some line no template knows about group {g}",
]
NOISE = st.sampled_from(["...", "…", "--", "[...]", "(12 lines omitted)", "\t... 23 more", "\tat a.B.c(B.java:1)",
                         "", "   ", "┌────┐", "│ x │", "kafka_1  | ", "server.log:", "x" * 3000, " " * 3000,
                         "[2024-03-01 10:00:00,001] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)",
                         "[2024-03-01 10:00:00,001] NOTICE x", "[2024-03-01 10:00:00", "\ufeff", "\x00", "\r"])


@st.composite
def log_lines(draw) -> str:
    if draw(st.integers(0, 3)) == 0:
        return draw(st.one_of(NOISE, st.text(max_size=40)))
    msg = draw(st.sampled_from(MESSAGES)).format(g=draw(IDS), m=draw(IDS), n=draw(GENS))
    line = entry(msg, draw(DATES), draw(st.integers(0, 3)), draw(st.sampled_from(["INFO", "INFO", "DEBUG", "ERROR"])))
    line = line.rstrip("\n")
    how = draw(st.integers(0, 5))
    if how == 1:
        line = f"kafka_{draw(st.integers(1, 3))}  | {line}"
    elif how == 2:
        line = f"{draw(st.sampled_from(['server.log', 'b1/server.log.2023-12-09-08', 'a:b']))}" \
               f"{draw(st.sampled_from([':', '-', ':7:', '-7-']))}{line}"
    elif how == 3:
        width = draw(st.integers(5, 90))
        line = "\n".join(f"│ {line[i:i + width]:<{width}} │" for i in range(0, len(line), width))
    elif how == 4:
        cut = draw(st.integers(0, len(line)))
        line = line[:cut] + "\n" + draw(st.sampled_from(["", "    ", "\t"])) + line[cut:]
    return line


@st.composite
def log_files(draw) -> bytes:
    text = draw(st.sampled_from(["\n", "\r\n"])).join(draw(st.lists(log_lines(), min_size=1, max_size=25)))
    data = text.encode("utf-8", "surrogatepass") if draw(st.booleans()) else text.encode("latin-1", "replace")
    if draw(st.integers(0, 4)) == 0:
        data = gzip.compress(data)
        if draw(st.booleans()):
            data = data[:draw(st.integers(0, len(data)))]
    return data


@settings(max_examples=max(100, settings().max_examples), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=log_files())
def test_malformed_logs_end_in_exit_0_or_2_and_a_valid_trace(monkeypatch, capsys, data):
    with tempfile.TemporaryDirectory() as d:
        log, out = Path(d) / "server.log", Path(d) / "trace.jsonl"
        log.write_bytes(data)
        code, stdout, err = run_cli(monkeypatch, capsys, "traces", "from-kafka-log", log, "--out", out)
        assert code in (0, 2) and "Traceback" not in err, (code, err)
        if code == 2:
            assert err.count("\n") == 1 and err.startswith(f"groupspec: {log}") and not out.exists(), err
            return
        recs = [json.loads(x) for x in out.read_text().splitlines()]
        assert recs and err == ""
        for i, r in enumerate(recs):
            check_record(r, f"record {i}")
        for g, rs in by_group(recs).items():
            assert check_group(g, rs)["verdict"] in ("ok", "violation")


# -- layouts: a log copied around reads like the log itself ------------------------------------

WORDS = st.text(alphabet="abcdefxyz0123456789.-_", min_size=1, max_size=12)


@st.composite
def valid_logs(draw) -> str:
    """A log of recognised lines with single blanks, no `...` and no timestamp in a message (what a
    frame's wrapping could make look like a gap or a new entry)."""
    lines = []
    for i in range(draw(st.integers(1, 8))):
        msg = draw(st.sampled_from(MESSAGES[:-1])).format(g=draw(WORDS), m=draw(WORDS), n=draw(st.integers(0, 99)))
        lines.append(entry(msg, f"2024-03-01 10:00:{i:02d},{draw(st.integers(0, 999)):03d}",
                           broker=draw(st.integers(1, 3))))
    return "".join(lines)


def _framed(log: str, width: int, bars: str) -> str:
    """The log as a terminal UI shows it: a frame, each entry wrapped at `width` columns."""
    rows = ["┌" + "─" * (width + 2) + "┐"]
    for line in log.splitlines():
        rows += [f"│ {line[i:i + width]:<{width}} {bars}" for i in range(0, len(line), width)]
    return "\n".join(rows + ["└" + "─" * (width + 2) + "┘", ""])


def _grepped(log: str, name: str, numbered: bool) -> str:
    """The log as `grep -r` (`-n`) prints it, every line matching."""
    return "".join(f"{name}:{n}:{line}\n" if numbered else f"{name}:{line}\n"
                   for n, line in enumerate(log.splitlines(), 1))


@settings(max_examples=max(60, settings().max_examples), deadline=None)
@given(log=valid_logs(), width=st.integers(K.HEAD_WIDTH, 120), bars=st.sampled_from(["│", "││", "┃"]),
       name=st.sampled_from(["server.log", "broker1/server.log.2023-12-09-08", "logs/server.log.1.gz"]),
       numbered=st.booleans())
def test_framed_and_grepped_logs_read_like_the_log(log, width, bars, name, numbered):
    with tempfile.TemporaryDirectory() as d:
        got = {}
        for kind, text in (("plain", log), ("framed", _framed(log, width, bars)),
                           ("grepped", _grepped(log, name, numbered))):
            f = Path(d) / kind / "server.log"
            f.parent.mkdir()
            f.write_text(text)
            got[kind] = K.to_records(K.read_files([f]))
        assert got["plain"] and got["framed"] == got["plain"] and got["grepped"] == got["plain"]


def test_grep_context_lines_and_the_issue_example(monkeypatch, capsys, tmp_path):
    log = tmp_path / "grep.txt"
    log.write_text(
        "server.log.2023-12-09-08:[2023-12-09 08:00:01,234] INFO [GroupCoordinator 1]: Preparing to rebalance group "
        f"orders in state PreparingRebalance with old generation 2 (__consumer_offsets-12) (reason: x) {LOGGER}\n"
        "server.log.2023-12-09-08-[2023-12-09 08:00:01,500] ERROR [GroupCoordinator 1]: Error in group orders "
        f"{LOGGER}\n"
        "server.log.2023-12-09-08-\tat kafka.coordinator.group.GroupCoordinator.x(GroupCoordinator.scala:1)\n"
        "server.log.2023-12-09-08:[2023-12-09 08:00:04,234] INFO [GroupCoordinator 1]: Stabilized group orders "
        f"generation 3 (__consumer_offsets-12) with 1 members {LOGGER}\n")
    code, out, err = run_cli(monkeypatch, capsys, "traces", "from-kafka-log", log, "--out", tmp_path / "t.jsonl",
                             "--json")
    assert code == 0, err
    recs = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [(r["event"], r["generation"]) for r in recs] == [("rebalance-start", 2), ("join-complete", 3)]
    # the context line's continuation was joined to its entry, not read as a line of its own
    assert json.loads(out)["entries"] == 3 and json.loads(out)["unrecognised_coordinator_lines"] == 1


def test_a_framed_row_wrapped_at_a_blank_keeps_the_blank(tmp_path):
    # the frame pads a row that ends short of it; a row wrapped right after a word ends in that blank
    log = tmp_path / "box.txt"
    log.write_text("│ [2024-03-01 10:00:00,001] INFO [GroupCoordinator 1]: Group g with  │\n"
                   "│ generation 4 is now empty (kafka.coordinator.group.GroupCoordinator)│\n"
                   "│ [2024-03-01 10:00:00,002] INFO [GroupCoordinator 1]: Stabilized gr ││\n"
                   "│ oup h generation 5 (kafka.coordinator.group.GroupCoordinator)      ││\n")
    got = K.to_records(K.read_files([log]))
    assert [(r["group"], r["event"], r["generation"]) for r in got] == [("g", "empty", 4), ("h", "join-complete", 5)]


# -- gaps ----------------------------------------------------------------------------------------

JUMP = [entry("Stabilized group g generation 3 (__consumer_offsets-1) with 1 members", "2024-03-01 10:00:00,000"),
        entry("Stabilized group g generation 7 (__consumer_offsets-1) with 1 members", "2024-03-01 11:00:00,000")]


@pytest.mark.parametrize("marker", ["...", "…", "   ....   ", "[...]", "[…]", "(...)", "<snip>", "-- snip --",
                                    "(1,234 lines omitted)", "[... 12 lines skipped ...]", "… 40 more lines …",
                                    "⋮", "--"])
def test_lines_left_out_are_a_gap_not_judged_across(tmp_path, marker):
    log = tmp_path / "server.log"
    log.write_text(JUMP[0] + marker + "\n" + JUMP[1])
    recs = K.to_records(K.read_files([log]))
    assert [r.get("event") for r in recs] == ["join-complete", "gap", "join-complete"]
    assert recs[1]["ts_ms"] == recs[2]["ts_ms"] and f"{log}:2: lines left out" in recs[1]["reason"]
    assert check_group("g", recs)["verdict"] == "ok"
    # without the gap the same two lines are a violation: a generation cannot jump from 3 to 7 unseen
    log.write_text("".join(JUMP))
    assert check_group("g", K.to_records(K.read_files([log])))["verdict"] == "violation"


@pytest.mark.parametrize("line", ["\t... 23 more", ". .", "..", "...and then", "lines", "-- x --", "---"])
def test_what_is_not_a_gap(tmp_path, line):
    # Java's `... 23 more` leaves out frames of an exception, not log entries
    log = tmp_path / "server.log"
    log.write_text(JUMP[0] + "[2024-03-01 10:30:00,000] ERROR boom (kafka.server.KafkaApis)\n"
                   "java.lang.IllegalStateException: x\n" + line + "\n" + JUMP[1])
    reading = K.read_files([log])
    assert reading.gaps == [] and reading.lines == 3
    assert [r.get("event") for r in K.to_records(reading)] == ["join-complete", "join-complete"]


def test_a_gap_reaches_every_group_with_records_around_it_once(tmp_path):
    b1, b2 = tmp_path / "b1" / "server.log", tmp_path / "b2" / "server.log"
    b1.parent.mkdir()
    b2.parent.mkdir()
    b1.write_text("...\n" + entry("Stabilized group a generation 1", "2024-03-01 10:00:00,000")
                  + "...\n[...]\n" + entry("Stabilized group a generation 5", "2024-03-01 10:00:02,000")
                  + entry("Assignment received from leader m for group a for generation 5",
                          "2024-03-01 10:00:02,100") + "...\n")
    b2.write_text(entry("Stabilized group b generation 1", "2024-03-01 10:00:00,500", broker=2)
                  + entry("Stabilized group b generation 9", "2024-03-01 10:00:03,000", broker=2)
                  + entry("Stabilized group c generation 1", "2024-03-01 10:00:04,000", broker=2)
                  + entry("Stabilized group c generation 8", "2024-03-01 10:00:05,000", broker=2))
    reading = K.read_files(K.input_files([str(tmp_path)]))
    groups = by_group(K.to_records(reading))
    # two markers in a row are one gap, and markers at a file's ends none; the other broker's group
    # too (it may have moved to broker 1 and back unseen); none for records after the gap ended
    assert len(reading.gaps) == 1
    assert [r["event"] for r in groups["a"]] == ["join-complete", "gap", "join-complete", "leader-sync"]
    assert [r["event"] for r in groups["b"]] == ["join-complete", "gap", "join-complete"]
    assert groups["b"][1]["source"] == "broker-2" and "gap" not in [r["event"] for r in groups["c"]]
    verdicts = {g: check_group(g, rs)["verdict"] for g, rs in groups.items()}
    assert verdicts == {"a": "ok", "b": "ok", "c": "violation"}


def test_a_gap_in_a_complete_trace_ends_what_is_judged():
    sink = ListSink()
    simulate(1, sink, seed=3, events_per_group=60)
    recs = list(sink)
    first = recs[10]
    gap = {k: first[k] for k in ("v", "group", "seq", "ts_ms", "source")}
    left_out = recs[:10] + recs[40:]            # thirty records nobody saw
    assert check_group(first["group"], left_out)["verdict"] == "violation"
    v = check_group(first["group"], recs[:10] + [{**gap, "kind": "observe", "event": "gap"}] + recs[40:])
    assert v["verdict"] == "ok" and v["detail"] == (f"not judged from the gap at record seq {first['seq']} (source "
                                                    f"{first['source']}) on: {len(recs) - 39} records")


# -- a crashed broker, and times before 1970 ----------------------------------------------------

def obs(seq: int, source: str = "broker-1", **f) -> dict:
    """An observation at time `seq` (broker 2's ten later: it comes after broker 1's)."""
    ts = seq + (10 if source == "broker-2" else 0)
    return {"v": 1, "group": "g", "seq": seq, "ts_ms": ts, "source": source, "kind": "observe", **f}


STABLE_ON_1 = [obs(1, event="rebalance-start", generation=2), obs(2, event="join-complete", generation=3),
               obs(3, event="leader-sync", generation=3)]


def test_a_crashed_brokers_missing_unloading_is_no_violation():
    # broker 1 dies (no Unloading line); broker 2 takes the partition over and loads what was stored
    taken_over = STABLE_ON_1 + [obs(1, "broker-2", event="loaded", generation=3),
                                obs(2, "broker-2", event="rebalance-start", generation=3)]
    assert check_group("g", taken_over)["verdict"] == "ok"
    # broker 1 restarted and loads it back itself
    restarted = STABLE_ON_1 + [obs(4, event="loaded", generation=3), obs(5, event="rebalance-start", generation=3)]
    assert check_group("g", restarted)["verdict"] == "ok"
    # nothing was stored: broker 2 starts the group afresh
    afresh = [obs(1, event="rebalance-start", generation=0), obs(1, "broker-2", event="rebalance-start", generation=0)]
    assert check_group("g", afresh)["verdict"] == "ok"


def test_a_missing_unloading_is_still_a_violation_where_no_crash_explains_it():
    # the same broker carries on as if the group had been dropped and created again
    same_broker = [obs(1, event="rebalance-start", generation=0), obs(2, event="rebalance-start", generation=0)]
    assert check_group("g", same_broker)["verdict"] == "violation"
    # after a crash the group is what was loaded (Stable, Empty, or rebalancing when over capacity):
    # a leader's assignment needs a rebalance to complete first
    after_load = STABLE_ON_1 + [obs(1, "broker-2", event="loaded", generation=3),
                                obs(2, "broker-2", event="leader-sync", generation=3)]
    assert check_group("g", after_load)["verdict"] == "violation"


def test_a_crashed_broker_end_to_end(monkeypatch, capsys, tmp_path):
    (tmp_path / "b1").mkdir()
    (tmp_path / "b2").mkdir()
    (tmp_path / "b1" / "server.log").write_text(
        entry("Preparing to rebalance group orders in state PreparingRebalance with old generation 2 "
              "(__consumer_offsets-12) (reason: x)", "2024-03-01 10:10:00,000")
        + entry("Stabilized group orders generation 3 (__consumer_offsets-12) with 1 members", "2024-03-01 10:10:03,000")
        + entry("Assignment received from leader c-1 for group orders for generation 3. The group has 1 members, "
                "0 of which are static.", "2024-03-01 10:10:03,050"))
    (tmp_path / "b2" / "server.log").write_text(
        entry("Loading group metadata for orders with generation 3", "2024-03-01 10:20:01,200", broker=2)
        + entry("Preparing to rebalance group orders in state PreparingRebalance with old generation 3 "
                "(__consumer_offsets-12) (reason: x)", "2024-03-01 10:21:00,001", broker=2)
        + entry("Group orders with generation 4 is now empty (__consumer_offsets-12)", "2024-03-01 10:21:00,002",
                broker=2))
    recs = records_of(monkeypatch, capsys, tmp_path, out=tmp_path / "t.jsonl")
    assert check_group("orders", recs)["verdict"] == "ok"


def _to_1969(text: str) -> str:
    return text.replace("[2024-", "[1969-").replace("[2025-", "[1969-")


def test_the_same_history_before_1970_has_the_same_verdicts(monkeypatch, capsys, tmp_path):
    old = tmp_path / "old"
    for f in LOGS.rglob("*"):
        if f.is_file():
            to = old / f.relative_to(LOGS)
            to.parent.mkdir(parents=True, exist_ok=True)
            if f.suffix == ".gz":
                to.write_bytes(gzip.compress(_to_1969(gzip.decompress(f.read_bytes()).decode()).encode()))
            else:
                to.write_text(_to_1969(f.read_text()))
    verdicts = {}
    for name, folder in (("now", LOGS), ("1969", old)):
        recs = records_of(monkeypatch, capsys, folder, out=tmp_path / f"{name}.jsonl")
        verdicts[name] = {g: (v["verdict"], v["rule"]) for g, rs in by_group(recs).items()
                          for v in [check_group(g, rs)]}
        assert (name == "1969") == all(r["ts_ms"] < 0 for r in recs)
    assert verdicts["1969"] == verdicts["now"] and verdicts["now"]["orders"] == ("ok", "")


def test_a_complete_trace_before_1970_validates():
    sink = ListSink()
    simulate(3, sink, seed=5, events_per_group=60)
    shifted = [{**r, "ts_ms": r["ts_ms"] - 60 * 365 * 86_400_000} for r in sink]
    assert all(r["ts_ms"] < 0 for r in shifted)
    for g, rs in by_group(shifted).items():
        assert check_group(g, rs)["verdict"] == "ok", check_group(g, rs)["detail"]


def test_1969_and_1970_meet_in_order(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(entry("Preparing to rebalance group g in state PreparingRebalance with old generation 0",
                         "1969-12-31 23:59:59,999")
                   + entry("Stabilized group g generation 1", "1970-01-01 00:00:00,000"))
    recs = K.to_records(K.read_files([log]))
    assert [r["ts_ms"] for r in recs] == [-1, 0] and check_group("g", recs)["verdict"] == "ok"


# -- output: never over an input, whole or not at all, the file named when writing fails -----------

def test_a_full_device_names_the_file(monkeypatch, capsys):
    code, out, err = run_cli(monkeypatch, capsys, "traces", "from-kafka-log", LOGS, "--out", "/dev/full")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("groupspec: --out /dev/full: writing failed (No space left on device)"), err


def test_a_write_that_fails_leaves_the_previous_trace(tmp_path):
    out = tmp_path / "trace.jsonl"
    out.write_text("previous\n")

    def small_files():      # a file may grow to 200 bytes: the write fails as on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))
    done = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "traces", "from-kafka-log", str(LOGS),
                           "--out", str(out)], capture_output=True, text=True, preexec_fn=small_files, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"groupspec: --out {out}: writing failed (File too large)")
    assert out.read_text() == "previous\n" and sorted(p.name for p in tmp_path.iterdir()) == ["trace.jsonl"]


def test_a_pipe_with_a_reader_gets_the_trace(monkeypatch, capsys, tmp_path):
    pipe = _fifo(tmp_path / "pipe")
    reader = subprocess.Popen(["cat", str(pipe)], stdout=subprocess.PIPE)
    try:
        time.sleep(0.2)
        code, _, err = run_cli(monkeypatch, capsys, "traces", "from-kafka-log", LOGS, "--out", pipe)
        got, _ = reader.communicate(timeout=30)
    finally:
        reader.kill()
    assert code == 0, err
    assert len(got.decode().splitlines()) == len(records_of(monkeypatch, capsys, LOGS, out=tmp_path / "t.jsonl"))


def test_the_standard_output_as_out_gets_the_trace_alone():
    # opened anew, /dev/stdout (a file or a pipe here) would mix the summary into the trace
    done = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "traces", "from-kafka-log", str(LOGS),
                           "--out", "/dev/stdout"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    recs = [json.loads(x) for x in done.stdout.splitlines()]
    assert recs and all(check_record(r, "") for r in recs)
    assert f"{len(recs)} observations of 3 groups" in done.stderr


# -- signals, time and memory -------------------------------------------------------------------

def _slow_log(path: Path, megabytes: int) -> None:
    """A gzip'ed log of `megabytes` MB that takes seconds to read, written in a moment: one member
    of a megabyte, repeated (gzip reads concatenated members as one stream); it opens with a line
    padded with blanks, where a quadratic regex once held signals off."""
    mb = (entry("Stabilized group g generation 1") * 8000)[:1 << 20]
    member = gzip.compress(mb[:mb.rindex("\n") + 1].encode())
    padded = gzip.compress(entry("Stabilized group g generation 1" + " " * 4_000_000 + "x").encode())
    path.write_bytes(padded + member * megabytes)


def _reading(proc: subprocess.Popen, log: Path) -> None:
    """Wait until the process has the log open (started, and reading it), then a little more."""
    fds = Path("/proc") / str(proc.pid) / "fd"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if any(os.readlink(fd) == str(log) for fd in fds.iterdir()):
                time.sleep(0.3)
                return
        except OSError:         # an fd closed while looked at
            pass
        time.sleep(0.05)
    raise AssertionError(f"the command never read {log}: {proc.communicate()}")


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="reads /proc")
@pytest.mark.parametrize("sig, code, said", [(signal.SIGTERM, 143, "groupspec: terminated (SIGTERM); the run was "
                                                                 "stopped\n"),
                                             (signal.SIGINT, 130, "")], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_it_at_once(tmp_path, sig, code, said):
    log = tmp_path / "server.log.gz"
    _slow_log(log, 2000)
    out = tmp_path / "trace.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "groupspec.checkers.cli", "traces", "from-kafka-log", str(log),
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _reading(proc, log)
        sent = time.monotonic()
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == code and stderr == said and stdout == "", (proc.returncode, stderr)
    assert took < 2, took
    assert sorted(p.name for p in tmp_path.iterdir()) == ["server.log.gz"]       # nothing written


def _timed(path: Path) -> tuple[float, dict]:
    """How long reading the log takes, and what it found, in a process of its own: the quadratic
    reader this guards against would hold this one (and its signals) for hours."""
    code = ("import json, sys, time; from pathlib import Path; from groupspec.checkers.traces import kafka_log as K; "
            "t = time.perf_counter(); r = K.read_files([Path(sys.argv[1])]); "
            "print(json.dumps([time.perf_counter() - t, r.cut, r.cut_coordinator, len(r.gaps), len(r.observations)]))")
    try:
        done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"reading {path} ran past 60 s") from None
    assert done.returncode == 0, done.stderr
    took, cut, cut_coordinator, gaps, observations = json.loads(done.stdout)
    return took, {"cut": cut, "cut_coordinator": cut_coordinator, "gaps": gaps, "observations": observations}


def test_a_long_stack_trace_is_read_in_linear_time(tmp_path):
    # each continuation line once copied the entry whole: 300,000 lines ran past two minutes
    log = tmp_path / "server.log"
    with open(log, "w") as f:
        f.write("[2024-03-01 10:00:00,002] ERROR boom (kafka.server.KafkaApis)\njava.lang.RuntimeException: x\n")
        f.writelines(f"\tat org.apache.kafka.Foo.bar{i}(Foo.java:{i})\n" for i in range(200_000))
        f.write(OK)
    took, reading = _timed(log)
    assert took < 10, took
    assert reading["cut"] == 1 and reading["observations"] == 1
    kept = next(text for kind, n, text, cut, _ in K._items(log) if kind == "entry" and cut)
    assert len(kept) == K.ENTRY_LIMIT          # memory: the entry kept, not the file


@pytest.mark.parametrize("where", ["inside", "trailing", "after-member"])
def test_a_line_padded_with_blanks_is_read_in_linear_time(tmp_path, where):
    # an unanchored \s* (and left-2x's Member\s*) retried at every blank: quadratic, and deaf to SIGTERM
    blanks = " " * 4_000_000
    line = {"inside": entry(f"Stabilized group g generation 1{blanks}x"),
            "trailing": entry("Stabilized group g generation 1").rstrip("\n") + blanks + "\n",
            "after-member": entry(f"Member{blanks}x in group g has left, removing it from the group")}[where]
    log = tmp_path / "server.log"
    log.write_text(line + OK)
    took, reading = _timed(log)
    assert took < 10, took
    if where == "trailing":        # blanks only past the limit: nothing of the entry is lost
        assert reading == {"cut": 0, "cut_coordinator": 0, "gaps": 0, "observations": 2}
    else:                          # cut: a coordinator entry whose end is lost is a gap
        assert reading == {"cut": 1, "cut_coordinator": 1, "gaps": 1, "observations": 1}
