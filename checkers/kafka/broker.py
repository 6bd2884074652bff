"""A single-node Kafka broker (KRaft, broker and controller in one JVM) from the jars `setup` fetched.

`start` writes a server.properties and a logging config into the broker's
folder, formats its storage (kafka.tools.StorageTool, as `kafka-storage.sh
format` does), starts `kafka.Kafka` as a background process of its own
session (it outlives the command that started it), and waits until the
broker is ready: it answers ApiVersions, and FindCoordinator for a group
answers NONE (the first one makes the broker create __consumer_offsets).  It
records the broker's state (pid, ports, Kafka line and release, coordinator,
config, time scale, folder, server.log) in a file of the state folder, so that
`stop`, in another process, finds it; `stop` sends SIGTERM (a controlled
shutdown) and kills the process if it has not ended in time.

Which coordinator serves classic groups (verified on the jars, see
`COORDINATOR_SWITCH`): Kafka 3.9 runs the Scala GroupCoordinator unless
`group.coordinator.new.enable=true` (no metadata or group version needed:
3.9-IV0, the default `format` writes, serves classic groups on the Java one);
4.0 runs the Java one unless `group.coordinator.new.enable=false`.  The
broker's server.log says which one started; `start` checks it.

Time scale: a broker runs on the wall clock, and the project's scenarios on
timeouts of tens of milliseconds.  A broker started with `time_scale` K has
its group timeouts (the session bounds and the initial rebalance delay) K
times the config's, which is given in scenario terms; the wire target
(`wire.py`) reads K from the state file and stretches every timeout a
scenario sends and every advance by K.

Two settings keep a broker's own tasks out of the scenarios' way: the
offset-expiry task runs every few weeks (offsets.retention.check.interval.ms),
so groups and offsets change only by the scenario's requests; automatic
topic creation is off, so only the target's CreateTopics makes topics.
"""
from __future__ import annotations

import base64
import errno
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable

from groupspec.checkers.conform.adapter import Unsupported
from groupspec.spec.kafka import CONFIG_DEFAULTS, NEW_COORDINATOR, ConfigError, brief, check_config

from . import jars
# (wire.py, the Kafka client, is imported where a broker is talked to: it brings kio and the runtime
# coordinator, a second of every `groupspec` command's start-up otherwise)
from .registry import BrokerState, find, ours, save, state_file, state_home

COORDINATORS = ("scala", "java")
# A broker's real milliseconds per scenario millisecond in `groupspec kafka report`: the suite's longest advances
# (tens of seconds of scenario time) then take minutes, and its one-millisecond distances are left out, named
# (wallclock.py)
BROKER_TIME_SCALE = 20
DEFAULT_COORDINATOR = {"3.9": "scala", "4.0": "java"}
# group.coordinator.new.enable picks the coordinator in both lines (an internal config: KafkaConfig 3.9
# isNewGroupCoordinatorEnabled, BrokerServer 4.0 falls back to GroupCoordinatorAdapter when it is false).
# The Scala one serves only the classic protocol: with 4.0's default rebalance protocols (classic,consumer)
# the broker still starts, but warns at every config read that "the new 'consumer' rebalance protocol is only
# supported with the new group coordinator" (seen on 4.0.2), so the protocols shrink to classic with it.
COORDINATOR_SWITCH = {
    ("3.9", "scala"): {},
    ("3.9", "java"): {"group.coordinator.new.enable": "true"},
    ("4.0", "java"): {},
    ("4.0", "scala"): {"group.coordinator.new.enable": "false", "group.coordinator.rebalance.protocols": "classic"},
}
# What server.log says when each coordinator starts (the class that logs "Starting up"): the check that the
# switch above took effect
COORDINATOR_LOGGER = {"scala": "(kafka.coordinator.group.GroupCoordinator)",
                      "java": "(org.apache.kafka.coordinator.group.GroupCoordinatorService)"}

