"""A Kafka broker as a conformance target, over Kafka's wire protocol (`kafka://host:port`).

The adapter (`checkers/conform/adapter.py`) sends each scenario request as the
Kafka message `messages.request` builds, at the version it picks, and reads
the answer back with `messages.response`: kio writes and reads every byte
(frames, request and response headers, bodies); nothing here encodes a field
by hand.  A broker is a black box, so this target differs from the in-process
ones in four ways, each stated where it is handled:

Connections.  A broker answers the requests of one connection strictly in
order and reads nothing more from it while one is parked (a JoinGroup waiting
for the rebalance), so every request goes out on a connection of its own
while it is outstanding: an idle one from a pool, or a new one.  A request
that may park (JoinGroup, SyncGroup) and has no answer within `settle_ms`
counts as parked; its connection is kept for it, and `answered()` reports
the answer when it comes.  Every other request must be answered within
REQUEST_TIMEOUT_S.  After an answer, while other requests are parked, the
adapter listens `quiet_ms` longer: a join that completes answers every
member at once, on as many connections, and those answers arrive a moment
apart.

Time.  A broker runs on the wall clock.  Each scenario millisecond is
`time_scale` real milliseconds: the broker is started with its group
timeouts multiplied by the scale (`broker.py`), the adapter multiplies the
session and rebalance timeouts of every JoinGroup and sleeps `advance_ms`
times the scale, then listens `grace_ms` more for the answers that fell due
at the end.  A timer that falls due at a step is therefore always seen fired
there; one due later is seen pending only while the real time the steps
took since it was armed (requests, snapshots, waits) stays under the scale
times its distance: scenarios that check a timer one millisecond before it
fires need a large scale.  Kafka's constant NewMemberJoinTimeoutMs (300000
real ms) is not scaled: where the scenario's config says 300000 the adapter
refuses (`Unsupported`) any advance that would let 300000 real ms pass since
the scenario began, the point where the constant could act early.

Names.  Every scenario runs in its own namespace of group ids: `g` is
`g-<random>` on the wire, mapped back in every answer (DescribeGroups,
ListGroups, DeleteGroups); ListGroups shows only the scenario's groups.

What a broker cannot be told or shown.  It cannot be told to hold, fail or
complete a log append, to unload or load its offsets partition, to mark a
group Dead or to expire offsets now (`unsupported`).  Its group config is
fixed when it starts: the factory reads it (DescribeConfigs) and refuses a
scenario whose config differs (`fixed_config` tells the harness).  Which
coordinator serves classic groups (`group.coordinator.new.enable`, which
DescribeConfigs does not show) is probed: the two answer a commit to a group
nobody made differently (`Broker.probe_coordinator`).  It shows a group only
through DescribeGroups and OffsetFetch (`snapshot`): no generation, leader or
pending members, and the protocol and assignments only while the group is
Stable (`partial_snapshots`); its answers carry the fields of their version
(`partial_responses`).  The Java coordinator answers DescribeGroups and
ListGroups from its last committed state, a few milliseconds behind its
answers to the requests that changed it: before those reads the adapter
waits for every write to be committed (`Broker.barrier`).  It answers an OffsetCommit to a
topic it does not know UNKNOWN_TOPIC_OR_PARTITION (KafkaApis checks the
topic before the coordinator sees the commit) while the spec has no topics,
so the adapter creates the topics a commit names first (CreateTopics,
CreatePartitions) and waits until the broker's metadata shows them.

Faults.  A broker that refuses the connection, does not answer, answers
bytes that are not Kafka's answer, or closes the connection is one line:
`BrokerUnavailable` (an AdapterError: the CLI says it and exits 2) when it
happens while the factory is made, `WireError` during a scenario (that
scenario fails with the reason).  Every read has a deadline.
"""
from __future__ import annotations

import functools
import math
import os
import select
import socket
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import parse_qsl, urlsplit

from kio import index as kio_index

from groupspec.checkers.conform.adapter import BROKER_SCHEME, AdapterError, Unsupported
from groupspec.impl.coordinator import GroupCoordinator
from groupspec.spec.kafka import NEW_COORDINATOR, brief, check_config, coordinator_name

from . import framing, messages, registry

# -- what the target waits for (real seconds) ------------------------------------------------------------------

CONNECT_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_S = 30.0       # a request that cannot park: a broker silent this long is stuck
TOPIC_TIMEOUT_S = 20.0         # a topic created for a commit shows in the broker's metadata by then
MAX_FRAME = framing.MAX_FRAME  # a frame longer than this is not an answer to anything we ask
# Kafka's NewMemberJoinTimeoutMs: a constant (GroupCoordinator.NewMemberJoinTimeoutMs in 3.9, CLASSIC_GROUP_NEW_
# MEMBER_JOIN_TIMEOUT_MS in 4.0), never scaled; the horizon below which it cannot act keeps this margin
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
HORIZON_MARGIN_S = 2.0
PARKABLE = ("JoinGroup", "SyncGroup")     # the requests a coordinator may answer later
# The broker-side defaults of the timing knobs (address query parameters override them; see `Knobs`)
DEFAULT_QUIET_MS = 5.0
DEFAULT_MAX_ADVANCE_S = 300.0

# The admin requests the target itself sends, at one version each that Kafka 3.9 and 4.0 both answer (kio has
# their schemas; the broker must advertise them: `Broker.connect` checks).
API_VERSIONS = (18, 3)
FIND_COORDINATOR = (10, 4)
DESCRIBE_CONFIGS = (32, 4)
METADATA = (3, 12)
CREATE_TOPICS = (19, 7)
CREATE_PARTITIONS = (37, 3)
BROKER_RESOURCE = 4            # DescribeConfigs' resource type of a broker
PROBE_TOPIC = "groupspec-probe"        # the topic of the target's own commits (the coordinator probe, barriers)
BARRIER_GROUP = "groupspec-barrier"
NEW_TOPIC_PARTITIONS = 16      # a topic created for a commit gets at least this many partitions (one creation)

