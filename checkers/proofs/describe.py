"""Counterexamples to induction as a reader sees them: values of a Z3 model in the spec's words, and a
scenario fragment that steps from the state before to the state after."""
from __future__ import annotations


import z3

from groupspec.spec.lang import NONE, Type
from groupspec.spec.schema import PARAM_TYPES, STATE_VARS, TRIGGER_BY_NAME
from .results import CTI
from groupspec.spec.lang import default_of

# member ids and other elements as a scenario writes them
_PREFIX = {"Member": "m", "Instance": "i", "Partition": "t0-", "Protocol": "proto", "ProtoList": "protos",
           "ProtocolType": "ptype"}


class ModelValues:
    """Values of a Z3 model in the spec's words: elements named m0, m1, ... (none: None)."""

    def __init__(self, model, reading):
        self.m, self.rd = model, reading
        self.names: dict = {}

    def elem(self, v, dom: str):
        if self.rd.sizes:
            i = self.m.eval(v, model_completion=True).as_long()
            return None if i == NONE else f"{_PREFIX[dom]}{i}"
        e = self.m.eval(v, model_completion=True)
        if e.eq(self.m.eval(self.rd.sorts.none[dom], model_completion=True)):
            return None
        return self._name(e, dom)

    def _name(self, e, dom: str) -> str:
        key = (dom, e.sexpr())
        if key not in self.names:
            self.names[key] = f"{_PREFIX[dom]}{sum(1 for d, _ in self.names if d == dom)}"
        return self.names[key]

    def universe(self, dom: str) -> list:
        if self.rd.sizes:
            return [z3.IntVal(i) for i in range(self.rd.sizes[dom])]
        srt = self.rd.sorts.sort[dom]
        u = self.m.get_universe(srt) or []
        none = self.m.eval(self.rd.sorts.none[dom], model_completion=True)
        return [e for e in u if not e.eq(none)]

    def value(self, v, t: Type):
        k = t.kind
        if k == "bool":
            return z3.is_true(self.m.eval(v, model_completion=True))
        if k == "int":
            return self.m.eval(v, model_completion=True).as_long()
        if k == "enum":
            i = self.m.eval(v, model_completion=True).as_long()
            return t.values[i] if 0 <= i < len(t.values) else i
        if k == "dom":
            return self.elem(v, t.name)
        if k == "record":
            return {f: self.value(x, ft) for f, x, ft in zip(t.values, v, t.args)}
        if k == "set":
            if self.rd.sizes:
                mask = self.m.eval(v, model_completion=True).as_long()
                return [f"{_PREFIX[t.key]}{i}" for i in range(self.rd.sizes[t.key]) if mask >> i & 1]
            return sorted(self.elem(e, t.key) for e in self.universe(t.key)
                          if z3.is_true(self.m.eval(z3.Select(v, e), model_completion=True)))
        if k == "map":
            out = {}
            for i, e in enumerate(self.universe(t.key)):
                x = v[i] if self.rd.sizes else z3.Select(v, e)
                val = self.value(x, t.value)
                if val != _plain_default(t.value):
                    out[self.elem(e, t.key) if not self.rd.sizes else f"{_PREFIX[t.key]}{i}"] = val
            return out
        return str(v)


def _plain_default(t: Type):
    if t.kind == "set":
        return []
    if t.kind == "dom":
        return None
    if t.kind == "enum":
        return t.values[0]
    return default_of(t)


def _initial(v) -> object:
    if v.type.kind == "map":
        return {}
    if v.type.kind == "set":
        return []
    if v.type.kind == "dom":
        return None
    if v.type.kind == "enum":
        return v.type.values[v.initial]
    return v.initial


def describe_cti(inv, c, model, reading: str):
    mv = ModelValues(model, c.rd)
    pre = {v.name: mv.value(c.state[v.name], v.type) for v in STATE_VARS}
    post = {v.name: mv.value(c.post[v.name], v.type) for v in STATE_VARS}
    first = c.spec[0]
    trig = TRIGGER_BY_NAME[first.trigger]
    params = shown_params(mv, c)
    shown_pre = {k: v for k, v in pre.items() if v != _initial(_var(k)) or k in ("state", "generation")}
    changed = {k: v for k, v in post.items() if v != pre[k]}
    then = f", then its append completes: row {c.row.name!r}" if len(c.spec) == 3 else ""
    words = (f"Before: {_kv(shown_pre)}. Row {first.name!r} fires ({trig.name}: {_kv(params) or 'no parameters'}){then}. "
             f"After: {_kv(changed) or 'nothing changes'}. Then {inv.name} fails: {inv.meaning}")
    return CTI(c.name, reading, pre, params, post, words, scenario_fragment(first, pre, params, post),
               sorted(c.approx))