# The config most of the project's scenarios are written for (scenario milliseconds): a broker started without
# --config runs them.  Kafka's own defaults (6 s sessions at least, 3 s initial delay) would refuse their
# 500 ms sessions.
SUITE_CONFIG = {"group.min.session.timeout.ms": 10, "group.max.session.timeout.ms": 600_000, "group.max.size": 4,
                "group.initial.rebalance.delay.ms": 50}
GROUP_KEYS = ("group.min.session.timeout.ms", "group.max.session.timeout.ms", "group.max.size",
              "group.initial.rebalance.delay.ms")
SCALED = ("group.min.session.timeout.ms", "group.max.session.timeout.ms", "group.initial.rebalance.delay.ms")
DEFAULT_TIME_SCALE = 100
# What this module sets itself: a --config naming one of these is refused (the broker would not work, or
# would not be the one the state file describes).
MANAGED = ("process.roles", "node.id", "listeners", "advertised.listeners", "controller.listener.names",
           "controller.quorum.voters", "controller.quorum.bootstrap.servers", "inter.broker.listener.name",
           "listener.security.protocol.map", "log.dirs", "log.dir", "metadata.log.dir",
           "group.coordinator.new.enable", *GROUP_KEYS)
NODE_ID = 1
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
# weeks: the offset-expiry task (which also removes Empty groups without offsets) never runs during a run
RETENTION_CHECK_MS = 30 * 24 * 3600 * 1000


class BrokerError(RuntimeError):
    """A broker cannot be started or stopped (one line: what, and what to do)."""


# -- starting ----------------------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _check_port(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                running_here = find(port)
                who = f" by a broker of this project (pid {running_here.pid}; `groupspec kafka broker stop " \
                      f"--port {port}`)" if running_here else ""
                raise BrokerError(f"port {port} on 127.0.0.1 is in use{who}; give another --port, or none to take a "
                                  f"free one") from None
            raise BrokerError(f"port {port} on 127.0.0.1 cannot be used ({e.strerror})") from None


def group_config(given: dict) -> dict:
    """The group config in scenario terms: the suite's, with `given` over it; ConfigError if Kafka (or the
    spec) would refuse it."""
    cfg = {**SUITE_CONFIG, **given}
    full = check_config(cfg)
    return {k: full[k] for k in GROUP_KEYS}


def properties(port: int, controller_port: int, data: Path, version: str, coordinator: str, config: dict,
               time_scale: int, extra: dict) -> dict:
    """The broker's server.properties (a dict, in the order written)."""
    props = {
        "process.roles": "broker,controller",
        "node.id": str(NODE_ID),
        # a static single-voter quorum: the storage is formatted without --standalone
        "controller.quorum.voters": f"{NODE_ID}@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(data),
        # one node: Kafka's default of 3 replicas would never let __consumer_offsets be created; one partition
        # holds every group (the scenario's "the offsets-topic partition")
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "auto.create.topics.enable": "false",
        "offsets.retention.check.interval.ms": str(RETENTION_CHECK_MS),
        **{k: str(v * time_scale if k in SCALED else v) for k, v in config.items()},
        **COORDINATOR_SWITCH[(version, coordinator)],
        # the Java coordinator holds each write this long to batch it with others (3.9: 10 ms, 4.0: 5 ms), and
        # answers what waits for a write only once it is committed: at 0 it appends at once (measured on 4.0.2:
        # a leader's SyncGroup 2.5 ms instead of 6.4, median), which keeps the wall clock's noise down; batching
        # changes when writes reach the log, not the order the coordinator changes its groups in
        **({"group.coordinator.append.linger.ms": "0"} if coordinator == "java" else {}),
        **extra,
    }
    if version == "3.9":
        props.pop("share.coordinator.state.topic.replication.factor")     # 4.0's keys: 3.9 warns of unknown ones
        props.pop("share.coordinator.state.topic.min.isr")
    return props


