"""Counterexamples three ways: ITF JSON, a readable step table, a Mermaid sequence diagram.

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

from .world_model import WorldModel


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
