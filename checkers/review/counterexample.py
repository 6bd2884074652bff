"""Counterexamples three ways: ITF JSON, a readable step table, a Mermaid sequence diagram; and, for a
reviewer, every step in Kafka's terms (`kafka_view`, rendered by walkthrough.py): the group's state,
generation, leader, members and assignment, and each consumer's phase, member id, partitions and request in flight, as rendered values
with what the step changed marked, the rows that decided it with their Kafka source, and the state at
the step that breaks the invariant.

ITF is the Informal Trace Format of Apalache and Quint
(https://apalache-mc.org/docs/adr/015adr-trace.html): `vars`, and `states`,
each a mapping of variable to value, with sets as {"#set": [...]}, maps as
{"#map": [[k, v], ...]}, tuples as {"#tup": [...]} and records as objects.
"""
from __future__ import annotations

import json

from groupspec.spec.kafka import ERRORS
from groupspec.spec.concrete import iter_bits
from groupspec.spec.lang import NONE
from groupspec.spec.world import ALL_VARS

from groupspec.checkers.review import walkthrough as W
from groupspec.checkers.world.state_space import WorldModel


def _name(dom: str, i: int, model: WorldModel):
    if i == NONE:
        return None
    if dom == "Member":
        return f"m{i}"
    if dom == "Client":
        return f"c{i}"
    if dom == "Partition":
        per = model.cfg.partitions
        return f"t{i // per}-{i % per}"
    return f"{dom.lower()}{i}"


def itf_value(t, v, model: WorldModel):
    k = t.kind
    if k == "bool":
        return bool(v)
    if k == "int":
        return v if abs(v) < 2 ** 53 else {"#bigint": str(v)}
    if k == "enum":
        return ERRORS[v] if t.name == "Error" else t.values[v]
    if k == "dom":
        return _name(t.name, v, model) or ""
    if k == "set":
        return {"#set": [_name(t.key, i, model) for i in iter_bits(v)]}
    if k == "map":
        return {"#map": [[_name(t.key, i, model), itf_value(t.value, x, model)] for i, x in enumerate(v)]}
    if k == "record":
        return {f: itf_value(ft, x, model) for f, ft, x in zip(t.values, t.args, v)}
    return repr(v)


def to_itf(path: list, model: WorldModel, violation: str, source: str = "groupspec check") -> dict:
    names = [v.name for v in ALL_VARS if not v.name.startswith("scratch_")]
    states = []
    for i, (step, s) in enumerate(path):
        st = {"#meta": {"index": i, "action": step.action if step else "init",
                        "rows": list(step.rows) if step else []}}
        for v, val in zip(ALL_VARS, s):
            if v.name in names:
                st[v.name] = itf_value(v.type, val, model)
        states.append(st)
    return {"#meta": {"format": "ITF", "source": source, "violation": violation,
                      "description": "a shortest path from the initial state to the violation"},
            "vars": names, "states": states}


def step_table(path: list, model: WorldModel) -> list[dict]:
    """Each step: what happened, the rows that decided it, and the variables it changed."""
    out = []
    prev = None
    for i, (step, s) in enumerate(path):
        changes = {}
        if prev is not None:
            for v, a, b in zip(ALL_VARS, prev, s):
                if a != b and not v.name.startswith("scratch_"):
                    changes[v.name] = json.dumps(itf_value(v.type, b, model), separators=(",", ":"))
        out.append({"step": i, "action": step.action if step else "initial state",
                    "rows": list(step.rows) if step else [], "changes": changes})
        prev = s
    return out


def mermaid(path: list, model: WorldModel, violation: str, loop_start: int = -1) -> str:
    lines = ["sequenceDiagram"]
    for c in range(model.cfg.clients):
        lines.append(f"    participant c{c} as client c{c}")
    lines.append("    participant coordinator as coordinator")
    for k, (step, s) in enumerate(path):
        if k == loop_start + 1 and loop_start >= 0:
            lines.append("    Note over coordinator: the loop starts here and repeats forever")
        if step is None:
            continue
        if step.messages:
            for src, dst, label in step.messages:
                lines.append(f"    {src}->>{dst}: {label}")
        else:
            who = step.action.split(":", 1)[0] if step.action.startswith("c") and ":" in step.action else \
                "coordinator"
            what = step.action.split(": ", 1)[-1]
            lines.append(f"    Note over {who}: {what}")
    lines.append(f"    Note over coordinator: violates {violation}")
    return "\n".join(lines) + "\n"


