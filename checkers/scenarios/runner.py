"""Running scenarios against a target.

Targets:
  runtime  the runtime coordinator (impl/): deterministic, its lifecycle a
           python-statemachine machine, its log a durable file, the
           invariants checked after every step (debug mode).
  spec     the table itself: every choice the table leaves open (who becomes
           leader, a tied vote) is explored, and a scenario passes if some
           behaviour of the spec fits every expectation.  This is the
           reference: "is this a behaviour Kafka's protocol allows?"  The
           coordinator invariants are checked after every step of every
           behaviour explored (debug mode), as on the runtime target.
"""
from __future__ import annotations

import copy
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from groupspec.impl.coordinator import GroupCoordinator
from groupspec.impl.lifecycle import IllegalMove
from groupspec.impl.requests import InvalidRequest
from groupspec.impl.storage import FileLog, InMemoryLog, LogOpenError
from groupspec.spec import assignors
from groupspec.spec.engine import Engine, EngineError
from groupspec.spec.invariants import InvariantViolation
from groupspec.spec.kafka import ConfigError, brief, clip
from groupspec.spec.lang import LangError

from .match import BadUse, Mismatch, is_form, keyed, match, match_summaries, resolve
from .model import Scenario, ScenarioError, Step

TARGETS = ("spec", "runtime")
MAX_WORLDS = 512
# The work the spec target may do for one scenario: each run of a step's action (once per combination of
# choices, in every world) and each outcome the engine works out for a row.  The project's suite needs at
# most about 600 for a scenario; combinations of choices grow as a factorial of the members removed in one
# step, so without a bound a scenario of a dozen members runs for hours.  This is at most about 20 s of work.
MAX_RUNS = 150_000
SHOW = 300          # characters of an expected or got value in a failure (line, JSON, JUnit)


@dataclass
class Result:
    file: str
    scenario: str
    result: str                  # pass, fail, error, skip (the target cannot do what the scenario asks)
    step: int | None = None
    expected: Any = None
    got: Any = None
    message: str = ""
    fired: set = field(default_factory=set)
    unobserved: list = field(default_factory=list)     # expected fields the target's responses cannot carry

    def as_json(self) -> dict:
        d = {"file": self.file, "scenario": self.scenario, "result": self.result}
        if self.unobserved:
            d["unobserved"] = list(self.unobserved)
        if self.result == "fail":
            d.update(step=self.step, expected=_text(self.expected), got=_text(self.got))
        elif self.result in ("error", "skip"):     # nothing expected or got to show
            d["step"] = self.step
        if self.result != "pass" and self.message:
            d["message"] = self.message
        return d


def _text(v: Any) -> str:
    return v if isinstance(v, str) and len(v) <= SHOW else brief(v, SHOW)


class World:
    """One possible history: a coordinator, the responses it gave, the variables bound."""

    def __init__(self, coord: GroupCoordinator):
        self.coord = coord
        self.env: dict[str, Any] = {}
        self.responses: dict[str, dict] = {}

    def record(self, rid: str, response: dict) -> None:
        self.responses[rid] = response

    def __deepcopy__(self, memo) -> "World":
        """The spec target copies its worlds at every step.  Responses and bound values are never changed
        once recorded, so a copy shares them (copying them all made each step cost as much as every step
        before it: a long scenario took time in the square of its length)."""
        new = World.__new__(World)
        memo[id(self)] = new              # before the coordinator, whose parked callbacks lead back here
        new.coord = copy.deepcopy(self.coord, memo)
        new.env, new.responses = dict(self.env), dict(self.responses)
        return new

    def fingerprint(self):
        c = self.coord
        groups = tuple(sorted((gid, g.state, tuple(g.ids), tuple(sorted(map(str, g.parked))))
                              for gid, g in c.groups.items()))
        return (groups, tuple(sorted(map(str, c.timers.schedule()))), repr(sorted(self.responses.items())),
                repr(sorted(self.env.items())), c.coord, c.hold, len(c.appends))


class _Callback:
    """A parked request's answer goes to its world (a class, so deep copies follow the world)."""

    def __init__(self, world: World, rid: str):
        self.world, self.rid = world, rid

    def __call__(self, response: dict) -> None:
        self.world.record(self.rid, response)


def new_world(target: str, config: dict, workdir: Path | None, engine: Engine | None = None) -> World:
    if target == "runtime":
        log = FileLog(workdir / "group-metadata.log") if workdir else InMemoryLog()
        coord = GroupCoordinator(config, log=log, lifecycle=True, debug=True, engine=engine)
    else:
        # every invariant after every row here too: a behaviour of the table that breaks one is a
        # failure of the spec, whichever of the choices it leaves open led there
        coord = GroupCoordinator(config, log=InMemoryLog(), lifecycle=False, debug=True, engine=engine)
        counter = iter(range(1, 1 << 30))
        coord.id_source = lambda client, _c=counter: f"{client}-{next(_c):04d}"
    return World(coord)


