"""Checking a partial trace (only `observe` records, as read from a broker's log).

What a log shows is a few of the group's moves, not their causes.  The checker
tracks the set of spec states consistent with what was observed so far, at the
level a log can show: (state, generation), the generation unknown (None) until
a line names it; a log excerpt may start anywhere, so at first every state is
possible.  The moves come from the table, not from rules about log lines:

- every row of `spec/table.py` gives abstract moves: from each state it applies
  in to its target (or the same state), the generation bumped when its update of
  `generation` adds one (read by evaluating the row's own term), set from the
  observation when it comes from the log (Load), unchanged otherwise;
- an observed event is explained by the rows whose *effect* is that event
  (EVENT_ROWS: entering PreparingRebalance, PreparingRebalance to
  CompletingRebalance, a SyncGroup row that appends the group, ...), found by
  reading each row's moves, updates and outputs;
- between two observations any number of *silent* rows may fire, up to
  MAX_SILENT: rows none of whose effects Kafka logs at INFO in every version
  (the move to Stable when the assignment is stored, heartbeats, commits, a
  member's JoinGroup that parks).  A row with a logged effect can not fire
  unobserved, so a log that skips a rebalance (a generation jump, a
  `Stabilized` with no `Preparing to rebalance` before it) is a violation;
- events Kafka logs in some versions only, or at DEBUG (member added, member
  left, fenced), are checked as constraints: some row with that effect applies
  in a possible state; they do not move the state;
- a broker that crashes logs nothing more, so the Unload of the groups it held
  fires unobserved (_crashed: where, and why only there);
- a `gap` record (lines an excerpt left out, kafka_log.py) is a stretch of
  history nobody saw: anything may have happened, so after it every state is
  possible again, as at the start of the excerpt.

This is an over-approximation (guards are not evaluated over the unknown rest
of the state), so it raises no false alarm on a real history; what it catches
is a sequence of logged moves the table cannot produce.
"""
from __future__ import annotations

from dataclasses import dataclass

from groupspec.spec import engine as E
from groupspec.spec.concrete import compile_term
from groupspec.spec.rows import Out, Set_
from groupspec.spec.lang import show
from groupspec.spec.schema import STATES
from groupspec.spec.table import ROWS

MAX_SILENT = 4          # unobserved rows allowed between two observations (the abstract closure is reached
                        # within 2: Absent -> Empty, CompletingRebalance -> Stable)
HELD = tuple(s for s in STATES if s != "Absent")


@dataclass(frozen=True)
class Move:
    row: str
    src: str
    dst: str
    gen: str             # "same", "inc", "set"
    events: frozenset


def _gen_effect(row) -> str:
    if row.trigger == "Load":
        return "set"
    sizes = {d: 1 for d in ("member", "partition", "instance", "protocol", "protolist", "ptype")}
    for st in row.steps:
        if isinstance(st, Set_) and "generation" in st.updates:
            try:
                f = compile_term(st.updates["generation"], E.LAYOUT)
                got = []
                for g in (7, 11):
                    state = list(E.initial_state({**sizes, **{k: 1 for k in _domain_keys()}}))
                    state[E.STATE_INDEX["generation"]] = g
                    got.append(f(tuple(state), E.make_params({}), ()))
            except Exception:  # noqa: BLE001 - a term that reads more than the generation: set from outside
                return "set"
            if got == [8, 12]:
                return "inc"
            if got == [7, 11]:
                return "same"
            if got[0] == got[1] and isinstance(got[0], int):
                return f"const:{got[0]}"      # the group is forgotten: back to the initial generation
            return "set"
    return "same"


def _domain_keys():
    from groupspec.spec.schema import STATE_VARS
    return {v.type.key for v in STATE_VARS if v.type.kind == "map"}


def _updates(row) -> set:
    return {k for st in row.steps if isinstance(st, Set_) for k in st.updates}


def _outputs(row) -> list[Out]:
    return [st for st in row.steps if isinstance(st, Out)]


