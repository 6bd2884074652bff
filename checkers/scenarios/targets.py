"""Running a scenario on an implementation through its adapter (`checkers/conform/adapter.py`).

The spec and the runtime are run by `runner.py`, which sees their insides
(the spec explores every behaviour it allows).  Every other target is an
implementation seen from outside, as the conformance harness sees it:
Kafka's own coordinators in process (`kafka-3.9`, `kafka-4.0`), a broker
over the wire (`kafka://host:port`), or a user's adapter (`module:factory`).
Its answers are checked with the runner's own `expect` and `snapshot`
matching.  What the implementation cannot be asked (`Unsupported`: a config
it has no key for, a request no client of it could send, a coordinator
event a broker cannot be told) skips the scenario with that reason: a
skipped scenario is never counted as passed.
"""
from __future__ import annotations

from typing import Any

from groupspec.checkers.conform.adapter import AdapterError, Unsupported, load_factory, perform
from groupspec.checkers.conform.lockstep import Divergence, replay_in_lockstep
from groupspec.checkers.conform.wallclock import check_resolution, spec_timers
from groupspec.spec.kafka import NEW_COORDINATOR, brief, check_config, coordinator_name

from .match import BadUse, Mismatch, resolve
from .model import Scenario, ScenarioError
from .runner import SHOW, Result, check_expect, check_snapshot

BUILTIN_TARGETS = ("spec", "runtime")


class Observed:
    """An implementation seen as the runner's World is (its responses so far, `coord.snapshot`), so the
    runner's own `expect` and `snapshot` checks read it."""

    def __init__(self, impl: Any):
        self.coord, self.responses, self.env = impl, {}, {}


def factory_for(target: str):
    """The adapter factory a target names (AdapterError: it names none)."""
    return load_factory(target)


def run_on_adapter(sc: Scenario, target: str, factory=None) -> Result:
    """Run one scenario against an implementation alone: its answers must meet every `expect` and
    `snapshot`, and it must answer each request once."""
    try:
        factory = factory or factory_for(target)
    except AdapterError as e:
        return Result(sc.file, sc.name, "error", None, message=str(e))
    config = check_config(sc.config)
    fixed = getattr(factory, "fixed_config", None) or {}
    # a scenario describes one coordinator (the Scala one unless its config says otherwise): on a target running
    # the other one, its steps are compared with what the spec says of that one instead
    other = NEW_COORDINATOR in fixed and config[NEW_COORDINATOR] != fixed[NEW_COORDINATOR]
    if other:
        config = check_config({**sc.config, NEW_COORDINATOR: fixed[NEW_COORDINATOR]})
    try:
        impl = factory(config)
    except Unsupported as e:
        return Result(sc.file, sc.name, "skip", None, message=str(e))
    except Exception as e:      # noqa: BLE001 - the target could not be made (a JVM that died, a broker gone)
        return Result(sc.file, sc.name, "error", None, message=f"{target} could not start: {brief(str(e), SHOW)}")
    try:
        return _against_the_spec(sc, impl, config) if other else _steps(sc, impl)
    finally:
        close = getattr(impl, "close", None)
        if callable(close):
            try:
                close()
            except Unsupported:
                pass