# The group keys of a scenario's config, as a broker has them (DescribeConfigs names); those that are
# durations are scaled by the time scale
SCALED_KEYS = ("group.min.session.timeout.ms", "group.max.session.timeout.ms", "group.initial.rebalance.delay.ms")
BROKER_KEYS = (*SCALED_KEYS, "group.max.size")
NEW_MEMBER_KEY = "group.new.member.join.timeout.ms"
LINGER_KEY = "group.coordinator.append.linger.ms"     # optional: Kafka 3.7 and later
RETENTION_KEY = "offsets.retention.minutes"
# the timeouts a JoinGroup carries (scenario ms): scaled like the config
SCALED_FIELDS = ("session_timeout_ms", "rebalance_timeout_ms")

UNSUPPORTED = {
    "storage_hold": "a broker cannot be told to hold its log appends",
    "storage_fail_next": "a broker cannot be told to fail its next log append",
    "storage_complete": "a broker completes its log appends itself",
    "unload": "a broker cannot be told to unload its offsets partition (a single-node broker never moves it)",
    "begin_load": "a broker cannot be told to begin loading its offsets partition",
    "load": "a broker cannot be told to load its offsets partition",
    "mark_dead": "a broker cannot be told to mark a group Dead",
    "expire_offsets": "a broker cannot be told to expire offsets now (its expiry task is switched off: "
                      "broker.py sets offsets.retention.check.interval.ms to weeks)",
}


class WireError(RuntimeError):
    """The broker failed during a scenario (refused, silent, garbled, closed): one line saying what."""


class BrokerUnavailable(AdapterError):
    """The broker cannot be used at all (bad address, refused, silent, not Kafka): one line, before any run."""


# -- the address -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Knobs:
    """How the adapter meets the wall clock (real milliseconds unless said); the address's query sets them,
    e.g. kafka://127.0.0.1:9092?time_scale=20&settle_ms=40."""
    time_scale: int | None = None      # None: the broker's own (its state file), else 1
    settle_ms: float | None = None     # a JoinGroup/SyncGroup unanswered this long is parked
    grace_ms: float | None = None      # after an advance, how long answers that fell due may take
    quiet_ms: float = DEFAULT_QUIET_MS
    max_advance_s: float = DEFAULT_MAX_ADVANCE_S


@dataclass(frozen=True)
class Address:
    host: str
    port: int
    knobs: Knobs

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{BROKER_SCHEME}{host}:{self.port}"


_KNOB_TYPES: dict[str, tuple[Callable[[str], Any], float, float]] = {
    # name: (parse, lowest, highest)
    "time_scale": (int, 1, 10_000), "settle_ms": (float, 0.5, 60_000), "grace_ms": (float, 0, 60_000),
    "quiet_ms": (float, 0, 10_000), "max_advance_s": (float, 0.001, 86_400),
}


def parse_address(name: str) -> Address:
    """`kafka://host:port[?knob=value&...]`; BrokerUnavailable (one line) for anything else."""
    def bad(why: str) -> BrokerUnavailable:
        return BrokerUnavailable(f"--adapter {brief(name, 100)}: {why}")

    if not isinstance(name, str) or not name.startswith(BROKER_SCHEME):
        raise bad(f"a broker address is {BROKER_SCHEME}host:port, e.g. {BROKER_SCHEME}127.0.0.1:9092")
    try:
        parts = urlsplit(name)
        port = parts.port
    except ValueError as e:
        raise bad(f"not host:port ({e}); e.g. {BROKER_SCHEME}127.0.0.1:9092") from None
    host = parts.hostname
    if not host:
        raise bad(f"no host; e.g. {BROKER_SCHEME}127.0.0.1:9092")
    if port is None or not 1 <= port <= 65535:
        raise bad("no port (1 to 65535) after the host; e.g. " f"{BROKER_SCHEME}{host}:9092")
    if parts.path not in ("", "/") or parts.fragment or parts.username or parts.password:
        raise bad("only host:port and ?knob=value parameters are understood")
    knobs: dict[str, Any] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True, strict_parsing=False):
        if key not in _KNOB_TYPES:
            raise bad(f"unknown parameter {brief(key)}; known: {', '.join(_KNOB_TYPES)}")
        parse, lo, hi = _KNOB_TYPES[key]
        try:
            v = parse(value)
        except ValueError:
            raise bad(f"{key}={brief(value)}: not a number") from None
        if not (lo <= v <= hi) or (isinstance(v, float) and not math.isfinite(v)):
            raise bad(f"{key}={brief(value)}: must be from {lo:g} to {hi:g}")
        knobs[key] = v
    if parts.query and not knobs:
        raise bad(f"the query {brief(parts.query)} names no parameter; known: {', '.join(_KNOB_TYPES)}")
    return Address(host, port, Knobs(**knobs))


# -- one connection ----------------------------------------------------------------------------------------------

