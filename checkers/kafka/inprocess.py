"""Kafka's own coordinators as conformance targets, run in a JVM beside Python (`jvm/`, its README).

One driver process per Kafka line and Python process, started on first use
and kept: each scenario or harness example asks it for a fresh coordinator
(a session), so the JVM's start-up is paid once.  The adapter speaks the
harness's terms (`checkers/conform/adapter.py`); requests and responses
cross as Kafka's own messages (`messages.py`).  Deterministic: the driver
reseeds the generator behind Kafka's member ids for every session, and
time moves only when a step says.
"""
from __future__ import annotations

import atexit
import base64
import json
import os
import select
import subprocess
import tempfile
import threading
import time
from typing import Any

from groupspec.checkers.conform.adapter import Unsupported
from groupspec.spec.handling import JAVA_WRITES
from groupspec.spec.kafka import CONFIG_DEFAULTS, NEW_COORDINATOR, brief, check_config, coordinator_name

from . import jars, messages

# Kafka has no config for how long a new member's join may wait: a constant of 5 minutes in both coordinators
# (GroupCoordinator.NewMemberJoinTimeoutMs, GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS).
KAFKA_CONSTANTS = {"group.new.member.join.timeout.ms": 300_000}
# The coordinator each line runs in process: 3.9's Scala one, 4.0's Java one (group.coordinator.new.enable).
COORDINATOR_OF = {"3.9": False, "4.0": True}
REPLY_TIMEOUT_S = 120          # a coordinator step is milliseconds; a JVM that says nothing this long is stuck
START_TIMEOUT_S = 120
API_KEYS = {"JoinGroup": "JOIN_GROUP", "SyncGroup": "SYNC_GROUP", "Heartbeat": "HEARTBEAT", "LeaveGroup": "LEAVE_GROUP",
            "OffsetCommit": "OFFSET_COMMIT", "OffsetFetch": "OFFSET_FETCH", "DescribeGroups": "DESCRIBE_GROUPS",
            "ListGroups": "LIST_GROUPS", "DeleteGroups": "DELETE_GROUPS"}


class DriverError(RuntimeError):
    """The JVM driver failed (it died, hung, or could not run a command); the message says what, with the
    last lines Kafka logged."""


class Driver:
    """One JVM running the driver for one Kafka line; commands one at a time."""

    def __init__(self, line: jars.Line):
        jars.ensure_built(line)
        self.line = line
        self.log = tempfile.NamedTemporaryFile(prefix=f"groupspec-kafka-{line.release}-", suffix=".log", delete=False)
        cmd = [jars.java(), "-Xss4m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Dlog4j.configuration=file:" + str(jars.JVM / "log4j-driver.properties"),
               "-Dlog4j2.configurationFile=" + str(jars.JVM / "log4j2-driver.properties"),
               "-cp", jars.classpath(line), "groupspec.driver.Main", line.factory]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     bufsize=0)
        self.lock = threading.Lock()
        self._buf = b""
        ready = self._read(START_TIMEOUT_S)
        if not ready.get("ready"):
            raise DriverError(f"the Kafka {line.release} driver did not start: {brief(ready, 200)}")
        self.kafka = ready.get("kafka")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def call(self, **cmd: Any) -> dict:
        with self.lock:
            if not self.alive():
                raise DriverError(f"the Kafka {self.line.release} driver has exited{self._tail()}")
            try:
                self.proc.stdin.write(json.dumps(cmd).encode() + b"\n")
            except (BrokenPipeError, OSError):
                raise DriverError(f"the Kafka {self.line.release} driver has exited{self._tail()}") from None
            return self._read(REPLY_TIMEOUT_S)

    def _read(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise DriverError(f"the Kafka {self.line.release} driver gave no answer in {timeout:.0f} s{self._tail()}")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    raise DriverError(f"the Kafka {self.line.release} driver exited{self._tail()}")
                self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)

    def _tail(self) -> str:
        try:
            with open(self.log.name, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log.name) - 2000))
                lines = [x for x in f.read().decode("utf-8", "replace").splitlines() if x.strip()][-3:]
        except OSError:
            return ""
        return f" (its log, {self.log.name}, ends: {' | '.join(lines)})" if lines else ""

    def close(self) -> None:
        if self.alive():
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


_DRIVERS: dict[str, Driver] = {}
_DRIVERS_LOCK = threading.Lock()


def driver(name: str) -> Driver:
    with _DRIVERS_LOCK:
        d = _DRIVERS.get(name)
        if d is None or not d.alive():
            d = _DRIVERS[name] = Driver(jars.line(name))
        return d


@atexit.register
def _stop_drivers() -> None:
    for d in _DRIVERS.values():
        d.close()