def _write_properties(path: Path, props: dict) -> None:
    lines = ["# written by groupspec (checkers/kafka/broker.py); a broker's folder is rewritten when it starts"]
    lines += [f"{k}={v}" for k, v in props.items()]
    path.write_text("\n".join(lines) + "\n")


def _logging(version: str, folder: Path, log: Path) -> tuple[str, Path]:
    """The logging config (reload4j for 3.9, log4j 2 for 4.0: the backends jars.py fetches) writing server.log
    at INFO, and the JVM property that points at it."""
    if version == "3.9":
        path = folder / "log4j.properties"
        path.write_text("\n".join([
            "log4j.rootLogger=INFO, file",
            "log4j.appender.file=org.apache.log4j.FileAppender",
            f"log4j.appender.file.File={log}",
            "log4j.appender.file.Append=true",
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n",
            # the broker's per-request and state-change chatter is not what a server.log reader wants
            "log4j.logger.kafka.request.logger=WARN",
            "log4j.logger.state.change.logger=WARN",
        ]) + "\n")
        return f"-Dlog4j.configuration=file:{path}", path
    path = folder / "log4j2.properties"
    path.write_text("\n".join([
        "status = warn",
        "appender.file.type = File",
        "appender.file.name = file",
        f"appender.file.fileName = {log}",
        "appender.file.append = true",
        "appender.file.layout.type = PatternLayout",
        "appender.file.layout.pattern = [%d] %p %m (%c)%n",
        "rootLogger.level = info",
        "rootLogger.appenderRef.file.ref = file",
        "logger.request.name = kafka.request.logger",
        "logger.request.level = warn",
        "logger.state.name = state.change.logger",
        "logger.state.level = warn",
    ]) + "\n")
    return f"-Dlog4j2.configurationFile={path}", path


def _prepare_folder(folder: Path) -> None:
    """The broker's folder: created, or one of ours from an earlier start (its data and logs cleared: a broker
    starts fresh).  A folder with anything else in it is refused, never emptied."""
    marker = folder / "groupspec-broker"
    if folder.exists():
        if not folder.is_dir():
            raise BrokerError(f"--dir {folder}: is a file; give a folder (it is created if missing)")
        if any(folder.iterdir()) and not marker.exists():
            raise BrokerError(f"--dir {folder}: has files of its own; give an empty or new folder (a broker's folder "
                              f"is cleared when it starts again)")
        import shutil
        for name in ("data", "server.log", "kafka.out"):
            p = folder / name
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        marker.write_text("a Kafka broker's folder, made by groupspec kafka broker start\n")
    except OSError as e:
        raise BrokerError(f"--dir {folder}: cannot be written ({e.strerror or e})") from None


def _cluster_id() -> str:
    """A cluster id as Kafka writes one (a random UUID in URL-safe base64, no padding): what `kafka-storage
    random-uuid` prints, without a JVM start for it."""
    while True:
        raw = os.urandom(16)
        text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        # Kafka reserves the all-zero UUID and the one of its metadata topic (..0001), and draws again for an id
        # starting with "-", which a command line would take for an option (StorageTool's did, here)
        if raw != bytes(16) and raw != bytes(15) + b"\x01" and not text.startswith("-"):
            return text


def _java_error(output: str) -> str:
    """What a Java tool's output says went wrong, without its stack: the last exception's message (a
    ConfigException names the key and the rule), else the output itself, shortened."""
    said = [x.strip() for x in output.splitlines() if x.strip() and not x.strip().startswith("at ")]
    raised = [x for x in said if "Exception: " in x or "Error: " in x]
    if raised:
        last = raised[-1]
        return brief(last.split("Exception: ", 1)[-1] if "Exception: " in last else last.split("Error: ", 1)[-1], 300)
    return brief(" ".join(said), 300)