class Connection:
    """One TCP connection to the broker: kio-framed requests out, answers read back in order.  At most one
    request is outstanding on it (the adapter never pipelines: a parked request blocks the connection)."""

    def __init__(self, host: str, port: int, where: str):
        self.where = where
        try:
            self.sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
        except socket.timeout:
            raise WireError(f"{where}: no connection within {CONNECT_TIMEOUT_S:g} s") from None
        except ConnectionRefusedError:
            raise WireError(f"{where}: connection refused (is a broker listening there? `groupspec kafka broker "
                            f"start` starts one)") from None
        except OSError as e:
            raise WireError(f"{where}: cannot connect ({e.strerror or e})") from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(REQUEST_TIMEOUT_S)       # bounds every send; reads are driven by select
        self.buf = bytearray()
        self.correlation = 0
        self.pending: tuple[int, type, Any] | None = None   # (correlation id, response class, tag)
        self.closed = False

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, entity: Any, client_id: str | None, tag: Any) -> None:
        """Write one request (kio: header of the entity's own header schema, then the body, framed by its size)."""
        assert self.pending is None, "one request at a time per connection"
        self.correlation += 1
        frame = framing.encode_request(entity, self.correlation, client_id)
        response_cls = kio_index.load_response_schema(entity.__api_key__, entity.__version__)
        try:
            self.sock.sendall(frame)
        except socket.timeout:
            self.close()
            raise WireError(f"{self.where}: the broker takes no more bytes (sending for {REQUEST_TIMEOUT_S:g} s)") \
                from None
        except OSError as e:
            self.close()
            raise WireError(f"{self.where}: the connection broke while sending ({e.strerror or e})") from None
        self.pending = (self.correlation, response_cls, tag)

    def readable(self) -> tuple[Any, Any] | None:
        """Read what the socket has; (tag, response entity) once the outstanding answer is complete."""
        try:
            chunk = self.sock.recv(1 << 20)
        except (BlockingIOError, InterruptedError, socket.timeout):
            return None
        except OSError as e:
            self.close()
            raise WireError(f"{self.where}: the connection broke ({e.strerror or e})") from None
        if not chunk:
            self.close()
            what = f" with {_name(self.pending[1])} unanswered" if self.pending else ""
            raise WireError(f"{self.where}: the broker closed the connection{what}")
        self.buf += chunk
        return self._frame()

    def _frame(self) -> tuple[Any, Any] | None:
        try:
            data = framing.take_frame(self.buf, MAX_FRAME)
        except framing.FrameError as e:
            self.close()
            raise WireError(f"{self.where}: the broker's answer is not a Kafka frame ({e})") from None
        if data is None:
            return None
        if self.pending is None or self.buf:
            self.close()
            raise WireError(f"{self.where}: the broker sent bytes nobody asked for")
        correlation, response_cls, tag = self.pending
        try:
            header, body = framing.decode_response(data, response_cls)
        except framing.FrameError as e:
            self.close()
            raise WireError(f"{self.where}: the broker's answer: {e}") from None
        if header.correlation_id != correlation:
            self.close()
            raise WireError(f"{self.where}: the broker answered correlation id {header.correlation_id}, expected "
                            f"{correlation}")
        self.pending = None
        return tag, body

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass


def _name(cls: type) -> str:
    return f"{cls.__name__} v{cls.__version__}"


def wait(conns: list[Connection], until: float) -> list[tuple[Connection, Any, Any]]:
    """Read from `conns` until the monotonic time `until` or the first complete answer; the answers completed
    (connection, tag, entity)."""
    out: list[tuple[Connection, Any, Any]] = []
    while True:
        live = [c for c in conns if not c.closed and c.pending is not None]
        if not live:
            return out
        left = until - time.monotonic()
        ready, _, _ = select.select(live, [], [], max(0.0, left))
        for c in ready:
            got = c.readable()
            if got is not None:
                out.append((c, *got))
        if out or left <= 0:
            return out


def call(conn: Connection, entity: Any, client_id: str | None = "groupspec", timeout: float | None = None) -> Any:
    """One request and its answer on an idle connection (WireError if none within `timeout` s, by default
    REQUEST_TIMEOUT_S)."""
    timeout = REQUEST_TIMEOUT_S if timeout is None else timeout
    conn.send(entity, client_id, None)
    deadline = time.monotonic() + timeout
    while True:
        for _, _, body in wait([conn], deadline):
            return body
        if time.monotonic() >= deadline:
            conn.close()
            raise WireError(f"{conn.where}: no answer to {_name(type(entity))} within {timeout:g} s")


def request_entity(api_version: tuple[int, int], **values: Any) -> Any:
    """An admin request (one the target sends itself), built by kio from Kafka's schema."""
    return messages.build(kio_index.load_request_schema(*api_version), values)


# -- the broker ------------------------------------------------------------------------------------------------

