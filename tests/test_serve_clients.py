"""Real Kafka clients against `groupspec serve` (issue 23, item 3): kafka-python, confluent-kafka (librdkafka),
aiokafka and Java's KafkaConsumer (kafka-clients 3.9, group.protocol=classic), each consumer a process of its own
(tests/serve_clients/: pyclient.py --kind ..., JavaClient.java), against the server run as users run it
(`groupspec serve --port 0 --log --trace`, its admin endpoint for the server's view and for faults).

What each test expects is what the spec's coordinator says (the server's group snapshot, GET /status; its trace,
replayed through the table by `groupspec traces check`) and the facts that follow from the protocol: every client
holds what the coordinator handed its member, each partition exactly once, the spec's assignor's layout
(spec/assignors.py) over the sorted member ids, the generation up by one per rebalance, a member killed gone after
its session timeout and not before.

The default run (about 2 minutes on 2 xdist workers): every client kind through the group's life (form with range,
one joins, one leaves, one is killed), a static member's restart, a held append and a coordinator move (on
roundrobin groups); offsets across a restart of the server for kafka-python and Java.  `slow`: the life with
roundrobin, three consumers started at once, the restart for confluent-kafka and aiokafka.  `kafka`: the same life on a real Kafka 3.9
broker, whose generations and assignments must be serve's.
"""
from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from groupspec.spec.assignors import format_partition, range_assign, roundrobin_assign

HERE = Path(__file__).parent / "serve_clients"
KINDS = ("kafka-python", "confluent", "aiokafka", "java")
# where what is tested is the server's side (a restart, a held append, a static member's return, the coordinator
# moving), CI runs two clients of different make, the others in a slow run: each test of four clients is 20-80 s
# of a worker's share of the 15-minute suite
TWO_KINDS = [k if k in ("kafka-python", "java") else pytest.param(k, marks=pytest.mark.slow) for k in KINDS]
PYTHON_MODULES = {"kafka-python": "kafka", "confluent": "confluent_kafka", "aiokafka": "aiokafka"}
PARTITIONS = 6
ALL = [f"t-{i}" for i in range(PARTITIONS)]
SESSION_MS, HEARTBEAT_MS, POLL_MS = 6000, 500, 10000
SETTLE_S = 40          # the longest a rebalance may take before a test fails (a session timeout is 6 s)
ASSIGNORS = {"range": range_assign, "roundrobin": roundrobin_assign}


# processes -----------------------------------------------------------------------------------------------------

class Driver:
    """One consumer process: its JSON lines on stdout (read by a thread), commands on stdin."""

    def __init__(self, kind: str, name: str, argv: list[str], workdir: Path, instance: str | None = None):
        self.kind, self.name, self.instance = kind, name, instance
        self.stderr_path = workdir / f"{name}.stderr"
        with open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                                         bufsize=1)
        self.events: list[tuple[float, dict]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "noise", "line": line.rstrip()}
            with self._lock:
                self.events.append((time.monotonic(), event))

    @property
    def prefix(self) -> str:
        """Its member ids begin with this and a dash (Kafka's clientId-UUID, instanceId-UUID for a static one)."""
        return self.instance or self.name

    def seen(self, since: int = 0) -> list[dict]:
        with self._lock:
            return [e for _t, e in self.events[since:]]

    def mark(self) -> int:
        with self._lock:
            return len(self.events)

    def holding(self) -> tuple[list[str], int | None] | None:
        """What it holds now: the partitions and generation of its last assignment, None if revoked since."""
        for e in reversed(self.seen()):
            if e["event"] == "assigned":
                return e["partitions"], e.get("generation")
            if e["event"] == "revoked" and e["partitions"]:
                return None
        return None

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def ask(self, line: str, event: str, group: "Group") -> dict:
        """Send a command and wait for its answer (the next `event` line, or commit_failed)."""
        since = self.mark()
        self.send(line)
        return group.eventually(lambda: next((e for e in self.seen(since)
                                              if e["event"] in (event, "commit_failed")), None),
                                f"{self.name} to answer {line!r}")

    def close(self, group: "Group") -> None:
        self.send("close")
        group.eventually(lambda: any(e["event"] == "closed" for e in self.seen()), f"{self.name} to close")
        assert self.proc.wait(20) == 0, group.seen_text()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(20)

    def tail(self, n: int = 8) -> str:
        lines = [json.dumps(e) for e in self.seen()[-n:]]
        alive = "alive" if self.proc.poll() is None else f"exit {self.proc.returncode}"
        err = self.stderr_path.read_text(errors="replace").strip().splitlines()[-3:]
        return (f"  {self.kind} {self.name} ({alive}):\n" + "\n".join("    " + x for x in lines)
                + ("\n    stderr: " + "\n            ".join(err) if err else ""))


