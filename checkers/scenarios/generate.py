"""A scenario suite generated from the closed world: for each row of the table, a shortest scenario that fires it.

The closed world's state graph (checkers/world/state_space.py) is searched breadth first with parent links,
so the first transition that fires a row ends a shortest path to it.  That path is a story of clients,
network and coordinator; what the coordinator sees of it (a request delivered, a timer, a failover, a failed
append) becomes scenario steps, and the rest (a client reading an answer, a crash) needs none.

A world step is abstract (time is not in the world: any armed timer may fire; an append fails when the
world says so), so each is translated by trying the concrete steps it may be, on the runtime coordinator
beside the spec (checkers/conform/lockstep.py), and keeping the one whose rows are the world step's own.  The
expectations are the lockstep's: every answer and snapshot the spec gives, written with the scenario
format's bindings (member ids are `$variables`, bound from the answers that issue them), never one side's
literal ids.  A path is left for the next one when a step has no such translation (concrete time fires
another timer first, say) or when it meets a choice Kafka leaves open (a scenario would pin one answer
where Kafka may give another).
"""
from __future__ import annotations

import re
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Callable

from groupspec.checkers.scenarios.model import is_action
from groupspec.spec.lang import NONE
from groupspec.spec.schema import CONFIG_KEYS
from groupspec.spec.table import ROWS, rows_for
from groupspec.spec.world import APPEND_ERRORS, NOT_IN_WORLD, WORLD_COORDINATOR, WORLD_INDEX, Kind

GROUP = "g0"                        # the lockstep's group (its snapshots name it)
CANDIDATES = 4                      # paths kept per row, shortest first: the next is tried when one fails
# the world's failed append: the one error of spec/world.py APPEND_ERRORS a switch turns on
APPEND_FAILURE = next(e for e, switches in APPEND_ERRORS if switches)
# The session and rebalance timeouts a client's JoinGroup gives: durations are abstract in the world (any armed
# timer may fire next), and concrete ones decide which fires first, so a path is tried with each in turn
TIMEOUTS = ((10_000, 10_000), (30_000, 10_000), (10_000, 30_000), (1_000, 10_000))
DELIVERIES = ("Deliver", "DeliverLate", "Duplicate", "DuplicateLate")
DEADLINES = 6           # a timer step is tried as a move of the clock to each of the next armed deadlines
TIMERS = ("HeartbeatExpiry", "PendingExpiry", "JoinTimer", "SyncTimer")


@dataclass
class Found:
    """What generating from the worlds found: a scenario per row, and why the other rows have none."""
    scenarios: dict = field(default_factory=dict)       # row name -> (scenario dict, preset)
    untranslated: dict = field(default_factory=dict)    # row name -> why its paths gave no scenario
    states: dict = field(default_factory=dict)          # preset -> states searched
    failed: list = field(default_factory=list)          # rows whose translation met the runtime unlike the spec


def coordinator_rows() -> list[str]:
    """The rows of the coordinator the closed world describes (the other coordinator's are the harness's)."""
    return [r.name for r in rows_for(WORLD_COORDINATOR, ROWS)]


# -- the shortest paths ------------------------------------------------------------------------------------

def shortest_paths(model, wanted: set[str], max_states: int, progress: Callable | None = None):
    """Breadth first over `model` (no symmetry: a path is replayed client by client): for each row of
    `wanted`, up to CANDIDATES paths that end with a step firing it, shortest first, each a list of
    (state before, step).  Also the number of states searched (at most `max_states`)."""
    init = model.init_states()[0]
    parent: dict = {init: None}
    queue = deque([init])
    found: dict[str, list] = {}

    def path_to(s) -> list:
        out = []
        while parent[s] is not None:
            prev, step = parent[s]
            out.append((prev, step))
            s = prev
        return out[::-1]
    while queue and len(parent) < max_states:
        s = queue.popleft()
        for step, s2 in model.successors(s)[0]:
            for row in step.rows:
                if row in wanted and len(found.setdefault(row, [])) < CANDIDATES:
                    found[row].append((s, step))
            if s2 not in parent:
                parent[s2] = (s, step)
                queue.append(s2)
        if progress and len(parent) % 50_000 < 8:
            progress(len(parent))
    return {row: [path_to(s) + [(s, step)] for s, step in ends] for row, ends in found.items()}, len(parent)


# -- a world path as scenario steps ------------------------------------------------------------------------

class Untranslatable(Exception):
    """A world step no concrete step reproduces (its rows), or a path through a choice Kafka leaves open."""