class Broker:
    """What the target knows of one broker: where it is, the versions it answers, its group config (in
    scenario milliseconds) and time scale, and the topics it has."""

    def __init__(self, address: Address):
        self.address = address
        self.where = f"broker {address}"
        self.versions: dict[int, tuple[int, int]] = {}
        self.node_id = -1
        self.release = ""             # Kafka's release, when this project started the broker
        self.coordinator = ""         # scala or java: which coordinator serves classic groups (probed)
        self.time_scale = 1
        self.real_config: dict[str, int] = {}     # the broker's group keys, real milliseconds
        self.config: dict[str, int] = {}          # the same in scenario terms (divided by the time scale)
        self.topics: dict[str, int] = {}          # topic -> partitions, as far as known
        self.linger_ms = 0                        # group.coordinator.append.linger.ms (the Java coordinator's)
        self.idle: list[Connection] = []          # connections no request is outstanding on
        self._barriers = 0

    # connections -----------------------------------------------------------------------------------------

    def connection(self) -> Connection:
        while self.idle:
            c = self.idle.pop()
            if not c.closed:
                return c
        return Connection(self.address.host, self.address.port, self.where)

    def release_conn(self, c: Connection) -> None:
        if not c.closed and c.pending is None:
            self.idle.append(c)

    def call(self, entity: Any, timeout: float | None = None) -> Any:
        c = self.connection()
        body = call(c, entity, timeout=timeout)
        self.release_conn(c)
        return body

    # the handshake ---------------------------------------------------------------------------------------

    def connect(self) -> None:
        """ApiVersions, FindCoordinator, DescribeConfigs: the broker is up, is this group coordinator, and has
        this group config.  WireError (one line) when it is not so."""
        av = self.call(request_entity(API_VERSIONS, client_software_name="groupspec",
                                      client_software_version="1"))
        if av.error_code.value != 0:
            raise WireError(f"{self.where}: ApiVersions answered {messages.error_name(av.error_code)}")
        self.versions = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in av.api_keys}
        for key, version in (FIND_COORDINATOR, DESCRIBE_CONFIGS, METADATA, CREATE_TOPICS, CREATE_PARTITIONS,
                             *((messages.API_KEYS["DescribeGroups"], 5), (messages.API_KEYS["OffsetFetch"], 8))):
            lo, hi = self.versions.get(key, (0, -1))
            if not lo <= version <= hi:
                raise WireError(f"{self.where}: it does not answer {_api_name(key)} version {version}, which the "
                                f"target needs (is it a Kafka broker of 3.x or 4.x?)")
        self.node_id = self.coordinator_of("groupspec-probe")
        self.coordinator = self.probe_coordinator()
        state = registry.find(self.address.port) if _local(self.address.host) else None
        if state is not None:
            if state.coordinator != self.coordinator:
                raise WireError(f"{self.where}: its state file says the {state.coordinator} coordinator serves "
                                f"classic groups, but it answers as the {self.coordinator} one does")
            self.release = state.release
            self.time_scale = state.time_scale
        if self.address.knobs.time_scale is not None:
            self.time_scale = self.address.knobs.time_scale
        self.real_config = self.describe_config()
        self.linger_ms = self.real_config.pop(LINGER_KEY, 0)
        self.config = {}
        for k, v in self.real_config.items():
            scaled = k in SCALED_KEYS
            if scaled and v % self.time_scale:
                raise WireError(f"{self.where}: its {k} is {v} ms, not a multiple of the time scale "
                                f"{self.time_scale}; start it with scaled values (groupspec kafka broker start "
                                f"--time-scale) or give ?time_scale= to match")
            self.config[k] = v // self.time_scale if scaled else v

    def coordinator_of(self, group: str) -> int:
        """FindCoordinator for a group: the node id; this broker must be the coordinator (a single node)."""
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        while True:
            got = self.call(request_entity(FIND_COORDINATOR, key_type=0, coordinator_keys=[group]))
            (c,) = got.coordinators
            err = messages.error_name(c.error_code)
            if err == "NONE":
                if (c.host, c.port) != (self.address.host, self.address.port) and not (
                        _local(c.host) and _local(self.address.host) and c.port == self.address.port):
                    raise WireError(f"{self.where}: the coordinator of the scenario's groups is {c.host}:{c.port}, "
                                    f"another broker; give that one's address (the target speaks to one node)")
                return int(c.node_id)
            if err not in ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS") or \
                    time.monotonic() > deadline:
                raise WireError(f"{self.where}: FindCoordinator answered {err} ({c.error_message or 'no message'})")
            time.sleep(0.05)

    def probe_coordinator(self) -> str:
        """Which of Kafka's coordinators serves classic groups: `group.coordinator.new.enable` is an internal
        config DescribeConfigs does not show, so the broker is asked what the two answer differently, and the
        spec says which answer is whose (`probe_answers`).  The commit is refused either way: it changes nothing
        but the probe topic's existence."""
        topic = PROBE_TOPIC
        self.ensure_partitions({topic: 1})
        request = _probe_request(f"groupspec-probe-{uuid.uuid4().hex[:10]}")
        version, entity = messages.request("OffsetCommit", request)
        got = messages.response("OffsetCommit", self.call(entity))["errors"].get(f"{topic}-0")
        answers = probe_answers()
        if got not in answers:
            raise WireError(f"{self.where}: an OffsetCommit to a group that does not exist answered {got}, which "
                            f"neither of Kafka's coordinators answers ({', '.join(answers)})")
        return answers[got]

    def barrier(self) -> None:
        """On the Java coordinator, wait until every write before now is committed.  It answers DescribeGroups
        and ListGroups from its last committed state, and answers a JoinGroup that creates a group with
        MEMBER_ID_REQUIRED before the group's record is committed: measured on 4.0.2, a DescribeGroups sent at
        once after such an answer found the group in 6 of 20 tries, after this barrier in 20 of 20 (the Scala
        coordinator reads its groups in memory: 20 of 20 without it).  The barrier is an OffsetCommit to a
        group of the target's own, answered only once its record, and so every record before it, is committed;
        reads after it see the coordinator at rest, as a client a few milliseconds later would."""
        if self.coordinator != "java":
            return
        self._barriers += 1
        version, entity = messages.request("OffsetCommit", {
            "group": BARRIER_GROUP, "generation": -1, "member": "", "offsets": {f"{PROBE_TOPIC}-0": self._barriers}})
        got = messages.response("OffsetCommit", self.call(entity))["errors"]
        if set(got.values()) != {"NONE"}:
            raise WireError(f"{self.where}: the commit the target waits on answered {got}")

    def describe_config(self) -> dict[str, int]:
        got = self.call(request_entity(DESCRIBE_CONFIGS, resources=[{
            "resource_type": BROKER_RESOURCE, "resource_name": str(self.node_id),
            "configuration_keys": [*BROKER_KEYS, LINGER_KEY]}]))
        (res,) = got.results
        if res.error_code.value != 0:
            raise WireError(f"{self.where}: DescribeConfigs answered {messages.error_name(res.error_code)} "
                            f"({res.error_message or 'no message'})")
        out = {}
        for entry in res.configs:
            try:
                out[entry.name] = int(entry.value)
            except (TypeError, ValueError):
                raise WireError(f"{self.where}: its {entry.name} is {brief(entry.value)}, not an integer") from None
        missing = [k for k in BROKER_KEYS if k not in out]
        if missing:
            raise WireError(f"{self.where}: DescribeConfigs did not show {', '.join(missing)}")
        return out

    # topics ------------------------------------------------------------------------------------------------

    def ensure_partitions(self, need: dict[str, int]) -> None:
        """Every topic in `need` exists with at least that many partitions, as the broker's metadata shows
        (what KafkaApis checks an OffsetCommit's partitions against)."""
        short = {t: n for t, n in need.items() if self.topics.get(t, 0) < n}
        if not short:
            return
        self._learn(list(short))
        create = [t for t in short if t not in self.topics]
        grow = {t: n for t, n in short.items() if t in self.topics and self.topics[t] < n}
        if create:
            got = self.call(request_entity(CREATE_TOPICS, topics=[
                {"name": t, "num_partitions": max(NEW_TOPIC_PARTITIONS, short[t]), "replication_factor": 1,
                 "assignments": [], "configs": []} for t in create], timeout=_ms(TOPIC_TIMEOUT_S * 1000),
                validate_only=False), timeout=TOPIC_TIMEOUT_S)
            for t in got.topics:
                err = messages.error_name(t.error_code)
                if err not in ("NONE", "TOPIC_ALREADY_EXISTS"):
                    return       # a name Kafka refuses (say): the commit goes out, and the broker's answer is its own
        if grow:
            self.call(request_entity(CREATE_PARTITIONS, topics=[
                {"name": t, "count": n, "assignments": None} for t, n in grow.items()],
                timeout=_ms(TOPIC_TIMEOUT_S * 1000), validate_only=False), timeout=TOPIC_TIMEOUT_S)
        deadline = time.monotonic() + TOPIC_TIMEOUT_S
        while True:
            self._learn(list(short))
            if all(self.topics.get(t, 0) >= n for t, n in short.items()):
                return
            if time.monotonic() > deadline:
                raise WireError(f"{self.where}: topics {', '.join(short)} were created but did not show in its "
                                f"metadata within {TOPIC_TIMEOUT_S:g} s")
            time.sleep(0.02)

    def _learn(self, topics: list[str]) -> None:
        got = self.call(request_entity(METADATA, topics=[{"topic_id": None, "name": t} for t in topics],
                                       allow_auto_topic_creation=False, include_topic_authorized_operations=False))
        for t in got.topics:
            if t.error_code.value == 0 and t.name is not None:
                self.topics[t.name] = len(t.partitions)

    def close(self) -> None:
        for c in self.idle:
            c.close()
        self.idle.clear()


