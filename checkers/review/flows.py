"""The protocol's canonical flows as Mermaid sequence diagrams, drawn by running the suite's scenarios.

Each flow names a scenario of the suite; `sequence` runs it on the runtime
coordinator with tracing on (impl/trace.py) and draws what happened, step
by step: each request and its answer (at once, or later when a parked
request is answered), each timer, log completion and coordinator event, the
rows of the table that fired, and every change of the group's state.  The
scenario's own expectations are checked as it runs, so a picture is drawn
only of a run the suite accepts: the pictures are always what the spec does.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from groupspec.checkers.paths import REPO
from groupspec.checkers.review.errors import DocsError
from groupspec.checkers.scenarios import runner
from groupspec.checkers.scenarios.model import Scenario, load_file
from groupspec.impl.trace import TraceWriter
from groupspec.spec.engine import STATE_I
from groupspec.spec.schema import STATES

SHARED = REPO.parent / "shared" / "scenarios"      # the seeds' scenarios, beside the repository


@dataclass(frozen=True)
class Flow:
    slug: str
    title: str
    about: str
    file: str        # under tests/scenarios/, or shared: for ../shared/scenarios/
    scenario: str


FLOWS: tuple[Flow, ...] = (
    Flow("first-join", "First join", "a consumer joins a new group: MEMBER_ID_REQUIRED, the initial delay, the "
         "leader's SyncGroup, heartbeats; then its session expires",
         "shared:lifecycle-from-seeds-001-002-003.yaml", "one-member-joins-syncs-heartbeats-and-expires"),
    Flow("join-stable", "A member joins a Stable group", "the newcomer's JoinGroup starts a rebalance that the "
         "old member learns of by its heartbeat", "shared:lifecycle-from-seeds-001-002-003.yaml",
         "a-new-member-triggers-a-rebalance-that-old-members-learn-of-by-heartbeat"),
    Flow("member-fails", "A member fails", "a member stops heartbeating: its session expires during the "
         "rebalance, which completes without it", "kafka/heartbeat-session.yaml",
         "kafka-session-expiry-during-rebalance-completes-it"),
    Flow("leader-sync-fails", "The leader's SyncGroup fails to store", "the group's log append fails: the "
         "waiting members get the error and the group rebalances", "kafka/sync.yaml",
         "kafka-sync-failed-append-answers-the-error-and-rebalances"),
    Flow("static-restart", "A static member restarts", "a new process with the same group.instance.id takes "
         "over its member without a rebalance", "kafka/static-members.yaml",
         "kafka-static-replacement-keeping-the-selected-protocol-does-not-rebalance"),
    Flow("failover", "Coordinator failover", "the group's offsets partition moves: the coordinator unloads it "
         "and a coordinator loads its last record", "kafka/coordinator.yaml",
         "kafka-load-restores-the-last-persisted-group"),
)


class FlowError(DocsError):
    """A flow's scenario is missing or no longer passes: its picture cannot be drawn."""


def flow_file(flow: Flow) -> Path:
    if flow.file.startswith("shared:"):
        return SHARED / flow.file.split(":", 1)[1]
    return REPO / "tests" / "scenarios" / flow.file


def flow_scenario(flow: Flow) -> Scenario:
    path = flow_file(flow)
    if not path.is_file():
        raise FlowError(f"flow {flow.slug!r}: its scenario file {path} is missing")
    for sc in load_file(path):
        if sc.name == flow.scenario:
            return sc
    raise FlowError(f"flow {flow.slug!r}: {path} has no scenario {flow.scenario!r}")


class _Recorder(TraceWriter):
    """A trace writer that keeps each step whole: its records, the rows that fired, the states it left."""

    def __init__(self, config: dict):
        super().__init__(self._keep, source="runtime", config=config)
        self.steps: list[tuple[list[dict], list[str], dict, dict]] = []
        self._records: list[dict] = []
        self._mark = 0
        self._before: dict = {}

    def _keep(self, rec: dict) -> None:
        self._records.append(rec)

    def _states(self) -> dict[str, str]:
        return {gid: STATES[g.state[STATE_I]] for gid, g in self.coord.groups.items()}

    def begin(self) -> None:
        if self._depth == 0:
            self._mark, self._before, self._records = len(self.coord.fired), self._states(), []
        super().begin()

    def end(self, leads: list[dict] | None = None) -> None:
        super().end(leads)
        if self._depth == 0:
            self.steps.append((self._records, self.coord.fired[self._mark:], self._before, self._states()))
            self._records = []


def run_flow(flow: Flow) -> tuple[Scenario, _Recorder, dict]:
    """Run the flow's scenario on the runtime: (the scenario, what it recorded, the variables it bound)."""
    sc = flow_scenario(flow)
    world = runner.new_world("runtime", sc.config, None)
    rec = _Recorder(sc.config)
    rec.attach(world.coord)
    result = runner.run_in(sc, "runtime", world)
    if result.result != "pass":
        raise FlowError(f"flow {flow.slug!r}: scenario {sc.name!r} ({flow_file(flow)}) does not pass on the "
                        f"runtime (step {result.step}: {result.message or result.got}); fix it before drawing it")
    return sc, rec, world.env