class Serve:
    """`groupspec serve` in a process of its own: --port 0 (then the same port on a restart), --log, --trace (a file
    per run), the admin endpoint for its view and its faults."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.log = workdir / "group-metadata.log"
        self.traces: list[Path] = []
        self.port = self.admin_port = 0
        self.proc: subprocess.Popen | None = None
        self.stderr: list[str] = []

    def start(self) -> "Serve":
        trace = self.workdir / f"trace-{len(self.traces)}.jsonl"
        self.traces.append(trace)
        argv = [sys.executable, "-m", "groupspec.checkers.cli", "serve", "--port", str(self.port), "--topics",
                f"t:{PARTITIONS}", "--config", "group.initial.rebalance.delay.ms=0", "--log", str(self.log),
                "--trace", str(trace)]
        if self.admin_port:
            argv += ["--admin-port", str(self.admin_port)]
        self.proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
        lines: queue.Queue = queue.Queue()
        self.stderr = []

        def drain(proc=self.proc, out=self.stderr):
            for line in proc.stderr:
                out.append(line.rstrip())
                lines.put(line)
        threading.Thread(target=drain, daemon=True).start()
        try:
            first = lines.get(timeout=60)
        except queue.Empty:
            pytest.fail("groupspec serve said nothing in 60 s")
        found = re.search(r"coordinator on 127\.0\.0\.1:(\d+) .*admin on 127\.0\.0\.1:(\d+)", first)
        assert found, f"groupspec serve's start line names no port and admin port: {first!r}"
        self.port, self.admin_port = int(found[1]), int(found[2])
        return self

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        """SIGTERM: it stops with exit 0 (if it does not within 20 s, its threads' stacks say where it is)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGUSR1)
            time.sleep(2)
            self.proc.kill()
            self.proc.wait(20)
            pytest.fail("groupspec serve did not stop within 20 s of SIGTERM; its stderr, ending with its "
                        "threads' stacks:\n" + "\n".join(self.stderr[-80:]))
        assert code == 0, "\n".join(self.stderr[-10:])

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(20)

    def admin(self, path: str, method: str = "POST") -> dict:
        req = urllib.request.Request(f"http://127.0.0.1:{self.admin_port}{path}", method=method,
                                     data=b"" if method == "POST" else None)
        try:
            with urllib.request.urlopen(req, timeout=15) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as e:
            raise AssertionError(f"admin {method} {path}: HTTP {e.code} {e.read()!r}") from None

    def status(self) -> dict:
        return self.admin("/status", "GET")

    def view(self, gid: str, drivers: list[Driver]) -> dict | None:
        """The coordinator's snapshot of the group (None: it holds no such group)."""
        status = self.status()
        assert status["violations"] == 0, f"the server saw invariant violations: {status}"
        return status["groups"].get(gid)

    def records(self) -> list[dict]:
        """The trace records written so far, every run's."""
        return [json.loads(line) for t in self.traces if t.exists() for line in t.read_text().splitlines() if line]

    def recent(self, gid: str, n: int = 40) -> str:
        """The last `n` trace records of group `gid`, a line each: what the coordinator was asked and answered, and
        its timers (a client that went silent either sent nothing, or was answered and did not go on)."""
        def line(r: dict) -> str:
            at = time.strftime("%H:%M:%S", time.localtime(r["ts_ms"] / 1000)) + f".{r['ts_ms'] % 1000:03d}"
            if r["kind"] in ("request", "response"):
                req = r.get("request") or {}
                resp = r.get("response")
                said = "parked" if resp is None else " ".join(
                    f"{k}={resp[k]}" for k in ("error", "generation", "leader", "member") if resp.get(k) not in
                    (None, ""))
                asked = " ".join(f"{k}={req[k]}" for k in ("member", "generation") if req.get(k) not in (None, ""))
                return " ".join(x for x in (at, r["kind"], f"#{r.get('id')}", r.get("api", ""), asked, "->", said)
                                if x)
            rest = {k: v for k, v in r.items() if k not in ("v", "group", "seq", "ts_ms", "source", "kind", "loaded",
                                                            "config")}
            return f"{at} {r['kind']} {json.dumps(rest)}"
        try:
            mine = [r for r in self.records() if r.get("group") == gid]
        except (OSError, ValueError) as e:     # a record half written as the test looks
            return f"(no trace: {e})"
        return "\n".join("    " + line(r) for r in mine[-n:])

    def check_traces(self) -> None:
        """Every run's trace is one the spec explains: `groupspec traces check` (in process: no Spark) exits 0."""
        for trace in self.traces:
            assert trace.exists() and trace.stat().st_size > 0, f"no trace written at {trace}"
            run = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "traces", "check", "--in-process",
                                  str(trace), "--out", str(trace.with_suffix(".verdicts"))],
                                 capture_output=True, text=True, timeout=300)
            assert run.returncode == 0, f"traces check {trace.name}: exit {run.returncode}\n{run.stdout[-3000:]}" \
                                        f"\n{run.stderr[-2000:]}"