def _steps(sc: Scenario, impl: Any) -> Result:
    w = Observed(impl)
    unobserved: list[str] = []
    unsupported = set(getattr(impl, "unsupported", ()) or ())
    timers = spec_timers(sc) if hasattr(impl, "clock_lead_ms") else {}
    for step in sc.steps:
        b = step.body
        try:
            check_resolution(impl, timers.get(step.number, []), timers.get(step.number + 1), b)
            if step.kind == "send":
                rid = b["id"]
                req = resolve({k: v for k, v in b.items() if k not in ("send", "id")}, w.env)
                resp = impl.send(b["send"], req, rid)
                if resp is not None:
                    w.responses[rid] = resp
            elif step.kind == "expect":
                check_expect(_observable(b, w, impl, unobserved), w, w.env)
            elif step.kind == "snapshot":
                b, seen = _observable_snapshot(b, w, impl, unobserved)
                check_snapshot(b, seen, w.env)
            elif step.kind in ("advance_ms", "storage", "coordinator"):
                needed = _method(b)
                if needed in unsupported:
                    raise Unsupported(f"it cannot be told to {needed.replace('_', ' ')}")
                if perform(impl, b) is False and "storage" in b:
                    return Result(sc.file, sc.name, "fail", step.number, "an append held, to complete",
                                  "none held", message="storage complete")
            elif step.kind == "assign":
                continue          # a pure assignor check: the spec's, run by the spec target
        except Unsupported as e:
            return Result(sc.file, sc.name, "skip", step.number, message=str(e))
        except Mismatch as m:
            return Result(sc.file, sc.name, "fail", step.number, m.expected, m.got, message=m.where)
        except BadUse as e:
            return Result(sc.file, sc.name, "error", step.number, message=e.message)
        except ScenarioError as e:
            return Result(sc.file, sc.name, "error", step.number, message=e.message)
        except Exception as e:      # noqa: BLE001 - whatever the implementation raises fails it on this step
            return Result(sc.file, sc.name, "fail", step.number, "an answer",
                          f"{type(e).__name__}: {brief(str(e), SHOW)}", message="the implementation raised")
        for rid, resp in impl.answered():
            if rid in w.responses:      # the format has no step for it; the contract answers a request once
                return Result(sc.file, sc.name, "fail", step.number, f"one answer to {rid}",
                              f"a second answer: {brief(resp, SHOW)}", message=f"{rid} answered twice")
            w.responses[rid] = resp
    return Result(sc.file, sc.name, "pass", unobserved=unobserved)


def _observable(b: dict, w: Observed, impl: Any, unobserved: list[str]) -> dict:
    """An `expect` step as far as the implementation's response can show it: an adapter whose responses
    carry only what their version carries (`partial_responses`: Kafka's, whose JoinGroup v3 has no protocol
    type) is not asked about a field its response leaves out; each such field is noted."""
    got = w.responses.get(b["expect"])
    if not getattr(impl, "partial_responses", False) or not isinstance(got, dict):
        return b
    missing = [k for k in b if k not in ("expect", "pending") and k not in got]
    unobserved.extend(f"{b['expect']}.{k}" for k in missing)
    return {k: v for k, v in b.items() if k not in missing}


def _against_the_spec(sc: Scenario, impl: Any, config: dict) -> Result:
    """The scenario's steps side by side with the spec under `config` (the target's coordinator)."""
    against = f"against the spec's {coordinator_name(config).split(' (')[0]}: the scenario describes the other one"
    try:
        found = replay_in_lockstep([s.body for s in sc.steps], impl, config)
    except Unsupported as e:
        return Result(sc.file, sc.name, "skip", getattr(e, "step", None), message=str(e))
    if found is None:
        return Result(sc.file, sc.name, "pass", message=against)
    n, e = found
    if isinstance(e, Divergence):
        return Result(sc.file, sc.name, "fail", n, e.expected, e.got, message=f"{e.where}; {against}")
    return Result(sc.file, sc.name, "error", n, message=f"the spec failed: {e}")


class _Seen:
    """One snapshot already taken, as check_snapshot reads it (`coord.snapshot`)."""

    def __init__(self, snap: dict | None):
        self.coord = self
        self._snap = snap

    def snapshot(self, group: str) -> dict | None:
        return self._snap


def _observable_snapshot(b: dict, w: Observed, impl: Any, unobserved: list[str]) -> tuple[dict, Any]:
    """A `snapshot` step as far as the implementation can show it: an adapter that sees a group only from
    outside (`partial_snapshots`: a broker shows no generation or pending members) is not asked about a
    field its snapshot leaves out; each such field is noted."""
    if not getattr(impl, "partial_snapshots", False):
        return b, w
    gid = resolve(b["snapshot"], w.env)
    snap = impl.snapshot(gid)
    if snap is None:
        return b, _Seen(None)
    missing = [k for k in b if k != "snapshot" and k not in snap]
    unobserved.extend(f"snapshot {gid}.{k}" for k in missing)
    return {k: v for k, v in b.items() if k not in missing}, _Seen(snap)


def _method(body: dict) -> str:
    """The adapter method a clock, storage or coordinator step needs."""
    if "advance_ms" in body:
        return "advance"
    if "storage" in body:
        (key, _), = body["storage"].items()
        return {"hold": "storage_hold", "fail_next_append": "storage_fail_next", "complete": "storage_complete"}[key]
    ev = body["coordinator"]
    return "mark_dead" if isinstance(ev, dict) else ev
