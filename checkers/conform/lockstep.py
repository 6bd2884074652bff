"""An implementation and the spec side by side on the same steps, failing at the first difference.

Every step is a step of the scenario format.  Requests name members by
variables (`$m1`), which each side resolves to its own member ids: the
implementation's are learnt from its answers (`{bind: m1}` the first time an
id appears), the spec's worlds bind theirs from the same `expect` steps.
After each action the harness observes the implementation (the response, or
that the request is parked; the parked requests answered meanwhile; the
snapshot of every group in play) and hands the spec each observation as an
`expect` or `snapshot` step: if no behaviour of the spec fits, that is the
divergence, and the steps so far are a scenario that shows it.
"""
from __future__ import annotations

from typing import Any, Callable

from groupspec.checkers.scenarios.match import BadUse, Mismatch, match, resolve
from groupspec.checkers.scenarios.model import RESPONSE_FIELDS, SUMMARY
from groupspec.impl.coordinator import NotABehaviour
from groupspec.impl.lifecycle import IllegalMove
from groupspec.spec.engine import EngineError
from groupspec.spec.invariants import InvariantViolation
from groupspec.spec.kafka import brief
from groupspec.spec.lang import LangError

from .adapter import Unsupported, perform
from .interrupts import calling
from .reference import Reference
from .wallclock import SpecTimers, after_step, check_resolution

ID_FIELDS = ("member", "leader", "members", "pending_members")    # fields whose strings are member ids
SNAPSHOT_FIELDS = ("state", "generation", "leader", "protocol", "protocol_type", "members", "pending_members",
                   "static_members", "assignment", "offsets")
SPEC_FAILURES = (EngineError, LangError, InvariantViolation, IllegalMove)


class Divergence(AssertionError):
    """The implementation did what no behaviour of the spec does.  `kind`: response, pending (parked where
    the spec answers, or the other way), answered-twice, snapshot, error (the implementation raised),
    storage (an append held in one and not the other), undescribed (a step the spec has no behaviour for
    under the run's config, spec/handling.py JAVA_WRITES)."""

    def __init__(self, kind: str, where: str, expected: Any, got: Any, scenario: dict, step: int):
        self.kind, self.where, self.expected, self.got = kind, where, expected, got
        self.scenario, self.step = scenario, step
        self.what = f"the spec {_says(expected)}, the implementation {_says(got)}"
        super().__init__(f"{kind} at step {step} ({where}): {self.what}")

    def as_json(self) -> dict:
        return {"kind": self.kind, "step": self.step, "where": self.where, "spec": self.expected,
                "implementation": self.got}


class SpecFailure(AssertionError):
    """The spec itself failed on a step (no row covers it, or it broke one of its invariants): a finding
    about the table, whatever the implementation does."""

    def __init__(self, error: Exception, scenario: dict, step: int):
        self.error, self.scenario, self.step = error, scenario, step
        super().__init__(f"the spec failed at step {step}: {type(error).__name__}: {brief(str(error), 300)}")


def _says(v: Any) -> str:
    return brief(v, 200) if not isinstance(v, str) else v


def _ordered(d: dict) -> dict:
    """Fields in an order where an id is bound (member, leader) before a list or a key uses it."""
    first = [k for k in ("member", "leader", "members") if k in d]
    last = [k for k in ("assignment",) if k in d]
    return {k: d[k] for k in [*first, *[k for k in d if k not in first and k not in last], *last]}