class Broker:
    """A real single-node Kafka 3.9 broker (`groupspec kafka broker start`, group timeouts as given: --time-scale 1,
    no initial rebalance delay), the topic t made by CreateTopics.  Its view of a group: DescribeGroups (state,
    protocol, members), each member's partitions as its client holds them, no generation (the clients say it)."""

    def __init__(self, folder: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.folder = folder
        run = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "kafka", "broker", "start", "--version",
                              "3.9", "--port", str(self.port), "--dir", str(folder), "--json", "--time-scale", "1",
                              "--config", "group.initial.rebalance.delay.ms=0", "--config", "group.max.size=10"],
                             capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            pytest.skip(f"no Kafka 3.9 broker: {run.stderr.strip()[-500:]}")
        from kafka.admin import KafkaAdminClient, NewTopic
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="setup")
        try:
            admin.create_topics([NewTopic("t", PARTITIONS, 1)])
        finally:
            admin.close()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def view(self, gid: str, drivers: list[Driver]) -> dict | None:
        from groupspec.checkers.kafka import framing, messages
        _, describe = messages.request("DescribeGroups", {"groups": [gid]})
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.sendall(framing.encode_request(describe, 1, "describer"))
            buf = bytearray()
            while (data := framing.take_frame(buf)) is None:
                chunk = s.recv(65536)
                assert chunk, "the broker closed the connection"
                buf += chunk
        answer = messages.response("DescribeGroups", framing.decode_response(
            data, messages.response_class("DescribeGroups", describe.__version__))[1])["groups"][0]
        if answer["error"] != "NONE" or answer["state"] == "Dead":
            return None

        def held(member):
            d = next((d for d in drivers if member.startswith(d.prefix + "-")), None)
            return (d.holding() or ([], None))[0] if d is not None else []
        return {"state": answer["state"], "protocol": answer["protocol"], "members": answer["members"],
                "generation": None, "assignment": {m: held(m) for m in answer["members"]}}

    def stop(self) -> None:
        subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "kafka", "broker", "stop", "--port",
                        str(self.port)], capture_output=True, text=True, timeout=120)


# the group: its drivers and the server's view of it -----------------------------------------------------------

