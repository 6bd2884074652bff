"""A Kafka broker as a target over the wire (checkers/kafka/wire.py) and the brokers `groupspec kafka broker`
starts (checkers/kafka/broker.py).

Most tests need no broker: the address, the refusals, and the adapter's own logic (namespaces, the time
scale, parking, snapshots, config checks) against a small fake broker that speaks Kafka's protocol with kio
and answers what each test tells it to.  The tests marked `kafka` start real brokers from the fetched jars
(`groupspec kafka setup`); they are left out by default (pytest -m kafka runs them).
"""
from __future__ import annotations

import datetime
import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kio import index as kio_index
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial.readers import read_int16, read_int32
from kio.serial.writers import write_int32
from typer.testing import CliRunner

from groupspec.checkers.cli import app
from groupspec.checkers.conform.adapter import Unsupported, load_factory
from groupspec.checkers.kafka import broker, jars, messages, registry, wire
from groupspec.spec.kafka import check_config

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "groupspec.checkers.cli"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli(*args: str, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / ".venv" / "bin" / "groupspec"), *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


# -- a fake broker: Kafka's protocol (kio), answers chosen by the test ---------------------------------------

def _ms(n: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=n)


class FakeBroker:
    """A TCP server that reads Kafka requests with kio and answers each with `handler(api_key, version,
    header, body)`: a response entity, None (never answer), or raw bytes (sent as they are)."""

    GROUP_CONFIG = {"group.min.session.timeout.ms": "200", "group.max.session.timeout.ms": "12000000",
                    "group.max.size": "4", "group.initial.rebalance.delay.ms": "1000"}

    def __init__(self, handler=None, versions: dict | None = None, coordinator: str = "scala"):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.address = f"kafka://127.0.0.1:{self.port}"
        self.handler = handler or (lambda *a: self.default(*a))
        self.versions = versions or {}
        self.coordinator = coordinator
        self.topics: dict[str, int] = {}     # topic -> partitions (CreateTopics, CreatePartitions)
        self.received: list[tuple[int, int, object, object]] = []    # (api key, version, header, body)
        self.held: list = []          # (conn, response class, correlation id) the test answers later
        self.lock = threading.Lock()
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.stopped = True
        self.sock.close()

    def _accept(self) -> None:
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        try:
            while True:
                while len(buf) < 4 or len(buf) < 4 + read_int32(buf[:4], 0)[0]:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                size = read_int32(buf[:4], 0)[0]
                data, buf = buf[4:4 + size], buf[4 + size:]
                key, _ = read_int16(data[:2], 0)
                version, _ = read_int16(data[2:4], 0)
                req_cls = kio_index.load_request_schema(key, version)
                header, at = entity_reader(req_cls.__header_schema__)(data, 0)
                body, _ = entity_reader(req_cls)(data, at)
                with self.lock:
                    self.received.append((key, version, header, body))
                try:
                    answer = self.handler(key, version, header, body)
                except AssertionError:      # a request the test did not expect: the client sees the connection go
                    conn.close()
                    raise
                if answer is None:
                    with self.lock:
                        self.held.append((conn, key, version, header.correlation_id))
                    continue
                if answer == "close":
                    conn.close()
                    return
                conn.sendall(answer if isinstance(answer, bytes) else self.frame(key, version,
                                                                                  header.correlation_id, answer))
        except OSError:
            return

    @staticmethod
    def frame(key: int, version: int, correlation: int, body) -> bytes:
        resp_cls = kio_index.load_response_schema(key, version)
        out = io.BytesIO()
        entity_writer(resp_cls.__header_schema__)(out, resp_cls.__header_schema__(correlation_id=correlation))
        entity_writer(resp_cls)(out, body)
        framed = io.BytesIO()
        write_int32(framed, len(out.getvalue()))
        return framed.getvalue() + out.getvalue()

    def answer_held(self, make) -> None:
        """Answer every held request with `make(key, version)`."""
        with self.lock:
            held, self.held = self.held, []
        for conn, key, version, correlation in held:
            conn.sendall(self.frame(key, version, correlation, make(key, version)))

    def requests(self, key: int) -> list:
        with self.lock:
            return [(v, h, b) for k, v, h, b in self.received if k == key]

    # the handshake's answers, and a default for the rest --------------------------------------------------

    def default(self, key: int, version: int, header, body):
        cls = kio_index.load_response_schema(key, version)
        if key == 18:
            av = kio_index.load_response_schema(18, version)
            ranges = {18: (0, 3), 10: (0, 4), 32: (0, 4), 3: (0, 12), 19: (0, 7), 37: (0, 3), 11: (0, 9), 14: (0, 5),
                      12: (0, 4), 13: (0, 5), 8: (0, 9), 9: (0, 9), 15: (0, 5), 16: (0, 5), 42: (0, 2),
                      **self.versions}
            item = _nested(av, "api_keys")
            return av(error_code=ErrorCode.none, api_keys=tuple(item(api_key=k, min_version=lo, max_version=hi)
                                                                for k, (lo, hi) in ranges.items()),
                      throttle_time=_ms(0))
        if key == 10:
            c = _nested(cls, "coordinators")
            return cls(throttle_time=_ms(0), coordinators=(c(key=body.coordinator_keys[0], node_id=1,
                                                             host="127.0.0.1", port=self.port,
                                                             error_code=ErrorCode.none, error_message=None),))
        if key == 32:
            res = _nested(cls, "results")
            entry = _nested(res, "configs")
            return cls(throttle_time=_ms(0), results=(res(
                error_code=ErrorCode.none, error_message=None, resource_type=4, resource_name="1",
                configs=tuple(entry(name=k, value=v, read_only=True, is_sensitive=False, synonyms=(),
                                    documentation=None) for k, v in self.GROUP_CONFIG.items())),))
        if key == 3:
            t = _nested(cls, "topics")
            p = _nested(t, "partitions")
            return cls(throttle_time=_ms(0), brokers=(), cluster_id="c", controller_id=1, topics=tuple(
                t(error_code=ErrorCode.none if x.name in self.topics else ErrorCode.unknown_topic_or_partition,
                  name=x.name, topic_id=None, partitions=tuple(p(error_code=ErrorCode.none, partition_index=i,
                                                                  leader_id=1) for i in range(self.topics.get(x.name, 0))))
                for x in body.topics))
        if key == 19:
            t = _nested(cls, "topics")
            for x in body.topics:
                self.topics[x.name] = x.num_partitions
            return cls(throttle_time=_ms(0), topics=tuple(t(name=x.name, topic_id=None, error_code=ErrorCode.none,
                                                            error_message=None, num_partitions=x.num_partitions,
                                                            replication_factor=1, configs=()) for x in body.topics))
        if key == 37:
            t = _nested(cls, "results")
            for x in body.topics:
                self.topics[x.name] = x.count
            return cls(throttle_time=_ms(0), results=tuple(t(name=x.name, error_code=ErrorCode.none,
                                                             error_message=None) for x in body.topics))
        if key == 8:
            # the two coordinators' answers to a commit with a generation to a group nobody made (the probe)
            err = ErrorCode.none if not body.group_id.startswith("groupspec-probe-") else \
                {"scala": ErrorCode.illegal_generation, "java": ErrorCode.group_id_not_found}.get(self.coordinator,
                                                                                                   ErrorCode.none)
            t = _nested(cls, "topics")
            p = _nested(t, "partitions")
            return cls(throttle_time=_ms(0), topics=tuple(t(name=x.name, partitions=tuple(
                p(partition_index=y.partition_index, error_code=err) for y in x.partitions)) for x in body.topics))
        if key == 42:
            t = _nested(cls, "results")
            return cls(throttle_time=_ms(0), results=tuple(t(group_id=g, error_code=ErrorCode.group_id_not_found)
                                                           for g in body.groups_names))
        raise AssertionError(f"the fake broker was not told how to answer API {key}")


