"""Replaying a trace of the closed world through the explicit checker's world (`groupspec replay`).

A trace is a list of world states: TLC's counterexample (`-dumpTrace json`,
from a module `groupspec export tla` wrote) or an ITF trace (ours,
review/counterexample.py `to_itf`, or any tool's over the same variables).  Each
state is read back into the world model's concrete state, and each step must
be one of the world's own successors (spec/world.py ACTIONS run through the
compiled rows): a step that is not is where the two interpretations part.
The last state is judged by the same invariants `groupspec check` uses.

Whatever the file holds is checked before the world is built from it: the
shape of the trace and of each state, each value's type, every element
within the world's bounds (`Values`), so that a file that is no trace of
this world is one message naming the state and variable (TraceError), not
a departure, a crash, or gigabytes of memory.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from groupspec.spec.invariants import InvariantViolation
from groupspec.spec.kafka import ERRORS, brief
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


# A trace's numbers are Kafka's: 64-bit at most.  Longer digit strings are refused as they are read, before
# Python turns them into numbers (the work grows with the square of their length).
INT_DIGITS = 19
INT_RANGE = (-2**63, 2**63)


def _int(text: str) -> int:
    if len(text.lstrip("-")) > INT_DIGITS:
        raise TraceError(f"the number {text[:12]}… has {len(text.lstrip('-')):,} digits; a trace's numbers are "
                         f"Kafka's, 64-bit at most")
    return int(text)


def load_trace(path: Path) -> tuple[str, list]:
    """("tlc" or "itf", the states as mappings of variables to JSON values), each state's shape checked."""
    try:
        doc = json.loads(path.read_bytes(), parse_int=_int)
    except OSError as e:
        raise TraceError(f"cannot be read ({e.strerror or e})") from None
    except RecursionError:      # the JSON reader descends once per level of nesting
        raise TraceError("not a trace: its JSON is nested thousands of levels deep (a trace nests a few)") from None
    except ValueError as e:     # JSONDecodeError, bytes that are not UTF-8
        raise TraceError(f"not a JSON file ({e})") from None
    if isinstance(doc, dict) and "counterexample" in doc:
        cex = doc["counterexample"]
        states = cex.get("state") if isinstance(cex, dict) else None
        if not isinstance(states, list):
            raise TraceError(f"'counterexample' is {brief(cex)}; TLC's -dumpTrace json has a 'state' list in it")
        for i, pair in enumerate(states):
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], dict)):
                raise TraceError(f"counterexample.state[{i}] is {brief(pair)}; TLC writes each state as "
                                 f"[its number, {{variable: value, ...}}]")
        return "tlc", [st for _, st in states]
    if isinstance(doc, dict) and isinstance(doc.get("states"), list):
        for i, st in enumerate(doc["states"]):
            if not isinstance(st, dict):
                raise TraceError(f"states[{i}] is {brief(st)}; an ITF state is an object of variables")
        return "itf", doc["states"]
    raise TraceError("neither a TLC trace (-dumpTrace json: a 'counterexample' with its 'state' list) nor an ITF "
                     "trace (a 'states' list)")


