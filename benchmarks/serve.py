"""`groupspec serve` under load, beside a real Kafka broker in the same run: members of consumer groups that
heartbeat and commit offsets, their answers timed.

    .venv/bin/python benchmarks/serve.py [--members 10,100,1000] [--group-size 10] [--runs 3] [--window 5]
                                         [--warmup 1] [--interval-ms 100] [--mode both|open|closed]
                                         [--no-broker] [--profile] [--profile-members 1000]
                                         [--checkout DIR]

The load generator is one asyncio process speaking Kafka's protocol on the codec the server itself uses
(`checkers/kafka/framing.py` frames, `messages.py` requests and answers, kio writing every byte), one
connection per member.  Each target serves the same load, one after the other, size by size and run by run, so
the ratio of the two is taken seconds apart, not hours:
  serve        `groupspec serve --port 0 --topics bench:G --config group.initial.rebalance.delay.ms=0`, a
               subprocess (the spec's runtime coordinator over the wire)
  broker-3.9   `groupspec kafka broker start --version 3.9 --time-scale 1 --config
               group.initial.rebalance.delay.ms=0 --config group.max.size=G --json` (single-node KRaft, the Scala
               coordinator), the topic `bench` made by CreateTopics on the wire (the broker does not
               auto-create topics, and answers a commit to a topic it does not know UNKNOWN_TOPIC_OR_PARTITION);
               stopped with `groupspec kafka broker stop --port P` at the end; --no-broker skips it
(G, the group size, is also the topic's number of partitions: each member commits one partition.)

Per size (--members N in groups of --group-size G): N connections (opened 50 at a time, so the listen
backlog is not what is measured), then every member at once joins as a Kafka 2.2+ consumer does: JoinGroup
(version 9, protocol type `consumer`, one protocol `range` whose metadata is a ConsumerProtocol subscription
to `bench`, written by kio) with no member id, MEMBER_ID_REQUIRED, JoinGroup again with the issued id; the
leader runs the Range assignor (spec/assignors.py) over the members the answer lists and sends the
assignment in its SyncGroup, the others sync with none.  A member that hears REBALANCE_IN_PROGRESS (its
SyncGroup, or a heartbeat every --interval-ms while its group forms) joins again.  The groups are formed once
every member of each holds an assignment of one generation.  Then two measured modes, on the same groups:
  open     open loop, the realistic one: every member sends a Heartbeat and an OffsetCommit (its partition's
           offset, one more each time) every --interval-ms, the members' ticks spread evenly over the
           interval; offered load 2 N / interval.  Like a consumer's heartbeat thread, a member sends no
           request of a kind while its previous one of that kind is unanswered: that tick's request is
           `skipped` (counted), so an overloaded target shows as answered < offered and skips, not as an
           ever-growing queue on the client.
  closed   closed loop, the maximum throughput: every member sends Heartbeat, OffsetCommit, Heartbeat, ...
           each as soon as the previous answer came (N requests outstanding); latency there is mostly queueing.
Each mode runs --warmup seconds unrecorded, then --window seconds recorded; then every member leaves
(LeaveGroup) and its connection closes.  The session and rebalance timeouts are 30 s.

Prints one JSON object:
  machine, command, settings   where and how it ran (machine.load_average: the 1-minute load average at
               the start and the end: the work of others on the same cores)
  serve_code   the groupspec serve ran: its path, commit, and the files of checkers/, impl/, spec/ changed
               since the commit (--checkout DIR: that checkout's code, else the installed groupspec's)
  targets      per target: seconds from its start command to answering; the broker's release and coordinator
  sizes        per --members value: `members`, `groups`, and per target, each figure a list with one value per
               run (--runs; this machine varies up to 1.5x run to run, so read ranges):
                 connect_seconds   opening the N connections
                 form_seconds      setup: the first JoinGroup to every group formed
                 form_answers      the answers seen while forming, by request and error (MEMBER_ID_REQUIRED
                                   once per member; REBALANCE_IN_PROGRESS is groups forming as members arrive)
                 open, closed      per mode:
                   requests_per_second   answers received within the window / window (both APIs)
                   offered_per_second    (open) what the members' ticks ask for
                   heartbeat_ms, commit_ms   latency, the request written to the socket to its answer read
                                         and decoded: p50, p99, max (ms) and count, of the requests sent in
                                         the window
                   skipped               (open) requests not sent because the previous of their kind was
                                         still unanswered, by API
                   target_cpu_share      the target process's CPU seconds per second of window (2 cores: up
                                         to 2.0)
                   target_cpu_us_per_request   its CPU time per answer: less noisy than the rate where
                                         the target is busy (closed loop); at a low rate its background work
                                         (the broker's threads) dominates it
                   client_cpu_share      the load generator's (1.0: it, not the target, was the limit)
                 errors            every answer that was not NONE in the measured modes (warm-up included)
                                   and the LeaveGroups after, by API and error name, summed over runs, plus
                                   requests left unanswered or connections lost: {} in a correct run, and
                                   never left out
               serve_over_broker   serve's figure divided by the broker's in the same run, per run:
                                   requests per second, and p50 latency, per mode
  errors_total the count of all `errors` above (0 in a correct run)
  profile      (--profile) one more serve, the Server `groupspec serve` runs with the same config, under
               cProfile from the moment it listens (not while Python starts and the table compiles), at
               --profile-members, the same modes: the top functions by own and by cumulative time, and the
               cumulative share of the server's stages (decode, the runtime's step, encode, ...), as shares of
               its busy time (all but the event loop's wait for sockets); the profiler slows it several times
"""
from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import platform
import pstats
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path