class RuntimeDiffers(Exception):
    """The runtime answered a translated step unlike the spec: a finding about the project, not the path."""


def _field(model, s, name: str, c: int):
    return model.flat(s)[WORLD_INDEX[name]][c]


def _request(model, s, c: int, late: bool, ids: dict, timeouts: tuple) -> tuple[str, dict]:
    """The request client `c` has in flight in state `s` (its late copy if `late`), as a scenario request."""
    pre = "rq_late" if late else "rq"
    kind = Kind.values[_field(model, s, pre, c)]
    member = _field(model, s, pre + "_member", c)
    if member != NONE and member not in ids:
        raise Untranslatable(f"c{c} sends member id m{member}, which no answer of the scenario issued")
    mid = "" if member == NONE else "$" + ids[member]
    inst = model.cfg.instances[c] if model.cfg.instances else None
    who = {"group": GROUP, "member": mid} | ({"instance": f"i{inst}"} if inst is not None else {})
    parts = [f"t{t}-{p}" for t in range(model.cfg.topics) for p in range(model.cfg.partitions)]
    if kind == "join":
        return "JoinGroup", {**who, "client": f"c{c}", "session_timeout_ms": timeouts[0],
                             "rebalance_timeout_ms": timeouts[1], "protocol_type": "consumer",
                             "protocols": ["range"]}
    gen = _field(model, s, pre + "_gen", c)
    if kind == "sync":
        assign = _field(model, s, pre + "_assign", c)
        named = {}
        for m, mask in enumerate(assign):
            if mask:
                if m not in ids:
                    raise Untranslatable(f"the leader assigns to m{m}, whom no answer of the scenario named")
                named["$" + ids[m]] = [p for i, p in enumerate(parts) if mask >> i & 1]
        # version 4: the world's SyncGroup names no protocol type or name (spec/world.py MESSAGES)
        return "SyncGroup", {**who, "generation": gen, "assignments": named, "version": 4}
    if kind == "heartbeat":
        return "Heartbeat", {**who, "generation": gen}
    if kind == "commit":
        mask = _field(model, s, pre + "_parts", c)
        return "OffsetCommit", {**who, "generation": gen, "offsets": {p: 1 for i, p in enumerate(parts)
                                                                      if mask >> i & 1}}
    if kind == "leave":
        return "LeaveGroup", {"group": GROUP, "members": [{k: v for k, v in who.items() if k != "group"}]}
    raise Untranslatable(f"c{c} has no request in flight ({kind})")


def _candidates(model, s, step, ids: dict, lock, timeouts: tuple) -> list[list[dict]]:
    """The concrete steps a world step may be, most likely first (actions only: the lockstep observes)."""
    act = step.act
    if act in DELIVERIES:
        c = step.who[0]
        api, req = _request(model, s, c, act == "DeliverLate", ids, timeouts)
        send = {"send": api, **req}
        return [[send]] + ([[{"storage": {"fail_next_append": APPEND_FAILURE}}, send]]
                           if model.cfg.append_failure else [])
    if act in TIMERS:
        coord = lock.impl.coord
        now = coord.clock.now()
        due = sorted({deadline for _, deadline, _ in coord.timers.schedule()})
        return [[{"advance_ms": max(0, d - now)}] for d in due[:DEADLINES]]
    if act == "Failover":
        return [[{"coordinator": "unload"}, {"coordinator": "load"}],
                [{"coordinator": "unload"}, {"coordinator": "begin_load"}, {"coordinator": "load"}]]
    return [[]]          # a client's own step, or the network's: nothing reaches the coordinator


def _run(actions: list[dict], config: dict):
    """The actions on the runtime coordinator beside the spec: the lockstep, the coordinator rows the runtime
    fired at each action, and the ids of the requests sent.  Untranslatable where the spec meets a choice
    Kafka leaves open; RuntimeDiffers where the runtime answers unlike the spec."""
    from groupspec.checkers.conform.adapter import runtime
    from groupspec.checkers.conform.lockstep import Divergence, Lockstep, SpecFailure
    impl = runtime(config)
    lock = Lockstep(impl, config)
    fired = []
    sent: list[str] = []
    try:
        for a in actions:
            before = len(impl.coord.fired)
            if "send" in a:
                sent.append(lock.send(a["send"], {k: v for k, v in a.items() if k != "send"}))
            else:
                lock.act(a)
            if len(lock.ref.worlds) > 1:
                raise Untranslatable("the path meets a choice Kafka leaves open (a new leader, a tied vote)")
            fired.append(impl.coord.fired[before:])
    except (Divergence, SpecFailure) as e:      # the runtime is the spec: a finding about the project
        raise RuntimeDiffers(f"the runtime and the spec differ on its translated steps: {e}") from e
    return lock, fired, sent