# Where Kafka 4.0's Java coordinator does what the table does not yet say (docs/kafka-conformance.md): steps
# its harness leaves out, counted by these reasons, while a write is in flight
JAVA_READS_COMMITTED = (
    "a read while a write is held: the Java coordinator answers ListGroups, DescribeGroups and OffsetFetch from "
    "its last committed state (CoordinatorRuntime.scheduleReadOperation reads at the last committed offset), "
    "the table from its latest")
JAVA_TOMBSTONES_FAIL = (
    "a deletion with a failure set for the next write: the Java coordinator undoes a deletion whose tombstones "
    "fail and fails the whole DeleteGroups (GroupCoordinatorShard.deleteGroups, its timeline reverted), which "
    "the table does not say yet (spec/handling.py JAVA_WRITES)")
JAVA_TOMBSTONES_ONE_WRITE = (
    "a deletion of several groups while writes are held: the Java coordinator writes their tombstones as one "
    "write (GroupCoordinatorShard.deleteGroups, cleanupGroupMetadata), the table a group at a time")
JAVA_FAILED_WRITE_REVERTS = (
    "a write set to fail while a group has members or is rebalancing: a write failing as it is made makes the "
    "Java coordinator "
    "revert the whole operation that made it (CoordinatorRuntime: its state back to before the operation, its "
    "answer the write's mapped error), a LeaveGroup or a session expiry that empties a group too; the table "
    "says so only of the write of a group a request creates and of an offset commit (spec/handling.py "
    "JAVA_WRITES)")
JAVA_REVERT_KEEPS_TIMERS = (
    "a member joining with a write set to fail: the Java coordinator undoes the group the join created but not "
    "the delayed join it armed (timers are outside the reverted state), which later completes a join of "
    "whatever group has that id then, an Empty one too (GroupMetadataManager.completeClassicGroupJoin checks "
    "no state): not in the table")
JAVA_HELD_WRITES_DO_NOT_FAIL = (
    "the Java coordinator's writes, once made, fail only as the partition moves away (spec/handling.py "
    "JAVA_WRITES)")
# every reason the Java coordinator's target leaves a step out for (docs/kafka-conformance.md)
JAVA_LIMITS = (JAVA_READS_COMMITTED, JAVA_TOMBSTONES_FAIL, JAVA_TOMBSTONES_ONE_WRITE, JAVA_FAILED_WRITE_REVERTS,
               JAVA_REVERT_KEEPS_TIMERS, JAVA_HELD_WRITES_DO_NOT_FAIL)
READS = ("ListGroups", "DescribeGroups", "OffsetFetch")


def _joins_at_once(request: dict) -> bool:
    """A JoinGroup with no member id that adds its member at once (not MEMBER_ID_REQUIRED): a static member, a
    version before 4, or require_known_member_id false (KIP-394)."""
    version = request.get("version")
    return request.get("member") == "" and (request.get("instance") is not None or request.get(
        "require_known_member_id") is False or (isinstance(version, int) and version < 4))


