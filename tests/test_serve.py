"""The runtime coordinator over Kafka's protocol (checkers/serve/server.py), with real consumers: kafka-python's
KafkaConsumer forms a group on it, and what each consumer is given is what the spec's coordinator holds."""
from __future__ import annotations

import logging
import signal
import socket
import subprocess
import sys
import time

import pytest

from groupspec.checkers.kafka import framing, messages
from groupspec.checkers.serve.server import Server, advertised
from serving import call, in_thread, kafka_python_group, start_cli

kafka = pytest.importorskip("kafka")     # a test dependency (pyproject: test extra)


@pytest.fixture
def server():
    with in_thread(Server({"group.initial.rebalance.delay.ms": 0}, {"t": 4}, port=0)) as srv:
        yield srv


def _assigned(consumers) -> list[list[str]]:
    return [sorted(f"{p.topic}-{p.partition}" for p in c.assignment()) for c in consumers]


def test_kafka_python_consumers_form_a_group_as_the_spec_assigns(server):
    consumers = kafka_python_group(server.port, 2)
    try:
        snap = server.coord.snapshot("g")
        assert snap["state"] == "Stable" and snap["protocol"] == "range", snap
        # each consumer holds what the coordinator handed its member: the range assignor's halves
        assert sorted(_assigned(consumers)) == sorted(sorted(a) for a in snap["assignment"].values())
        assert sorted(_assigned(consumers)) == [["t-0", "t-1"], ["t-2", "t-3"]]
        # what an admin tool sees (Kafka's DescribeGroups: each member's client id, host and assignment, Stable)
        admin = kafka.KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{server.port}")
        try:
            described = admin.describe_groups(["g"])["g"]
        finally:
            admin.close()
        assert described["group_state"] == "Stable" and described["protocol_data"] == "range"
        seen = sorted((m["client_id"], m["client_host"], m["member_metadata"]["topics"],
                       [f"t-{p}" for a in m["member_assignment"]["assigned_partitions"] for p in a["partitions"]])
                      for m in described["members"])
        held = sorted((c.config["client_id"], "/127.0.0.1", ["t"], a) for c, a in zip(consumers, _assigned(consumers)))
        assert seen == held
    finally:
        for c in consumers:
            c.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and server.coord.snapshot("g")["state"] != "Empty":
        time.sleep(0.05)
    assert server.coord.snapshot("g")["state"] == "Empty"       # both left (LeaveGroup on close)