class Lockstep:
    """One run: the implementation `impl` (an adapter) against the spec, both under `config`."""

    def __init__(self, impl, config: dict, groups: tuple[str, ...] = ("g0",), watch: Callable | None = None):
        self.impl = impl
        self.watch = watch                     # called with the lockstep after each step both sides took, and
                                               # with the divergence too where they part
        self.config = dict(config)
        self.ref = Reference(self.config)
        self.env: dict[str, str] = {}          # variable -> the implementation's member id
        self.inverse: dict[str, str] = {}      # the implementation's member id -> variable
        self.steps: list[tuple[dict, bool]] = []   # (step, shown in the scenario)
        self.outstanding: dict[str, str] = {}  # request id -> API, parked in the implementation
        self.groups = list(groups)
        self.requests = 0
        self.literals: set[str] = set()        # member ids the harness made up (echoed back, never bound)
        self.unsupported: dict[str, int] = {}  # steps the implementation cannot be asked, by reason
        self.left_out: str | None = None       # why the last step left out was
        self.timers = SpecTimers()             # which step armed each of the spec's timers (wall-clock targets)

    # -- the scenario so far ---------------------------------------------------------------------

    def scenario(self, name: str = "conform-divergence", about: str = "", extra: dict | None = None) -> dict:
        steps = [s for s, shown in self.steps if shown]
        if extra is not None:
            steps.append(extra)
        return {"scenario": name, "about": about, "config": dict(self.config), "steps": steps}

    def _fail(self, kind: str, where: str, expected: Any, got: Any, expect_step: dict | None) -> Divergence:
        sc = self.scenario(about=f"groupspec conform: the implementation differs from the spec ({kind}, {where})", extra=expect_step)
        found = Divergence(kind, where, expected, got, sc, len(sc["steps"]))
        if self.watch is not None:
            self.watch(self, found)
        return found

    # -- steps -------------------------------------------------------------------------------------

    def send(self, api: str, request: dict) -> str:
        """Send a request (its values may name members by `$variable`); returns the request's id."""
        self.requests += 1
        rid = f"r{self.requests}"
        for g in ([request["group"]] if isinstance(request.get("group"), str) else []) + list(request.get("groups") or []):
            if isinstance(g, str) and g not in self.groups:
                self.groups.append(g)
        step = {"send": api, "id": rid, **request}
        for ident in [request, *(request.get("members") or [])]:
            m = ident.get("member") if isinstance(ident, dict) else None
            if isinstance(m, str) and not m.startswith("$"):
                self.literals.add(m)
        real = resolve(request, self.env)
        if not self._both(step, lambda: self.impl.send(api, real, rid)):
            return rid
        resp = self._impl_result
        if resp is None:      # parked (it may have been answered within the step: see `answered`)
            self.outstanding[rid] = api
        else:
            self._expect_response(rid, resp)
        self._observe()
        return rid

    def act(self, step: dict) -> None:
        """advance_ms, storage or coordinator, as a scenario step.  Completing an append where the
        implementation holds none is a step of neither, if the spec holds none either (a scenario written
        for another coordinator may complete an append this one failed already).

        A clock advance is taken in hops that land 1 ms before and on each of the spec's deadlines on the
        way (`_next_hop`), each a step of its own compared as any other: only the state between steps is
        compared, so one long advance past both the spec's deadline and an implementation's wrong one
        would hide a timer that fires early or late."""
        ms = step.get("advance_ms")
        if isinstance(ms, int) and not isinstance(ms, bool) and ms > 0 and len(step) == 1:
            while ms > 0:
                hop = self._next_hop(ms)
                self._act({"advance_ms": hop})
                ms -= hop
            return
        self._act(step)

    def _next_hop(self, most: int) -> int:
        """How far the clock moves next, at most `most` ms: to 1 ms before the nearest of the spec's
        deadlines ahead (in any behaviour it may be following), or onto it, or all the way."""
        now = self.ref.coord.clock.now()
        landings = [t for w in self.ref.worlds for k in w.coord.timers.keys()
                    for t in (w.coord.timers.deadline(k) - 1, w.coord.timers.deadline(k)) if now < t <= now + most]
        return min(landings, default=now + most) - now

    def _act(self, step: dict) -> None:
        completes = "storage" in step and "complete" in step["storage"]
        if completes and not any(w.coord.appends for w in self.ref.worlds):
            if perform(self.impl, step) is not False:
                raise self._fail("storage", "storage complete", "no append held", "an append held and completed",
                                 None)
            return
        if self._both(step, lambda: perform(self.impl, step)):
            if completes and self._impl_result is False:
                raise self._fail("storage", "storage complete", "an append held and completed", "no append held",
                                 None)
            self._observe()

    def _both(self, step: dict, call: Callable[[], Any]) -> bool:
        """The step on the implementation, then on the spec; False if the implementation cannot be asked it
        (`Unsupported`: nothing happened, and the step is left out of the run and its scenario)."""
        self.steps.append((step, True))
        try:
            if hasattr(self.impl, "clock_lead_ms"):      # a wall clock: what the spec's timers leave undecided
                number = len(self.steps)
                before = self.timers.step((w.coord for w in self.ref.worlds), number)
                check_resolution(self.impl, before, after_step(self.ref, self.timers, step, number), step)
            with calling():
                self._impl_result = call()
        except Unsupported as e:
            self.steps.pop()
            self.unsupported[str(e)] = self.unsupported.get(str(e), 0) + 1
            self.left_out = str(e)
            return False
        except Exception as e:      # noqa: BLE001 - whatever the implementation raises is its failure here
            raise self._fail("error", f"step {len(self.steps)}", "an answer", f"{type(e).__name__}: {brief(str(e), 200)}",
                             None) from e
        try:
            self.ref.act(step)
        except NotABehaviour as e:     # the implementation took a step the spec has no behaviour for
            raise self._fail("undescribed", f"step {len(self.steps)}", f"no such step under this config ({e})",
                             "the step taken", None) from e
        except SPEC_FAILURES as e:
            raise SpecFailure(e, self.scenario(about="the spec fails here"), len(self.steps)) from e
        return True

    # -- observing the implementation ----------------------------------------------------------------

    def ask(self, what: str, call: Callable[[], Any], expected: str = "an answer") -> Any:
        """An observation of the implementation (its answers, a snapshot, closing it): what it raises is its
        failure at this step, a divergence (adapter.py), as a step's exception is."""
        try:
            with calling():
                return call()
        except Exception as e:      # noqa: BLE001 - whatever the implementation raises is its failure here
            raise self._fail("error", what, expected, f"{type(e).__name__}: {brief(str(e), 200)}", None) from e

    def _observe(self) -> None:
        answers = self.ask("answered", self.impl.answered)
        if not isinstance(answers, (list, tuple)) or \
                not all(isinstance(a, (list, tuple)) and len(a) == 2 for a in answers):
            raise self._fail("error", "answered", "a list of (request id, response) pairs", brief(answers, 200),
                             None)
        # an answer that names its members after the answers that bind them (a completed join answers
        # the followers, each learning its id, and the leader with everyone's)
        answers = sorted(answers, key=lambda a: isinstance(a[1], dict) and "members" in a[1])
        for rid, resp in answers:
            if not isinstance(rid, str) or rid not in self.outstanding:
                was = "already answered" if any(s.get("send") and s.get("id") == rid for s, _ in self.steps) \
                    else "never sent"
                raise self._fail("answered-twice", rid, f"one answer to {rid}", f"another answer to {rid}, "
                                 f"{was}: {brief(resp, 200)}", None)
            del self.outstanding[rid]
            self._expect_response(rid, resp)
        for rid in list(self.outstanding):
            self._expect({"expect": rid, "pending": True}, shown=False)
        for g in self.groups:
            self._snapshot(g)
        if self.watch is not None:
            self.watch(self)

    def _expect_response(self, rid: str, resp: Any) -> None:
        if not isinstance(resp, dict):
            raise self._fail("response", rid, "a response (a mapping of response fields)", brief(resp), None)
        keys = set(resp)
        if not getattr(self.impl, "partial_responses", False):    # else: compared on the fields it carries
            for w in self.ref.worlds:
                r = w.responses.get(rid)
                if isinstance(r, dict):
                    keys |= set(r)
        # the fields the contract names (a scenario may compare only those; the loader refuses others)
        body = {k: self._observed(resp.get(k), k) for k in _ordered({k: None for k in sorted(keys)})
                if k in RESPONSE_FIELDS}
        self._expect({"expect": rid, **body}, shown=True)

    def _snapshot(self, group: str) -> None:
        snap = self.ask(f"snapshot {group}", lambda: self.impl.snapshot(group))
        if snap is not None and not isinstance(snap, dict):
            raise self._fail("error", f"snapshot {group}", "a mapping of snapshot fields, or None",
                             brief(snap, 200), None)
        if snap is None:
            body = {"state": None}
        else:
            body = {k: self._observed(v, k) for k, v in _ordered(snap).items() if k in SNAPSHOT_FIELDS}
        self._expect({"snapshot": group, **body}, shown=False)

    def _expect(self, step: dict, shown: bool) -> None:
        try:
            failure = self.ref.check(step)
        except SPEC_FAILURES as e:
            raise SpecFailure(e, self.scenario(about="the spec fails here"), len(self.steps)) from e
        if failure is None:
            if not shown and _binds(step):     # shown after all, with only what binds a member's variable
                head = next(iter(step))
                step, shown = {head: step[head], **{k: v for k, v in step.items() if k != head and _binds(v)}}, True
            self.steps.append((step, shown))
            return
        raise self._diverged(step)

    # -- translating values -----------------------------------------------------------------------------

    def _observed(self, v: Any, key: str) -> Any:
        """The implementation's value in scenario terms: its member ids as `$variables`, a new one bound."""
        if isinstance(v, str):
            if v in self.inverse:
                return "$" + self.inverse[v]
            if key in ID_FIELDS and v and v not in self.literals:
                name = f"m{len(self.env) + 1}"
                self.env[name], self.inverse[v] = v, name
                return {"bind": name}
            return v
        if isinstance(v, list):
            return [self._observed(x, key) for x in v]
        if isinstance(v, dict):
            if key == "static_members":
                return {k: self._observed(x, "member") for k, x in v.items()}
            if key == "assignment":
                return {("$" + self.inverse[k] if k in self.inverse else k): x for k, x in v.items()}
            if key == "groups":      # a group summary: compared on the keys the contract gives it
                return {k: self._observed(x, k) for k, x in _ordered(v).items() if k in SUMMARY.fields}
            return {k: self._observed(x, k) for k, x in _ordered(v).items()}
        return v

    def _spec_form(self, v: Any, key: str, inverse: dict) -> Any:
        """A spec world's value in scenario terms (its member ids as the variables its world bound)."""
        if isinstance(v, str):
            if v in inverse:
                return "$" + inverse[v]
            if key in ID_FIELDS and v:
                # an id the scenario has no name for: one issued now, so none of the named ones (a reused
                # id must not fit) and never empty; the spec's own id is never written as a literal
                named = sorted({"$" + x for x in inverse.values()})
                return {"not": {"any_of": ["", *named]}} if named else {"not": ""}
            return v
        if isinstance(v, list):
            return [self._spec_form(x, key, inverse) for x in v]
        if isinstance(v, dict):
            if key == "static_members":
                return {k: self._spec_form(x, "member", inverse) for k, x in v.items()}
            if key == "assignment":
                if any(k not in inverse for k in v):
                    return UNNAMED          # keyed by an id the scenario cannot name: not an expectation
                return {"$" + inverse[k]: x for k, x in v.items()}
            return {k: self._spec_form(x, k, inverse) for k, x in v.items() if key != "groups" or k in SUMMARY.fields}
        return v

    # -- the divergence, as the spec would have it -----------------------------------------------------

    def _diverged(self, observed: dict) -> Divergence:
        """What the spec expects where the implementation's observation fits no behaviour: the fields
        that fit no world, each with what the spec's worlds have (`any_of` where they differ)."""
        is_snap = "snapshot" in observed
        head = "snapshot" if is_snap else "expect"
        target = observed[head]
        values = []       # each world's value, in scenario terms
        for w in self.ref.worlds:
            inverse = {v: k for k, v in w.env.items() if isinstance(v, str)}
            raw = w.coord.snapshot(target) if is_snap else w.responses.get(target)
            if raw is None:
                values.append(None)
            else:
                values.append({k: self._spec_form(v, k, inverse) for k, v in raw.items()
                               if k in (SNAPSHOT_FIELDS if is_snap else RESPONSE_FIELDS)})
        if not is_snap and observed.get("pending"):
            kind, want = "pending", [v for v in values if v is not None]
            fields = {}
            for v in want:
                for k, x in v.items():
                    fields.setdefault(k, []).append(x)
            expect = {head: target, **{k: _one_of(xs) for k, xs in fields.items() if k in ("error", "member",
                                                                                            "generation", "leader")}}
            return self._fail(kind, target, {k: v for k, v in expect.items() if k != head}, "no answer yet (parked)",
                              expect)
        if not is_snap and all(v is None for v in values):
            expect = {head: target, "pending": True}
            got = {k: x for k, x in observed.items() if k != head}
            return self._fail("pending", target, "no answer yet (parked)", self._plain_impl(got), expect)
        if is_snap and all(v is None for v in values):
            expect = {head: target, "state": None}
            return self._fail("snapshot", f"snapshot {target}", "no such group",
                              self._plain_impl({k: x for k, x in observed.items() if k != head}), expect)
        # the fields no world has as the implementation does
        differ = []
        for k, x in observed.items():
            if k == head:
                continue
            if not any(v is not None and _fits(x, v.get(k), self.ref.worlds[i].env, k)
                       for i, v in enumerate(values)):
                differ.append(k)
        if not differ:     # each field fits some behaviour, but no one behaviour fits them all
            differ = [k for k in observed if k != head]
        # a field the spec keys by ids the scenario never named cannot be written as an expectation
        nameable = [k for k in differ if not any(v is not None and _has(v.get(k), UNNAMED) for v in values)]
        differ = nameable or [k for k in ("state", "generation") if k in observed] or differ
        expect = {head: target, **{k: _one_of([v.get(k) if v is not None else None for v in values]) for k in differ}}
        kind = "snapshot" if is_snap else "response"
        where = f"{'snapshot ' if is_snap else ''}{target}.{','.join(differ)}"
        got = {k: self._plain_impl(observed.get(k)) for k in differ}
        return self._fail(kind, where, {k: v for k, v in expect.items() if k != head}, got, expect)

    def _plain_impl(self, v: Any) -> Any:
        """An observation shown with the implementation's own ids (a failure message)."""
        if isinstance(v, str) and v.startswith("$"):
            return self.env.get(v[1:], v)
        if isinstance(v, dict) and len(v) == 1 and "bind" in v:
            return self.env.get(v["bind"], v)
        if isinstance(v, list):
            return [self._plain_impl(x) for x in v]
        if isinstance(v, dict):
            return {self._plain_impl(k) if isinstance(k, str) else k: self._plain_impl(x) for k, x in v.items()}
        return v