def _bound(lock, rid: str) -> str | None:
    """The variable the answer to request `rid` names its member by, if it has been answered."""
    for st, shown in lock.steps:
        if shown and st.get("expect") == rid:
            m = st.get("member")
            if isinstance(m, dict) and "bind" in m:
                return m["bind"]
            if isinstance(m, str) and m.startswith("$"):
                return m[1:]
    return None


def _before_deadline(steps: list, i: int) -> bool:
    """Step `i` is a snapshot taken where a clock advance landed 1 ms before one of the spec's deadlines (the
    lockstep takes an advance in hops: conform/lockstep.py `act`): kept, it pins that the timer has not fired
    yet, so the scenario tells a timer that fires early from the right one."""
    if "snapshot" not in steps[i][0]:
        return False
    prev = next((st for st, _ in reversed(steps[:i]) if is_action(st)), None)
    after = next((st for st, _ in steps[i + 1:] if is_action(st)), None)
    return prev is not None and "advance_ms" in prev and after == {"advance_ms": 1}


def translate(model, path: list, row: str, coordinator: set[str]) -> dict:
    """The scenario of a world path ending in a step that fires `row`, with the first TIMEOUTS that give one
    (Untranslatable if none does)."""
    why = None
    for timeouts in TIMEOUTS:
        try:
            return _translate(model, path, row, coordinator, timeouts)
        except Untranslatable as e:
            why = why or e
    raise why


def world_config(model) -> dict:
    """The world's coordinator config (its `base` parameters) in Kafka's keys, as a scenario gives it; which
    coordinator is the target's (a scenario runs on both, skipped where the Java one cannot take a step)."""
    return {key: model.base[param] for param, key in CONFIG_KEYS.items() if key != "group.coordinator.new.enable"}


def _translate(model, path: list, row: str, coordinator: set[str], timeouts: tuple) -> dict:
    config = world_config(model)
    actions: list[dict] = []
    ids: dict[int, str] = {}            # world member slot -> the scenario's variable
    last_rid: dict[int, int] = {}       # client -> index in `sent` of its last request
    lock, _, sent = _run(actions, config)
    for n, (s, step) in enumerate(path):
        want = Counter(r for r in step.rows if r in coordinator)
        # the candidate that fires just the step's rows; else one that fires them and more (concrete time
        # may complete in one step what the world does in two: the path may still reach the row)
        tried = []
        for cand in _candidates(model, s, step, ids, lock, timeouts):
            trial, fired, trial_sent = _run(actions + cand, config)
            got = Counter(r for f in fired[len(actions):] for r in f if r in coordinator)
            if got == want:
                tried = [(cand, trial, trial_sent)]
                break
            if not want - got:
                tried.append((cand, trial, trial_sent))
        if not tried:
            raise Untranslatable(f"step {n + 1} ({step.action}) fires {sorted(want)}, and no concrete step "
                                 f"does")
        cand, lock, sent = tried[0]
        actions = actions + cand
        if step.act in DELIVERIES:
            last_rid[step.who[0]] = len(sent) - 1
        # the member ids the step's answers issue, as the world's clients hold them
        after = path[n + 1][0] if n + 1 < len(path) else None
        if after is not None:
            for c, k in last_rid.items():
                m = _field(model, after, "rs_member", c)
                if m != NONE and m not in ids:
                    var = _bound(lock, sent[k])
                    if var is not None:
                        ids[m] = var
    if row not in lock.impl.coord.fired:
        raise Untranslatable("the translated steps do not fire the row")
    steps = [st for i, (st, shown) in enumerate(lock.steps) if shown or _before_deadline(lock.steps, i)]
    snaps = [st for st, shown in lock.steps if "snapshot" in st]
    if snaps:
        steps.append(snaps[-1])         # the group as the spec leaves it: what the row did to it
    return {"config": config, "steps": steps}


# -- the suite -------------------------------------------------------------------------------------------

def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80]


