"""Reading scenario files (contracts/scenario-format.md, version 1) and rejecting malformed ones.

Every problem is reported as a `ScenarioError` naming the file, the
scenario, the step (numbered from 1) and what is wrong, so the CLI can
print one line and exit 2.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from groupspec.spec.kafka import APIS, CONFIG_DEFAULTS, ERRORS

STEP_KINDS = ("send", "expect", "advance_ms", "storage", "coordinator", "snapshot", "assign")

REQUEST_FIELDS = {
    "JoinGroup": {"group", "member", "instance", "client", "host", "session_timeout_ms", "rebalance_timeout_ms",
                  "protocol_type", "protocols", "require_known_member_id", "version", "reason"},
    "SyncGroup": {"group", "member", "instance", "generation", "assignments", "protocol_type", "protocol",
                  "version", "client", "host"},
    "Heartbeat": {"group", "member", "instance", "generation", "version", "client", "host"},
    "LeaveGroup": {"group", "members", "member", "version", "client", "host"},
    "OffsetCommit": {"group", "member", "instance", "generation", "offsets", "version", "client", "host"},
    "OffsetFetch": {"group", "partitions", "version", "client", "host"},
    "DescribeGroups": {"groups", "version", "client", "host"},
    "ListGroups": {"version", "client", "host"},
    "DeleteGroups": {"groups", "version", "client", "host"},
}
RESPONSE_FIELDS = {"error", "member", "generation", "leader", "protocol", "protocol_type", "members",
                   "assignment", "offsets", "errors", "groups", "skip_assignment"}
SNAPSHOT_FIELDS = {"state", "generation", "leader", "protocol", "protocol_type", "members", "pending_members",
                   "static_members", "assignment", "offsets"}
COORDINATOR_EVENTS = ("unload", "begin_load", "load", "expire_offsets")
STATE_NAMES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")


class ScenarioError(ValueError):
    """The scenario file itself is malformed (exit 2, result `error`)."""

    def __init__(self, file: str, message: str, scenario: str | None = None, step: int | None = None):
        self.file, self.scenario, self.step, self.message = file, scenario, step, message
        where = file
        if scenario:
            where += f": scenario {scenario!r}"
        if step is not None:
            where += f", step {step}"
        super().__init__(f"{where}: {message}")


@dataclass
class Step:
    number: int
    kind: str
    body: dict


@dataclass
class Scenario:
    file: str
    name: str
    about: str = ""
    config: dict = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)


def load_file(path: Path) -> list[Scenario]:
    """Parse and check one file (one scenario, or a list under `scenarios:`)."""
    fname = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ScenarioError(fname, f"cannot read the file ({e.strerror}); check the path") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        raise ScenarioError(fname, f"not valid YAML{at}: {getattr(e, 'problem', e)}") from None
    if isinstance(doc, dict) and "scenarios" in doc:
        items = doc["scenarios"]
        if not isinstance(items, list):
            raise ScenarioError(fname, "`scenarios:` must be a list of scenarios")
    elif isinstance(doc, dict):
        items = [doc]
    else:
        raise ScenarioError(fname, "a scenario file is a mapping with `scenario:` and `steps:` "
                                   "(or a list under `scenarios:`)")
    out, names = [], set()
    for i, item in enumerate(items, 1):
        sc = _scenario(fname, item, i)
        if sc.name in names:
            raise ScenarioError(fname, f"two scenarios are named {sc.name!r}; names must be unique")
        names.add(sc.name)
        out.append(sc)
    return out


def _scenario(fname: str, item: Any, index: int) -> Scenario:
    if not isinstance(item, dict):
        raise ScenarioError(fname, f"scenario #{index} is not a mapping")
    name = item.get("scenario")
    if not isinstance(name, str) or not name:
        raise ScenarioError(fname, f"scenario #{index} has no `scenario:` name")
    unknown = set(item) - {"scenario", "about", "config", "steps"}
    if unknown:
        raise ScenarioError(fname, f"unknown key(s) {sorted(unknown)}; allowed: scenario, about, config, steps", name)
    config = item.get("config") or {}
    if not isinstance(config, dict):
        raise ScenarioError(fname, "`config:` must be a mapping of Kafka config keys", name)
    for k, v in config.items():
        if k not in CONFIG_DEFAULTS:
            raise ScenarioError(fname, f"unknown config key {k!r}; known: {', '.join(CONFIG_DEFAULTS)}", name)
        if not isinstance(v, int) or isinstance(v, bool):
            raise ScenarioError(fname, f"config {k} must be an integer, got {v!r}", name)
    steps = item.get("steps")
    if not isinstance(steps, list) or not steps:
        raise ScenarioError(fname, "`steps:` must be a non-empty list", name)
    sc = Scenario(fname, name, str(item.get("about") or ""), config)
    ids: set[str] = set()
    for n, raw in enumerate(steps, 1):
        sc.steps.append(_step(fname, name, n, raw, ids))
    return sc


def _step(fname: str, name: str, n: int, raw: Any, ids: set[str]) -> Step:
    def err(msg):
        return ScenarioError(fname, msg, name, n)
    if not isinstance(raw, dict):
        raise err("a step is a mapping with one of: " + ", ".join(STEP_KINDS))
    kinds = [k for k in STEP_KINDS if k in raw]
    if len(kinds) != 1:
        raise err(f"a step has exactly one of {', '.join(STEP_KINDS)}; found {kinds or sorted(raw)}")
    kind = kinds[0]
    if kind == "send":
        api = raw["send"]
        if api not in APIS:
            raise err(f"unknown API {api!r}; known: {', '.join(APIS)}")
        rid = raw.get("id")
        if not isinstance(rid, str) or not rid:
            raise err("a `send` step needs an `id` naming its request")
        if rid in ids:
            raise err(f"request id {rid!r} is used twice")
        ids.add(rid)
        unknown = set(raw) - {"send", "id"} - REQUEST_FIELDS[api]
        if unknown:
            raise err(f"{api} has no field(s) {sorted(unknown)}; allowed: {', '.join(sorted(REQUEST_FIELDS[api]))}")
        if api not in ("ListGroups", "DescribeGroups", "DeleteGroups") and "group" not in raw:
            raise err(f"{api} needs a `group`")
        for k in ("session_timeout_ms", "rebalance_timeout_ms", "generation", "version"):
            if k in raw and not _is_int_or_var(raw[k]):
                raise err(f"`{k}` must be an integer, got {raw[k]!r}")
    elif kind == "expect":
        rid = raw["expect"]
        if rid not in ids:
            raise err(f"`expect: {rid}` names no earlier request (send one with `id: {rid}` first)")
        unknown = set(raw) - {"expect", "pending"} - RESPONSE_FIELDS
        if unknown:
            raise err(f"responses have no field(s) {sorted(unknown)}; allowed: pending, "
                      + ", ".join(sorted(RESPONSE_FIELDS)))
        if "error" in raw:
            _check_errors(raw["error"], err)
        for k in ("errors",):
            if isinstance(raw.get(k), list):
                for e in raw[k]:
                    _check_errors(e, err)
            elif isinstance(raw.get(k), dict):
                for e in raw[k].values():
                    _check_errors(e, err)
    elif kind == "advance_ms":
        v = raw["advance_ms"]
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise err(f"advance_ms must be a whole number ≥ 0, got {v!r}")
    elif kind == "storage":
        v = raw["storage"]
        if not isinstance(v, dict) or len(v) != 1 or next(iter(v)) not in ("hold", "complete", "fail_next_append"):
            raise err("storage is one of {hold: true}, {complete: NONE|<ERROR>}, {fail_next_append: <ERROR>}")
        key, val = next(iter(v.items()))
        if key in ("complete", "fail_next_append"):
            _check_errors(val, err)
    elif kind == "coordinator":
        v = raw["coordinator"]
        if isinstance(v, dict):
            if set(v) != {"mark_dead"}:
                raise err("coordinator events: unload, begin_load, load, expire_offsets, {mark_dead: <group>}")
        elif v not in COORDINATOR_EVENTS:
            raise err(f"unknown coordinator event {v!r}; known: {', '.join(COORDINATOR_EVENTS)}, {{mark_dead: <group>}}")
    elif kind == "snapshot":
        unknown = set(raw) - {"snapshot"} - SNAPSHOT_FIELDS
        if unknown:
            raise err(f"snapshots have no field(s) {sorted(unknown)}; allowed: {', '.join(sorted(SNAPSHOT_FIELDS))}")
        st = raw.get("state")
        for s in _alternatives(st):
            if s is not None and s not in STATE_NAMES:
                raise err(f"unknown state {s!r}; states: {', '.join(STATE_NAMES)} (or null)")
    elif kind == "assign":
        if raw["assign"] not in ("range", "roundrobin"):
            raise err(f"unknown assignor {raw['assign']!r}; known: range, roundrobin")
        for k in ("partitions", "subscriptions", "result"):
            if not isinstance(raw.get(k), dict):
                raise err(f"`assign` needs `{k}` as a mapping")
    return Step(n, kind, raw)


def _is_int_or_var(v) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, str) and v.startswith("$"))


def _alternatives(v):
    if isinstance(v, dict) and "any_of" in v:
        return list(v["any_of"])
    if isinstance(v, dict) and "not" in v:
        return [v["not"]]
    return [v]


def _check_errors(v, err) -> None:
    for e in _alternatives(v):
        if isinstance(e, str) and not e.startswith("$") and e not in ERRORS:
            raise err(f"unknown error name {e!r} (Kafka's Errors names, e.g. NONE, ILLEGAL_GENERATION)")