def run_scenario(sc: Scenario, target: str, engine: Engine | None = None) -> Result:
    """Run one scenario; `engine` fires another table's rows (a mutant's) instead of the spec's."""
    if target != "runtime":
        return run_in(sc, target, new_world(target, sc.config, None, engine))
    tmp = None
    try:
        tmp = tempfile.mkdtemp(prefix="groupspec-")
        world = new_world(target, sc.config, Path(tmp), engine)
    except (OSError, LogOpenError) as e:   # no log could be made: the machine's fault, not ours nor the file's
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        return Result(sc.file, sc.name, "error", None,
                      message=f"cannot run it: the runtime's log could not be made in {tmp or 'a temporary folder'} "
                              f"({clip(getattr(e, 'strerror', None) or str(e), 200)}); free some space there or "
                              f"set TMPDIR to another folder")
    try:
        return run_in(sc, target, world)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_in(sc: Scenario, target: str, world: World) -> Result:
    worlds = [world]
    fired: set = set()
    at = None          # the step running when the target fails in a way no step expects
    budget = [MAX_RUNS]
    try:
        for step in sc.steps:
            at = step.number
            worlds, failure = run_step(step, worlds, target, sc, budget)
            for w in worlds:
                fired.update(w.coord.fired)
            if failure is not None:
                failure.fired = fired
                return failure
    except ScenarioError as e:
        return Result(sc.file, sc.name, "error", e.step, message=e.message, fired=fired)
    except ConfigError as e:       # the loader checks config the same way; a Scenario built by hand may not
        return Result(sc.file, sc.name, "error", None, message=str(e), fired=fired)
    except (EngineError, LangError) as e:          # no row covers what the step did
        return Result(sc.file, sc.name, "fail", at, "a behaviour of the spec", f"the table: {str(e)[:SHOW]}",
                      message=f"{type(e).__name__}", fired=fired)
    except (InvariantViolation, IllegalMove) as e:     # the target broke its own rules
        return Result(sc.file, sc.name, "fail", at, "the coordinator's invariants hold",
                      f"{type(e).__name__}: {str(e)[:SHOW]}", message=f"{type(e).__name__}",
                      fired=fired)
    for w in worlds:
        fired.update(w.coord.fired)
    return Result(sc.file, sc.name, "pass", fired=fired)


def run_step(step: Step, worlds: list[World], target: str, sc: Scenario, budget: list | None = None):
    b = step.body

    def bad(msg):
        return ScenarioError(sc.file, msg, sc.name, step.number)

    if step.kind == "assign":
        return worlds, _check_assign(step, sc)
    if step.kind in ("expect", "snapshot"):
        kept, first = [], None
        for w in worlds:
            trial = copy.copy(w)
            trial.env = dict(w.env)
            try:
                (check_expect if step.kind == "expect" else check_snapshot)(b, w, trial.env)
            except BadUse as e:
                raise bad(e.message) from None
            except Mismatch as m:
                first = first or m
                continue
            w.env = trial.env
            kept.append(w)
        if not kept:
            return worlds, Result(sc.file, sc.name, "fail", step.number, first.expected, first.got,
                                  message=f"{first.where}")
        return kept, None

    action = _action(step, bad)
    out: list[World] = []
    for w in worlds:
        out.extend(_explore(w, action, budget if budget is not None else [MAX_RUNS], bad) if target == "spec"
                   else _direct(w, action))
    if target == "spec" and len(out) > 1:
        out = distinct_worlds(out)
        if len(out) > MAX_WORLDS:
            out = out[:MAX_WORLDS]
    return out, None


def _direct(w: World, action: Callable[[World], None]) -> list[World]:
    action(w)
    return [w]


def _explore(world: World, action: Callable[[World], None], budget: list, bad) -> list[World]:
    """Run `action` once per combination of the choices the table leaves open (at most `budget[0]` more runs
    in the scenario: combinations grow as a factorial, and a scenario must not run for hours)."""
    results, stack = [], [[]]
    while stack:
        budget[0] -= 1
        if budget[0] < 0:
            raise bad(f"the spec's behaviours up to this step are more than the spec target explores (every "
                      f"combination of the choices Kafka leaves open: a new leader after each removal, a tied "
                      f"vote; at most {MAX_RUNS:,} outcomes of rows); run it with --target runtime, or have "
                      f"fewer members removed at once")
        prefix = stack.pop()
        w = copy.deepcopy(world)
        decisions: list[int] = []

        def choose(outcomes, prefix=prefix, decisions=decisions):
            i = len(decisions)
            decisions.append(len(outcomes))
            return prefix[i] if i < len(prefix) else 0
        w.coord.choose = choose
        before = w.coord.outcomes_worked
        action(w)
        budget[0] -= w.coord.outcomes_worked - before
        w.coord.choose = lambda outcomes: 0
        for i in range(len(prefix), len(decisions)):
            for alt in range(1, decisions[i]):
                stack.append(prefix + [0] * (i - len(prefix)) + [alt])
        results.append(w)
    return results


