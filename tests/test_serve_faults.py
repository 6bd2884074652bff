"""`groupspec serve`'s promises beyond forming groups: the complete trace it writes validates (a restart's too),
an invariant broken is answered as Kafka's UNKNOWN_SERVER_ERROR and logged while the server goes on, and the
faults on cue (checkers/serve/admin.py, `groupspec serve ctl`) do to the running coordinator what the closed
world's faults do."""
from __future__ import annotations

import json
import logging
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kio import index

from groupspec.checkers.kafka import framing, messages
from groupspec.checkers.search.mutate import mutants
from groupspec.checkers.serve.server import Server
from groupspec.impl.coordinator import GroupCoordinator
from groupspec.spec import engine as E
from groupspec.spec.table import ROWS
from serving import CLI, call, in_thread, kafka_python_group, start_cli

REPO = Path(__file__).resolve().parent.parent

kafka = pytest.importorskip("kafka")

PROTOCOLS = [{"name": "range", "metadata": "\x00\x00\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x00"}]
FAST = {"group.initial.rebalance.delay.ms": 0}


def _req(api: str, **fields):
    return messages.request(api, fields)[1]


def _join(port: int, member: str = "", sock=None, group: str = "g"):
    return call(port, _req("JoinGroup", group=group, member=member, session_timeout_ms=6000,
                           rebalance_timeout_ms=6000, protocol_type="consumer", protocols=PROTOCOLS, version=7),
                sock=sock)


def _member(port: int, sock: socket.socket, group: str = "g") -> tuple[str, int]:
    """One member joined to `group` alone (its id asked for, then used): (member id, generation)."""
    first = _join(port, sock=sock, group=group)
    assert first["error"] == "MEMBER_ID_REQUIRED", first
    joined = _join(port, first["member"], sock=sock, group=group)
    assert joined["error"] == "NONE", joined
    return joined["member"], joined["generation"]


def _admin(srv: Server, method: str, path: str) -> tuple[int, dict]:
    request = urllib.request.Request(f"http://127.0.0.1:{srv.admin.port}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture
def served(tmp_path):
    with in_thread(Server(FAST, {"t": 2}, port=0, trace=str(tmp_path / "trace.jsonl")), admin=True) as srv:
        yield srv


def _trace_check(path, group: str = "g") -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "traces", "check", str(path), "--group", group], capture_output=True, text=True,
                          timeout=120)