def sequence(flow: Flow) -> str:
    """The flow as a Mermaid sequence diagram."""
    sc, rec, env = run_flow(flow)
    names = {v: k for k, v in env.items() if isinstance(v, str) and v}   # a member id shown as its $variable
    who: dict[str, str] = {}         # member id -> the participant (client) that holds it
    participants: dict[str, str] = {}
    asked: dict = {}                 # request id -> (api, participant)
    lines: list[str] = []
    now = 0

    def party(label: str) -> str:
        if label not in participants:
            participants[label] = f"p{len(participants)}"
        return participants[label]

    def member(m) -> str:
        return names.get(m, m) if m else '""'

    for records, rows, before, after in rec.steps:
        lead = next((r for r in records if r["kind"] != "response" and not r.get("at_once")), None)
        if lead is None:
            continue
        if lead["ts_ms"] != now:
            lines.append(f"    Note over coordinator: t = {lead['ts_ms']} ms")
            now = lead["ts_ms"]
        if lead["kind"] == "request":
            req, api = lead["request"], lead["api"]
            ids = [req.get("member")] + [m.get("member") for m in req.get("members") or []]
            client = req.get("client") or next((who[m] for m in ids if m in who), None) or \
                next((member(m) for m in ids if m), "admin")
            p = party(client)
            asked[lead["id"]] = (api, p)
            lines.append(f"    {p}->>coordinator: {_text(_request(api, req, member))}")
            if lead["response"] is not None:
                _learn(who, client, lead["response"], lead.get("issued"))
                lines.append(f"    coordinator-->>{p}: {_text(_response(lead['response'], member))}")
        elif lead["kind"] == "timer":
            of = f" of {member(lead['member'])}" if lead.get("member") else ""
            lines.append(f"    Note over coordinator: timer {lead['timer']}{of} fires")
        elif lead["kind"] == "storage":
            lines.append(f"    Note over coordinator: the held log append completes: {lead['result']}")
        else:
            lines.append(f"    Note over coordinator: coordinator {lead['event']}")
        said = [r.split(": ", 1)[-1] for r in dict.fromkeys(rows)]
        moved = [f"{gid}: {before.get(gid, 'Absent')} → {st}" for gid, st in after.items()
                 if before.get(gid, "Absent") != st]
        moved += [f"{gid}: {st} → dropped" for gid, st in before.items() if gid not in after]
        if said or moved:
            text = "<br/>".join(["rows: " + ", ".join(said)] if said else []) + \
                ("<br/>" if said and moved else "") + "<br/>".join(f"⇒ {m}" for m in moved)
            lines.append(f"    Note right of coordinator: {_text(text, keep_html=True)}")
        for r in records:
            if r["kind"] == "response" and r["id"] in asked:
                api, p = asked[r["id"]]
                client = next((k for k, v in participants.items() if v == p), "")
                _learn(who, client, r["response"], None)
                lines.append(f"    coordinator-->>{p}: {_text(api + ' ' + _response(r['response'], member))}")
    head = ["sequenceDiagram"] + [f"    participant {p} as {_text(c)}" for c, p in participants.items()]
    head.append("    participant coordinator as coordinator")
    return "\n".join(head + lines) + "\n"


def _learn(who: dict, client: str, response: dict, issued) -> None:
    """A JoinGroup response tells which member id a client now holds."""
    for m in (response.get("member"), issued):
        if isinstance(m, str) and m:
            who[m] = client


def _request(api: str, req: dict, member) -> str:
    fields = []
    if "member" in req:
        fields.append(f"member_id={member(req['member'])}")
    if req.get("instance"):
        fields.append(f"group_instance_id={req['instance']}")
    if "generation" in req:
        fields.append(f"generation_id={req['generation']}")
    if req.get("assignments"):
        fields.append("assignments " + ", ".join(f"{member(m)}: {'+'.join(ps) or '∅'}"
                                                 for m, ps in req["assignments"].items()))
    if req.get("members"):
        fields.append("members " + ", ".join(member(m.get("member")) if m.get("member") else m.get("instance", "")
                                             for m in req["members"]))
    return f"{api}({', '.join(fields)})"


def _response(resp: dict, member) -> str:
    parts = [str(resp.get("error", "NONE"))]
    if resp.get("member"):
        parts.append(f"member_id {member(resp['member'])}")
    if isinstance(resp.get("generation"), int) and resp["generation"] >= 0:
        parts.append(f"generation {resp['generation']}")
    if resp.get("leader"):
        parts.append(f"leader {member(resp['leader'])}")
    if resp.get("members"):
        parts.append("members " + ", ".join(member(m) for m in resp["members"]))
    if resp.get("assignment"):
        parts.append("assignment " + "+".join(resp["assignment"]))
    if isinstance(resp.get("errors"), (list, dict)) and resp["errors"]:
        parts.append("errors " + json.dumps(resp["errors"]))
    return ", ".join(parts)


def _text(s: str, keep_html: bool = False) -> str:
    """Text Mermaid takes in a message or note: no `;` or `#` (statement and entity syntax)."""
    s = s.replace(";", ",").replace("#", "no. ")
    return s if keep_html else re.sub(r"[<>]", "", s)