from kio.schema.consumer_protocol_subscription.v0.data import ConsumerProtocolSubscription
from kio.serial import entity_writer
from kio.serial.writers import write_int16

from groupspec.checkers.kafka import framing, messages, wire
from groupspec.spec.assignors import format_partition, range_assign

CLI_MODULE = "groupspec.checkers.cli"
CLI = [sys.executable, "-m", CLI_MODULE]
TOPIC = "bench"
TIMEOUT_MS = 30_000            # session and rebalance timeout of every member
CONNECT_BATCH = 50             # connections opened at once (asyncio's listen backlog is 100, Kafka's 50)
ANSWER_TIMEOUT_S = 30.0        # after a window, how long outstanding answers may take before they count as lost
READY_TIMEOUT_S = 60.0
FORM_TIMEOUT_S = 120.0
APIS = ("Heartbeat", "OffsetCommit")
LATENCY_KEYS = {"Heartbeat": "heartbeat_ms", "OffsetCommit": "commit_ms"}
READY = re.compile(r"groupspec serve: the spec's coordinator on (\S+):(\d+) ")


def subscription(topics: list[str]) -> str:
    """A consumer's protocol metadata: ConsumerProtocol's version (0) and its Subscription, written by kio; as
    the scenario string `messages` turns back into the same bytes."""
    out = io.BytesIO()
    write_int16(out, 0)
    entity_writer(ConsumerProtocolSubscription)(out, ConsumerProtocolSubscription(topics=tuple(topics)))
    return messages.decode_metadata(out.getvalue())


# -- one member's connection -----------------------------------------------------------------------------------