def _nested(cls, field_name: str):
    """The entity class of a field of `cls` (tuple[Entity, ...])."""
    return messages._entity_of({f.name: f for f in __import__("dataclasses").fields(cls)}[field_name].type)


@pytest.fixture
def fake():
    brokers = []

    def make(handler=None, versions=None, coordinator="scala") -> FakeBroker:
        b = FakeBroker(handler, versions, coordinator)
        brokers.append(b)
        return b
    yield make
    for b in brokers:
        b.close()


def _join_response(version: int, member: str, error=ErrorCode.none, generation=1, members=()):
    cls = kio_index.load_response_schema(11, version)
    m = _nested(cls, "members")
    return cls(throttle_time=_ms(0), error_code=error, generation_id=generation, protocol_type="consumer",
               protocol_name="range", leader=member, skip_assignment=False, member_id=member,
               members=tuple(m(member_id=x, group_instance_id=None, metadata=b"") for x in members))


def _target(address: str, config: dict | None = None):
    return load_factory(address)(check_config({**SUITE, **(config or {})}))


SUITE = {"group.min.session.timeout.ms": 10, "group.max.session.timeout.ms": 600_000, "group.max.size": 4,
         "group.initial.rebalance.delay.ms": 50}


# -- the address -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,host,port", [("kafka://127.0.0.1:9092", "127.0.0.1", 9092),
                                            ("kafka://localhost:1", "localhost", 1),
                                            ("kafka://[::1]:65535", "::1", 65535)])
def test_addresses_are_host_and_port(name, host, port):
    a = wire.parse_address(name)
    assert (a.host, a.port) == (host, port)
    assert a.knobs == wire.Knobs()


def test_address_knobs_are_read_and_bounded():
    a = wire.parse_address("kafka://127.0.0.1:9092?time_scale=50&settle_ms=30&max_advance_s=5")
    assert (a.knobs.time_scale, a.knobs.settle_ms, a.knobs.max_advance_s) == (50, 30.0, 5.0)


@pytest.mark.parametrize("name,says", [
    ("kafka://127.0.0.1", "no port"), ("kafka://127.0.0.1:0", "no port"), ("kafka://127.0.0.1:70000", "not host:port"),
    ("kafka://127.0.0.1:ab", "not host:port"), ("kafka://:9092", "no host"), ("kafka://h:1/path", "only host:port"),
    ("kafka://h:1?speed=2", "unknown parameter 'speed'"), ("kafka://h:1?time_scale=0", "time_scale='0': must be"),
    ("kafka://h:1?time_scale=x", "not a number"), ("kafka://h:1?settle_ms=nan", "must be"),
    ("http://h:1", "kafka://host:port")])
def test_bad_addresses_are_one_line(name, says):
    with pytest.raises(wire.BrokerUnavailable) as e:
        wire.parse_address(name)
    assert says in str(e.value) and "\n" not in str(e.value)


# -- a broker that is not there, or is not Kafka: one line, exit 2, at once ---------------------------------------

