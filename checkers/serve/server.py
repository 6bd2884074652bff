"""The runtime coordinator over Kafka's wire protocol, on the wall clock.

One asyncio server.  Each connection's frames are read with `framing`, its
requests turned into the contract's fields by `messages.parse_request`, sent to
the runtime coordinator, and its answers built by `messages.build_response`
and written back in the order the requests came (Kafka answers a connection
in order: a parked JoinGroup holds back the answers behind it).  Time is the
runtime's manual clock, moved to the wall clock before every request and
whenever a timer falls due.  Besides the group APIs it answers what a consumer
needs to find its coordinator: ApiVersions, Metadata and FindCoordinator.

The coordinator checks the spec's invariants after every row it fires (its
`debug` mode): a violation is logged with the step and answered as Kafka
answers what it did not expect, UNKNOWN_SERVER_ERROR; the server goes on.
The faults the closed world knows are methods here (`hold`, `release`,
`fail_next`, `move`, `load`, `expire_offsets`, `drop`), applied from outside
through the admin endpoint (admin.py).
"""
from __future__ import annotations

import asyncio
import dataclasses
import datetime
import itertools
import logging
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path

from kio import index as kio_index
from kio.schema.errors import ErrorCode

from groupspec.checkers.kafka import framing, messages
from groupspec.impl.coordinator import GroupCoordinator
from groupspec.impl.clock import ManualClock
from groupspec.impl.storage import FileLog, InMemoryLog
from groupspec.impl.trace import JsonLinesSink, TraceWriter
from groupspec.spec.invariants import InvariantViolation
from groupspec.spec.kafka import ACCEPTED_VERSIONS, brief, check_config

log = logging.getLogger("groupspec.serve")

NODE_ID = 0
API_VERSIONS, METADATA, FIND_COORDINATOR, LIST_OFFSETS, FETCH = 18, 3, 10, 2, 1
# what the server answers besides the group APIs, at versions kio's schemas define (Fetch by topic name: before
# version 13, which names topics by id)
OWN_VERSIONS = {API_VERSIONS: (0, 3), METADATA: (1, 12), FIND_COORDINATOR: (0, 4), LIST_OFFSETS: (1, 7),
                FETCH: (4, 12)}
TICK_S = 0.05        # the longest the clock waits without looking at the timers
# connections waiting to be accepted: a burst of consumers (a restart, a deploy) connects at once, and a full queue
# drops their handshakes, which clients retry only after a second (asyncio's default is 100; benchmarks/serve.py)
BACKLOG = 4096
# Kafka's offsets.retention.check.interval.ms: how often expired offsets are swept (`ctl expire-offsets`: now)
RETENTION_CHECK_MS = 600_000
# Kafka's connections.max.idle.ms: a connection that sends nothing this long is closed (a half frame included)
IDLE_MS = 600_000
MAX_IN_FLIGHT = 64   # answers a connection may have waiting to be sent before the server stops reading it


def _kio_versions(api: str) -> tuple[int, int]:
    """The versions of a group API the server answers: Kafka 3.9's, as far as kio's schemas define them."""
    lo, hi = ACCEPTED_VERSIONS[api]
    defined = [v for v in range(lo, hi + 1) if messages.defined(api, v)]
    return min(defined), max(defined)


def _partitions(raw: bytes) -> list[str] | None:
    try:
        return messages.decode_assignment(raw)
    except ValueError:
        return None


def advertised() -> dict[int, tuple[int, int]]:
    """API key -> (lowest, highest) version the server answers."""
    return {**OWN_VERSIONS, **{messages.API_KEYS[a]: _kio_versions(a) for a in messages.API_KEYS}}