UNNAMED = "\0unnamed"


def _has(v: Any, what: Any) -> bool:
    if isinstance(v, dict):
        return any(_has(x, what) for x in v.values())
    if isinstance(v, list):
        return any(_has(x, what) for x in v)
    return v == what


def _binds(v: Any) -> bool:
    if isinstance(v, dict):
        return "bind" in v or any(_binds(x) for x in v.values())
    if isinstance(v, list):
        return any(_binds(x) for x in v)
    return False


def _fits(expected: Any, got_scenario_form: Any, env: dict, key: str) -> bool:
    """Whether one observed field fits one world's value (given in scenario terms: resolve it first)."""
    try:
        got = resolve(_unform(got_scenario_form), env)
        match(expected, got, dict(env), key, ordered=key == "errors" and isinstance(got, list))
        return True
    except (Mismatch, BadUse):
        return False


def _unform(v: Any) -> Any:
    if isinstance(v, dict) and len(v) == 1 and "not" in v:
        return "\0new-id"
    if isinstance(v, list):
        return [_unform(x) for x in v]
    if isinstance(v, dict):
        return {k: _unform(x) for k, x in v.items()}
    return v


def _one_of(values: list) -> Any:
    distinct = []
    for v in values:
        if v not in distinct:
            distinct.append(v)
    return distinct[0] if len(distinct) == 1 else {"any_of": distinct}