def _events(row, src: str, dst: str, path: tuple) -> set:
    """The effects of a row, as a log can show them."""
    ev = set()
    hops = list(zip(path, path[1:]))
    if any(b == "PreparingRebalance" and a != "PreparingRebalance" for a, b in hops):
        ev.add("rebalance-start")
    if ("PreparingRebalance", "CompletingRebalance") in hops:
        ev.add("join-complete")
    if ("PreparingRebalance", "Empty") in hops:
        ev.add("empty")
    if row.trigger == "SyncGroup" and src == "CompletingRebalance" and any(o.kind == "append" for o in _outputs(row)):
        ev.add("leader-sync")
    if row.trigger == "Load" and src == "Absent" and dst != "Absent":
        ev.add("loaded")
    if row.trigger == "Unload" and src != "Absent":
        ev.add("unloaded")
    if row.trigger not in ("Unload",) and (any(b == "Dead" for a, b in hops) or
                                          (src in HELD and dst == "Absent")):
        ev.add("dead")
    ups = _updates(row)
    if row.trigger in ("HeartbeatExpiry", "PendingExpiry", "SyncTimer") and ups & {"members", "pending"}:
        ev.add("member-removed")
    if row.trigger == "LeaveMember" and ups & {"members", "pending"}:
        ev.add("member-left")
    if row.trigger == "JoinGroup" and "members" in ups:
        ev.add("member-added")
    if any("FENCED_INSTANCE_ID" in show(v) for o in _outputs(row) for v in o.fields.values() if hasattr(v, "op")):
        ev.add("fenced")
    return ev


# what a log at INFO always shows when it happens (Kafka 0.11 and later)
LOGGED = frozenset({"rebalance-start", "join-complete", "empty", "leader-sync", "loaded", "unloaded", "dead",
                    "member-removed"})
# what some versions or levels show: checked as a constraint, no move
CONSTRAINTS = frozenset({"member-left", "member-added", "fenced"})


def _moves() -> list[Move]:
    out = []
    for r in ROWS:
        gen0 = _gen_effect(r)
        for s in r.states:
            gen = "same" if gen0 == "set" and r.trigger == "Load" and s != "Absent" else gen0
            dst = r.target or s
            path = (s,) + r.via + ((r.target,) if r.target else ())
            out.append(Move(r.name, s, dst, gen, frozenset(_events(r, s, dst, path))))
    return out


MOVES = _moves()
SILENT = [m for m in MOVES if not (m.events & LOGGED) and (m.src != m.dst or m.gen != "same")]
EVENT_ROWS = {ev: [m for m in MOVES if ev in m.events] for ev in LOGGED | CONSTRAINTS}
UNLOADS = EVENT_ROWS["unloaded"]


def _apply(m: Move, gen, observed):
    if m.gen == "inc":
        return None if gen is None else gen + 1
    if m.gen == "set":
        return observed
    if m.gen.startswith("const:"):
        return int(m.gen[6:])
    return gen


def _closure(states: set) -> set:
    out, frontier = set(states), set(states)
    for _ in range(MAX_SILENT):
        nxt = set()
        for (s, g, _owed) in frontier:
            for m in SILENT:
                if m.src == s:
                    t = (m.dst, _apply(m, g, None), NOTHING)
                    if t not in out:
                        nxt.add(t)
        if not nxt:
            break
        out |= nxt
        frontier = nxt
    return out


def _gen_before(ev: str) -> bool:
    """Whether a log line's generation is the one before the event (unload, rebalance start: the
    generation in force)."""
    return ev in ("unloaded", "rebalance-start", "leader-sync", "member-removed", "member-left", "dead")


NOTHING = frozenset()


# Where an Unload may fire unobserved (step()).  Kafka logs "Unloading group metadata" when a broker
# gives up an offsets partition in order; a broker that crashes (killed, out of memory, its host
# gone) writes nothing more, and its groups leave it without a line.  The log can show that this
# happened only by what comes next of the group: a Loading line (the broker that took the
# partition over, or the crashed one restarted, loads what was stored), or a line of another
# broker (a group that had stored nothing has nothing to load: it starts afresh there, at
# generation 0).  So the Unload rows' moves may fire unseen before a `loaded` observation, and
# before an observation from another source than the group's last one; nowhere else, since a
# broker that still runs logs its Unloading, and a missing one there is a violation.  This admits
# a Loading line for a group its broker still holds (a double load): a restart in between cannot
# be told from the log, and the checker raises no false alarm on a real history.
def _crashed(states: set) -> set:
    """The states after the group's coordinator crashed: the Unload rows' moves, owing nothing (a
    dead broker writes no more lines)."""
    return {(m.dst, _apply(m, g, None), NOTHING) for s, g, _ in states for m in UNLOADS if m.src == s}