class KafkaInProcess:
    """An adapter (checkers/conform/adapter.py) on one of Kafka's coordinators, in its driver's JVM."""

    unsupported: frozenset = frozenset()
    partial_responses = True     # a response carries the fields of its version (messages.response)

    def __init__(self, config: dict, line: str):
        full = check_config(config)
        for key, value in KAFKA_CONSTANTS.items():
            if full[key] != value:
                raise Unsupported(f"{key} = {full[key]}: Kafka has no such config, its value is a constant "
                                  f"{value} ms in both coordinators")
        if full[NEW_COORDINATOR] != COORDINATOR_OF[line]:
            raise Unsupported(f"{NEW_COORDINATOR} = {str(full[NEW_COORDINATOR]).lower()}: kafka-{line} runs "
                              f"{coordinator_name({NEW_COORDINATOR: COORDINATOR_OF[line]})}")
        self.name = f"kafka-{line}"
        self.java = COORDINATOR_OF[line]
        self.partial_snapshots = self.java     # its offsets while a write is held (snapshot)
        # a write held in the log; writes being held; a failure set for the next one
        self._held = self._holding = self._failing = self._in_use = False
        self.driver = driver(line)
        self._answers: list[tuple[str, dict]] = []
        self._api: dict[str, tuple[str, int]] = {}
        kafka_config = {k: v for k, v in full.items() if k not in KAFKA_CONSTANTS and k != NEW_COORDINATOR}
        self.session = self._ok(self.driver.call(op="new", config=kafka_config, seed=0))["session"]

    def _ok(self, reply: dict) -> dict:
        if reply.get("ok"):
            self._held = bool(reply.get("writes_held", self._held))
            self._holding = bool(reply.get("holding", self._holding))
            self._failing = bool(reply.get("write_failing", self._failing))
            self._in_use = bool(reply.get("groups_in_use", self._in_use))
            for rid, body in reply.get("answered") or ():
                api, version = self._api.pop(rid)
                self._answers.append((rid, _response(api, version, body)))
            return reply
        if reply.get("kind") == "unsupported":
            raise Unsupported(f"{self.name}: {reply.get('error')}")
        raise DriverError(f"{self.name}: {reply.get('error')}" + (f"\n{reply['trace']}" if reply.get("trace") else ""))

    def _do(self, op: str, **args: Any) -> dict:
        return self._ok(self.driver.call(op=op, session=self.session, **args))

    def _outside(self, what: str, groups: list | tuple = (), request: dict | None = None) -> None:
        """Refuse a step of the Java coordinator that the table does not describe (the reasons above)."""
        if not self.java:
            return
        if what == "JoinGroup" and self._failing and _joins_at_once(request or {}):
            raise Unsupported(f"{self.name}: {JAVA_REVERT_KEEPS_TIMERS}")
        # a failure set before a group came into use: a step that may write its group (a join completing
        # empty, a leave, an expiry as time moves) would meet it
        if self._failing and self._in_use and what not in ("Heartbeat", "OffsetCommit", *READS):
            raise Unsupported(f"{self.name}: {JAVA_FAILED_WRITE_REVERTS}")
        if what in READS and self._held:
            raise Unsupported(f"{self.name}: {JAVA_READS_COMMITTED}")
        if what in ("DeleteGroups", "expire_offsets") and self._failing:
            raise Unsupported(f"{self.name}: {JAVA_TOMBSTONES_FAIL}")
        if (what == "expire_offsets" or len(set(map(str, groups))) > 1) and (self._held or self._holding):
            raise Unsupported(f"{self.name}: {JAVA_TOMBSTONES_ONE_WRITE}")

    def send(self, api: str, request: dict, request_id: str) -> dict | None:
        self._outside(api, request.get("groups") or () if api == "DeleteGroups" else (), request)
        try:
            version, message = messages.request(api, request)
        except messages.NotExpressible as e:
            raise Unsupported(str(e)) from None
        self._api[request_id] = (api, version)
        reply = self._do("send", api=API_KEYS[api], version=version, id=request_id, client=request.get("client"),
                         host=request.get("host"), body=messages.to_json(message))
        body = reply.get("response")
        if body is None:
            return None
        del self._api[request_id]
        return _response(api, version, body)

    def answered(self) -> list[tuple[str, dict]]:
        out, self._answers = self._answers, []
        return out

    def advance(self, ms: int) -> None:
        self._outside("advance")
        self._do("advance", ms=ms)

    def storage_hold(self, hold: bool) -> None:
        self._do("hold", hold=hold)

    def storage_fail_next(self, error: str) -> None:
        if self.java and self._in_use:
            raise Unsupported(f"{self.name}: {JAVA_FAILED_WRITE_REVERTS}")
        self._do("fail_next", error=error)

    def storage_complete(self, error: str) -> bool:
        if self.java and error != "NONE" and not JAVA_WRITES.held_can_fail:
            raise Unsupported(f"{self.name}: a held write completing with {error}: {JAVA_HELD_WRITES_DO_NOT_FAIL}")
        return bool(self._do("complete", error=error).get("completed"))

    def unload(self) -> None:
        self._do("unload")

    def begin_load(self) -> None:
        self._do("begin_load")

    def load(self) -> None:
        self._do("load")

    def mark_dead(self, group: str) -> None:
        self._do("mark_dead", group=group)

    def expire_offsets(self) -> None:
        self._outside("expire_offsets")
        self._do("expire_offsets")

    def snapshot(self, group: str) -> dict | None:
        snap = self._do("snapshot", group=group).get("snapshot")
        if snap is None:
            return None
        snap["assignment"] = {m: messages.decode_assignment(base64.b64decode(a) if a else b"")
                              for m, a in snap.get("assignment", {}).items()}
        if self.java and self._held:
            # what OffsetFetch would say (the last committed offsets), and the table's latest, part while a
            # write is held: its offsets are not shown (JAVA_READS_COMMITTED)
            del snap["offsets"]
        return snap

    def close(self) -> None:
        if self.driver.alive():
            self.driver.call(op="close", session=self.session)


def _response(api: str, version: int, body: dict) -> dict:
    return messages.response(api, messages.from_json(messages.response_class(api, version), body))


def kafka_39(config: dict) -> KafkaInProcess:
    """Kafka 3.9's Scala GroupCoordinator, in process."""
    return KafkaInProcess(config, "3.9")


def kafka_40(config: dict) -> KafkaInProcess:
    """Kafka 4.0's Java group coordinator (classic groups), in process."""
    return KafkaInProcess(config, "4.0")


kafka_39.fixed_config = {**KAFKA_CONSTANTS, NEW_COORDINATOR: False}
kafka_40.fixed_config = {**KAFKA_CONSTANTS, NEW_COORDINATOR: True}


assert set(KAFKA_CONSTANTS) <= set(CONFIG_DEFAULTS)