def shown_params(mv: ModelValues, c) -> dict:
    """The parameters of step `c`'s trigger a reader sees (not the functions, nor the configuration)."""
    trig = TRIGGER_BY_NAME[c.spec[0].trigger]
    return {n: mv.value(c.params[n], PARAM_TYPES[n]) for n in trig.params
            if PARAM_TYPES[n].kind != "fun" and not n.startswith("cfg_")}


def _var(name: str):
    return next(v for v in STATE_VARS if v.name == name)


def _kv(d: dict) -> str:
    return ", ".join(f"{k}={_show(v)}" for k, v in d.items())


def _show(v) -> str:
    if isinstance(v, list):
        return "{" + ", ".join(map(str, v)) + "}"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_show(x)}" for k, x in v.items()) + "}"
    return "none" if v is None else str(v)


_SNAPSHOT = {"state": "state", "generation": "generation", "leader": "leader", "protocol": "protocol",
             "protocol_type": "protocol_type", "members": "members", "pending": "pending_members"}


def snapshot(state: dict) -> list[str]:
    lines = ["- snapshot: g"]
    st = state["state"]
    lines.append(f"  state: {'null' if st == 'Absent' else st}")
    for k, key in _SNAPSHOT.items():
        if k == "state":
            continue
        v = state[k]
        lines.append(f"  {key}: {_yaml(v)}")
    if state.get("assignment"):
        lines.append("  assignment: {" + ", ".join(f"{m}: {_yaml(p)}" for m, p in state["assignment"].items()) + "}")
    return lines


def _yaml(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(map(str, v)) + "]"
    return "null" if v is None else str(v)


_COORD_EVENT = {"Load": "load", "Unload": "unload", "ExpireOffsets": "expire_offsets",
                "MarkDead": "{mark_dead: g}"}
_API = {"JoinGroup": "JoinGroup", "SyncGroup": "SyncGroup", "Heartbeat": "Heartbeat", "LeaveGroup": "LeaveGroup",
        "OffsetCommit": "OffsetCommit", "OffsetFetch": "OffsetFetch", "DescribeGroup": "DescribeGroups",
        "ListGroups": "ListGroups", "ListGroupsEntry": "ListGroups", "DeleteGroup": "DeleteGroups"}


def scenario_fragment(row, pre: dict, params: dict, post: dict) -> str:
    """The counterexample as steps of a conformance scenario: the state before as a snapshot
    (a fragment: no path to that state is claimed), the event that fires the row, the state after."""
    lines = [f"# counterexample to induction: row {row.name!r}",
             "# a fragment: the state before is a snapshot, no path to it is claimed"]
    return "\n".join(lines + snapshot(pre) + event_lines(row, params) + snapshot(post))


def event_lines(row, params: dict) -> list[str]:
    """The scenario step that fires `row` with these parameters."""
    lines = []
    trig = row.trigger
    if trig in _API or trig == "LeaveMember":
        lines.append(f"- send: {_API.get(trig, 'LeaveGroup')}")
        lines.append("  group: g")
        if trig == "LeaveMember":
            lines.append("  members: [{member: " + _yaml(params.get("member") or "") + "}]")
        elif "member" in params:
            lines.append(f"  member: {_yaml(params['member'] or '')!s}".replace("null", '""'))
        if params.get("instance"):
            lines.append(f"  instance: {params['instance']}")
        if "generation" in params:
            lines.append(f"  generation: {params['generation']}")
        if trig == "SyncGroup" and params.get("assignments"):
            lines.append("  assignments: {" + ", ".join(f"{m}: {_yaml(p)}"
                                                        for m, p in params["assignments"].items()) + "}")
    elif trig in _COORD_EVENT:
        lines.append(f"- coordinator: {_COORD_EVENT[trig]}")
    elif trig in ("StoreGroupDone", "StoreOffsetsDone"):
        lines.append(f"- storage: {{complete: {params.get('error', 'NONE')}}}")
    elif trig == "CompleteJoin":
        lines.append("# (the eager re-check of the pending join, after the previous request)")
    else:
        lines.append(f"- advance_ms: 0   # the {trig} timer fires"
                     + (f" for {params['timer_member']}" if params.get("timer_member") else ""))
    return lines