class Group:
    def __init__(self, serve: Serve | Broker, gid: str, kind: str, assignor: str, workdir: Path, java_cp: str | None,
                 session_ms: int = SESSION_MS):
        self.serve, self.gid, self.kind, self.assignor = serve, gid, kind, assignor
        self.session_ms = session_ms
        self.workdir, self.java_cp = workdir, java_cp
        self.drivers: list[Driver] = []
        self.generation: int | None = None
        self.redone_joins = 0       # kafka-python's redone joins counted by the last settle (pyclient.py)

    def spawn(self, name: str, instance: str | None = None) -> Driver:
        args = ["--bootstrap", self.serve.bootstrap, "--group", self.gid, "--topics", "t", "--client-id", name,
                "--assignor", self.assignor, "--session-ms", str(self.session_ms), "--heartbeat-ms",
                str(HEARTBEAT_MS), "--poll-ms", str(max(POLL_MS, self.session_ms))] + (["--instance-id", instance] if instance else [])
        if self.kind == "java":
            argv = ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", self.java_cp, "JavaClient", *args]
        else:
            argv = [sys.executable, str(HERE / "pyclient.py"), "--kind", self.kind, *args]
        d = Driver(self.kind, name, argv, self.workdir, instance)
        self.drivers.append(d)
        return d

    def live(self) -> list[Driver]:
        return [d for d in self.drivers if d.proc.poll() is None and not any(e["event"] == "closed" for e in d.seen())]

    def seen_text(self) -> str:
        try:
            snap = json.dumps(self.serve.view(self.gid, self.drivers))
        except Exception as e:      # noqa: BLE001 - the server may be the thing that is gone
            snap = f"(no status: {e})"
        trace = f"\n  the server's trace of {self.gid}, last records:\n{self.serve.recent(self.gid)}" \
            if isinstance(self.serve, Serve) else ""
        return "what was seen:\n" + "\n".join(d.tail() for d in self.drivers) + f"\n  server: {snap}" + trace

    def stacks(self) -> str:
        """Every thread's stack of each Python client still running (pyclient.py dumps them on SIGUSR1): where
        a client that went silent is stuck, in it or in its Kafka library."""
        out = []
        for d in self.drivers:
            if d.kind == "java" or d.proc.poll() is not None:
                continue
            before = d.stderr_path.stat().st_size
            d.proc.send_signal(signal.SIGUSR1)
            time.sleep(0.5)
            with open(d.stderr_path, "rb") as f:
                f.seek(before)
                text = f.read().decode(errors="replace")
            dump = [x for x in text.splitlines() if x.startswith(("Thread", "Current thread", "  File"))]
            out.append(f"\n  {d.name}'s threads:\n" + "\n".join("    " + x for x in dump))
        return "".join(out)

    def eventually(self, look, what: str, timeout: float = SETTLE_S):
        deadline = time.monotonic() + timeout
        while True:
            got = look()
            if got:
                return got
            if time.monotonic() > deadline:
                raise AssertionError(f"waited {timeout:g} s for {what}; {self.seen_text()}{self.stacks()}")
            time.sleep(0.1)

    def settle(self, members: list[Driver], step: str, rebalances: int | None = 1) -> dict:
        """Wait until the server holds the group Stable with exactly `members`, each of them holding what the
        coordinator handed its member at the server's generation; then check the facts: each partition once, the
        spec's assignor's layout over the sorted member ids, the generation `rebalances` more than the last one
        (None: any).  The snapshot."""
        def look():
            # what the clients hold is read first, the server's view after it: a client holds an assignment only
            # once the server answered it, so a view read later is at least as new (read the other way round, a
            # view from before a static member's restart matched the restarted client's same partitions)
            holding = [d.holding() for d in members]
            snap = self.serve.view(self.gid, members)
            if not snap or snap["state"] != "Stable" or len(snap["members"]) != len(members):
                return None
            if snap["generation"] is None:      # a broker's DescribeGroups names none: the clients' own
                generations = {h[1] if h else None for h in holding}
                if len(generations) != 1 or None in generations:
                    return None
                snap["generation"] = generations.pop()
            for d, held in zip(members, holding):
                mine = [m for m in snap["members"] if m.startswith(d.prefix + "-")]
                if len(mine) != 1 or held is None or held[0] != sorted(snap["assignment"][mine[0]]):
                    return None
                if held[1] is not None and held[1] != snap["generation"]:
                    return None
            # a leader that assigned before it knew the topic's partitions (kafka-python: "No partition metadata
            # for topic t") rejoins once it knows them: its group is not settled yet
            return snap if sorted(sum(snap["assignment"].values(), [])) == sorted(ALL) else None
        snap = self.eventually(look, f"{step}: group {self.gid} Stable with {[d.name for d in members]}, each "
                                     f"holding what the coordinator assigned it, every partition assigned")
        where = f"{step}: {self.seen_text()}"
        assert snap["protocol"] == self.assignor, where
        held = sorted(sum((d.holding()[0] for d in members), []), key=lambda p: int(p.rsplit("-", 1)[1]))
        assert held == ALL, f"each partition exactly once: {held}; {where}"
        spec = ASSIGNORS[self.assignor]({"t": PARTITIONS}, {m: ["t"] for m in snap["members"]})
        assert {m: sorted(map(format_partition, ps)) for m, ps in spec.items()} == \
               {m: sorted(ps) for m, ps in snap["assignment"].items()}, f"the spec's {self.assignor}; {where}"
        # a join kafka-python redid because it never collected the finished one (its driver reports each,
        # pyclient.py) is one more rebalance at most; none is allowed without one
        redone = sum(e["event"] == "join_redone" for d in self.drivers for e in d.seen())
        extra, self.redone_joins = redone - self.redone_joins, redone
        if rebalances is not None and self.generation is not None:
            low = self.generation + rebalances
            assert low <= snap["generation"] <= low + extra, \
                f"generation {snap['generation']} after {self.generation} and {rebalances} rebalance(s)" \
                f"{f' and {extra} join(s) kafka-python redid' if extra else ''}; {where}"
        self.generation = snap["generation"]
        return snap

    def member_of(self, d: Driver, snap: dict) -> str:
        return next(m for m in snap["members"] if m.startswith(d.prefix + "-"))