def test_a_port_nobody_listens_on_is_one_line_and_exit_2_quickly():
    port = _free_port()
    began = time.monotonic()
    run = _cli("scenario", "run", str(REPO / "tests/scenarios/kafka/admin.yaml"), "--target",
               f"kafka://127.0.0.1:{port}")
    assert run.returncode == 2, run.stdout + run.stderr
    assert time.monotonic() - began < 20
    lines = [x for x in run.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "connection refused" in lines[0] and f"127.0.0.1:{port}" in lines[0], run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""


def test_conform_refuses_an_unreachable_broker_the_same_way():
    port = _free_port()
    run = _cli("conform", "--adapter", f"kafka://127.0.0.1:{port}", "--examples", "1")
    assert run.returncode == 2 and "connection refused" in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_a_bad_address_on_the_command_line_is_one_line():
    run = _cli("scenario", "run", "--target", "kafka://127.0.0.1:99999")
    assert run.returncode == 2 and "not host:port" in run.stderr and "Traceback" not in run.stderr


def test_a_server_answering_garbage_is_refused_in_one_line(fake):
    b = fake(lambda *a: b"\x00\x00\x00\x08garbage!")
    with pytest.raises(wire.BrokerUnavailable) as e:
        load_factory(b.address)
    assert "cannot be read as Kafka's ApiVersionsResponse" in str(e.value) and "\n" not in str(e.value)


def test_a_frame_of_an_impossible_size_is_refused(fake):
    b = fake(lambda *a: b"\xff\xff\xff\xf0")
    with pytest.raises(wire.BrokerUnavailable, match="not a Kafka frame"):
        load_factory(b.address)


def test_a_server_closing_the_connection_is_refused_in_one_line(fake):
    b = fake(lambda *a: "close")
    with pytest.raises(wire.BrokerUnavailable, match="closed the connection with ApiVersionsResponse v3 unanswered"):
        load_factory(b.address)


def test_an_answer_to_another_correlation_id_is_refused(fake):
    def handler(key, version, header, body):
        b.handler = lambda *a: b.default(*a)
        return FakeBroker.frame(key, version, header.correlation_id + 7, b.default(key, version, header, body))
    b = fake(handler)
    with pytest.raises(wire.BrokerUnavailable, match="correlation id 8, expected 1"):
        load_factory(b.address)


def test_a_silent_server_times_out_in_one_line(fake, monkeypatch):
    monkeypatch.setattr(wire, "REQUEST_TIMEOUT_S", 0.3)
    b = fake(lambda *a: None)
    began = time.monotonic()
    with pytest.raises(wire.BrokerUnavailable, match="no answer to ApiVersionsRequest v3 within 0.3 s"):
        load_factory(b.address)
    assert time.monotonic() - began < 5


def test_a_server_without_the_apis_the_target_needs_is_refused(fake):
    b = fake(versions={32: (0, 1)})
    with pytest.raises(wire.BrokerUnavailable, match="does not answer DescribeConfigs version 4"):
        load_factory(b.address)


def test_a_coordinator_elsewhere_is_refused(fake):
    def handler(key, version, header, body):
        got = b.default(key, version, header, body)
        if key == 10:
            c = got.coordinators[0]
            got = type(got)(throttle_time=_ms(0), coordinators=(type(c)(
                key=c.key, node_id=2, host="10.0.0.9", port=9092, error_code=ErrorCode.none, error_message=None),))
        return got
    b = fake(handler)
    with pytest.raises(wire.BrokerUnavailable, match="10.0.0.9:9092, another broker"):
        load_factory(b.address)


# -- config and time scale -----------------------------------------------------------------------------------

def test_the_broker_config_is_the_fixed_config_in_scenario_terms(fake):
    b = fake()
    factory = load_factory(b.address + "?time_scale=20")
    assert factory.fixed_config == {"group.min.session.timeout.ms": 10, "group.max.session.timeout.ms": 600_000,
                                    "group.max.size": 4, "group.initial.rebalance.delay.ms": 50,
                                    "group.new.member.join.timeout.ms": 300_000,
                                    "group.coordinator.new.enable": False}
    impl = factory(check_config(SUITE))
    assert impl.unsupported == frozenset(wire.UNSUPPORTED)
    assert impl.partial_snapshots and impl.partial_responses


def test_a_scenario_config_the_broker_does_not_have_is_unsupported_naming_both_values(fake):
    b = fake()
    factory = load_factory(b.address + "?time_scale=20")
    with pytest.raises(Unsupported) as e:
        factory(check_config({**SUITE, "group.max.size": 2}))
    assert "group.max.size is 2 in the scenario and 4 on the broker at time scale 20" in str(e.value)
    with pytest.raises(Unsupported, match="Kafka has no such config"):
        factory(check_config({**SUITE, "group.new.member.join.timeout.ms": 1000}))
    # the constant, as every scenario's default says it, or as it is in scenario time at this scale
    factory(check_config({**SUITE, "group.new.member.join.timeout.ms": 15_000}))
    # retention is read only when offsets expire, which no broker can be told to do
    factory(check_config({**SUITE, "offsets.retention.minutes": 1}))


def test_which_coordinator_serves_classic_groups_is_probed(fake):
    java = load_factory(fake(coordinator="java").address + "?time_scale=20")
    assert java.broker.coordinator == "java" and java.fixed_config["group.coordinator.new.enable"] is True
    java(check_config({**SUITE, "group.coordinator.new.enable": True}))
    with pytest.raises(Unsupported, match="group.coordinator.new.enable is false in the scenario .Kafka 3.9's Scala "
                                          "GroupCoordinator., and the broker runs the java coordinator"):
        java(check_config(SUITE))
    scala = load_factory(fake().address + "?time_scale=20")
    assert scala.broker.coordinator == "scala" and scala.fixed_config["group.coordinator.new.enable"] is False


def test_reads_on_the_java_coordinator_wait_for_its_writes_to_commit(fake):
    def handler(key, version, header, body):
        if key == 15:
            cls = kio_index.load_response_schema(key, version)
            return cls(throttle_time=_ms(0), groups=(_nested(cls, "groups")(
                error_code=ErrorCode.none, group_id=body.groups[0], group_state="Dead", protocol_type="",
                protocol_data="", members=(), authorized_operations=-2147483648),))
        return b.default(key, version, header, body)
    for coordinator, barriers in (("java", 2), ("scala", 0)):
        b = fake(coordinator=coordinator)
        b.handler = handler
        impl = _target(b.address + "?time_scale=20", {"group.coordinator.new.enable": coordinator == "java"})
        impl.send("DescribeGroups", {"groups": ["g"]}, "d")
        impl.snapshot("g")
        commits = [body.group_id for _, _, body in b.requests(8)]
        assert commits.count(wire.BARRIER_GROUP) == barriers
        if barriers:       # each barrier came just before the read it guards
            order = [(k, getattr(body, "group_id", None)) for k, _, _, body in b.received if k in (8, 15)]
            assert order[-4:] == [(8, wire.BARRIER_GROUP), (15, None)] * 2


def test_a_broker_answering_the_probe_as_neither_coordinator_is_refused(fake):
    b = fake(coordinator="other")
    with pytest.raises(wire.BrokerUnavailable, match="answered NONE, which neither of Kafka's coordinators answers"):
        load_factory(b.address)


def test_a_broker_config_that_is_not_a_multiple_of_the_scale_is_refused(fake):
    b = fake()
    with pytest.raises(wire.BrokerUnavailable, match="not a multiple of the time scale 7"):
        load_factory(b.address + "?time_scale=7")


def _join_handler(b, park: bool = False):
    def handler(key, version, header, body):
        if key == 11:
            if park and body.member_id:
                return None
            return _join_response(version, f"{header.client_id}-1", ErrorCode.member_id_required
                                  if not body.member_id else ErrorCode.none)
        return b.default(key, version, header, body)
    return handler


def test_requests_go_out_namespaced_scaled_and_with_the_client_id(fake):
    b = fake()
    b.handler = _join_handler(b)
    impl = _target(b.address + "?time_scale=20")
    got = impl.send("JoinGroup", {"group": "g", "member": "", "client": "c7", "session_timeout_ms": 500,
                                  "rebalance_timeout_ms": 300, "protocol_type": "consumer", "protocols": ["range"]},
                    "j1")
    assert got["error"] == "MEMBER_ID_REQUIRED" and got["member"] == "c7-1"
    (version, header, body), = b.requests(11)
    assert version == 9 and header.client_id == "c7"
    assert body.group_id == "g" + impl.ns and body.group_id != "g"
    assert body.session_timeout == _ms(10_000) and body.rebalance_timeout == _ms(6_000)


def test_the_empty_group_id_stays_empty(fake):
    b = fake()
    b.handler = _join_handler(b)
    impl = _target(b.address + "?time_scale=20")
    impl.send("JoinGroup", {"group": "", "member": "", "session_timeout_ms": 500, "protocol_type": "consumer",
                            "protocols": ["range"]}, "j")
    assert b.requests(11)[0][2].group_id == ""
    impl.send("JoinGroup", {"group": "", "member": "", "session_timeout_ms": 500, "protocol_type": "consumer",
                            "protocols": ["range"]}, "j2")
    impl.close()
    # the one id a namespace cannot be given: what an earlier scenario left there is deleted before this one names
    # it, and what this one leaves when it ends
    order = [(k, body.groups_names if k == 42 else body.group_id) for k, _, _, body in b.received if k in (11, 42)]
    assert order == [(42, ("",)), (11, ""), (11, ""), (42, ("",))]


def test_a_version_the_broker_does_not_answer_is_unsupported(fake):
    b = fake(versions={15: (0, 5)})
    impl = _target(b.address + "?time_scale=20")
    with pytest.raises(Unsupported, match="DescribeGroups version 6: the broker answers versions 0 to 5"):
        impl.send("DescribeGroups", {"groups": ["g"], "version": 6}, "d")
    with pytest.raises(Unsupported, match="cannot carry a group.instance.id"):
        impl.send("JoinGroup", {"group": "g", "member": "", "instance": "i", "session_timeout_ms": 500,
                                "protocol_type": "consumer", "protocols": ["range"], "version": 4}, "j")
    assert not b.requests(15) and not b.requests(11)


def test_a_join_unanswered_within_the_settle_window_is_parked_then_answered(fake):
    b = fake()
    b.handler = _join_handler(b, park=True)
    impl = _target(b.address + "?time_scale=20&settle_ms=20")
    req = {"group": "g", "member": "m", "session_timeout_ms": 500, "protocol_type": "consumer", "protocols": ["range"]}
    assert impl.send("JoinGroup", req, "j1") is None
    assert impl.send("JoinGroup", {**req, "member": "n"}, "j2") is None
    assert impl.answered() == []
    deadline = time.monotonic() + 5
    while len(b.held) < 2 and time.monotonic() < deadline:      # the fake reads on its own threads
        time.sleep(0.01)
    b.answer_held(lambda key, version: _join_response(version, "m", members=["m"]))
    deadline = time.monotonic() + 5
    got: dict = {}
    while len(got) < 2 and time.monotonic() < deadline:
        got.update(impl.answered())
        time.sleep(0.01)
    assert sorted(got) == ["j1", "j2"] and got["j1"]["members"] == ["m"]
    assert impl.answered() == []


def test_a_request_that_cannot_park_and_gets_no_answer_fails_the_step(fake, monkeypatch):
    monkeypatch.setattr(wire, "REQUEST_TIMEOUT_S", 0.3)
    b = fake()
    b.handler = lambda key, *a: None if key == 12 else b.default(key, *a)
    impl = _target(b.address + "?time_scale=20")
    with pytest.raises(wire.WireError, match="no answer to Heartbeat v4 within 0.3 s"):
        impl.send("Heartbeat", {"group": "g", "member": "m", "generation": 1}, "h")


def test_a_connection_closed_mid_scenario_fails_the_step_with_the_reason(fake):
    b = fake()
    b.handler = lambda key, *a: "close" if key == 12 else b.default(key, *a)
    impl = _target(b.address + "?time_scale=20")
    with pytest.raises(wire.WireError, match="closed the connection with HeartbeatResponse v4 unanswered"):
        impl.send("Heartbeat", {"group": "g", "member": "m", "generation": 1}, "h")


def test_group_lists_show_only_the_scenarios_groups_under_their_own_names(fake):
    b = fake()

    def handler(key, version, header, body):
        cls = kio_index.load_response_schema(key, version) if key in (15, 16, 42) else None
        if key == 16:
            item = _nested(cls, "groups")
            return cls(throttle_time=_ms(0), error_code=ErrorCode.none, groups=tuple(
                item(group_id=g, protocol_type="consumer", group_state="Empty", group_type="classic")
                for g in ("g" + impl.ns, "g-someone-else", "other", "h" + impl.ns)))
        if key == 15:
            item = _nested(cls, "groups")
            return cls(throttle_time=_ms(0), groups=tuple(
                item(error_code=ErrorCode.none, group_id=g, group_state="Dead", protocol_type="", protocol_data="",
                     members=(), authorized_operations=-2147483648) for g in body.groups))
        if key == 42:
            item = _nested(cls, "results")
            return cls(throttle_time=_ms(0), results=tuple(item(group_id=g, error_code=ErrorCode.group_id_not_found)
                                                           for g in body.groups_names))
        return b.default(key, version, header, body)
    b.handler = handler
    impl = _target(b.address + "?time_scale=20")
    listed = impl.send("ListGroups", {}, "l")
    assert sorted(g["group"] for g in listed["groups"]) == ["g", "h"]
    described = impl.send("DescribeGroups", {"groups": ["g", "x"]}, "d")
    assert [g["group"] for g in described["groups"]] == ["g", "x"]
    assert b.requests(15)[0][2].groups == ("g" + impl.ns, "x" + impl.ns)
    deleted = impl.send("DeleteGroups", {"groups": ["g"]}, "x")
    assert deleted["errors"] == {"g": "GROUP_ID_NOT_FOUND"}


def test_a_snapshot_is_what_describe_groups_and_offset_fetch_show(fake):
    b = fake()
    state = {"state": "Stable"}

    def handler(key, version, header, body):
        cls = kio_index.load_response_schema(key, version) if key in (9, 15) else None
        if key == 15:
            item = _nested(cls, "groups")
            member = _nested(item, "members")
            return cls(throttle_time=_ms(0), groups=(item(
                error_code=ErrorCode.none, group_id=body.groups[0], group_state=state["state"],
                protocol_type="consumer", protocol_data="range" if state["state"] == "Stable" else "",
                members=(member(member_id="m1", group_instance_id="i1", client_id="c", client_host="/127.0.0.1",
                                member_metadata=b"", member_assignment=messages.encode_assignment(["t-0", "t-1"])),
                         member(member_id="m2", group_instance_id=None, client_id="c", client_host="/127.0.0.1",
                                member_metadata=b"", member_assignment=b"")),
                authorized_operations=-2147483648),))
        if key == 9:
            group = _nested(cls, "groups")
            topic = _nested(group, "topics")
            part = _nested(topic, "partitions")
            return cls(throttle_time=_ms(0), groups=(group(group_id=body.groups[0].group_id, topics=(topic(
                name="t", partitions=(part(partition_index=0, committed_offset=5, committed_leader_epoch=-1,
                                           metadata="", error_code=ErrorCode.none),)),), error_code=ErrorCode.none),))
        return b.default(key, version, header, body)
    b.handler = handler
    impl = _target(b.address + "?time_scale=20")
    snap = impl.snapshot("g")
    assert snap == {"state": "Stable", "protocol_type": "consumer", "members": ["m1", "m2"],
                    "static_members": {"i1": "m1"}, "protocol": "range",
                    "assignment": {"m1": ["t-0", "t-1"], "m2": []}, "offsets": {"t-0": 5}}
    assert "generation" not in snap and "leader" not in snap and "pending_members" not in snap
    state["state"] = "CompletingRebalance"        # Kafka describes the protocol and assignments only when Stable
    snap = impl.snapshot("g")
    assert "protocol" not in snap and "assignment" not in snap and snap["state"] == "CompletingRebalance"
    state["state"] = "Dead"                       # how a broker describes a group it does not hold
    assert impl.snapshot("g") is None


def test_what_a_broker_cannot_be_told_is_unsupported(fake):
    impl = _target(fake().address + "?time_scale=20")
    for method, args in (("storage_hold", (True,)), ("storage_fail_next", ("NONE",)), ("storage_complete", ("NONE",)),
                         ("unload", ()), ("begin_load", ()), ("load", ()), ("mark_dead", ("g",)),
                         ("expire_offsets", ())):
        assert method in impl.unsupported
        with pytest.raises(Unsupported):
            getattr(impl, method)(*args)


def test_advances_are_scaled_and_bounded(fake):
    impl = _target(fake().address + "?time_scale=20&grace_ms=0&max_advance_s=1")
    began = time.monotonic()
    impl.advance(10)                     # 200 real ms
    took = time.monotonic() - began
    assert 0.19 <= took < 0.6
    with pytest.raises(Unsupported, match="advance_ms 60 is 1.2 s of real time at time scale 20"):
        impl.advance(60)


def test_advances_wait_past_the_latest_requests_phase_once(fake):
    b = fake()
    b.handler = _join_handler(b)
    impl = _target(b.address + "?time_scale=20&grace_ms=0")
    time.sleep(0.3)                   # the scenario's first request goes out 0.3 s after scenario time 0
    impl.send("JoinGroup", {"group": "g", "member": "", "session_timeout_ms": 500, "protocol_type": "consumer",
                            "protocols": ["range"]}, "j")
    phase = impl.phase
    assert 0.3 <= phase < time.monotonic() - impl.began
    # the broker's clock must pass 200 ms after that request; the slack is for a loaded machine, well under the
    # phase, so waiting it out twice fails
    impl.advance(10)
    assert phase + 0.2 <= time.monotonic() - impl.began < phase + 0.2 + 0.15
    time.sleep(0.1)                   # time taken after the last request (a snapshot, say) is not added
    impl.advance(10)
    assert phase + 0.4 <= time.monotonic() - impl.began < phase + 0.4 + 0.15


def test_advances_stop_short_of_kafkas_constant_new_member_join_timeout(fake):
    impl = _target(fake().address + "?time_scale=20&max_advance_s=1000&grace_ms=0")
    impl.began -= 290                 # as if the scenario had run 290 s: 14500 scenario ms at this scale
    impl.clock_ms = 290 * 1000 // 20
    impl.advance(10)                  # 0.2 s more: still short of it
    with pytest.raises(Unsupported, match="new-member join timeout is a constant 300000 ms of real time"):
        impl.advance(500)
    # where the config says the constant as it is in scenario time (300000 / 100), nothing is refused
    faithful = _target(fake().address + "?time_scale=100&max_advance_s=1000",
                       {"group.min.session.timeout.ms": 2, "group.max.session.timeout.ms": 120_000,
                        "group.initial.rebalance.delay.ms": 10, "group.new.member.join.timeout.ms": 3000})
    assert faithful.horizon is None


def test_commits_create_their_topics_first(fake):
    b = fake()
    impl = _target(b.address + "?time_scale=20")
    got = impl.send("OffsetCommit", {"group": "g", "generation": -1, "member": "", "offsets": {"t0-2": 5, "t1-0": 1}},
                    "c")
    assert got == {"errors": {"t0-2": "NONE", "t1-0": "NONE"}}
    assert b.topics == {"groupspec-probe": wire.NEW_TOPIC_PARTITIONS, "t0": wire.NEW_TOPIC_PARTITIONS,
                        "t1": wire.NEW_TOPIC_PARTITIONS}
    impl.send("OffsetCommit", {"group": "g", "offsets": {"t0-40": 5}}, "c2")
    assert b.topics["t0"] == 41 and len(b.requests(19)) == 2 and len(b.requests(37)) == 1
    # the broker saw each commit after its topics existed
    assert [body.topics[0].name for _, _, body in b.requests(8)] == ["groupspec-probe", "t0", "t0"]


# -- `groupspec kafka broker`: refusals before any JVM starts ----------------------------------------------

def test_start_refuses_a_version_this_project_does_not_run():
    run = CliRunner().invoke(app, ["kafka", "broker", "start", "--version", "3.8"])
    assert run.exit_code == 2 and "not a line this project runs; use one of 3.9, 4.0" in run.output


def test_start_refuses_a_port_in_use_before_starting_anything():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        began = time.monotonic()
        run = CliRunner().invoke(app, ["kafka", "broker", "start", "--port", str(port)])
    assert run.exit_code == 2 and f"port {port} on 127.0.0.1 is in use" in run.output
    assert time.monotonic() - began < 5


def test_start_without_java_says_so(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}
    run = subprocess.run([str(REPO / ".venv" / "bin" / "python"), "-m", "groupspec.checkers.cli", "kafka", "broker",
                          "start"], capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 2 and "no `java` on PATH" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize("args,says", [
    (["--coordinator", "go"], "--coordinator 'go': use scala or java"),
    (["--time-scale", "0"], "--time-scale 0: give an integer from 1 to 10000"),
    (["--config", "group.max.size=0"], "group.max.size must be at least 1"),
    (["--config", "group.new.member.join.timeout.ms=5"], "Kafka has no such config"),
    (["--config", "listeners=PLAINTEXT://:1"], "--config listeners: set by groupspec itself"),
    (["--config", "nonsense"], "give key=value"),
    (["--dir", str(REPO / "README.md")], "is a file"),
])
def test_start_refuses_bad_input_in_one_line(args, says, tmp_path, monkeypatch):
    monkeypatch.setenv("GROUPSPEC_KAFKA_BROKERS", str(tmp_path))
    run = CliRunner().invoke(app, ["kafka", "broker", "start", *args])
    assert run.exit_code == 2 and says in run.output, run.output


def test_start_refuses_a_folder_of_someone_elses(tmp_path, monkeypatch):
    monkeypatch.setenv("GROUPSPEC_KAFKA_BROKERS", str(tmp_path / "state"))
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    run = CliRunner().invoke(app, ["kafka", "broker", "start", "--dir", str(tmp_path / "mine")])
    assert run.exit_code == 2 and "has files of its own" in run.output
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_stop_without_a_broker_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("GROUPSPEC_KAFKA_BROKERS", str(tmp_path))
    run = CliRunner().invoke(app, ["kafka", "broker", "stop"])
    assert run.exit_code == 2 and "no broker of this project is running" in run.output
    run = CliRunner().invoke(app, ["kafka", "broker", "stop", "--port", "9"])
    assert run.exit_code == 2 and "no broker of this project runs on port 9" in run.output
    run = CliRunner().invoke(app, ["kafka", "broker", "stop", "--all"])
    assert run.exit_code == 0 and "no broker of this project is running" in run.output


def test_a_stale_state_file_is_not_a_running_broker(tmp_path, monkeypatch):
    monkeypatch.setenv("GROUPSPEC_KAFKA_BROKERS", str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    st = registry.BrokerState(pid=dead.pid, port=5, controller_port=6, version="3.9", release="3.9.2",
                            coordinator="scala", time_scale=1, config={}, properties={}, dir=str(tmp_path),
                            log=str(tmp_path / "server.log"), started=0, startup_seconds=0)
    registry.state_file(5).write_text(json.dumps(st.__dict__))
    assert registry.find(5) is None and registry.running() == []
    assert not registry.state_file(5).exists()


def test_cluster_ids_are_kafkas_form_and_never_look_like_an_option():
    import base64
    for _ in range(5000):
        cid = broker._cluster_id()
        assert len(cid) == 22 and not cid.startswith("-")
        assert len(base64.urlsafe_b64decode(cid + "==")) == 16


def test_properties_switch_the_coordinator_and_scale_the_group_timeouts(tmp_path):
    cfg = broker.group_config({"group.max.size": 3})
    p = broker.properties(9092, 9093, tmp_path, "4.0", "scala", cfg, 20, {"num.io.threads": "2"})
    assert p["group.coordinator.new.enable"] == "false" and p["group.coordinator.rebalance.protocols"] == "classic"
    assert p["group.min.session.timeout.ms"] == "200" and p["group.initial.rebalance.delay.ms"] == "1000"
    assert p["group.max.session.timeout.ms"] == "12000000" and p["group.max.size"] == "3"
    assert p["offsets.topic.replication.factor"] == "1" and p["num.io.threads"] == "2"
    java = broker.properties(9092, 9093, tmp_path, "3.9", "java", cfg, 1, {})
    assert java["group.coordinator.new.enable"] == "true" and java["group.coordinator.append.linger.ms"] == "0"
    assert broker.properties(9092, 9093, tmp_path, "4.0", "java", cfg, 1, {
        "group.coordinator.append.linger.ms": "5"})["group.coordinator.append.linger.ms"] == "5"
    scala = broker.properties(9092, 9093, tmp_path, "3.9", "scala", cfg, 1, {})
    assert "group.coordinator.new.enable" not in scala and "group.coordinator.append.linger.ms" not in scala


# -- real brokers (pytest -m kafka) ------------------------------------------------------------------------

def _need(line: str) -> None:
    ln = jars.line(line)
    assert jars.fetched(ln), f"Kafka {ln.release}'s jars are not fetched: run `groupspec kafka setup`"


@pytest.fixture(scope="module")
def state_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("brokers")
    old = os.environ.get("GROUPSPEC_KAFKA_BROKERS")
    os.environ["GROUPSPEC_KAFKA_BROKERS"] = str(home)
    yield home
    for st in registry.running():
        broker.stop(st)
    if old is None:
        os.environ.pop("GROUPSPEC_KAFKA_BROKERS", None)
    else:
        os.environ["GROUPSPEC_KAFKA_BROKERS"] = old


SCENARIOS = [REPO / "tests/scenarios/kafka/admin.yaml", REPO / "tests/scenarios/kafka/leave.yaml",
             REPO / "tests/scenarios/kafka/offsets.yaml"]


@pytest.mark.kafka
@pytest.mark.parametrize("version,coordinator", [("3.9", "scala"), ("3.9", "java"), ("4.0", "java"),
                                                 ("4.0", "scala")])
def test_a_broker_starts_serves_scenarios_and_stops(version, coordinator, state_home):
    from groupspec.checkers.scenarios.report import run_files, scenario_files
    _need(version)
    st = broker.start(version, coordinator, time_scale=20)
    try:
        assert registry.find(st.port) == st and Path(st.log).is_file()
        run = run_files(scenario_files(SCENARIOS), st.address)
        bad = [r for r in run.results if r.result in ("fail", "error")]
        assert not bad, [(r.scenario, r.step, r.expected, r.got, r.message) for r in bad]
        assert run.passed >= 15
        skipped = {r.scenario: r.message for r in run.results if r.result == "skip"}
        assert set(skipped) <= {"kafka-offset-expiry"}, skipped
    finally:
        how = broker.stop(st)
    assert how == "stopped" and registry.find(st.port) is None


@pytest.mark.kafka
def test_cli_start_stop_and_a_broker_that_does_not_come_up(state_home, tmp_path):
    _need("3.9")
    env = {**os.environ, "GROUPSPEC_KAFKA_BROKERS": str(state_home)}
    run = _cli("kafka", "broker", "start", "--version", "3.9", "--json", timeout=180, env=env)
    assert run.returncode == 0, run.stderr
    st = json.loads(run.stdout)
    assert st["address"] == f"kafka://127.0.0.1:{st['port']}" and st["coordinator"] == "scala"
    again = _cli("kafka", "broker", "start", "--port", str(st["port"]), env=env)
    assert again.returncode == 2 and "in use by a broker of this project" in again.stderr
    stop = _cli("kafka", "broker", "stop", "--port", str(st["port"]), "--json", env=env)
    assert stop.returncode == 0 and json.loads(stop.stdout)["stopped"][0]["how"] == "stopped"
    # a config Kafka refuses: the message is Kafka's rule, without its stack
    bad = _cli("kafka", "broker", "start", "--config", "num.network.threads=0", "--dir", str(tmp_path / "b"),
               timeout=180, env=env)
    assert bad.returncode == 2, bad.stderr
    assert "Invalid value 0 for configuration num.network.threads: Value must be at least 1" in bad.stderr
    assert "fix or drop the --config" in bad.stderr and " at org.apache" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
    # a broker that starts but never gets its group coordinator (the offsets topic needs three replicas of one
    # node): not ready in time, one line quoting its log, and nothing left running
    bad = _cli("kafka", "broker", "start", "--config", "offsets.topic.replication.factor=3", "--timeout", "20",
               "--dir", str(tmp_path / "c"), timeout=180, env=env)
    assert bad.returncode == 2 and "was not ready within 20 s (creating __consumer_offsets)" in bad.stderr, \
        bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
    assert registry.running() == []
    assert not _processes_naming(str(tmp_path / "c")), "a broker was left running"


def _processes_naming(text: str) -> list[int]:
    """The pids whose command line contains `text`."""
    found = []
    for p in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text in p.read_bytes().decode(errors="replace"):
                found.append(int(p.parent.name))
        except OSError:       # it ended while we looked
            pass
    return found


@pytest.mark.parametrize("target", ["broker:5.0", "broker:3.9:kotlin", "broker:"])
def test_a_report_on_brokers_of_no_such_line_or_coordinator_is_one_line(target):
    run = CliRunner().invoke(app, ["kafka", "report", "--target", target, "--examples", "0"])
    assert run.exit_code == 2, run.output
    assert "give broker:VERSION[:COORDINATOR]" in run.output and "e.g. broker:4.0:java" in run.output


@pytest.mark.kafka
def test_a_fleet_starts_a_broker_per_config_one_at_a_time(state_home, tmp_path):
    """broker:3.9 in the report: scenarios grouped by the config a broker starts with, one broker at a time,
    none left running; a scenario of the Java coordinator runs beside the spec's prediction for the Scala one."""
    from groupspec.checkers.kafka import report
    _need("3.9")
    src = (REPO / "tests/scenarios/kafka/leave.yaml").read_text()
    (tmp_path / "a.yaml").write_text(src)
    (tmp_path / "b.yaml").write_text(src.replace("group.max.size: 4", "group.max.size: 3"))
    seen = []
    rep = report.report_target("broker:3.9", examples=3, steps=10, seed=1, paths=[tmp_path],
                               progress=lambda m: seen.append((m, len(registry.running()))))
    starts = [m for m, _ in seen if m.startswith("starting Kafka 3.9")]
    assert len(starts) == 2 and any("group.max.size=3" in m for m in starts), seen
    assert all(n <= 1 for _, n in seen) and registry.running() == []
    assert rep.scenarios["failed"] == 0 and rep.scenarios["passed"] >= 4, rep.scenarios
    assert rep.harness["examples"] >= 3 and rep.kafka == "3.9.2" and not rep.unexplained


def test_a_brokers_difference_its_twin_does_not_show_is_the_wall_clocks(tmp_path):
    """A scenario failing on a broker but passing on the same coordinator in process (here: the runtime as the
    twin) is listed as a limit of the wall clock; one failing on both is unexplained; with no twin, every
    failure is unexplained."""
    from groupspec.checkers.kafka import report
    from groupspec.checkers.scenarios.report import Run
    from groupspec.checkers.scenarios.runner import Result
    good = REPO / "tests/scenarios/kafka/leave.yaml"
    name = next(iter(__import__("yaml").safe_load(good.read_text())["scenarios"]))["scenario"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text().replace("error: NONE", "error: UNKNOWN_MEMBER_ID", 1))
    run = Run("broker:3.9", [Result(str(good), name, "fail", 3, "x", "y", message="late"),
                             Result(str(bad), name, "fail", 3, "x", "y", message="wrong")])
    rep = report._report("broker:3.9", lambda: run, None, 0, 10, 0, lambda _m: None, twin="runtime")
    assert [u["file"] for u in rep.timing] == [str(good)] and [u["file"] for u in rep.unexplained] == [str(bad)]
    text = report.markdown([rep], "groupspec kafka report")
    assert "Differences of the wall clock (a limit of this target): 1" in text and "Unexplained differences: 1" in text
    alone = report._report("broker:3.9", lambda: run, None, 0, 10, 0, lambda _m: None)
    assert len(alone.unexplained) == 2 and not alone.timing


def test_a_broker_address_has_a_twin_only_when_its_release_and_coordinator_are_known():
    """kafka://host:port in the report: a broker this project started (its release known) running its line's
    own coordinator is settled against that coordinator in process; any other broker's differences stay
    unexplained."""
    from types import SimpleNamespace as B

    from groupspec.checkers.kafka import report
    assert report._twin_of_broker(B(release="4.0.2", coordinator="java")) == "kafka-4.0"
    assert report._twin_of_broker(B(release="3.9.2", coordinator="scala")) == "kafka-3.9"
    assert report._twin_of_broker(B(release="3.9.2", coordinator="java")) is None
    assert report._twin_of_broker(B(release="", coordinator="scala")) is None      # someone else's broker