def replay_in_lockstep(steps: list[dict], impl, config: dict, watch: Callable | None = None) \
        -> tuple[int, Divergence | SpecFailure] | None:
    """A scenario's actions on an implementation and the spec side by side, every answer and snapshot of the
    implementation compared with what the spec allows under `config` (not with the scenario's own
    expectations): the spec's prediction for a coordinator other than the one the scenario describes.  The
    scenario's `expect` steps only say which variable names the ids its requests use; Unsupported propagates
    when a step cannot be run at all.  The first difference and the number of the scenario's step that met
    it, or None.  `watch`: Lockstep's."""
    lock = Lockstep(impl, config, watch=watch)
    alias: dict[str, str] = {}       # the scenario's variable -> the lockstep's
    sent: dict[str, str] = {}        # the scenario's request id -> the lockstep's
    n = 0
    try:
        for n, b in enumerate(steps, 1):
            if "send" in b:
                request = _renamed({k: v for k, v in b.items() if k not in ("send", "id")}, alias)
                sent[b["id"]] = lock.send(b["send"], request)
            elif "expect" in b:
                _learn(lock, sent.get(b["expect"]), b, alias)
            elif any(k in b for k in ("advance_ms", "storage", "coordinator")):
                lock.act(b)
            if lock.left_out is not None:
                left_out = Unsupported(lock.left_out)
                left_out.step = n
                raise left_out
    except (Divergence, SpecFailure) as e:
        return n, e
    return None