# fixtures ------------------------------------------------------------------------------------------------------

def _kafka_lib() -> Path:
    from groupspec.checkers.kafka import jars
    return jars.lib(jars.line("3.9"))


@pytest.fixture(scope="session")
def java_classpath(tmp_path_factory) -> str:
    """JavaClient.java compiled once a session; the classpath: Kafka 3.9's lib jars and it."""
    lib = _kafka_lib()
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("the Java client's tests need a JDK (javac and java on PATH; .ci/setup installs Java 17)")
    if not list(lib.glob("kafka-clients-*.jar")):
        pytest.skip(f"the Java client's tests need Kafka 3.9's jars in {lib} (groupspec kafka setup fetches them)")
    out = tmp_path_factory.mktemp("javaclient")
    run = subprocess.run(["javac", "-d", str(out), "-cp", f"{lib}/*", str(HERE / "JavaClient.java")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return f"{lib}/*{os.pathsep}{out}"


@pytest.fixture
def serve(tmp_path):
    s = Serve(tmp_path).start()
    yield s
    s.kill()


@pytest.fixture
def group(request, serve, tmp_path):
    """group(kind, assignor): a Group on `serve`; its drivers SIGKILLed at the end whatever happened."""
    made: list[Group] = []

    def make(kind: str, assignor: str = "range", gid: str = "g", target: Serve | Broker | None = None,
             session_ms: int = SESSION_MS) -> Group:
        if kind == "java":
            java_cp = request.getfixturevalue("java_classpath")
        else:
            pytest.importorskip(PYTHON_MODULES[kind])
            java_cp = None
        folder = tmp_path / f"{gid}-{len(made)}"
        folder.mkdir()
        g = Group(target or serve, gid, kind, assignor, folder, java_cp, session_ms)
        made.append(g)
        return g
    yield make
    for g in made:
        for d in g.drivers:
            d.kill()


def _three(g: Group, together: bool = False) -> list[Driver]:
    """Three consumers c1, c2, c3: started together, or one at a time (each rebalance settled: generations 1, 2, 3
    on a fresh group)."""
    if together:
        ds = [g.spawn(f"c{i}") for i in (1, 2, 3)]
        g.settle(ds, "three consumers started together", rebalances=None)
        return ds
    ds = []
    for i in (1, 2, 3):
        ds.append(g.spawn(f"c{i}"))
        g.settle(ds, f"c{i} joined", rebalances=1 if i > 1 else None)
    return ds


# the group's life ----------------------------------------------------------------------------------------------

def life(g: Group) -> list[tuple[int, dict]]:
    """Three consumers one by one, a fourth joins, one leaves (a clean close), one is SIGKILLed: each step one
    rebalance, settled as the spec says; the member killed is removed after its session timeout, not before.
    The sequence of (generation, client -> partitions) seen."""
    seen = []

    def step(members, what, rebalances=1):
        snap = g.settle(members, what, rebalances)
        seen.append((snap["generation"], {d.name: d.holding()[0] for d in members}))
    ds = []
    for i in (1, 2, 3):
        ds.append(g.spawn(f"c{i}"))
        step(ds, f"c{i} joined", rebalances=1 if i > 1 else None)
    ds.append(g.spawn("c4"))
    step(ds, "c4 joined")
    ds[1].close(g)
    step([ds[0], ds[2], ds[3]], "c2 closed (LeaveGroup)")
    killed = time.monotonic()
    ds[2].kill()
    step([ds[0], ds[3]], "c3 SIGKILLed")
    gone_after = time.monotonic() - killed
    # the member is alive until its last heartbeat is a session timeout old (heartbeats every 0.5 s)
    assert gone_after >= (SESSION_MS - 2 * HEARTBEAT_MS) / 1000, f"c3 removed {gone_after:.1f} s after its kill"
    return seen


@pytest.mark.parametrize("kind", KINDS)
def test_a_group_of_real_clients_lives_as_the_spec_says(kind, group, serve):
    g = group(kind, "range")
    seen = life(g)
    generations = [gen for gen, _ in seen]
    assert generations == sorted(set(generations)) and len(generations) == 6, seen
    for d in g.live():
        d.close(g)
    g.eventually(lambda: serve.status()["groups"][g.gid]["state"] == "Empty", "the group to be Empty")
    serve.stop()
    serve.check_traces()


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_roundrobin_group_lives_as_the_spec_says(kind, group, serve):
    life(group(kind, "roundrobin"))
    serve.stop()
    serve.check_traces()


@pytest.mark.slow        # the hold and move tests form such a group too
@pytest.mark.parametrize("kind", KINDS)
def test_three_consumers_started_together_form_a_roundrobin_group(kind, group, serve):
    g = group(kind, "roundrobin")
    _three(g, together=True)
    serve.stop()
    serve.check_traces()


# the log, static members, faults -------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", TWO_KINDS)
def test_committed_offsets_survive_a_restart_of_the_server(kind, group, serve):
    # sessions longer than a restart takes on a busy machine (librdkafka times its session out itself, and
    # rejoins: a rebalance that is the client's, not the server's)
    g = group(kind, session_ms=20000)
    ds = _three(g, together=True)
    owner = {p: d for d in ds for p in d.holding()[0]}
    for offset, p in enumerate(["t-0", "t-3", "t-5"], start=5):
        got = owner[p].ask(f"commit {p} {offset}", "committed", g)
        assert got["event"] == "committed", got
    generation = g.generation
    serve.stop()
    serve.start()            # the same port and log
    # the group comes back from the log as it was: Stable at the same generation; the consumers go on in it
    g.settle(ds, "the server restarted", rebalances=0)
    assert g.generation == generation
    # a fresh consumer (no offsets cached) reads them from the restarted server
    fresh = g.spawn("c4")
    g.settle([*ds, fresh], "c4 joined after the restart")
    for offset, p in enumerate(["t-0", "t-3", "t-5"], start=5):
        got = fresh.ask(f"committed {p}", "offset", g)
        assert got["offset"] == offset, got
    serve.stop()
    serve.check_traces()


@pytest.mark.parametrize("kind", TWO_KINDS)
def test_a_static_member_restarted_within_its_session_gets_its_partitions_back_without_a_rebalance(kind, group,
                                                                                                   serve):
    g = group(kind)
    ds = [g.spawn(f"c{i}", instance=f"i{i}") for i in (1, 2, 3)]
    snap = g.settle(ds, "three static members", rebalances=None)
    # a follower (a leader's rejoin is another story: it may rebalance)
    victim = next(d for d in ds if g.member_of(d, snap) != snap["leader"])
    before = victim.holding()[0]
    others = {d.name: d.mark() for d in ds if d is not victim}
    victim.kill()
    back = g.spawn(victim.name, instance=victim.instance)
    after = g.settle([d for d in ds if d is not victim] + [back], f"{victim.name} restarted as itself",
                     rebalances=0)
    assert back.holding() == (before, snap["generation"]), g.seen_text()
    assert after["static_members"][victim.instance] != snap["static_members"][victim.instance]   # a new member id
    for d in ds:
        if d is not victim:
            assert not [e for e in d.seen(others[d.name]) if e["event"] in ("revoked", "assigned")], g.seen_text()
    serve.stop()
    serve.check_traces()


@pytest.mark.parametrize("kind", TWO_KINDS)
def test_a_held_append_holds_back_the_assignments_until_it_completes(kind, group, serve):
    g = group(kind, "roundrobin")
    ds = _three(g, together=True)
    serve.admin("/hold")
    fourth = g.spawn("c4")
    # the rebalance goes as far as the leader's SyncGroup: its append is held, nobody gets an assignment
    g.eventually(lambda: serve.status()["held_appends"] >= 1, "the leader's SyncGroup append to be held")
    snap = serve.status()["groups"][g.gid]
    assert snap["state"] == "CompletingRebalance" and len(snap["members"]) == 4, snap
    time.sleep(2)
    assert all(d.holding() is None for d in [*ds, fourth]), f"assigned while the append is held; {g.seen_text()}"
    assert serve.status()["groups"][g.gid]["state"] == "CompletingRebalance"
    assert serve.admin("/release")["completed"] >= 1
    g.settle([*ds, fourth], "the append released")
    serve.stop()
    serve.check_traces()


@pytest.mark.parametrize("kind", TWO_KINDS)
def test_the_clients_find_the_coordinator_again_after_it_moves(kind, group, serve):
    g = group(kind, "roundrobin")
    ds = _three(g, together=True)
    generation = g.generation
    owner = {p: d for d in ds for p in d.holding()[0]}
    assert owner["t-0"].ask("commit t-0 5", "committed", g)["event"] == "committed"
    serve.admin("/move?ms=2000")
    g.eventually(lambda: serve.status()["groups"].get(g.gid) is None or
                 serve.status()["groups"][g.gid]["state"] == "Dead", "the group to be unloaded", timeout=5)
    # back after 2 s, loaded from the log; the clients find it and stay in their generation
    g.settle(ds, "the coordinator moved back", rebalances=0)
    assert g.generation == generation
    gone = [r for r in serve.records() if r["kind"] == "request" and (r["response"] or {}).get("error") == "NOT_COORDINATOR"]
    assert gone, "no client was told NOT_COORDINATOR while the coordinator was away: the move was not seen"
    holder = next(d for d in ds if "t-0" in d.holding()[0])
    got = holder.ask("commit t-0 9", "committed", g)
    assert got["event"] == "committed", got
    assert holder.ask("committed t-0", "offset", g)["offset"] == 9
    serve.stop()
    serve.check_traces()


# a real broker ----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    pytest.importorskip("kafka")
    b = Broker(tmp_path_factory.mktemp("broker"))
    yield b
    b.stop()


@pytest.mark.kafka
@pytest.mark.parametrize("kind", KINDS)
def test_a_kafka_broker_gives_the_group_the_life_serve_gives_it(kind, group, serve, broker):
    """The same clients through the same life on Kafka 3.9's coordinator and on serve: the same generations (from
    the group's first settled one: a leader that assigned before it knew the topic rebalances once more, on
    either) and the same partitions for each client at each step."""
    on_serve = life(group(kind, gid=f"life-{kind}"))
    on_kafka = life(group(kind, gid=f"life-{kind}", target=broker))
    relative = lambda seen: [(gen - seen[0][0], held) for gen, held in seen]      # noqa: E731
    assert relative(on_kafka) == relative(on_serve), f"kafka: {on_kafka}\nserve: {on_serve}"
    assert on_kafka[0][0] == on_serve[0][0], f"the first generation: kafka {on_kafka[0][0]}, serve {on_serve[0][0]}"
    serve.stop()
    serve.check_traces()