def test_a_newer_clients_api_versions_gets_the_versions_it_can_use(server):
    """Kafka's rule: ApiVersions at a version the server does not know is answered at version 0, with
    UNSUPPORTED_VERSION and the versions the server answers, so that the client asks again."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        header = (18).to_bytes(2, "big") + (99).to_bytes(2, "big") + (7).to_bytes(4, "big") + b"\xff\xff"
        s.sendall(len(header).to_bytes(4, "big") + header)
        buf = bytearray()
        while (data := framing.take_frame(buf)) is None:
            buf += s.recv(65536)
    from kio import index
    head, body = framing.decode_response(data, index.load_response_schema(18, 0))
    assert head.correlation_id == 7 and messages.error_name(body.error_code) == "UNSUPPORTED_VERSION"
    assert {k.api_key: (k.min_version, k.max_version) for k in body.api_keys} == advertised()



@pytest.mark.parametrize("args,says", [
    (["--topics", "t:x"], "--topics 't:x': give name:partitions"),
    (["--config", "group.max.size=0"], "group.max.size must be at least 1"),
    (["--config", "nonsense"], "give key=value"),
    (["--port", "70000"], "give a port from 0 to 65535"),
])
def test_bad_input_is_one_line_and_exit_2(args, says):
    run = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "serve", *args], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 2 and says in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_serve_says_where_it_listens_refuses_a_taken_port_shows_its_stacks_and_stops_on_sigterm():
    proc = subprocess.Popen([sys.executable, "-m", "groupspec.checkers.cli", "serve", "--port", "0", "--topics", "t:2"],
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert "the spec's coordinator on 127.0.0.1:" in line and "(topics: t:2)" in line, line
        port = int(line.split("127.0.0.1:")[1].split()[0])
        taken = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "serve", "--port", str(port)],
                               capture_output=True, text=True, timeout=60)
        assert taken.returncode == 2 and f"--port {port}: in use" in taken.stderr, taken.stderr
        proc.send_signal(signal.SIGUSR1)      # a server that seems stuck says where each thread is, and goes on
        proc.send_signal(signal.SIGTERM)
        rest = proc.stderr.read()
        assert proc.wait(20) == 0 and "groupspec serve: stopped" in rest
        assert "Current thread" in rest and "in serve_forever" in rest, rest
    finally:
        proc.kill()


@pytest.mark.parametrize("version", [0, 5, 7, 9])
def test_an_error_answer_is_kafkas_at_every_version(server, version):
    """A session timeout out of bounds: INVALID_SESSION_TIMEOUT, with no protocol (null from version 7, Kafka's
    empty string before)."""
    _, bad = messages.request("JoinGroup", {"group": "g", "member": "", "session_timeout_ms": -5,
                                            "protocol_type": "consumer", "protocols": ["range"], "version": version})
    got = call(server.port, bad)
    assert got["error"] == "INVALID_SESSION_TIMEOUT" and got["protocol"] == (None if version >= 7 else "")


def test_a_request_the_runtime_refuses_closes_that_connection_only(server, monkeypatch, caplog):
    """Whatever the runtime raises for one request (it answers every request Kafka could decode; this is the
    server's guard): that client's connection is closed with a log line, and the next client is served."""
    real = server.coord.send
    calls = []

    def once(*a, **kw):
        calls.append(a)
        if len(calls) == 1:
            raise RuntimeError("refused")
        return real(*a, **kw)
    monkeypatch.setattr(server.coord, "send", once)
    _, heartbeat = messages.request("Heartbeat", {"group": "g", "member": "m", "generation": 1})
    with caplog.at_level(logging.WARNING, logger="groupspec.serve"):
        assert call(server.port, heartbeat) is None
    assert "its request was refused (RuntimeError: 'refused')" in caplog.text
    _, ok = messages.request("ListGroups", {})
    assert call(server.port, ok, 2)["error"] == "NONE"


def test_offsets_committed_to_a_server_with_a_log_survive_its_restart(tmp_path):
    log = str(tmp_path / "group-metadata.log")
    proc, port, _admin = start_cli("--topics", "t:2", "--log", log)
    try:
        _, commit = messages.request("OffsetCommit", {"group": "g", "member": "", "generation": -1,
                                                      "offsets": {"t-0": 42, "t-1": 7}})
        assert call(port, commit)["errors"] == {"t-0": "NONE", "t-1": "NONE"}
        # a second server cannot open the same log: one line, exit 2
        taken = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "serve", "--port", "0", "--log", log],
                               capture_output=True, text=True, timeout=60)
        assert taken.returncode == 2 and "has it open; one writer at a time" in taken.stderr, taken.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    proc, port, _admin = start_cli("--topics", "t:2", "--log", log)
    try:
        _, fetch = messages.request("OffsetFetch", {"group": "g", "partitions": ["t-0", "t-1"]})
        assert call(port, fetch)["offsets"] == {"t-0": 42, "t-1": 7}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)


def test_every_version_advertised_is_one_kio_encodes_and_decodes():
    """The versions serve advertises are read off kio's index of its schemas, without importing them; each
    must be a request and a response kio loads, and the version on either side of the range one it does not
    (or one Kafka 3.9 does not accept)."""
    from groupspec.spec.kafka import ACCEPTED_VERSIONS
    for api, key in messages.API_KEYS.items():
        lo, hi = advertised()[key]
        for v in range(lo, hi + 1):
            assert messages.request_class(api, v) and messages.response_class(api, v), (api, v)
        accepted = ACCEPTED_VERSIONS[api]
        for outside in (lo - 1, hi + 1):
            if accepted[0] <= outside <= accepted[1]:
                with pytest.raises(messages.NotExpressible):
                    messages.request_class(api, outside)