def test_kafka_python_consumers_leave_a_trace_that_validates(served, tmp_path):
    consumers = kafka_python_group(served.port, 2, heartbeat_ms=300)
    try:
        assert sorted(len(c.assignment()) for c in consumers) == [1, 1]
    finally:
        for c in consumers:
            c.close()
    checked = _trace_check(tmp_path / "trace.jsonl")
    assert checked.returncode == 0 and "group g: ok" in checked.stdout, checked.stdout + checked.stderr
    kinds = [json.loads(line)["kind"] for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    assert kinds.count("request") >= 8 and "response" in kinds        # joins parked and answered, syncs, leaves


def test_a_restarted_servers_trace_begins_with_what_it_loaded_and_validates(tmp_path):
    log = str(tmp_path / "meta.log")
    proc, port, _ = start_cli("--log", log, "--config", "group.initial.rebalance.delay.ms=0")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            member, generation = _member(port, s)
            assert _sync(port, s, member, generation)["error"] == "NONE"
            commit = _req("OffsetCommit", group="g", member=member, generation=generation, offsets={"t-0": 9})
            assert call(port, commit, sock=s)["errors"] == {"t-0": "NONE"}
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    trace = tmp_path / "after.jsonl"
    proc, port, _ = start_cli("--log", log, "--trace", str(trace), "--config", "group.initial.rebalance.delay.ms=0")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            member, generation = _member(port, s)
            assert generation > 1          # the group came back from the log with its generation
            fetch = _req("OffsetFetch", group="g", partitions=["t-0"])
            assert call(port, fetch, sock=s)["offsets"] == {"t-0": 9}
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    first = json.loads(trace.read_text().splitlines()[0])
    assert first["event"] == "load" and [r["type"] for r in first["loaded"]] == ["group", "offset"]
    checked = _trace_check(trace)
    assert checked.returncode == 0 and "group g: ok" in checked.stdout, checked.stdout + checked.stderr


def _broken_engine() -> E.Engine:
    """The table with one planted bug: a member that joins an Empty group is not made its leader (so the group
    has members and a leader that is none of them: the invariant leader-is-member)."""
    for _m, i, row in mutants():
        if row.name == "JoinGroup: pending member rejoins and starts a rebalance (Empty)" \
                and _m.detail == "drop the update of `leader` (step 0)":
            return E.Engine([row if k == i else r for k, r in enumerate(ROWS)])
    raise AssertionError("the mutant is gone: pick another that breaks an invariant on the first join")


def test_an_invariant_broken_is_answered_unknown_server_error_and_the_server_goes_on(caplog):
    with in_thread(Server(FAST, {"t": 2}, port=0, engine=_broken_engine()), admin=True) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s, \
                caplog.at_level(logging.ERROR, logger="groupspec.serve"):
            first = _join(srv.port, sock=s)
            second = _join(srv.port, first["member"], sock=s)
            assert second["error"] == "UNKNOWN_SERVER_ERROR", second
            # the group stays as the bug left it (each step on it is refused so); other groups, on the same
            # connection and on another, are served
            commit = _req("OffsetCommit", group="other", member="", generation=-1, offsets={"t-0": 1})
            assert call(srv.port, commit, sock=s)["errors"] == {"t-0": "NONE"}
        assert call(srv.port, _req("OffsetFetch", group="other", partitions=["t-0"]))["offsets"] == {"t-0": 1}
        line = next(r.getMessage() for r in caplog.records if "invariant" in r.getMessage())
        assert "JoinGroup from 'c' in group 'g' broke the spec's invariant: invariant leader-is-member violated" \
               in line, line
        assert _admin(srv, "GET", "/status")[1]["violations"] == 1


def _sync(port: int, sock, member: str, generation: int):
    return call(port, _req("SyncGroup", group="g", member=member, generation=generation,
                           assignments={member: ["t-0", "t-1"]}), sock=sock)


def test_held_appends_hold_the_leaders_sync_until_released(served):
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as s:
        member, generation = _member(served.port, s)
        assert _admin(served, "POST", "/hold") == (200, {"holding": True, "release_in_ms": None})
        s.settimeout(0.5)
        with pytest.raises(socket.timeout):        # the assignment is not stored: the SyncGroup waits
            _sync(served.port, s, member, generation)
        assert _admin(served, "GET", "/status")[1]["held_appends"] == 1
        status, released = _admin(served, "POST", "/release")
        assert status == 200 and released["completed"] == 1
        s.settimeout(10)
        answer = s.recv(65536)       # the SyncGroup's answer, sent when the append completed
        assert answer and served.coord.snapshot("g")["assignment"] == {member: ["t-0", "t-1"]}


def test_a_hold_for_some_milliseconds_ends_by_itself(served):
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as s:
        member, generation = _member(served.port, s)
        assert _admin(served, "POST", "/hold?ms=300")[0] == 200
        began = time.monotonic()
        synced = _sync(served.port, s, member, generation)
        assert synced["error"] == "NONE" and synced["assignment"] == ["t-0", "t-1"]
        assert time.monotonic() - began >= 0.25


def test_a_failed_append_is_answered_as_the_spec_says(served):
    """The next append fails: the commit's answer is the error the spec maps the storage error to (the runtime
    coordinator in process, given the same fault, is the expectation)."""
    expected = GroupCoordinator(FAST)
    expected.storage_fail_next("NOT_ENOUGH_REPLICAS")
    commit = {"group": "g", "member": "", "generation": -1, "offsets": {"t-0": 3}}
    want = expected.send("OffsetCommit", commit)["errors"]["t-0"]
    assert want != "NONE"
    assert _admin(served, "POST", "/fail-next?error=NOT_ENOUGH_REPLICAS")[0] == 200
    assert call(served.port, _req("OffsetCommit", **commit))["errors"] == {"t-0": want}
    assert call(served.port, _req("OffsetCommit", **commit))["errors"] == {"t-0": "NONE"}     # only the next


def test_a_coordinator_moved_away_is_looked_for_and_comes_back_with_its_offsets(served):
    commit = _req("OffsetCommit", group="g", member="", generation=-1, offsets={"t-1": 11})
    assert call(served.port, commit)["errors"] == {"t-1": "NONE"}
    assert _admin(served, "POST", "/move")[1]["coordinator"] == "not_coordinator"
    assert call(served.port, _req("OffsetFetch", group="g", partitions=["t-1"]))["error"] == "NOT_COORDINATOR"
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as s:
        s.sendall(framing.encode_request(index.load_request_schema(10, 1)(key="g", key_type=0), 5, "c"))
        buf = bytearray()
        while (data := framing.take_frame(buf)) is None:
            buf += s.recv(65536)
    found = framing.decode_response(data, index.load_response_schema(10, 1))[1]
    assert messages.error_name(found.error_code) == "COORDINATOR_NOT_AVAILABLE"
    assert _admin(served, "POST", "/load")[1]["coordinator"] == "active"
    assert call(served.port, _req("OffsetFetch", group="g", partitions=["t-1"]))["offsets"] == {"t-1": 11}


def test_expiring_offsets_now_takes_those_past_retention(served, monkeypatch):
    commit = _req("OffsetCommit", group="g", member="", generation=-1, offsets={"t-0": 4})
    assert call(served.port, commit)["errors"] == {"t-0": "NONE"}
    assert _admin(served, "POST", "/expire-offsets")[0] == 200
    fetch = _req("OffsetFetch", group="g", partitions=["t-0"])
    assert call(served.port, fetch)["offsets"] == {"t-0": 4}            # a week's retention: still there
    week = 10_080 * 60_000
    now = served._now_ms()
    monkeypatch.setattr(served, "_now_ms", lambda: now + week + 1_000)
    assert _admin(served, "POST", "/expire-offsets")[0] == 200
    assert call(served.port, fetch)["offsets"] == {"t-0": -1}           # gone


def test_drop_closes_one_clients_connections_only(served):
    socks = {}
    for client in ("doomed", "kept"):
        s = socket.create_connection(("127.0.0.1", served.port), timeout=10)
        s.sendall(framing.encode_request(_req("ListGroups"), 1, client))
        assert s.recv(65536)
        socks[client] = s
    try:
        assert _admin(served, "POST", "/drop?client=doomed")[1] == {"dropped": 1}
        assert socks["doomed"].recv(65536) == b""         # closed by the server
        assert call(served.port, _req("ListGroups"), sock=socks["kept"])["error"] == "NONE"
    finally:
        for s in socks.values():
            s.close()


@pytest.mark.parametrize("method,path,status,says", [
    ("POST", "/nowhere", 404, "the admin endpoint has POST /hold"),
    ("GET", "/hold", 405, "/hold is POST, not GET"),
    ("POST", "/hold?ms=soon", 400, "ms='soon': give a whole number of milliseconds"),
    ("POST", "/fail-next", 400, "give the error, e.g. ?error=NOT_ENOUGH_REPLICAS"),
    ("POST", "/fail-next?error=BOGUS", 400, "BOGUS"),
])
def test_the_admin_endpoint_says_what_was_wrong(served, method, path, status, says):
    got_status, answer = _admin(served, method, path)
    assert got_status == status and says in answer["error"], answer


def test_ctl_applies_faults_to_a_running_server_and_says_what_was_wrong(tmp_path):
    proc, port, admin = start_cli("--topics", "t:2")
    try:
        ctl = [*CLI, "serve", "ctl", "--admin", f"127.0.0.1:{admin}"]
        held = subprocess.run([*ctl, "hold", "--ms", "5000"], capture_output=True, text=True, timeout=60)
        assert held.returncode == 0 and json.loads(held.stdout) == {"holding": True, "release_in_ms": 5000}
        status = subprocess.run([*ctl, "status"], capture_output=True, text=True, timeout=60)
        assert status.returncode == 0 and json.loads(status.stdout)["holding"] is True
        bad = subprocess.run([*ctl, "fail-next", "BOGUS"], capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and bad.stderr.startswith("groupspec: the server refused it:") \
            and "BOGUS" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    gone = subprocess.run([*ctl, "status"], capture_output=True, text=True, timeout=60)
    assert gone.returncode == 2 and f"no groupspec serve admin endpoint answers at 127.0.0.1:{admin}" in gone.stderr
    malformed = subprocess.run([*CLI, "serve", "ctl", "--admin", "nowhere", "status"], capture_output=True, text=True,
                               timeout=60)
    assert malformed.returncode == 2 and "--admin 'nowhere': give host:port" in malformed.stderr


def test_the_worked_example_makes_a_rebalance_listener_fail_on_cue():
    """docs/examples/revoke_commit.py, as docs/serve.md runs it: the commit on revoke is refused, and the
    partition's next owner starts from before what was processed."""
    pytest.importorskip("confluent_kafka")
    proc, port, admin = start_cli("--topics", "orders:2")
    try:
        run = subprocess.run([sys.executable, str(REPO / "docs" / "examples" / "revoke_commit.py"), "--bootstrap",
                              f"127.0.0.1:{port}", "--admin", f"127.0.0.1:{admin}"], capture_output=True, text=True,
                             timeout=120)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[:3] == ["a: assigned ['orders-0', 'orders-1']", "serve: the next append will fail with MESSAGE_TOO_LARGE",
                         "a: the commit on revoke FAILED: Commit failed: Broker: Commit offset data size is not valid"], \
        run.stdout
    assert "b: starts orders-1 from offset 0; a had processed 10 (10 records processed twice)" in lines, run.stdout