class Conn(asyncio.Protocol):
    """Requests written with the shared codec; answers read back in order (Kafka answers a connection in
    order), each resolving its future with (the answer in the contract's fields, seconds from write to read)."""

    def __init__(self, client_id: str):
        self.client_id = client_id
        self.buf = bytearray()
        self.waiting: deque = deque()      # (correlation id, API, response class, written at, future)
        self.correlation = 0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def send(self, api: str, entity) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        if self.transport is None or self.transport.is_closing():
            fut.set_exception(ConnectionError("the connection is closed"))
            return fut
        self.correlation += 1
        cls = messages.response_class(api, entity.__version__)
        self.transport.write(framing.encode_request(entity, self.correlation, self.client_id))
        self.waiting.append((self.correlation, api, cls, time.perf_counter(), fut))
        return fut

    def data_received(self, data: bytes) -> None:
        self.buf += data
        now = time.perf_counter()
        try:
            while (frame := framing.take_frame(self.buf)) is not None:
                if not self.waiting:
                    raise framing.FrameError("an answer nobody asked for")
                correlation, api, cls, sent, fut = self.waiting.popleft()
                header, body = framing.decode_response(frame, cls)
                if header.correlation_id != correlation:
                    raise framing.FrameError(f"correlation id {header.correlation_id}, expected {correlation}")
                fut.set_result((messages.response(api, body), now - sent))
        except framing.FrameError as e:
            self._fail(ConnectionError(f"not the answer asked for: {e}"))
            self.transport.close()

    def connection_lost(self, exc) -> None:
        self._fail(ConnectionError(f"the connection closed ({exc or 'by the target'})"))

    def _fail(self, exc: Exception) -> None:
        while self.waiting:
            fut = self.waiting.popleft()[-1]
            if not fut.done():
                fut.set_exception(exc)


@dataclass
class Member:
    group: str
    conn: Conn
    partitions_in_topic: int
    id: str = ""
    generation: int = -1
    partitions: list = field(default_factory=list)
    offset: int = 0
    heartbeat: object = None          # the Heartbeat message of its generation: built once, it never changes

    def call(self, api: str, req: dict) -> asyncio.Future:
        _version, entity = messages.request(api, {"group": self.group, **req})
        return self.conn.send(api, entity)

    def send(self, api: str) -> asyncio.Future:
        """The measured requests: a Heartbeat, or a commit of the next offset of its partitions."""
        if api == "Heartbeat":
            return self.conn.send(api, self.heartbeat)
        self.offset += 1
        return self.call(api, {"generation": self.generation, "member": self.id,
                               "offsets": {p: self.offset for p in self.partitions}})


# -- forming the groups ----------------------------------------------------------------------------------------

class SetupError(RuntimeError):
    pass


@dataclass
class Group:
    size: int
    synced: dict = field(default_factory=dict)      # member id -> the generation it holds an assignment of
    formed: asyncio.Event = field(default_factory=asyncio.Event)

    def hold(self, m: Member) -> None:
        self.synced[m.id] = m.generation
        if len(self.synced) == self.size and len(set(self.synced.values())) == 1:
            self.formed.set()


SUBSCRIPTION = subscription([TOPIC])


async def _answer(fut: asyncio.Future, api: str, seen: Counter) -> dict:
    resp, _latency = await fut
    seen[f"{api} {resp['error']}"] += 1
    return resp