@dataclass
class Server:
    """`log`: the runtime's durable log (impl/storage.py FileLog): the groups and offsets in it are loaded when
    the server starts, and every append is in it before it is acknowledged; without one, a log in memory.
    `trace`: a file the complete trace is written to (impl/trace.py; `groupspec traces check` validates it).
    `engine`: another table's engine (a mutant's: what the invariant checks are tested with)."""
    config: dict
    topics: dict[str, int]
    host: str = "127.0.0.1"
    port: int = 9092
    log: str | None = None
    trace: str | None = None
    idle_ms: int = IDLE_MS
    engine: object = None
    coord: GroupCoordinator = field(init=False)

    def __post_init__(self):
        # the clock is the epoch's milliseconds, so that the times a durable log keeps (a group's, an offset's)
        # mean the same after a restart
        clock = ManualClock(self._now_ms())
        store = FileLog(Path(self.log)) if self.log is not None else InMemoryLog()
        self.coord = GroupCoordinator(check_config(self.config), log=store, clock=clock, debug=True,
                                      **({"engine": self.engine} if self.engine is not None else {}))
        self._sink = JsonLinesSink(self.trace) if self.trace is not None else None
        if self._sink is not None:
            TraceWriter(self._sink, source="serve", config=self.config).attach(self.coord)
        if self.log is not None:
            self.coord.begin_load()
            self.coord.load()
        self.versions = advertised()
        self._ids = itertools.count(1)
        self._sent: dict[tuple[str, str], bytes] = {}     # (group, member) -> the leader's assignment bytes
        self._conns: dict[asyncio.StreamWriter, str] = {}  # open connections -> the client id they last gave
        self._later: dict[str, asyncio.TimerHandle] = {}   # a fault's end, due later (`hold`, `move` with ms)
        self.violations = 0

    # time ----------------------------------------------------------------------------------------------

    @staticmethod
    def _now_ms() -> int:
        return int(time.time() * 1000)

    def catch_up(self) -> None:
        """Move the runtime's clock to the wall clock, firing what fell due (its answers go out as they come)."""
        behind = self._now_ms() - self.coord.clock.now()
        if behind > 0:
            self._guarded("the clock's advance", self.coord.advance, behind)

    def _guarded(self, what: str, step, *args):
        """Run a coordinator step; an invariant it breaks is logged, with the step, and the server goes on."""
        try:
            return step(*args)
        except InvariantViolation as e:
            self.violations += 1
            log.error("%s broke the spec's invariant: %s", what, e)
            return None
        finally:
            if self._sink is not None:
                self._sink.flush()

    async def _timers(self) -> None:
        swept = self.coord.clock.now()
        while True:
            self.catch_up()
            if self.coord.clock.now() - swept >= RETENTION_CHECK_MS:
                swept = self.coord.clock.now()
                self.expire_offsets()
            due = [d for _k, d, _s in self.coord.timers.schedule()]
            wait = TICK_S if not due else max(0.0, min(TICK_S, (min(due) - self.coord.clock.now()) / 1000))
            await asyncio.sleep(wait)

    # connections ---------------------------------------------------------------------------------------

    async def serve(self, ready: asyncio.Event | None = None) -> None:
        _raise_open_files_limit()
        server = await asyncio.start_server(self._connection, self.host, self.port, backlog=BACKLOG)
        self.port = server.sockets[0].getsockname()[1]
        ticker = asyncio.create_task(self._timers())
        if ready is not None:
            ready.set()
        try:
            async with server:
                await server.serve_forever()
        finally:
            ticker.cancel()
            for later in self._later.values():
                later.cancel()
            close = getattr(self.coord.log, "close", None)
            if callable(close):       # a durable log's lock is released: the next server may open it
                close()
            if self._sink is not None:
                self._sink.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # bounded: a client that sends without reading its answers is not read from until it does (Kafka reads
        # one request of a connection at a time)
        answers: asyncio.Queue = asyncio.Queue(MAX_IN_FLIGHT)
        sender = asyncio.create_task(self._send_in_order(answers, writer))
        self._conns[writer] = ""
        buf = bytearray()
        peer = writer.get_extra_info("peername")
        try:
            while True:
                # asyncio.timeout, not wait_for: Python 3.11's wait_for loses a cancellation that lands as the
                # read completes (CPython gh-86296), and this loop then outlives the server's stop
                try:
                    async with asyncio.timeout(self.idle_ms / 1000):
                        chunk = await reader.read(1 << 16)
                except TimeoutError:
                    log.info("closing a connection from %s: idle for %d ms%s", peer, self.idle_ms,
                             f", {len(buf)} bytes of a frame unfinished" if buf else "")
                    break
                if not chunk:
                    break
                buf += chunk
                while (data := framing.take_frame(buf)) is not None:
                    await answers.put(self._request(data, writer))
        except (framing.FrameError, ConnectionError) as e:
            log.warning("closing a connection from %s: %s", peer, e)
        except Exception as e:     # noqa: BLE001 - a request the runtime refuses: that client goes, the server stays
            log.warning("closing a connection from %s: its request was refused (%s: %s)",
                        peer, type(e).__name__, brief(str(e), 200))
        finally:
            self._conns.pop(writer, None)
            sender.cancel()
            writer.close()

    async def _send_in_order(self, answers: asyncio.Queue, writer: asyncio.StreamWriter) -> None:
        while True:
            answer = await answers.get()
            frame = await answer if isinstance(answer, asyncio.Future) else answer
            writer.write(frame)
            await writer.drain()

    # requests ------------------------------------------------------------------------------------------

    def _request(self, data: bytes, writer: asyncio.StreamWriter | None = None):
        """The answer's frame, or a future of it (a parked request)."""
        key, version, correlation = framing.peek_api(data)
        lo, hi = self.versions.get(key, (0, -1))
        if key == API_VERSIONS and version > hi:
            # Kafka's rule for a newer client: ApiVersions v0 saying UNSUPPORTED_VERSION, with the versions it
            # answers, so the client can ask again at one of them
            return framing.encode_response(self._api_versions(0, ErrorCode.unsupported_version), correlation)
        if not lo <= version <= hi:
            raise framing.FrameError(f"API key {key} version {version} is not one this server answers")
        header, msg = framing.decode_request(data)
        if writer is not None and header.client_id:
            self._conns[writer] = header.client_id
        if key == API_VERSIONS:
            return framing.encode_response(self._api_versions(version), correlation)
        if key == METADATA:
            return framing.encode_response(self._metadata(version, msg), correlation)
        if key == FIND_COORDINATOR:
            return framing.encode_response(self._find_coordinator(version, msg), correlation)
        if key == LIST_OFFSETS:
            return framing.encode_response(self._list_offsets(version, msg), correlation)
        if key == FETCH:
            # the topics hold no records: an empty answer once the fetch's wait is over, as a broker's long poll
            answer = asyncio.get_running_loop().create_future()
            frame = framing.encode_response(self._fetch(version, msg), correlation)
            asyncio.get_running_loop().call_later(msg.max_wait.total_seconds(), answer.set_result, frame)
            return answer
        api = next(a for a, k in messages.API_KEYS.items() if k == key)
        req = messages.parse_request(api, msg)
        req["client"] = header.client_id or ""
        if writer is not None:          # as Kafka writes a member's clientHost (InetAddress.toString)
            req["host"] = "/" + str((writer.get_extra_info("peername") or ("",))[0])
        if api == "SyncGroup":
            # the leader's assignment bytes, handed out as they came (the runtime keeps their partitions; a
            # consumer's assignment may carry more, and an empty one is still bytes a consumer reads)
            for a in msg.assignments:
                self._sent[(req["group"], a.member_id)] = a.assignment
        self.catch_up()
        future = asyncio.get_running_loop().create_future()

        def answered(resp: dict) -> None:
            if not future.done():
                future.set_result(self._answer(api, version, resp, req, correlation))
        try:
            resp = self.coord.send(api, req, on_response=answered, request_id=next(self._ids))
        except InvariantViolation as e:
            # Kafka answers what it did not expect with UNKNOWN_SERVER_ERROR; the client may retry
            self.violations += 1
            log.error("%s from %r in group %r broke the spec's invariant: %s", api, req["client"], req.get("group"), e)
            resp = messages.error_answer(api, req, "UNKNOWN_SERVER_ERROR")
        finally:
            if self._sink is not None:
                self._sink.flush()
        if resp is not None:
            return self._answer(api, version, resp, req, correlation)
        return future

    def _answer(self, api: str, version: int, resp: dict, req: dict, correlation: int) -> bytes:
        details = None
        if api == "JoinGroup" and resp.get("members"):
            details = {req["group"]: self.coord.member_details(req["group"])}
        elif api == "DescribeGroups":
            details = {g["group"]: self._described(g) for g in resp.get("groups") or [] if g.get("state")}
        entity = messages.build_response(api, version, resp, req, details)
        raw = self._raw(req["group"], req["member"], resp.get("assignment")) if api == "SyncGroup" else None
        if raw is not None and resp.get("error") == "NONE":
            entity = dataclasses.replace(entity, assignment=raw)
        return framing.encode_response(entity, correlation)

    def _described(self, g: dict) -> dict:
        """What DescribeGroups tells of a group's members (Kafka's GroupMetadata.summary): client id and host
        always; metadata and assignment bytes (as the leader sent them) only while the group is Stable."""
        details = self.coord.member_details(g["group"])
        if g["state"] == "Stable":
            assigned = (self.coord.snapshot(g["group"]) or {}).get("assignment", {})
            for m, d in details.items():
                d["assignment"] = self._raw(g["group"], m, assigned.get(m)) or \
                    messages.encode_assignment(assigned.get(m) or [])
        return details

    def _raw(self, group: str, member: str, partitions: list[str] | None) -> bytes | None:
        """The assignment bytes the leader sent for `member`, if they are the partitions the coordinator holds."""
        raw = self._sent.get((group, member))
        return raw if raw is not None and _partitions(raw) == partitions else None

    def _api_versions(self, version: int, error: ErrorCode = ErrorCode.none):
        cls = kio_index.load_response_schema(API_VERSIONS, version)
        return messages.build(cls, {"error_code": error, "throttle_time": datetime.timedelta(0),
                                    "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi}
                                                 for k, (lo, hi) in sorted(self.versions.items())]})

    def _metadata(self, version: int, msg):
        cls = kio_index.load_response_schema(METADATA, version)
        asked = None if msg.topics is None else [t.name for t in msg.topics]
        names = list(self.topics) if asked is None else asked
        return messages.build(cls, {
            "throttle_time": datetime.timedelta(0), "cluster_id": "groupspec", "controller_id": NODE_ID,
            "brokers": [{"node_id": NODE_ID, "host": self.host, "port": self.port, "rack": None}],
            "topics": [{"error_code": ErrorCode.none if t in self.topics else ErrorCode.unknown_topic_or_partition,
                        "name": t, "topic_id": None, "is_internal": False, "topic_authorized_operations": -2147483648,
                        "partitions": [{"error_code": ErrorCode.none, "partition_index": i, "leader_id": NODE_ID,
                                        "leader_epoch": 0, "replica_nodes": [NODE_ID], "isr_nodes": [NODE_ID],
                                        "offline_replicas": []} for i in range(self.topics.get(t, 0))]}
                       for t in names]})

    def _partition_error(self, topic: str, partition: int) -> ErrorCode:
        return ErrorCode.none if 0 <= partition < self.topics.get(topic, 0) else ErrorCode.unknown_topic_or_partition

    def _list_offsets(self, version: int, msg):
        """Every partition is empty: its earliest and latest offset are 0."""
        cls = kio_index.load_response_schema(LIST_OFFSETS, version)
        return messages.build(cls, {"throttle_time": datetime.timedelta(0), "topics": [
            {"name": t.name, "partitions": [{"partition_index": p.partition_index, "timestamp": -1, "offset": 0,
                                             "leader_epoch": 0, "error_code": self._partition_error(t.name, p.partition_index)}
                                            for p in t.partitions]} for t in msg.topics]})

    def _fetch(self, version: int, msg):
        cls = kio_index.load_response_schema(FETCH, version)
        return messages.build(cls, {"throttle_time": datetime.timedelta(0), "error_code": ErrorCode.none,
                                    "session_id": 0, "responses": [
            {"topic": t.topic, "partitions": [
                {"partition_index": p.partition, "error_code": self._partition_error(t.topic, p.partition),
                 "high_watermark": 0, "last_stable_offset": 0, "log_start_offset": 0, "aborted_transactions": [],
                 "preferred_read_replica": -1, "records": b""} for p in t.partitions]} for t in msg.topics]})

    def _find_coordinator(self, version: int, msg):
        cls = kio_index.load_response_schema(FIND_COORDINATOR, version)
        keys = list(getattr(msg, "coordinator_keys", None) or [getattr(msg, "key", "")])
        if self.coord.coord == "not_coordinator":
            # moved away (`move`): no broker leads the offsets partition, as while a real one fails over
            one = {"error_code": ErrorCode.coordinator_not_available, "error_message": "moved away on cue",
                   "node_id": -1, "host": "", "port": -1}
        else:
            one = {"error_code": ErrorCode.none, "error_message": None, "node_id": NODE_ID, "host": self.host,
                   "port": self.port}
        return messages.build(cls, {"throttle_time": datetime.timedelta(0), **one,
                                    "coordinators": [{"key": k, **one} for k in keys]})

    # faults on cue (admin.py applies them from outside) ---------------------------------------------------

    def _cancel_later(self, name: str) -> None:
        later = self._later.pop(name, None)
        if later is not None:
            later.cancel()

    def hold(self, ms: int | None = None) -> dict:
        """Appends are held from now: nothing written is acknowledged until `release` (after `ms`, if given)."""
        self.catch_up()
        self._cancel_later("hold")
        self.coord.storage_hold(True)
        if ms is not None:
            self._later["hold"] = asyncio.get_running_loop().call_later(ms / 1000, self.release)
        return {"holding": True, "release_in_ms": ms}

    def release(self, error: str = "NONE") -> dict:
        """Stop holding appends, and complete the held ones, oldest first, with `error`."""
        self.catch_up()
        self._cancel_later("hold")
        self.coord.storage_hold(False)
        done = 0
        while self._guarded("a held append's completion", self.coord.storage_complete, error):
            done += 1
        return {"holding": False, "completed": done, "error": error}

    def fail_next(self, error: str) -> dict:
        """The next append fails with `error` (one of Kafka's storage errors)."""
        self.coord.storage_fail_next(error)
        return {"fail_next": error}

    def move(self, ms: int | None = None) -> dict:
        """The coordinator moves away (its groups unloaded: requests answered NOT_COORDINATOR, FindCoordinator
        COORDINATOR_NOT_AVAILABLE), and back after `ms` (loaded from the log), or on `load`."""
        self.catch_up()
        self._cancel_later("move")
        self._guarded("the coordinator's move away", self.coord.unload)
        if ms is not None:
            self._later["move"] = asyncio.get_running_loop().call_later(ms / 1000, self.load)
        return {"coordinator": self.coord.coord, "back_in_ms": ms}

    def load(self) -> dict:
        """The coordinator comes back: every group in the log is loaded."""
        self.catch_up()
        self._cancel_later("move")
        self._guarded("the coordinator's load", self.coord.begin_load)
        self._guarded("the coordinator's load", self.coord.load)
        return {"coordinator": self.coord.coord}

    def expire_offsets(self) -> dict:
        """Kafka's offset expiry sweep, now: offsets older than offsets.retention.minutes go."""
        self.catch_up()
        self._guarded("the offset expiry sweep", self.coord.expire_offsets)
        return {"expired_at_ms": self.coord.clock.now()}

    def drop(self, client: str | None = None) -> dict:
        """Close the connections of client id `client` (every one, if None); parked requests go unanswered."""
        gone = [w for w, c in list(self._conns.items()) if client is None or c == client]
        for w in gone:
            log.info("closing a connection from %s (client %r): dropped on cue", w.get_extra_info("peername"),
                     self._conns.get(w))
            w.close()
        return {"dropped": len(gone)}

    def status(self) -> dict:
        """What the server holds: the coordinator's status, its groups, the held appends, the connections."""
        self.catch_up()
        return {"coordinator": self.coord.coord, "holding": self.coord.hold, "held_appends": len(self.coord.appends),
                "fail_next": self.coord.fail_next, "violations": self.violations,
                "groups": {gid: self.coord.snapshot(gid) for gid in sorted(self.coord.groups)},
                "connections": sorted(self._conns.values())}


def _raise_open_files_limit() -> None:
    """Thousands of clients need thousands of descriptors: the soft limit raised to the hard one (a broker's
    service file does the same)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 1 << 20, hard))
        except (ValueError, OSError):       # not allowed here: the soft limit stays
            pass