class Values:
    """Reads a state's JSON values into the world model's concrete values, each checked against the world
    before anything is built from it: an element of a finite domain is within the world's bounds (a set is
    a bit mask as wide as its largest element: a member m100000000000 would take gigabytes), a number is
    64-bit, a map gives each key of its domain once."""

    def __init__(self, cfg, sizes: dict):
        self.sizes = sizes
        self.topics, self.per = cfg.topics, cfg.partitions

    def value(self, v, t: Type):
        k = t.kind
        if k == "bool":
            if not isinstance(v, bool):
                raise TraceError(f"{brief(v)} is not a boolean")
            return v
        if k == "int":
            return self.integer(v)
        if k == "enum":
            names = ERRORS if t.name == "Error" else t.values
            if not isinstance(v, str) or v not in names:
                raise TraceError(f"{brief(v)} is not a value of {t.name} ({_some(names)})")
            return names.index(v)
        if k == "dom":
            return self.element(v, t.name, none=True)
        if k == "set":
            items = v.get("#set") if isinstance(v, dict) else v
            if not isinstance(items, list):
                raise TraceError(f"{brief(v)} is not a set (a list, or ITF's {{\"#set\": [...]}})")
            mask = 0
            for x in items:
                mask |= 1 << self.element(x, t.key)
            return mask
        if k == "map":
            return self.mapping(v, t)
        if k == "record":
            if not isinstance(v, dict):
                raise TraceError(f"{brief(v)} is not a record of {', '.join(t.values)}")
            missing = [f for f in t.values if f not in v]
            if missing:
                raise TraceError(f"the record has no field {missing[0]}")
            return tuple(self.value(v[f], ft) for f, ft in zip(t.values, t.args))
        raise TraceError(f"no value of {t!r}")

    def integer(self, v) -> int:
        if isinstance(v, dict) and set(v) == {"#bigint"} and isinstance(v["#bigint"], str) \
                and re.fullmatch(r"-?\d{1,%d}" % INT_DIGITS, v["#bigint"]):
            v = int(v["#bigint"])
        if not isinstance(v, int) or isinstance(v, bool):
            raise TraceError(f"{brief(v)} is not an integer")
        if not INT_RANGE[0] <= v < INT_RANGE[1]:
            raise TraceError(f"{v} is out of range (a trace's numbers are Kafka's, 64-bit at most)")
        return v

    def element(self, v, dom: str, none: bool = False) -> int:
        """An element as TLC writes it (an index, or its name for a client, c<i>) or ITF does (m<i>, c<i>,
        t<topic>-<partition>, <domain><i>); "", -1 and null are no element (NONE), where that may be."""
        n = self.sizes[dom]
        if v in ("", -1, None) and not isinstance(v, bool):
            if none:
                return NONE
            raise TraceError(f"{brief(v)} (no element) where an element of {dom} is needed")
        i = None
        if isinstance(v, int) and not isinstance(v, bool):
            i = v
        elif isinstance(v, str):
            m = re.fullmatch(r"t(\d+)-(\d+)", v) if dom == "Partition" else None
            if m:
                topic, part = _index(m.group(1)), _index(m.group(2))
                if topic < self.topics and part < self.per:
                    return topic * self.per + part
                raise TraceError(f"{brief(v)} is out of range: this world has topics t0 to t{self.topics - 1}, "
                                 f"each of partitions 0 to {self.per - 1}")
            m = re.fullmatch(r"(%s)?(\d+)" % re.escape(_PREFIX.get(dom, dom.lower())), v)
            if m:
                i = _index(m.group(2))
        if i is None:
            raise TraceError(f"{brief(v)} is not an element of {dom} (written {_name(dom, 0)} to "
                             f"{_name(dom, n - 1)}, or 0 to {n - 1})")
        if not 0 <= i < n:
            raise TraceError(f"{brief(v)} is out of range: this world's {dom} has {n} element{'s' * (n > 1)}, "
                             f"{_name(dom, 0)} to {_name(dom, n - 1)}")
        return i

    def mapping(self, v, t: Type) -> tuple:
        """A total function over the key's domain: ITF's {"#map": [[key, value], ...]}, or TLC's object of
        keys."""
        if isinstance(v, dict) and "#map" in v:
            pairs = v["#map"]
            if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
                raise TraceError(f"{brief(v)} is not a map: ITF's #map is a list of [key, value] pairs")
        elif isinstance(v, dict):
            pairs = list(v.items())
        else:
            raise TraceError(f"{brief(v)} is not a map (an object of keys, or ITF's {{\"#map\": [[key, value], "
                             f"...]}})")
        n = self.sizes[t.key]
        out: list = [None] * n
        for key, x in pairs:
            i = self.element(key, t.key)
            if out[i] is not None:
                raise TraceError(f"the map gives key {_name(t.key, i)} twice")
            out[i] = self.value(x, t.value)
        if None in out:
            raise TraceError(f"the map gives no value for key {_name(t.key, out.index(None))} (this world's "
                             f"{t.key} has {n}: each needs one)")
        return tuple(out)


_PREFIX = {"Member": "m", "Client": "c"}


def _index(digits: str) -> int:
    """An element's index as written; one of more digits than any world's bound has is out of range as it
    stands (not turned into a number: thousands of digits take long, and Python refuses more)."""
    return int(digits) if len(digits) <= 9 else 10**9


def _name(dom: str, i: int) -> str:
    return f"{_PREFIX.get(dom, dom.lower())}{i}"


def _some(names) -> str:
    return ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")


def replay(model: WorldModel, states: list[dict]) -> Replay:
    """Follow the trace (the states `load_trace` read) through the world model's own successors."""
    if not states:
        raise TraceError("the trace has no state")
    values = Values(model.cfg, model.sizes)
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
                row.append(values.value(st[v.name], v.type))
            except TraceError as e:
                raise TraceError(f"state {i}, variable {v.name}: {e}") from None
        flat.append(tuple(row))
    res = Replay(states=len(flat))
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
