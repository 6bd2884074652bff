"""Replaying a trace of the closed world through the explicit checker's world (`groupspec replay`).

A trace is a list of world states: TLC's counterexample (`-dumpTrace json`,
from a module `groupspec export tla` wrote) or an ITF trace (ours,
review/counterexample.py `to_itf`, or any tool's over the same variables).  Each
state is read back into the world model's concrete state, and each step must
be one of the world's own successors (spec/world.py ACTIONS run through the
compiled rows): a step that is not is where the two interpretations part.
The last state is judged by the same invariants `groupspec check` uses.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from groupspec.spec.invariants import InvariantViolation
from groupspec.spec.kafka import ERRORS
from groupspec.spec.lang import NONE, Type
from groupspec.spec.world import ALL_VARS

from .state_space import WorldModel


class TraceError(ValueError):
    """The file is not a trace of this world (the message says where and why)."""


@dataclass
class Replay:
    steps: list = field(default_factory=list)    # the action of each step, as the world model names it
    departs: int = -1                             # the first step that is no successor (-1: none)
    violation: str | None = None                  # the invariant the last state (or step) breaks
    states: int = 0


def load_trace(path: Path) -> tuple[str, list[dict]]:
    """("tlc" or "itf", the states as mappings of variables to JSON values)."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise TraceError(f"{path}: not a JSON file ({e})") from None
    if isinstance(doc, dict) and "counterexample" in doc:
        return "tlc", [s for _, s in doc["counterexample"]["state"]]
    if isinstance(doc, dict) and isinstance(doc.get("states"), list):
        return "itf", doc["states"]
    raise TraceError(f"{path}: neither a TLC trace (-dumpTrace json: a 'counterexample' with its 'state' list) "
                     f"nor an ITF trace (a 'states' list)")


def _element(v, dom: str, per: int) -> int:
    """An element as TLC writes it (an index; a client c<i>) or ITF (m<i>, c<i>, t<topic>-<partition>)."""
    if v in (None, "", -1):
        return NONE
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, str):
        m = re.fullmatch(r"t(\d+)-(\d+)", v) if dom == "Partition" else None
        if m:
            return int(m.group(1)) * per + int(m.group(2))
        m = re.fullmatch(r"-?\d+|[a-z]*(\d+)", v)
        if m:
            return int(m.group(1) or m.group(0)) if int(m.group(1) or m.group(0)) >= 0 else NONE
    raise TraceError(f"{v!r} is not an element of {dom}")


def _items(v, fmt: str) -> list:
    if fmt == "itf":
        if isinstance(v, dict) and "#set" in v:
            return v["#set"]
        if isinstance(v, dict) and "#map" in v:
            return v["#map"]
    return v


def value(v, t: Type, fmt: str, size: dict, per: int):
    """A JSON value of TLC's or ITF's as the world model's concrete value of type t."""
    k = t.kind
    if k == "bool":
        return bool(v)
    if k == "int":
        return int(v["#bigint"]) if isinstance(v, dict) else int(v)
    if k == "enum":
        names = ERRORS if t.name == "Error" else t.values
        if v not in names:
            raise TraceError(f"{v!r} is not a value of {t.name}")
        return names.index(v)
    if k == "dom":
        return _element(v, t.name, per)
    if k == "set":
        return sum(1 << _element(x, t.key, per) for x in _items(v, fmt))
    if k == "map":
        pairs = _items(v, fmt)
        pairs = pairs.items() if isinstance(pairs, dict) else pairs
        out = [None] * size[t.key]
        for key, x in pairs:
            out[_element(key, t.key, per)] = value(x, t.value, fmt, size, per)
        return tuple(out)
    if k == "record":
        return tuple(value(v[f], ft, fmt, size, per) for f, ft in zip(t.values, t.args))
    raise TraceError(f"no value of {t!r}")


def replay(model: WorldModel, fmt: str, states: list[dict]) -> Replay:
    """Follow the trace through the world model's own successors."""
    sizes = model.sizes
    blank = model.flat(model.init_states()[0])
    flat = []
    for i, st in enumerate(states):
        row = []
        for v, b in zip(ALL_VARS, blank):
            if v.name not in st:
                if v.name.startswith("scratch_"):      # ITF leaves out what is unset between steps
                    row.append(b)
                    continue
                raise TraceError(f"state {i}: no variable {v.name}")
            try:
                row.append(value(st[v.name], v.type, fmt, sizes, model.cfg.partitions))
            except (TypeError, KeyError, ValueError) as e:
                raise TraceError(f"state {i}, variable {v.name}: {e}") from None
        flat.append(tuple(row))
    res = Replay(states=len(flat))
    if not flat:
        raise TraceError("the trace has no state")
    if flat[0] != blank:
        res.departs = 0
        return res
    cur = model.init_states()[0]
    for i, want in enumerate(flat[1:], 1):
        try:
            succ, _ = model.successors(cur)
        except InvariantViolation as e:
            res.violation = e.invariant.name
            return res
        nxt = next(((step, s2) for step, s2 in succ if model.flat(s2) == want), None)
        if nxt is None:
            res.departs = i
            return res
        res.steps.append(nxt[0].action)
        cur = nxt[1]
    res.violation = model.violated(cur)
    return res