async def join(m: Member, g: Group, interval: float, seen: Counter) -> None:
    """Join and sync as a consumer does, again on REBALANCE_IN_PROGRESS, until the group is formed."""
    while True:
        r = await _answer(m.call("JoinGroup", {
            "member": m.id, "session_timeout_ms": TIMEOUT_MS, "rebalance_timeout_ms": TIMEOUT_MS,
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": SUBSCRIPTION}]}),
            "JoinGroup", seen)
        if r["error"] == "MEMBER_ID_REQUIRED":
            m.id = r["member"]
            continue
        if r["error"] != "NONE":
            raise SetupError(f"{m.group}: JoinGroup answered {r['error']}")
        m.generation = r["generation"]
        assignments = {}
        if r["leader"] == m.id:
            got = range_assign({TOPIC: m.partitions_in_topic}, {x: [TOPIC] for x in r["members"]})
            assignments = {x: [format_partition(p) for p in ps] for x, ps in got.items()}
        s = await _answer(m.call("SyncGroup", {"member": m.id, "generation": m.generation,
                                               "protocol_type": "consumer", "protocol": "range",
                                               "assignments": assignments}), "SyncGroup", seen)
        if s["error"] == "REBALANCE_IN_PROGRESS":
            continue
        if s["error"] != "NONE":
            raise SetupError(f"{m.group}: SyncGroup answered {s['error']}")
        m.partitions = s["assignment"]
        g.hold(m)
        if await _until_formed(m, g, interval, seen):
            _version, m.heartbeat = messages.request("Heartbeat", {"group": m.group, "generation": m.generation,
                                                                   "member": m.id})
            return


async def _until_formed(m: Member, g: Group, interval: float, seen: Counter) -> bool:
    """Heartbeat while the group forms: True once it has, False when this member must join again."""
    while not g.formed.is_set():
        try:
            await asyncio.wait_for(g.formed.wait(), interval)
        except asyncio.TimeoutError:
            h = await _answer(m.call("Heartbeat", {"generation": m.generation, "member": m.id}), "Heartbeat", seen)
            if h["error"] == "REBALANCE_IN_PROGRESS":
                return False
            if h["error"] != "NONE":
                raise SetupError(f"{m.group}: Heartbeat answered {h['error']} while the group formed")
    return True


# -- the measured window ---------------------------------------------------------------------------------------

class Window:
    """What one mode's window saw: latencies of the requests sent in it, answers received in it, errors."""

    def __init__(self, begin: float, end: float):
        self.begin, self.end = begin, end
        self.latency: dict[str, list[float]] = {api: [] for api in APIS}
        self.answered = 0
        self.errors: Counter = Counter()
        self.skipped: Counter = Counter()
        self.outstanding: set = set()

    def send(self, m: Member, api: str) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        recorded = loop.time() >= self.begin
        fut = m.send(api)
        self.outstanding.add(fut)
        fut.add_done_callback(lambda f: self._done(api, f, recorded, loop.time()))
        return fut

    def _done(self, api: str, fut: asyncio.Future, recorded: bool, at: float) -> None:
        self.outstanding.discard(fut)
        if fut.cancelled() or fut.exception() is not None:
            self.errors[f"{api} {'unanswered' if fut.cancelled() else 'connection lost'}"] += 1
            return
        resp, latency = fut.result()
        codes = [resp["error"]] if "error" in resp else list(resp["errors"].values())
        for code in codes:
            if code != "NONE":
                self.errors[f"{api} {code}"] += 1
        if recorded:
            self.latency[api].append(latency)
        if self.begin <= at <= self.end:
            self.answered += 1

    async def drain(self) -> None:
        if self.outstanding:
            _done, late = await asyncio.wait(set(self.outstanding), timeout=ANSWER_TIMEOUT_S)
            for f in late:
                f.cancel()


async def open_loop(m: Member, w: Window, start: float, phase: float, interval: float) -> None:
    loop = asyncio.get_running_loop()
    last: dict[str, asyncio.Future | None] = {api: None for api in APIS}
    t = start + phase
    while t < w.end:
        delay = t - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        for api in APIS:
            if last[api] is not None and not last[api].done():
                if t >= w.begin:
                    w.skipped[api] += 1
                continue
            last[api] = w.send(m, api)
        t += interval


async def closed_loop(m: Member, w: Window) -> None:
    loop = asyncio.get_running_loop()
    while loop.time() < w.end:
        for api in APIS:
            try:
                await w.send(m, api)
            except (ConnectionError, asyncio.CancelledError):
                return


def _cpu_seconds(pid: int | None) -> float | None:
    """A process's user + system CPU seconds (Linux /proc), None where that cannot be read."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _ms(xs: list[float]) -> dict:
    if not xs:
        return {"count": 0}
    xs = sorted(xs)

    def q(p: float) -> float:
        return round(xs[min(len(xs) - 1, int(p * len(xs)))] * 1000, 2)
    return {"p50": q(0.50), "p99": q(0.99), "max": round(xs[-1] * 1000, 2), "count": len(xs)}


async def measure(members: list[Member], mode: str, interval: float, warmup: float, window: float,
                  pid: int | None) -> tuple[dict, Counter]:
    loop = asyncio.get_running_loop()
    start = loop.time() + 0.05
    w = Window(start + warmup, start + warmup + window)
    cpu: dict[str, list] = {"target": [], "client": []}

    async def sample() -> None:
        for at in (w.begin, w.end):
            await asyncio.sleep(max(0.0, at - loop.time()))
            cpu["target"].append(_cpu_seconds(pid))
            cpu["client"].append(time.process_time())
    sampler = asyncio.create_task(sample())
    if mode == "open":
        runs = [open_loop(m, w, start, interval * i / len(members), interval) for i, m in enumerate(members)]
    else:
        await asyncio.sleep(max(0.0, start - loop.time()))
        runs = [closed_loop(m, w) for m in members]
    await asyncio.gather(*runs)
    await sampler
    await w.drain()
    out = {"requests_per_second": round(w.answered / window, 1)}
    if mode == "open":
        out["offered_per_second"] = round(len(APIS) * len(members) / interval, 1)
    for api in APIS:
        out[LATENCY_KEYS[api]] = _ms(w.latency[api])
    if mode == "open":
        out["skipped"] = dict(w.skipped)
    (t0, t1), (c0, c1) = cpu["target"], cpu["client"]
    if t0 is not None and t1 is not None:
        out["target_cpu_share"] = round((t1 - t0) / window, 2)
        out["target_cpu_us_per_request"] = round((t1 - t0) / max(w.answered, 1) * 1e6, 1)
    out["client_cpu_share"] = round((c1 - c0) / window, 2)
    return out, w.errors


async def one_size(host: str, port: int, n: int, group_size: int, run: int, modes: list[str], interval: float,
                   warmup: float, window: float, pid: int | None) -> dict:
    """Connect n members, form their groups, measure each mode, leave."""
    loop = asyncio.get_running_loop()
    tag = f"bench-{os.getpid()}-{run}-{n}-{time.time_ns() % 10**9}"
    t = time.perf_counter()
    conns: list[Conn] = []
    for lo in range(0, n, CONNECT_BATCH):
        made = await asyncio.gather(*[loop.create_connection(lambda i=i: Conn(f"{tag}-c{i}"), host, port)
                                      for i in range(lo, min(n, lo + CONNECT_BATCH))])
        conns += [c for _t, c in made]
    connected = time.perf_counter() - t
    groups = [Group(min(group_size, n - lo)) for lo in range(0, n, group_size)]
    members = [Member(f"{tag}-g{i // group_size}", c, group_size) for i, c in enumerate(conns)]
    seen: Counter = Counter()
    t = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*[join(m, groups[i // group_size], interval, seen)
                                            for i, m in enumerate(members)]), FORM_TIMEOUT_S)
    out = {"connect_seconds": round(connected, 2), "form_seconds": round(time.perf_counter() - t, 2),
           "form_answers": dict(sorted(seen.items()))}
    errors: Counter = Counter()
    for mode in modes:
        out[mode], errs = await measure(members, mode, interval, warmup, window, pid)
        errors += errs
    left = await asyncio.gather(*[m.call("LeaveGroup", {"members": [{"member": m.id}]}) for m in members],
                                return_exceptions=True)
    for x in left:
        if isinstance(x, BaseException) or x[0]["error"] != "NONE":
            errors[f"LeaveGroup {x if isinstance(x, BaseException) else x[0]['error']}"] += 1
    for c in conns:
        if c.transport is not None:
            c.transport.close()
    out["errors"] = dict(errors)
    return out


# -- the targets -----------------------------------------------------------------------------------------------

@dataclass
class Target:
    name: str
    host: str
    port: int
    pid: int | None
    start_seconds: float
    info: dict = field(default_factory=dict)
    proc: subprocess.Popen | None = None
    stderr: object = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.stderr.close()
        else:
            subprocess.run([*CLI, "kafka", "broker", "stop", "--port", str(self.port)], capture_output=True)


def start_serve(partitions: int, env: dict, profile_to: Path | None = None) -> Target:
    """`groupspec serve` on a free port (or, to `profile_to`, the same Server under cProfile from the moment it
    listens); its address from its first line."""
    if profile_to is None:
        cmd = [*CLI, "serve", "--port", "0", "--topics", f"{TOPIC}:{partitions}",
               "--config", "group.initial.rebalance.delay.ms=0"]
    else:
        cmd = [sys.executable, "-c", PROFILED_SERVE, str(profile_to), TOPIC, str(partitions)]
    err = tempfile.NamedTemporaryFile("w+", prefix="groupspec-serve-bench-", suffix=".log")
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
    while time.perf_counter() - t < READY_TIMEOUT_S:
        found = READY.search(Path(err.name).read_text())
        if found:
            return Target("serve", found[1], int(found[2]), proc.pid, round(time.perf_counter() - t, 2),
                          proc=proc, stderr=err)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"serve did not start: {Path(err.name).read_text()[-500:]}")


# The server `groupspec serve` runs (its config as the command above gives it), profiled while it serves: not
# while Python starts and the table compiles.  SIGTERM ends it and writes the profile.
PROFILED_SERVE = """
import asyncio, cProfile, signal, sys
from groupspec.checkers.serve.server import Server
out, topic, partitions = sys.argv[1], sys.argv[2], int(sys.argv[3])
server = Server({"group.initial.rebalance.delay.ms": 0}, {topic: partitions}, port=0)
prof = cProfile.Profile()
async def main():
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, asyncio.current_task().cancel)
    up = asyncio.Event()
    serving = asyncio.create_task(server.serve(up))
    await up.wait()
    print(f"groupspec serve: the spec's coordinator on 127.0.0.1:{server.port} (under cProfile)", file=sys.stderr,
          flush=True)
    prof.enable()
    await serving
try:
    asyncio.run(main())
except asyncio.CancelledError:
    pass
prof.disable()
prof.dump_stats(out)
"""


def checkout_env(checkout: str | None, folder: str) -> tuple[dict, dict]:
    """The environment serve runs in, and where its code is: the installed groupspec, or with --checkout the
    code of that checkout (a link named groupspec to it, first on PYTHONPATH: it comes before the editable
    install's finder).  The commit, and the files of checkers/, impl/ and spec/ changed since it."""
    env = dict(os.environ)
    if checkout is not None:
        link = Path(folder) / "groupspec"
        link.symlink_to(Path(checkout).resolve(), target_is_directory=True)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [folder, env.get("PYTHONPATH")]))
    where = subprocess.run([sys.executable, "-c", "import groupspec.checkers.serve.server as s; print(s.__file__)"],
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    root = Path(where).parent.parent.parent

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True).stdout.strip()
    return env, {"path": str(root), "commit": git("rev-parse", "--short", "HEAD"),
                 "changed": git("status", "--porcelain", "--", "checkers", "impl", "spec").splitlines()}