def worlds() -> list[tuple[str, object]]:
    """The worlds searched by default, in order: the presets, smallest first (deep and settle3 are nightly
    searches), then variants of them that reach rows no preset does: a group.max.size of 1 (a full group),
    requests overtaken and delivered late (a rejoin and a commit of a generation gone by), members that leave
    while the group rebalances (a join that completes with nobody)."""
    import dataclasses
    from groupspec.checkers.world.presets import PRESETS
    presets = [(name, PRESETS[name]) for name in ("tiny", "small", "twogen", "faults", "static", "hung", "settle",
                                                  "ci")]
    return presets + [
        ("small, group.max.size 1", dataclasses.replace(PRESETS["small"], max_size=1)),
        ("tiny, late requests", dataclasses.replace(PRESETS["tiny"], reordering=True, late_duplication=True,
                                                    commits=True)),
        ("twogen, leaving while rebalancing", dataclasses.replace(PRESETS["twogen"], leaves_rebalancing=True,
                                                                 commits=True))]


def generate(searched: list[tuple[str, object]], max_states: int, progress: Callable | None = None) -> Found:
    """A shortest scenario for each coordinator row, from the worlds `searched` [(name, WorldConfig)] in order (a
    row the first does not reach, the next may)."""
    from groupspec.checkers.world.state_space import WorldModel
    coordinator = set(coordinator_rows())
    found = Found()
    presets = [name for name, _ in searched]
    for preset, cfg in searched:
        wanted = coordinator - set(found.scenarios)
        if not wanted:
            break
        model = WorldModel(cfg)
        paths, found.states[preset] = shortest_paths(
            model, wanted, max_states, progress and (lambda n, p=preset: progress(f"{p}: {n:,} states")))
        for row, candidates in paths.items():
            why = []
            for path in candidates:
                try:
                    sc = translate(model, path, row, coordinator)
                except Untranslatable as e:
                    why.append(str(e))
                    continue
                except RuntimeDiffers as e:
                    found.failed.append(row)
                    found.untranslated[row] = f"{preset}: {e}"
                    break
                found.scenarios[row] = ({"scenario": f"reach-{slug(row)}",
                                         "about": f"generated (groupspec scenario generate) from the {preset} world: "
                                                  f"a shortest path to the row {row!r}, {len(path)} world steps",
                                         **sc}, preset)
                found.untranslated.pop(row, None)
                break
            else:
                found.untranslated[row] = f"{preset}: {why[0]}" if why else f"{preset}: no path"
    for row in coordinator - set(found.scenarios) - set(found.untranslated):
        trig = next(r.trigger for r in ROWS if r.name == row)
        found.untranslated[row] = NOT_IN_WORLD.get(trig, f"no state of {', '.join(presets)} meets its condition "
                                                         f"(within {max_states:,} states each)")
    return found


# -- checked, then written ----------------------------------------------------------------------------------

def file_name(row: str) -> str:
    return f"reach-{slug(row)}.yaml"


def texts(found: Found) -> dict[str, str]:
    """Each scenario as the file the suite holds (file name -> YAML), in the table's row order."""
    from groupspec.checkers.conform.harness import scenario_yaml
    return {file_name(r.name): scenario_yaml(found.scenarios[r.name][0]) for r in ROWS if r.name in found.scenarios}


def checked(found: Found, workdir) -> list[str]:
    """Each scenario, as the file it is written as (in `workdir`), run on the spec target and on the runtime:
    one that fails there, or does not fire its row, is not kept.  The rows whose scenario failed (a finding
    about the generator or the spec: the lockstep that wrote it held the runtime to the spec)."""
    from pathlib import Path
    from .model import load_file
    from .runner import run_scenario
    failed = []
    for name, text in texts(found).items():
        path = Path(workdir) / name
        path.write_text(text)
        [sc] = load_file(path)
        row = next(r for r in found.scenarios if file_name(r) == name)
        for target in ("spec", "runtime"):
            r = run_scenario(sc, target)
            if r.result != "pass" or row not in r.fired:
                preset = found.scenarios.pop(row)[1]
                found.untranslated[row] = (f"{preset}: its generated scenario "
                                           f"{'fails' if r.result != 'pass' else 'does not fire it'} on the {target} "
                                           f"target (step {r.step}: {r.message})")
                failed.append(row)
                break
    return failed


def unreached_md(found: Found, presets: list[str]) -> str:
    """The rows the suite has no scenario for, with why (UNREACHED.md beside the files)."""
    lines = ["# Rows the generated suite does not reach", "",
             f"Written by `groupspec scenario generate` from the closed worlds {', '.join(presets)}: "
             f"{len(found.scenarios)} rows have a shortest scenario; these {len(found.untranslated)} have none. "
             "The hand-written suite (tests/scenarios) reaches every row.", ""]
    for row in [r.name for r in ROWS if r.name in found.untranslated]:
        lines.append(f"- `{row}`: {found.untranslated[row]}")
    return "\n".join(lines) + "\n"