def _probe_request(group: str) -> dict:
    """An OffsetCommit (version 9) with a generation, to a group nobody made."""
    return {"group": group, "member": "groupspec-probe", "generation": 1, "offsets": {f"{PROBE_TOPIC}-0": 0},
            "version": 9}


@functools.lru_cache(maxsize=None)
def probe_answers() -> dict[str, str]:
    """The probe's answer -> the coordinator that gives it, as the spec says: its table under each value of
    group.coordinator.new.enable, run on the probe (the Scala coordinator answers ILLEGAL_GENERATION, the Java
    one GROUP_ID_NOT_FOUND from version 9: spec/table.py)."""
    answers = {}
    for name, java in (("scala", False), ("java", True)):
        coord = GroupCoordinator(check_config({NEW_COORDINATOR: java}))
        answers[coord.send("OffsetCommit", _probe_request("g"))["errors"][f"{PROBE_TOPIC}-0"]] = name
    assert len(answers) == 2, f"the spec's coordinators answer the probe alike: {answers}"
    return answers


def _ms(ms: float):
    import datetime
    return datetime.timedelta(milliseconds=int(ms))


def _local(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def _api_name(key: int) -> str:
    names = {v: k for k, v in messages.API_KEYS.items()}
    return names.get(key) or {18: "ApiVersions", 10: "FindCoordinator", 32: "DescribeConfigs", 3: "Metadata",
                              19: "CreateTopics", 37: "CreatePartitions"}.get(key, f"API {key}")


_TRACE = os.environ.get("GROUPSPEC_WIRE_TRACE")


# -- the adapter -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Timing:
    """The adapter's waits, in real seconds (see the module's text, and `timing`)."""
    settle_s: float
    grace_s: float
    quiet_s: float
    max_advance_s: float


def timing(broker: Broker) -> Timing:
    """The waits for a broker at its time scale, unless the address sets them.  settle: how long a JoinGroup or
    SyncGroup may take to be answered before it counts as parked; grace: how long after an advance the answers
    that fell due at its end may take to arrive.  Both are real time the scenario does not see pass, so both
    stay well under one scenario millisecond (the scale) where the scale allows, and above the answer times
    measured on this machine (see SETTLE_MS)."""
    k = broker.address.knobs
    # the Java coordinator answers what waits for a write after its linger and the commit (see broker.py)
    slow = broker.coordinator == "java" and broker.linger_ms > 0
    settle = k.settle_ms if k.settle_ms is not None else SETTLE_MS[slow]
    grace = k.grace_ms if k.grace_ms is not None else GRACE_MS[slow]
    return Timing(settle / 1000, grace / 1000, k.quiet_ms / 1000, k.max_advance_s)


# Answer times measured on single-node brokers here (2 cores, warmed up; median / worst of 15): a JoinGroup
# answered at once 1-2 / 7-12 ms on every coordinator; a leader's SyncGroup 2-5 / 10-40 ms on the Scala
# coordinator, 9-15 / 18-107 ms on the Java one with Kafka's default append linger (10 ms in 3.9, 5 ms in 4.0,
# then the commit), 2.5 / 7.5 ms with none (group.coordinator.append.linger.ms=0, as broker.py starts it); a
# timer's answer 3-7 ms after its deadline / 12-100 ms.  The settle window is above the worst measured (an
# answer later than it is taken for parked, and reported by `answered` when it comes: at 25 ms, below the
# worst, a loaded machine made two of the suite's immediate answers "parked"); the grace is above the usual
# timer answer (a timer that fires as another's answer is sent, a rebalance arming the members' session timers,
# adds its own).  Both are real time the scenario does not see pass: they count in how far the broker's clock
# may run ahead (`clock_lead_ms`), and the steps that leaves undecided are left out (checkers/conform/
# wallclock.py).
SETTLE_MS = {False: 45.0, True: 110.0}     # Scala, or Java appending at once; Java lingering
GRACE_MS = {False: 15.0, True: 25.0}


@dataclass
class _Out:
    """A request sent and not yet answered: its API, version and connection; `parked` once it has waited out
    the settle window."""
    api: str
    version: int
    conn: Connection
    sent: float = 0.0
    parked: bool = False


class BrokerTarget:
    """One scenario (or harness example) against a broker: the adapter of `checkers/conform/adapter.py`."""

    unsupported = frozenset(UNSUPPORTED)
    partial_responses = True      # an answer carries the fields of its version (messages.response)
    partial_snapshots = True      # DescribeGroups and OffsetFetch: no generation, leader or pending members

    def __init__(self, broker: Broker, config: dict):
        self.broker = broker
        self.timing = timing(broker)
        self.fixed_config = fixed_config(broker)
        self.ns = f"-{uuid.uuid4().hex[:10]}"
        self.out: dict[str, _Out] = {}
        self._answers: list[tuple[str, dict]] = []
        self._empty_cleared = False
        self.began = time.monotonic()
        self.clock_ms = 0             # scenario time: the sum of the advances
        self.phase = 0.0              # the largest phase of a request sent (seconds; see `_real`)
        # Kafka's constant acts at 300000 / scale scenario ms: a config that says exactly that needs no horizon;
        # one that says 300000 (every scenario that does not name the key) is faithful only before it
        scale = broker.time_scale
        self.horizon = None if config[NEW_MEMBER_KEY] * scale == NEW_MEMBER_JOIN_TIMEOUT_MS else \
            NEW_MEMBER_JOIN_TIMEOUT_MS / 1000 - HORIZON_MARGIN_S

    # names -------------------------------------------------------------------------------------------------

    def _wire(self, group: Any) -> Any:
        """A scenario group id on the wire: its namespace appended (the empty id, Kafka's invalid one, kept)."""
        return group + self.ns if isinstance(group, str) and group else group

    def _back(self, group: Any) -> Any:
        return group[:-len(self.ns)] if isinstance(group, str) and group.endswith(self.ns) else group

    def _ours(self, group: Any) -> bool:
        return isinstance(group, str) and group.endswith(self.ns)

    def _outbound(self, api: str, request: dict) -> dict:
        req = dict(request)
        if "group" in req:
            req["group"] = self._wire(req["group"])
        if isinstance(req.get("groups"), list):
            req["groups"] = [self._wire(g) for g in req["groups"]]
        if api == "JoinGroup":
            for f in SCALED_FIELDS:
                v = req.get(f)
                if isinstance(v, int) and not isinstance(v, bool):
                    real = v * self.broker.time_scale
                    if not -2**31 <= real < 2**31:
                        raise Unsupported(f"{f} {v} times the time scale {self.broker.time_scale} does not fit "
                                          f"Kafka's INT32")
                    req[f] = real
        return req

    def _inbound(self, api: str, resp: dict) -> dict:
        if api in ("DescribeGroups", "ListGroups") and isinstance(resp.get("groups"), list):
            groups = resp["groups"]
            if api == "ListGroups":       # the broker's other groups (other scenarios', anyone's) are not this one's
                # the empty id cannot be namespaced: once this scenario named it, the group of that id is its own
                groups = [g for g in groups if self._ours(g.get("group")) or (g.get("group") == "" and
                                                                             self._empty_cleared)]
            resp["groups"] = [{**g, "group": self._back(g.get("group"))} for g in groups]
        if api == "DeleteGroups" and isinstance(resp.get("errors"), dict):
            resp["errors"] = {self._back(g): e for g, e in resp["errors"].items()}
        return resp

    # requests ----------------------------------------------------------------------------------------------

    def send(self, api: str, request: dict, request_id: str) -> dict | None:
        if request_id in self.out:
            raise WireError(f"request id {request_id!r} is still outstanding")
        req = self._outbound(api, request)
        try:
            version, entity = messages.request(api, req)
        except messages.NotExpressible as e:
            raise Unsupported(str(e)) from None
        lo, hi = self.broker.versions.get(messages.API_KEYS[api], (0, -1))
        if not lo <= version <= hi:
            raise Unsupported(f"{api} version {version}: the {self._who()} answers versions {lo} to {hi}")
        if api == "OffsetCommit":
            self.broker.ensure_partitions(_partitions_needed(req.get("offsets")))
        if "" in (req.get("group"), *(req.get("groups") or ())):
            self._clear_empty_group()
        if api in ("DescribeGroups", "ListGroups"):
            self.broker.barrier()         # they read the committed state: every write before them committed first
        client = request.get("client")
        conn = self.broker.connection()
        conn.send(entity, client if isinstance(client, str) else "groupspec", request_id)
        sent = time.monotonic()
        self.phase = max(self.phase, sent - self._real(self.clock_ms))
        self.out[request_id] = _Out(api, version, conn, sent=sent)
        wait_s = self.timing.settle_s if api in PARKABLE else REQUEST_TIMEOUT_S
        own = self._pump(sent + wait_s, want=request_id)
        self._trace("send", request_id, api=api, version=version, sent=round(sent - self.began, 4),
                    ms=None if own is None else round((time.monotonic() - sent) * 1000, 2))
        if own is not None:
            if any(o.parked for o in self.out.values()):
                # a join completing answers every member at once, on as many connections: a moment apart
                self._pump(time.monotonic() + self.timing.quiet_s)
            return own
        if api not in PARKABLE:
            self.out.pop(request_id).conn.close()
            raise WireError(f"{self.broker.where}: no answer to {api} v{version} within {REQUEST_TIMEOUT_S:g} s")
        self.out[request_id].parked = True
        return None

    def _pump(self, until: float, want: str | None = None) -> dict | None:
        """Read answers until `until`, or until the answer to `want` (returned); the parked requests' answers
        are kept for `answered`."""
        while True:
            busy = [o.conn for o in self.out.values()]
            if not busy:
                return None
            for conn, rid, body in wait(busy, until):
                o = self.out.pop(rid)
                self.broker.release_conn(conn)
                resp = self._inbound(o.api, messages.response(o.api, body))
                if rid == want:
                    return resp
                self._trace("answered", rid, api=o.api, ms=round((time.monotonic() - o.sent) * 1000, 2))
                self._answers.append((rid, resp))
            if time.monotonic() >= until:
                return None

    def _trace(self, what: str, rid: str, **more: Any) -> None:
        """GROUPSPEC_WIRE_TRACE=file: one JSON line per request sent, answer read and advance, with real times
        (to see where a scenario's real time went)."""
        if _TRACE:
            import json
            with open(_TRACE, "a") as f:
                f.write(json.dumps({"t": round(time.monotonic() - self.began, 4), "what": what, "id": rid,
                                    "ns": self.ns, **more}) + "\n")

    def answered(self) -> list[tuple[str, dict]]:
        if self.out:
            self._pump(time.monotonic())
        out, self._answers = self._answers, []
        return out

    # time --------------------------------------------------------------------------------------------------

    def advance(self, ms: int) -> None:
        """Scenario time moves `ms`: wait until the broker's clock has moved as far past every request the
        scenario sent (see `_real`), and the grace more for what fell due at the end."""
        scale = self.broker.time_scale
        real = ms * scale / 1000
        if real > self.timing.max_advance_s:
            raise Unsupported(f"advance_ms {ms} is {real:g} s of real time at time scale {scale}; the target waits "
                              f"at most {self.timing.max_advance_s:g} s at once (?max_advance_s= in the address)")
        target = self._real(self.clock_ms + ms) + self.phase + self.timing.grace_s
        if self.horizon is not None and max(target, time.monotonic()) - self.began >= self.horizon:
            raise Unsupported(f"Kafka's new-member join timeout is a constant {NEW_MEMBER_JOIN_TIMEOUT_MS} ms of real "
                              f"time ({NEW_MEMBER_JOIN_TIMEOUT_MS / scale:g} scenario ms at time scale {scale}), "
                              f"where the scenario's config has {NEW_MEMBER_JOIN_TIMEOUT_MS}: this advance reaches it")
        self.clock_ms += ms
        self._trace("advance", "", ms=ms, late=round((time.monotonic() - target) * 1000, 2))
        # the grace: the timers that fall due at the end fire a moment later (the broker's timer thread, then its
        # answer), and are waited for whether or not a request is parked, since a timer may change a group
        # without answering anyone (a session expiring) and the next request must find it changed
        self._sleep(target)
        self._trace("advanced", "", ms=ms, late=round((time.monotonic() - target) * 1000, 2))

    def clock_lead_ms(self, advance_ms: int = 0) -> float:
        """How far ahead of the scenario's clock the broker's may be once the next step is done, in scenario ms
        (checkers/conform/wallclock.py): the real time since the scenario clock's present (after an advance of
        `advance_ms`, the requests' phase and the grace it waits out), and what the step itself may take (the
        settle window, the grace)."""
        scale = self.broker.time_scale
        now = time.monotonic()
        if advance_ms:
            ahead = max(self.phase + self.timing.grace_s, now - self._real(self.clock_ms + advance_ms))
        else:
            ahead = max(0.0, now - self._real(self.clock_ms))
        return (ahead + self.timing.settle_s + self.timing.grace_s) * 1000 / scale

    def _real(self, clock_ms: int) -> float:
        """The monotonic time at which the broker's clock shows scenario time `clock_ms`, for a request sent
        exactly then.

        Scenario time 0 is when the adapter was made.  A request sent at scenario time t is sent a little
        after _real(t) (steps take time): its *phase*, how much after, is what its timers fire late by, in
        scenario terms.  An advance to t' therefore waits until _real(t') plus the largest phase of any
        request sent so far (`phase`), plus the grace: every timer due by t' has fired, whichever request
        armed it.  The real time a step takes after the scenario's last request (waiting out a settle window,
        snapshots) is not added: it passes within the advance's wait.  A timer due after t' is still pending
        while the phases' spread since its request, plus the grace, stays under one scenario millisecond times
        the distance: the limit of this target on the wall clock."""
        return self.began + clock_ms * self.broker.time_scale / 1000

    def _sleep(self, until: float) -> None:
        """Wait until `until`, reading the parked requests' answers as they come."""
        while True:
            self._pump(until)
            left = until - time.monotonic()
            if left <= 0:
                return
            if not self.out:
                time.sleep(left)
                return

    # what a broker cannot be told -------------------------------------------------------------------------

    def storage_hold(self, hold: bool) -> None:
        raise Unsupported(UNSUPPORTED["storage_hold"])

    def storage_fail_next(self, error: str) -> None:
        raise Unsupported(UNSUPPORTED["storage_fail_next"])

    def storage_complete(self, error: str) -> bool:
        raise Unsupported(UNSUPPORTED["storage_complete"])

    def unload(self) -> None:
        raise Unsupported(UNSUPPORTED["unload"])

    def begin_load(self) -> None:
        raise Unsupported(UNSUPPORTED["begin_load"])

    def load(self) -> None:
        raise Unsupported(UNSUPPORTED["load"])

    def mark_dead(self, group: str) -> None:
        raise Unsupported(UNSUPPORTED["mark_dead"])

    def expire_offsets(self) -> None:
        raise Unsupported(UNSUPPORTED["expire_offsets"])

    # what a broker shows of a group ------------------------------------------------------------------------

    def snapshot(self, group: str) -> dict | None:
        """DescribeGroups and OffsetFetch of the group: its state, protocol type, members and static members;
        its protocol and each member's assignment while Stable (Kafka describes them only then); its committed
        offsets.  None when the broker holds no such group (it describes one as Dead)."""
        wire = self._wire(group)
        if wire == "":
            self._clear_empty_group()
        self.broker.barrier()
        describe = self._admin("DescribeGroups", {"groups": [wire], "version": 5})
        (g,) = describe.groups
        err = messages.error_name(g.error_code)
        if err != "NONE":
            raise WireError(f"{self.broker.where}: DescribeGroups of {group!r} answered {err}")
        if g.group_state == "Dead":
            return None
        snap: dict[str, Any] = {"state": g.group_state, "protocol_type": g.protocol_type or None,
                                "members": [m.member_id for m in g.members],
                                "static_members": {m.group_instance_id: m.member_id for m in g.members
                                                   if m.group_instance_id is not None}}
        if g.group_state == "Stable":
            snap["protocol"] = g.protocol_data
            try:
                snap["assignment"] = {m.member_id: messages.decode_assignment(m.member_assignment)
                                      for m in g.members}
            except ValueError as e:
                raise WireError(f"{self.broker.where}: DescribeGroups of {group!r}: {e}") from None
        fetch = messages.response("OffsetFetch", self._admin("OffsetFetch", {"group": wire, "partitions": None,
                                                                              "version": 8}))
        if fetch["error"] != "NONE":
            raise WireError(f"{self.broker.where}: OffsetFetch of {group!r} answered {fetch['error']}")
        snap["offsets"] = {p: o for p, o in fetch["offsets"].items() if o >= 0}
        return snap

    def _clear_empty_group(self, again: bool = False) -> None:
        """The empty group id is the one a namespace cannot be given (it would make it a valid id), and Kafka
        keeps offsets committed to it (for old clients): what one scenario commits there, the next would find.
        So the broker's group "" is deleted before a scenario first names it, and again when that scenario
        ends; scenarios naming it must not run on one broker at the same time."""
        if self._empty_cleared and not again:
            return
        self._empty_cleared = True
        got = messages.response("DeleteGroups", self._admin("DeleteGroups", {"groups": [""]}))["errors"].get("")
        if got not in ("NONE", "GROUP_ID_NOT_FOUND"):
            raise WireError(f"{self.broker.where}: deleting the group with the empty id (left by another scenario) "
                            f"answered {got}")

    def _admin(self, api: str, request: dict) -> Any:
        """A request the adapter sends to look (not one of the scenario's), built by messages at `version`."""
        version, entity = messages.request(api, request)
        return self.broker.call(entity)

    def close(self) -> None:
        for o in self.out.values():
            o.conn.close()
        self.out.clear()
        if self._empty_cleared:
            try:
                self._clear_empty_group(again=True)
            except WireError:
                pass          # the broker is gone: the scenario's own result says so

    def _who(self) -> str:
        b = self.broker
        return f"broker (Kafka {b.release}, {b.coordinator} coordinator)" if b.release else "broker"


def _partitions_needed(offsets: Any) -> dict[str, int]:
    """topic -> partitions a commit's offsets need (`topic-N` needs N + 1)."""
    need: dict[str, int] = {}
    for p in offsets or {}:
        topic, _, n = str(p).rpartition("-")
        if topic and n.isdigit():
            need[topic] = max(need.get(topic, 0), int(n) + 1)
    return need


def fixed_config(broker: Broker) -> dict[str, int]:
    """The config a broker fixes, in scenario terms (the harness draws these): its group keys at its time
    scale, and Kafka's constant new-member join timeout."""
    return {**broker.config, NEW_MEMBER_KEY: NEW_MEMBER_JOIN_TIMEOUT_MS,
            NEW_COORDINATOR: broker.coordinator == "java"}


def config_differences(broker: Broker, config: dict) -> list[str]:
    """How a scenario's config differs from what the broker has (one phrase per key); [] when it runs there."""
    out = []
    scale = broker.time_scale
    at = f" at time scale {scale}" if scale != 1 else ""
    for key in BROKER_KEYS:
        want, have = config[key], broker.config[key]
        if want != have:
            out.append(f"{key} is {want} in the scenario and {have} on the broker{at}")
    java = broker.coordinator == "java"
    if bool(config[NEW_COORDINATOR]) != java:
        out.append(f"{NEW_COORDINATOR} is {str(config[NEW_COORDINATOR]).lower()} in the scenario ("
                   f"{coordinator_name(config).split(' (')[0]}), and the broker runs the {broker.coordinator} "
                   f"coordinator (start one with --coordinator {'java' if config[NEW_COORDINATOR] else 'scala'})")
    join = config[NEW_MEMBER_KEY]
    if join != NEW_MEMBER_JOIN_TIMEOUT_MS and join * scale != NEW_MEMBER_JOIN_TIMEOUT_MS:
        out.append(f"{NEW_MEMBER_KEY} is {join} in the scenario; Kafka has no such config: it is a constant "
                   f"{NEW_MEMBER_JOIN_TIMEOUT_MS} ms ({NEW_MEMBER_JOIN_TIMEOUT_MS / scale:g} scenario ms{at})")
    # offsets.retention.minutes: the spec reads it only when offsets expire (expire_offsets), which a broker
    # cannot be told to do, and broker.py switches the broker's own expiry task off: no step sees it
    return out


def broker_factory(name: str):
    """`kafka://host:port[?knobs]`: the factory (config -> adapter) of a broker's target, made after the
    handshake (ApiVersions, FindCoordinator, DescribeConfigs); BrokerUnavailable, one line, if it fails."""
    address = parse_address(name)
    broker = Broker(address)
    try:
        broker.connect()
    except WireError as e:
        broker.close()
        raise BrokerUnavailable(f"--adapter {address}: {_after_where(str(e), broker.where)}") from None

    def factory(config: dict) -> BrokerTarget:
        diff = config_differences(broker, config)
        if diff:
            raise Unsupported(f"the broker's group config is fixed when it starts: {'; '.join(diff)} (start one "
                              f"with --config to match)")
        return BrokerTarget(broker, config)

    factory.fixed_config = fixed_config(broker)
    factory.broker = broker
    return factory


def _after_where(message: str, where: str) -> str:
    return message[len(where) + 2:] if message.startswith(where + ": ") else message