def tail(path: Path, lines: int = 5, chars: int = 600) -> str:
    """The last lines of a log (errors first if it has any), for a one-line message."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 200_000))
            text = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    errors = [x for x in text if " ERROR " in x or "Exception" in x or "FATAL" in x]
    picked = (errors[-2:] if errors else []) + [x for x in text[-lines:] if x not in errors[-2:]]
    return brief(" | ".join(x.strip() for x in picked if x.strip()), chars).strip("'\"")


def start(version: str = "3.9", coordinator: str | None = None, port: int | None = None, config: dict | None = None,
          extra: dict | None = None, folder: str | Path | None = None, time_scale: int = DEFAULT_TIME_SCALE,
          timeout: float = START_TIMEOUT_S, progress: Callable[[str], None] | None = None) -> BrokerState:
    """Start a broker and wait until it is ready; its state (also written to the state folder).  BrokerError
    (one line) if anything stops it."""
    say = progress or (lambda _m: None)
    try:
        line = jars.line(version)
    except jars.KafkaSetupError as e:
        raise BrokerError(str(e)) from None
    coordinator = coordinator or DEFAULT_COORDINATOR[version]
    if coordinator not in COORDINATORS:
        raise BrokerError(f"--coordinator {brief(coordinator)}: use {' or '.join(COORDINATORS)}")
    if not isinstance(time_scale, int) or not 1 <= time_scale <= 10_000:
        raise BrokerError(f"--time-scale {brief(time_scale)}: give an integer from 1 to 10000")
    extra = {str(k): str(v) for k, v in (extra or {}).items()}
    managed = [k for k in extra if k in MANAGED or k in CONFIG_DEFAULTS]
    if managed:
        raise BrokerError(f"--config {managed[0]}: set by groupspec itself"
                          + (" (give the group keys in scenario terms: they are checked and scaled)"
                             if managed[0] in CONFIG_DEFAULTS else ""))
    try:
        cfg = group_config(config or {})
    except ConfigError as e:
        raise BrokerError(f"--config: {e}") from None
    for k in SCALED:
        if cfg[k] * time_scale > 2**31 - 1:
            raise BrokerError(f"--config {k}={cfg[k]} times --time-scale {time_scale} does not fit Kafka's INT")
    try:
        java = jars.java()
        classpath = jars.classpath(line, driver=False)
    except jars.KafkaSetupError as e:
        raise BrokerError(str(e)) from None
    if port is None:
        port = _free_port()
    elif not 1 <= port <= 65535:
        raise BrokerError(f"--port {port}: give a port from 1 to 65535")
    _check_port(port)
    controller_port = _free_port()
    while controller_port == port:
        controller_port = _free_port()

    home = state_home()
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BrokerError(f"the state folder {home} cannot be made ({e.strerror or e}); set GROUPSPEC_KAFKA_BROKERS "
                          f"to a writable folder") from None
    where = Path(folder).resolve() if folder is not None else home / str(port)
    _prepare_folder(where)
    data, log, out = where / "data", where / "server.log", where / "kafka.out"
    props = properties(port, controller_port, data, version, coordinator, cfg, time_scale, extra)
    server_props = where / "server.properties"
    _write_properties(server_props, props)
    log_flag, _ = _logging(version, where, log)

    say(f"formatting the storage of Kafka {line.release}")
    began = time.monotonic()
    try:
        fmt = subprocess.run([java, log_flag, "-cp", classpath, "kafka.tools.StorageTool", "format",
                              f"--cluster-id={_cluster_id()}", "-c", str(server_props)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BrokerError(f"Kafka {line.release}'s StorageTool did not format {data} within {timeout:g} s") from None
    except OSError as e:
        raise BrokerError(f"{java} cannot be run ({e.strerror or e})") from None
    format_seconds = time.monotonic() - began
    if fmt.returncode != 0:
        raise BrokerError(f"Kafka {line.release}'s StorageTool could not format {data}: "
                          f"{_java_error(fmt.stdout + chr(10) + fmt.stderr)}; fix or drop the --config it names")

    say(f"starting Kafka {line.release} ({coordinator} coordinator) on 127.0.0.1:{port}")
    cmd = [java, "-Xms256m", "-Xmx1g", "-XX:+UseG1GC", "-Djava.awt.headless=true", log_flag, "-cp", classpath,
           "kafka.Kafka", str(server_props)]
    began = time.monotonic()
    with open(out, "wb") as sink:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, cwd=where,
                                start_new_session=True)      # its own session: it outlives this command
    state = BrokerState(pid=proc.pid, port=port, controller_port=controller_port, version=version,
                        release=line.release, coordinator=coordinator, time_scale=time_scale, config=cfg,
                        properties=props, dir=str(where), log=str(log), started=time.time(), startup_seconds=0.0,
                        format_seconds=round(format_seconds, 2))
    # recorded at once, so that `stop` finds the broker even if this command is interrupted while it waits
    save(state)
    try:
        _wait_ready(proc, state, began, timeout, say)
        state.startup_seconds = round(time.monotonic() - began, 2)
        _check_coordinator(state, log)
        say(f"Kafka {line.release} is ready; warming it up")
        state.warm_up_seconds = round(warm_up(state), 2)
    except BaseException:
        _end(proc.pid, STOP_TIMEOUT_S, proc)
        state_file(port).unlink(missing_ok=True)
        raise
    save(state)
    return state


def _wait_ready(proc: subprocess.Popen, state: BrokerState, began: float, timeout: float,
                say: Callable[[str], None]) -> None:
    """Until the broker answers ApiVersions and FindCoordinator answers NONE (which first creates
    __consumer_offsets); BrokerError with the tail of its log if it exits or the time runs out."""
    from . import wire
    log = Path(state.log)
    phase = "starting"
    deadline = began + timeout
    while True:
        code = proc.poll()
        if code is not None:
            said = tail(log) or tail(Path(state.dir) / "kafka.out")
            raise BrokerError(f"Kafka {state.release} exited ({code}) before it was ready; {log} ends: {said}")
        if time.monotonic() > deadline:
            raise BrokerError(f"Kafka {state.release} was not ready within {timeout:g} s "
                              f"({phase}); {log} ends: {tail(log)}")
        try:
            conn = wire.Connection("127.0.0.1", state.port, f"broker on port {state.port}")
        except wire.WireError:
            time.sleep(0.1)
            continue
        try:
            av = wire.call(conn, wire.request_entity(wire.API_VERSIONS, client_software_name="groupspec",
                                                     client_software_version="1"), timeout=5)
            if av.error_code.value != 0:
                time.sleep(0.1)
                continue
            if phase == "starting":
                phase = "creating __consumer_offsets"
                say(f"Kafka {state.release} answers; waiting for its group coordinator ({phase})")
            got = wire.call(conn, wire.request_entity(wire.FIND_COORDINATOR, key_type=0,
                                                      coordinator_keys=["groupspec-ready"]), timeout=5)
            if got.coordinators and got.coordinators[0].error_code.value == 0:
                return
        except wire.WireError:
            pass
        finally:
            conn.close()
        time.sleep(0.1)


WARM_UP_GROUPS = 6
WARM_UP_ROUNDS = 40
WARM_UP_DELAY_S = 10.0


def warm_up(state: BrokerState) -> float:
    """Run the group APIs a few hundred times on throwaway groups, so that the JVM has compiled the paths the
    scenarios take before any of them is timed: on a fresh broker the first SyncGroups and timers answer up to
    ten times slower (measured: 220 ms for a leader's SyncGroup, 15 ms once warm), long enough to pass for a
    parked request.  Seconds taken."""
    from . import wire
    began = time.monotonic()
    b = wire.Broker(wire.Address("127.0.0.1", state.port, wire.Knobs()))
    b.versions = {k: (0, 99) for k in (8, 9, 11, 12, 13, 14, 15, 16, 42)}
    b.ensure_partitions({"groupspec-warm-up": 1})
    groups = [f"groupspec-warm-up-{os.getpid()}-{i}" for i in range(WARM_UP_GROUPS)]
    timeout = state.config["group.initial.rebalance.delay.ms"] * state.time_scale / 1000 + 30

    def many(api: str, reqs: list[dict]) -> list[dict]:
        """The requests at once, each on a connection of its own (joins park until the group's rebalance)."""
        conns = []
        for r in reqs:
            version, entity = wire.messages.request(api, r)
            c = b.connection()
            c.send(entity, "groupspec-warm-up", len(conns))
            conns.append(c)
        got: dict = {}
        deadline = time.monotonic() + timeout
        while len(got) < len(conns):
            if time.monotonic() > deadline:
                raise BrokerError(f"Kafka {state.release} did not answer its warm-up {api}s within {timeout:g} s; "
                                  f"{state.log} ends: {tail(Path(state.log))}")
            for conn, i, body in wire.wait(conns, deadline):
                got[i] = wire.messages.response(api, body)
                b.release_conn(conn)
        return [got[i] for i in range(len(conns))]

    join = {"session_timeout_ms": state.config["group.max.session.timeout.ms"] * state.time_scale,
            "rebalance_timeout_ms": 30_000, "protocol_type": "consumer", "protocols": ["range"]}
    # a group's first rebalance waits the initial delay: past WARM_UP_DELAY_S the rebalances are left out (the
    # requests that need no rebalance are still run, as many times)
    rebalance = state.config["group.initial.rebalance.delay.ms"] * state.time_scale / 1000 <= WARM_UP_DELAY_S
    try:
        first = many("JoinGroup", [{"group": g, "member": "", **join} for g in groups])
        members = [r["member"] for r in first]
        if not rebalance:
            for _ in range(WARM_UP_ROUNDS):
                many("JoinGroup", [{"group": g, "member": "", **join} for g in groups])
                many("Heartbeat", [{"group": g, "member": m, "generation": 1} for g, m in zip(groups, members)])
                many("OffsetCommit", [{"group": g, "generation": -1, "member": "",
                                       "offsets": {"groupspec-warm-up-0": 1}} for g in groups])
                many("OffsetFetch", [{"group": g, "partitions": None} for g in groups])
                many("DescribeGroups", [{"groups": groups}])
        for _ in range(WARM_UP_ROUNDS if rebalance else 0):
            joined = many("JoinGroup", [{"group": g, "member": m, **join} for g, m in zip(groups, members)])
            gens = [r["generation"] for r in joined]
            many("SyncGroup", [{"group": g, "member": m, "generation": n, "protocol_type": "consumer",
                                "protocol": "range", "assignments": {m: ["groupspec-warm-up-0"]}}
                               for g, m, n in zip(groups, members, gens)])
            many("Heartbeat", [{"group": g, "member": m, "generation": n} for g, m, n in zip(groups, members, gens)])
            many("OffsetCommit", [{"group": g, "member": m, "generation": n, "offsets": {"groupspec-warm-up-0": n}}
                                  for g, m, n in zip(groups, members, gens)])
            many("OffsetFetch", [{"group": g, "partitions": None} for g in groups])
            many("DescribeGroups", [{"groups": groups}])
        many("ListGroups", [{}])
        many("LeaveGroup", [{"group": g, "members": [{"member": m}]} for g, m in zip(groups, members)])
        many("DeleteGroups", [{"groups": groups}])
    except wire.WireError as e:
        raise BrokerError(f"Kafka {state.release} failed its warm-up: {e}; {state.log} ends: "
                          f"{tail(Path(state.log))}") from None
    finally:
        b.close()
    return time.monotonic() - began


def _check_coordinator(state: BrokerState, log: Path) -> None:
    """server.log must show the coordinator asked for starting (and not the other): the switch took effect."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        raise BrokerError(f"Kafka {state.release} is up but wrote no {log}: its logging backend is missing; run "
                          f"`groupspec kafka setup --version {state.version}`") from None
    want, other = COORDINATOR_LOGGER[state.coordinator], COORDINATOR_LOGGER[
        "java" if state.coordinator == "scala" else "scala"]
    started = lambda logger: any("Starting up" in x and logger in x for x in text.splitlines())  # noqa: E731
    if not started(want) or started(other):
        raise BrokerError(f"Kafka {state.release} started, but its server.log does not show the {state.coordinator} "
                          f"group coordinator starting ({want.strip('()')}): the coordinator switch "
                          f"{COORDINATOR_SWITCH[(state.version, state.coordinator)]} did not take effect")


# -- stopping ----------------------------------------------------------------------------------------------------

def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:      # a zombie (our own child, not yet reaped) has ended
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return True


def _end(pid: int, timeout: float, proc: subprocess.Popen | None = None) -> str:
    """SIGTERM (Kafka shuts down in order), SIGKILL after `timeout` s; how it ended."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return "already ended"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return "stopped"
        if proc is None and not _alive(pid):
            return "stopped"
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return "stopped"
    if proc is not None:
        proc.wait(10)
    return f"killed (it had not stopped {timeout:g} s after SIGTERM)"


def stop(state: BrokerState, timeout: float = STOP_TIMEOUT_S) -> str:
    """Stop a broker this project started; how it ended.  Its folder (server.log, data) is kept."""
    how = _end(state.pid, timeout) if ours(state) else "already ended"
    state_file(state.port).unlink(missing_ok=True)
    return how


# -- a broker per config -------------------------------------------------------------------------------------

class Fleet:
    """A target factory (config -> adapter) on brokers of one Kafka line and coordinator started as the
    configs ask: a broker's group config is fixed when it starts, so a config with other group keys stops the
    broker running and starts one with them.  One runs at a time (each is a JVM of up to a gigabyte): run the
    scenarios grouped by `key`.  `close` stops the last."""

    def __init__(self, version: str, coordinator: str | None, time_scale: int,
                 progress: Callable[[str], None] | None = None):
        from . import wire
        self.version, self.coordinator, self.time_scale = version, coordinator, time_scale
        self.say = progress or (lambda _m: None)
        self.state: BrokerState | None = None
        self.factory: Callable | None = None
        self.current: tuple | None = None
        self.started = 0
        # what every broker of the fleet fixes (checkers/scenarios/targets.py: a scenario of the other
        # coordinator runs side by side with the spec's prediction for this one)
        self.fixed_config = {NEW_COORDINATOR: (coordinator or DEFAULT_COORDINATOR[version]) == "java",
                             wire.NEW_MEMBER_KEY: wire.NEW_MEMBER_JOIN_TIMEOUT_MS}

    @staticmethod
    def key(config: dict) -> tuple:
        """What a broker is started with, of a scenario's config (the order to run scenarios in)."""
        full = check_config(config)
        return tuple(full[k] for k in GROUP_KEYS)

    def __call__(self, config: dict):
        self.running(self.key(config))
        return self.factory(config)

    def running(self, key: tuple) -> Callable:
        """The factory of a broker started with the group config `key`: the one running, or a new one."""
        from . import wire
        if key != self.current:
            self.close()
            cfg = dict(zip(GROUP_KEYS, key))
            self.say(f"starting Kafka {self.version} ({self.coordinator or DEFAULT_COORDINATOR[self.version]}) with "
                     + ", ".join(f"{k}={v}" for k, v in cfg.items()))
            try:
                self.state = start(self.version, self.coordinator, config=cfg, time_scale=self.time_scale)
            except BrokerError as e:
                raise Unsupported(f"no broker starts with this config: {e}") from None
            self.started += 1
            self.factory = wire.broker_factory(self.state.address)
            self.current = key
        return self.factory

    def close(self) -> None:
        if self.factory is not None:
            self.factory.broker.close()
        if self.state is not None:
            stop(self.state)
        self.state = self.factory = self.current = None