def distinct_worlds(worlds: list[World]) -> list[World]:
    seen, out = set(), []
    for w in worlds:
        fp = w.fingerprint()
        if fp not in seen:
            seen.add(fp)
            out.append(w)
    return out


def _action(step: Step, bad) -> Callable[[World], None]:
    b = step.body
    if step.kind == "send":
        api, rid = b["send"], b["id"]
        raw = {k: v for k, v in b.items() if k not in ("send", "id")}

        def send(w: World):
            try:
                req = resolve(raw, w.env)
                resp = w.coord.send(api, req, on_response=_Callback(w, rid), request_id=rid)
            except BadUse as e:
                raise bad(e.message) from None
            except InvalidRequest as e:
                raise bad(f"{e} (after substituting variables)") from None
            if resp is not None:
                w.record(rid, resp)
        return send
    if step.kind == "advance_ms":
        return lambda w: w.coord.advance(b["advance_ms"])
    if step.kind == "storage":
        key, val = next(iter(b["storage"].items()))
        if key == "hold":
            return lambda w: w.coord.storage_hold(val)
        if key == "fail_next_append":
            return lambda w: w.coord.storage_fail_next(val)

        def complete(w: World):
            if not w.coord.storage_complete(val):
                raise bad("`storage: {complete: ...}` but no append is held (use `storage: {hold: true}` first)")
        return complete
    if step.kind == "coordinator":
        ev = b["coordinator"]
        if isinstance(ev, dict):
            def mark_dead(w: World):
                try:
                    w.coord.mark_dead(_group_id(ev["mark_dead"], w.env))
                except BadUse as e:
                    raise bad(e.message) from None
            return mark_dead
        return lambda w: getattr(w.coord, ev)()
    raise bad(f"unsupported step {step.kind}")


def check_expect(b: dict, w: World, env: dict) -> None:
    rid = b["expect"]
    got = w.responses.get(rid)
    if b.get("pending") is True:
        if got is not None:
            raise Mismatch(f"{rid}", "pending (no response yet)", got)
        return
    if got is None:
        raise Mismatch(f"{rid}", {k: v for k, v in b.items() if k != "expect"}, "pending (no response yet)")
    for k, v in b.items():
        if k in ("expect", "pending"):
            continue
        if k == "groups":
            match_summaries(v, got.get("groups", []), env, f"{rid}.groups")
        elif k == "errors":
            # LeaveGroup's errors (the one list) compare in order, also inside {any_of}/{not}
            match(v, got.get("errors"), env, f"{rid}.errors", ordered=isinstance(got.get("errors"), list))
        else:
            match(v, got.get(k), env, f"{rid}.{k}")


def _group_id(v: Any, env: dict) -> str:
    gid = resolve(v, env)
    if not isinstance(gid, str):
        raise BadUse(f"{brief(v)} must be a group id, and it holds {brief(gid)}")
    return gid


def check_snapshot(b: dict, w: World, env: dict) -> None:
    gid = _group_id(b["snapshot"], env)
    snap = w.coord.snapshot(gid)
    if snap is None:
        # `state: null` (or a form that accepts null) says the group is not held; nothing else can hold then
        if "state" not in b or len(b) > 2:
            raise Mismatch(f"snapshot {gid}", {k: v for k, v in b.items() if k != "snapshot"}, "no such group")
        match(b["state"], None, env, f"snapshot {gid}.state")
        return
    for k, v in b.items():
        if k == "snapshot":
            continue
        got = snap.get(k)
        if k == "assignment" and isinstance(v, dict) and not is_form(v):
            named = set(keyed(v, env))
            got = {m: p for m, p in got.items() if m in named or p}
        match(v, got, env, f"snapshot {gid}.{k}")


def _check_assign(step: Step, sc: Scenario) -> Result | None:
    b = step.body
    fn = assignors.ASSIGNORS[b["assign"]]
    try:
        got = fn(b["partitions"], b["subscriptions"])
        expected = {m: sorted(assignors.parse_partition(p) for p in ps) for m, ps in b["result"].items()}
    except (ValueError, TypeError) as e:
        raise ScenarioError(sc.file, f"assign: {clip(str(e))}", sc.name, step.number) from None
    got_sets = {m: sorted(ps) for m, ps in got.items()}
    if got_sets != expected:
        show = lambda d: {m: [assignors.format_partition(p) for p in ps] for m, ps in d.items()}  # noqa: E731
        return Result(sc.file, sc.name, "fail", step.number, show(expected), show(got_sets),
                      message=f"{b['assign']} assignment")
    return None
