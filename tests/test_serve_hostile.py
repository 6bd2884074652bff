"""Bad input never stops `groupspec serve` and never loses an acknowledged commit: a malformed frame, an unknown
API key or version, a frame over the size limit, half a frame and a stall, thousands of idle connections, a
client gone with requests parked.  Each gets its connection closed (what Kafka's socket server does with bytes
it cannot read), with one log line, and every other client keeps being served."""
from __future__ import annotations

import logging
import resource
import signal
import socket
import struct
import time

import pytest

from groupspec.checkers.kafka import framing, messages
from groupspec.checkers.serve.server import Server
from serving import call, in_thread, start_cli

PROTOCOLS = [{"name": "range", "metadata": "\x00\x00\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x00"}]


def _req(api: str, **fields):
    return messages.request(api, fields)[1]


@pytest.fixture
def served():
    with in_thread(Server({"group.initial.rebalance.delay.ms": 0}, {"t": 2}, port=0, idle_ms=1500)) as srv:
        yield srv


def _closed_by_server(s: socket.socket, within: float = 5) -> bool:
    s.settimeout(within)
    try:
        return s.recv(65536) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def _still_served(port: int) -> None:
    assert call(port, _req("ListGroups"))["error"] == "NONE"


def _header(key: int, version: int, correlation: int = 1) -> bytes:
    return struct.pack(">hhi", key, version, correlation) + b"\x00\x01c"


@pytest.mark.parametrize("what,frame,says", [
    ("a size field below 1", struct.pack(">i", -5) + b"xx", "a frame's size field is -5"),
    ("a size over the limit", struct.pack(">i", 1 << 30), f"a frame's size field is {1 << 30}, outside 1 to"),
    ("a frame too short for a header", struct.pack(">i", 3) + b"abc", "too short for a header"),
    ("an API key Kafka does not have", struct.pack(">i", 11) + _header(999, 0), "API key 999 version 0 is not one"),
    ("a version the server does not answer", struct.pack(">i", 11) + _header(12, 99), "API key 12 version 99"),
    ("a known request's body garbled", struct.pack(">i", 15) + _header(12, 3) + b"\xff\xff\xff\xff",
     "cannot be read as Kafka's HeartbeatRequest v3"),
])
def test_bytes_the_server_cannot_read_close_that_connection_with_one_log_line(served, caplog, what, frame, says):
    with caplog.at_level(logging.INFO, logger="groupspec.serve"), \
            socket.create_connection(("127.0.0.1", served.port), timeout=5) as s:
        s.sendall(frame)
        assert _closed_by_server(s), what
    lines = [r.getMessage() for r in caplog.records if "closing a connection" in r.getMessage()]
    assert len(lines) == 1 and says in lines[0], lines
    _still_served(served.port)


def test_half_a_frame_and_a_stall_holds_up_no_one_and_is_closed_when_idle(served, caplog):
    with caplog.at_level(logging.INFO, logger="groupspec.serve"), \
            socket.create_connection(("127.0.0.1", served.port), timeout=5) as s:
        s.sendall(struct.pack(">i", 100) + _header(16, 0)[:5])
        _still_served(served.port)
        assert _closed_by_server(s, within=10)         # Kafka's connections.max.idle.ms, here 1.5 s
    assert any("idle for 1500 ms, 9 bytes of a frame unfinished" in r.getMessage() for r in caplog.records), \
        [r.getMessage() for r in caplog.records]


def test_a_client_gone_with_its_join_parked_leaves_the_server_serving(served):
    """Two members; the second's JoinGroup is parked until the first rejoins, and its client disconnects.  The
    answer, when the join completes, goes nowhere; the group carries on."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as a:
        first = call(served.port, _join(""), sock=a)
        joined = call(served.port, _join(first["member"]), sock=a)
        sync = _req("SyncGroup", group="g", member=joined["member"], generation=joined["generation"],
                    assignments={joined["member"]: ["t-0", "t-1"]})
        assert call(served.port, sync, sock=a)["error"] == "NONE"
        b = socket.create_connection(("127.0.0.1", served.port), timeout=10)
        other = call(served.port, _join(""), sock=b)
        b.sendall(framing.encode_request(_join(other["member"]), 2, "b"))       # parked: a rebalance begins
        time.sleep(0.2)
        b.close()
        # the first member rejoins: the join completes with both, and b's answer has no one to go to
        again = call(served.port, _join(joined["member"]), sock=a)
        assert again["error"] == "NONE" and len(again["members"]) == 2
    _still_served(served.port)


def _join(member: str):
    return _req("JoinGroup", group="g", member=member, session_timeout_ms=6000, rebalance_timeout_ms=6000,
                protocol_type="consumer", protocols=PROTOCOLS, version=7)


def test_thousands_of_idle_connections_and_hostile_bytes_lose_no_acknowledged_commit(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = 2_000
    if hard != resource.RLIM_INFINITY and hard < n + 200:
        pytest.skip(f"this machine allows {hard} open files; the test holds {n}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, n + 500)) if hard != resource.RLIM_INFINITY
                                                else n + 500, hard))
    log = str(tmp_path / "meta.log")
    proc, port, _admin = start_cli("--log", log, "--topics", "t:2")
    idle = []
    try:
        commit = _req("OffsetCommit", group="g", member="", generation=-1, offsets={"t-0": 77})
        assert call(port, commit)["errors"] == {"t-0": "NONE"}           # acknowledged: it is in the log
        for _ in range(n):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        for junk in (struct.pack(">i", -1), struct.pack(">i", 12) + b"\x00" * 12, b"\x00\x00\x00\x08GET / HT"):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(junk)
                assert _closed_by_server(s)
        began = time.monotonic()
        assert call(port, _req("OffsetFetch", group="g", partitions=["t-0"]))["offsets"] == {"t-0": 77}
        assert time.monotonic() - began < 5
    finally:
        for s in idle:
            s.close()
        proc.send_signal(signal.SIGKILL)          # no orderly stop: what was acknowledged must be in the log
        proc.wait(20)
    proc, port, _admin = start_cli("--log", log, "--topics", "t:2")
    try:
        assert call(port, _req("OffsetFetch", group="g", partitions=["t-0"]))["offsets"] == {"t-0": 77}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