def start_broker(partitions: int, group_size: int) -> Target:
    t = time.perf_counter()
    p = subprocess.run([*CLI, "kafka", "broker", "start", "--version", "3.9", "--time-scale", "1",
                        "--config", "group.initial.rebalance.delay.ms=0", "--config", f"group.max.size={group_size}",
                        "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"the broker did not start: {p.stderr.strip()[-500:]}")
    state = json.loads(p.stdout)
    target = Target("broker-3.9", "127.0.0.1", state["port"], state["pid"], round(time.perf_counter() - t, 2),
                    info={"release": state["release"], "coordinator": state["coordinator"]})
    try:
        broker = wire.Broker(wire.parse_address(state["address"]))
        broker.ensure_partitions({TOPIC: partitions})     # CreateTopics, then until its metadata shows the topic
        broker.close()
    except Exception:
        target.stop()
        raise
    return target


# -- the report ------------------------------------------------------------------------------------------------

def by_run(results: list[dict]) -> dict:
    """Per-run dicts of the same shape as one dict whose figures are lists (one per run); counters summed."""
    first = results[0]
    out = {}
    for k, v in first.items():
        vs = [r.get(k) for r in results]
        if k in ("errors", "skipped", "form_answers"):
            total: Counter = Counter()
            for x in vs:
                total.update(x or {})
            out[k] = dict(sorted(total.items()))
        elif isinstance(v, dict):
            out[k] = by_run([x or {} for x in vs])
        else:
            out[k] = vs
    return out


def ratios(serve: list[dict], broker: list[dict], modes: list[str]) -> dict:
    out = {}
    for mode in modes:
        out[f"{mode}_requests_per_second"] = [round(s[mode]["requests_per_second"] / b[mode]["requests_per_second"], 2)
                                              for s, b in zip(serve, broker) if b[mode]["requests_per_second"]]
        for key in LATENCY_KEYS.values():
            out[f"{mode}_{key.replace('_ms', '')}_p50"] = [
                round(s[mode][key]["p50"] / b[mode][key]["p50"], 2)
                for s, b in zip(serve, broker) if b[mode][key].get("p50") and s[mode][key].get("p50")]
    return out


def run_all(a, sizes: list[int], modes: list[str], env: dict) -> tuple[dict, dict]:
    targets = [start_serve(a.group_size, env)]
    try:
        if not a.no_broker:
            targets.append(start_broker(a.group_size, a.group_size))
        got: dict = {n: {t.name: [] for t in targets} for n in sizes}
        for run in range(a.runs):
            for n in sizes:
                for t in targets:
                    got[n][t.name].append(asyncio.run(one_size(
                        t.host, t.port, n, a.group_size, run, modes, a.interval_ms / 1000, a.warmup, a.window, t.pid)))
        log_lines = Path(targets[0].stderr.name).read_text().splitlines()
    finally:
        for t in targets:
            t.stop()
    out = {}
    for n in sizes:
        out[str(n)] = {"members": n, "groups": -(-n // a.group_size),
                       **{name: by_run(rs) for name, rs in got[n].items()}}
        if not a.no_broker:
            out[str(n)]["serve_over_broker"] = ratios(got[n]["serve"], got[n]["broker-3.9"], modes)
    info = {t.name: {"start_seconds": t.start_seconds, **t.info} for t in targets}
    # the server's own lines after its banner: a warning there (a connection it closed) is an error too
    info["serve"]["log_lines_after_start"] = log_lines[1:][-20:]
    return out, info


# -- where serve's time goes -----------------------------------------------------------------------------------

# the server's stages, by (file ending, function): their cumulative time as a share of the profile's total
STAGES = {
    "framing.take_frame": ("kafka/framing.py", "take_frame"),
    "framing.decode_request (kio)": ("kafka/framing.py", "decode_request"),
    "messages.parse_request": ("kafka/messages.py", "parse_request"),
    "coordinator.send (the runtime's step)": ("impl/coordinator.py", "send"),
    "server.catch_up (clock, timers)": ("serve/server.py", "catch_up"),
    "server._answer": ("serve/server.py", "_answer"),
    "messages.build_response": ("kafka/messages.py", "build_response"),
    "framing.encode_response (kio)": ("kafka/framing.py", "encode_response"),
    "server._request (all of a request)": ("serve/server.py", "_request"),
    "server._send_in_order (writing)": ("serve/server.py", "_send_in_order"),
}


def _where(key: tuple) -> str:
    path, line, name = key
    short = "/".join(Path(path).parts[-3:]) if path.startswith("/") else path
    return f"{short}:{line}({name})"


def profile(a, n: int, modes: list[str], env: dict) -> dict:
    with tempfile.TemporaryDirectory(prefix="groupspec-serve-profile-") as d:
        path = Path(d) / "serve.prof"
        target = start_serve(a.group_size, env, profile_to=path)
        try:
            result = asyncio.run(one_size(target.host, target.port, n, a.group_size, 0, modes,
                                          a.interval_ms / 1000, a.warmup, a.window, target.pid))
        finally:
            target.stop()
        rows = list(pstats.Stats(str(path)).stats.items())   # key -> (primitive calls, calls, own, cumulative, _)
    total = sum(v[2] for _k, v in rows)
    # the time the event loop waited for sockets (epoll's own time) is idle: shares are of the busy rest
    waits = [kv for kv in rows if kv[0][2] == "<method 'poll' of 'select.epoll' objects>" or
             (kv[0][0].endswith("selectors.py") and kv[0][2] == "select")]
    idle = sum(v[2] for k, v in waits if k[2] != "select")
    busy = total - idle

    def top(index: int) -> list[dict]:
        # the loop's wait is not work; above the loop (asyncio.run, the event loop's run) all is cumulative
        best = sorted((kv for kv in rows if kv not in waits and kv[1][3] <= busy * 1.001),
                      key=lambda kv: kv[1][index], reverse=True)[:a.profile_top]
        return [{"function": _where(k), "calls": v[1], "own_s": round(v[2], 3), "cumulative_s": round(v[3], 3),
                 "own_share": round(v[2] / busy, 3), "cumulative_share": round(v[3] / busy, 3)} for k, v in best]
    stages = {label: round(sum(v[3] for (p, _line, fn), v in rows if fn == name and p.endswith(ending)) / busy, 3)
              for label, (ending, name) in STAGES.items()}
    return {"members": n, "modes": modes, "profiled_seconds": round(total, 1), "idle_share": round(idle / total, 3),
            "requests_per_second_under_profiler": {m: result[m]["requests_per_second"] for m in modes},
            "errors": result["errors"], "stage_cumulative_share_of_busy": stages,
            "top_own": top(2), "top_cumulative": top(3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--members", default="10,100,1000", help="comma-separated member counts (the sizes)")
    ap.add_argument("--group-size", type=int, default=10, help="members per group (and the topic's partitions)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--window", type=float, default=5.0, help="recorded seconds per mode")
    ap.add_argument("--warmup", type=float, default=1.0, help="unrecorded seconds before each window")
    ap.add_argument("--interval-ms", type=float, default=100.0, help="heartbeat and commit interval (open loop)")
    ap.add_argument("--mode", choices=("both", "open", "closed"), default="both")
    ap.add_argument("--no-broker", action="store_true", help="serve only: no Kafka broker")
    ap.add_argument("--profile", action="store_true", help="also run serve once under cProfile")
    ap.add_argument("--profile-members", type=int, default=None, help="the size profiled (default: the largest)")
    ap.add_argument("--profile-top", type=int, default=15)
    ap.add_argument("--checkout", default=None, help="serve the code of this groupspec checkout (default: the "
                                                     "installed groupspec's)")
    a = ap.parse_args()
    sizes = [int(x) for x in a.members.split(",") if x.strip()]
    if not sizes or min(sizes) < 1 or a.group_size < 1 or a.runs < 1 or a.window <= 0 or a.interval_ms <= 0:
        ap.error("--members, --group-size, --runs, --window and --interval-ms must be positive")
    modes = ["open", "closed"] if a.mode == "both" else [a.mode]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="groupspec-serve-code-") as folder:
        env, code = checkout_env(a.checkout, folder)
        sizes_out, targets = run_all(a, sizes, modes, env)
        prof = profile(a, a.profile_members or max(sizes), modes, env) if a.profile else None
    doc = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                       # others' work on the machine: the 1-minute load average when the run began and ended
                       "load_average": [round(load_before[0], 2), round(os.getloadavg()[0], 2)]},
           "command": " ".join(["benchmarks/serve.py", *sys.argv[1:]]),
           "date": time.strftime("%Y-%m-%d"),
           "settings": {"group_size": a.group_size, "partitions": a.group_size, "interval_ms": a.interval_ms,
                        "warmup_seconds": a.warmup, "window_seconds": a.window, "runs": a.runs, "modes": modes,
                        "session_timeout_ms": TIMEOUT_MS},
           "serve_code": code, "targets": targets, "sizes": sizes_out,
           "errors_total": sum(sum(r[t]["errors"].values()) for r in sizes_out.values() for t in targets)}
    if prof is not None:
        doc["profile"] = prof
    print(json.dumps(doc, indent=2))
    if doc["errors_total"]:
        print(f"benchmarks/serve.py: {doc['errors_total']} answers were errors (see `errors`)", file=sys.stderr)


if __name__ == "__main__":
    main()