def _renamed(v: Any, alias: dict[str, str]) -> Any:
    if isinstance(v, str) and v.startswith("$") and v[1:] in alias:
        return "$" + alias[v[1:]]
    if isinstance(v, list):
        return [_renamed(x, alias) for x in v]
    if isinstance(v, dict):
        return {_renamed(k, alias): _renamed(x, alias) for k, x in v.items()}
    return v


def _learn(lock: Lockstep, rid: str | None, expect: dict, alias: dict[str, str]) -> None:
    """The names a scenario's `expect` binds, as the lockstep's own variables for the same ids."""
    if rid is None:
        return
    seen: dict = {}
    for s, _ in lock.steps:
        if s.get("expect") == rid:
            seen.update(s)

    def walk(want: Any, got: Any) -> None:
        if isinstance(want, dict) and set(want) == {"bind"}:
            if isinstance(got, dict) and set(got) == {"bind"}:
                alias[want["bind"]] = got["bind"]
            elif isinstance(got, str) and got.startswith("$"):
                alias[want["bind"]] = got[1:]
        elif isinstance(want, list) and isinstance(got, list):
            for w, g in zip(want, got):
                walk(w, g)
        elif isinstance(want, dict) and isinstance(got, dict):
            for k, w in want.items():
                walk(w, got.get(k))
    for k, want in expect.items():
        if k not in ("expect", "pending"):
            walk(want, seen.get(k))