def step(states: set, rec: dict, moved: bool = False) -> tuple[set, list[str]]:
    """The states after observation `rec`, and the rows that could explain it.  A state is
    (state, generation, owed): `owed` are the other logged effects of the row that fired last,
    which the log may show next (one row, several lines: a member fails, then the rebalance
    starts).  `moved`: `rec` comes from another source than the group's record before it."""
    ev = rec.get("event")
    obs_gen = rec.get("generation")
    obs_state = rec.get("state")
    post, used = set(), set()
    # the same row's next line
    for s, g, owed in states:
        if ev in owed and (obs_state is None or obs_state == s):
            if obs_gen is not None and g is not None and g != obs_gen:
                continue
            post.add((s, g if g is not None else obs_gen, owed - {ev}))
    pre = _closure(states)
    if ev == "loaded" or moved:
        pre |= _closure(_crashed(pre))
    if ev is None:              # a snapshot
        post = {(s, g if g is not None else obs_gen, NOTHING) for s, g, _ in pre
                if (obs_state is None or s == obs_state) and (obs_gen is None or g is None or g == obs_gen)}
        return post, []
    if ev in CONSTRAINTS:
        rows = [m for m in EVENT_ROWS[ev] if any(m.src == s for s, _, _ in pre)]
        more = {(s, g, owed) for s, g, owed in pre if any(m.src == s for m in rows)}
        if obs_gen is not None:
            more = {(s, obs_gen if g is None else g, owed) for s, g, owed in more if g is None or g == obs_gen}
        return post | more, sorted({m.row for m in rows})
    for s, g, _owed in pre:
        if _gen_before(ev) and obs_gen is not None and g is not None and g != obs_gen:
            continue
        g0 = obs_gen if (_gen_before(ev) and g is None) else g
        for m in EVENT_ROWS[ev]:
            if m.src != s:
                continue
            g1 = _apply(m, g0, obs_gen)
            if not _gen_before(ev) and obs_gen is not None:
                if g1 is not None and g1 != obs_gen:
                    continue
                g1 = obs_gen
            if obs_state is not None and m.dst != obs_state:
                continue
            post.add((m.dst, g1, (m.events & (LOGGED | CONSTRAINTS)) - {ev}))
            used.add(m.row)
    return post, sorted(used)


START = frozenset((s, None, NOTHING) for s in STATES)     # nothing known: an excerpt's start, or after a gap


def check(group: str, history: list[dict], verdict) -> dict:
    n = len(history)
    states = set(START)
    done: list[dict] = []
    rebalances = 0
    source = None
    for rec in history:
        if rec.get("event") == "gap":
            states, source = set(START), None
            done.append(rec)
            continue
        post, rows = step(states, rec, moved=source is not None and rec["source"] != source)
        source = rec["source"]
        if not post:
            ev = rec.get("event") or "snapshot"
            cands = sorted({m.row for m in EVENT_ROWS.get(ev, [])})[:6]
            detail = (f"observed {ev}" + (f" (generation {rec['generation']})" if rec.get("generation") is not None
                                          else "") + " : no row of the table explains it from the states still "
                      f"possible ({_show(_closure(states))}), with up to {MAX_SILENT} unobserved rows before it")
            return verdict(group, "violation", n, "partial", f"observed {ev}", detail, rec,
                           {"states_before": [{"state": s, "generation": g} for s, g in sorted(
                               {(s, g) for s, g, _ in states}, key=lambda x: (x[0], -1 if x[1] is None else x[1]))],
                            "rows_with_that_effect": cands, "record": rec, "leading_up": done[-8:]},
                           rebalances)
        if rec.get("event") == "join-complete":
            rebalances += 1
        states = post
        done.append(rec)
    return verdict(group, "ok", n, "partial", rebalances=rebalances)


def _show(states: set) -> str:
    parts = sorted({f"{s}" + (f"@{g}" if g is not None else "") for s, g, _ in states})
    return ", ".join(parts[:8]) + (" ..." if len(parts) > 8 else "")