def violation_meaning(violation: str) -> str:
    """What a violated property means, from the invariant catalogs (or what the checker's own verdicts mean)."""
    from groupspec.spec.invariants import INVARIANTS
    from groupspec.spec.world import WORLD_INVARIANTS
    for inv in (*INVARIANTS, *WORLD_INVARIANTS):
        if inv.name == violation:
            return inv.meaning
    return {"deadlock": "a state where nothing can happen while some client has not stopped"}.get(
        violation.split(":", 1)[0], violation)


# -- the counterexample in Kafka's terms -------------------------------------------------------------
# What a reviewer reads of the group at each step (the group's variable, its label: walkthrough's, the same
# a coordinator's snapshot is shown with) and of each consumer (a client variable, or several read together,
# and what it is called).
GROUP_VIEW = (("state", W.STATE), ("generation", W.GENERATION), ("leader", W.LEADER), ("members", W.MEMBERS),
              ("pending", W.PENDING), ("awaiting_join", "awaiting JoinGroup"),
              ("pending_sync", "awaiting SyncGroup"), ("static", W.STATIC),
              ("assignment", W.ASSIGNMENT), ("offsets", W.OFFSETS))
CLIENT_VIEW = (("c_phase", "phase"), ("c_member", "member id"), ("c_gen", "generation"), ("c_owned", "owns"),
               (("rq", "rq_member", "rq_gen"), "request in flight"), (("rs", "rs_error"), "response in flight"),
               (("rq_late", "rq_late_member", "rq_late_gen"), "late request"))


def _slot_text(values: list) -> str:
    """A message in flight, by its API: a request with the member id and generation it carries, a response
    with its error."""
    from groupspec.spec.world import MESSAGES
    kind = values[0]
    if kind in ("none", ""):
        return "—"
    api = MESSAGES[kind].api
    if len(values) == 2:                    # a response: its kind and error
        return f"{api} answered {values[1]}"
    member, gen = (W.text(x) for x in values[1:])
    return api + (f" from {member}" if member != "—" else "") + (f", generation {gen}" if gen != "-1" else "")


def kafka_view(path: list, model: WorldModel) -> list[dict]:
    """Each step in Kafka's terms (walkthrough.py's steps): what happened, the rows that decided it, the group
    and each client as rendered values, each marked if the step changed it."""
    index = {v.name: i for i, v in enumerate(ALL_VARS)}
    types = {v.name: v.type for v in ALL_VARS}
    view = []
    for i, (step, s) in enumerate(path):
        def value(name, client=None):
            v = itf_value(types[name], s[index[name]], model)
            return v["#map"][client][1] if client is not None else v
        group = {label: W.text(value(name)) for name, label in GROUP_VIEW}
        clients = []
        for c in range(model.cfg.clients):
            clients.append({label: (_slot_text([value(n, c) for n in name]) if isinstance(name, tuple)
                                    else W.text(value(name, c)).replace("-1", "—")) for name, label in CLIENT_VIEW})
        view.append({"step": i, "action": step.action if step else "initial state",
                     "rows": W.row_links(step.rows if step else ()), "group": group, "clients": clients})
    return W.mark_changes(view)


def kafka_view_md(view: list[dict], violation: str, meaning: str, loop_start: int = -1) -> str:
    """The counterexample as a reviewer's Markdown (a lasso's loop, from `loop_start` on, said where it
    starts)."""
    how = (f"A path from the initial state into a loop that repeats forever (from step {loop_start + 1})."
           if loop_start >= 0 else f"A shortest path from the initial state, {len(view) - 1} steps; the last one "
           "breaks it.")
    return W.to_markdown(view, f"Counterexample: {violation}", meaning, how, f"breaks {violation}", loop_start)
