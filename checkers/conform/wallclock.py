"""Targets on the wall clock (a real broker): which steps their clock can decide.

The spec's time is abstract: a timer due one millisecond after a step has not
fired at that step, and timers due at one instant fire in the order they were
armed.  A broker's clock is real.  It runs ahead of the scenario's by the time
the steps themselves take (requests, waits for answers, snapshots): in
scenario milliseconds, that real time divided by the time scale.  And each of
its timers runs from the real moment the request that armed it was sent (its
*phase*), so two timers armed by different steps may fire in either order when
their deadlines are closer than the phases differ; and timers of different
kinds may run on different threads (Kafka 3.9 keeps heartbeats in one
purgatory and joins and syncs in another, each with its own timer thread), so
two due at one instant race even when one step armed both.  A target on the wall
clock says how far ahead its clock may be once a step is done
(`clock_lead_ms`, which bounds the phases too).  A step whose outcome hangs on
either cannot be decided there:

- the spec has a timer due after the step, no further off than the lead (the
  broker may fire it first);
- an advance fires timers armed by different steps, or of different kinds,
  whose deadlines are within the lead of each other (the broker may fire them
  in the other order).

Such a step is left out before it is taken (Unsupported, naming the timers and
the lead), never judged; a broker with a larger time scale resolves more.  The
spec's timers come from the spec itself on the same steps (`SpecTimers`): its
worlds in a lockstep run, or the scenario run on the spec first
(`spec_timers`).
"""
from __future__ import annotations

import bisect
import copy
from dataclasses import dataclass
from typing import Any, Iterable

from groupspec.spec.kafka import check_config

from .adapter import Unsupported
from .reference import Reference


@dataclass(frozen=True)
class Timer:
    due: int          # ms from now
    armed_by: int     # the step that armed it (its number among the steps taken)
    kind: str         # heartbeat, join, sync, ... (the coordinator's timer names)
    group: str = ""   # timers of different groups never decide each other's outcome


class SpecTimers:
    """The timers armed in the spec's coordinators (its worlds), each with the step that armed it."""

    def __init__(self):
        self._starts: list[int] = []     # the arming order of the first timer each step armed
        self._steps: list[int] = []

    def step(self, coords: Iterable[Any], number: int) -> list[Timer]:
        """Before step `number`: the timers armed now, and the step begins (what it arms is its own)."""
        coords = list(coords)
        if coords:
            self._starts.append(coords[0].timers.next_order())
            self._steps.append(number)
        return sorted({Timer(deadline - c.clock.now(), self._origin(order), *_named(key))
                       for c in coords for key, deadline, order in c.timers.schedule()},
                      key=lambda t: (t.due, t.armed_by, t.kind, t.group))

    def _origin(self, order: int) -> int:
        i = bisect.bisect_right(self._starts, order) - 1
        return self._steps[i] if i >= 0 else 0


def _named(key: Any) -> tuple[str, str]:
    """(kind, group) of a timer's key: the coordinator's keys are (group, kind, member)."""
    return (str(key[1]), str(key[0])) if isinstance(key, tuple) and len(key) > 1 else (str(key), "")


def check_resolution(impl: Any, before: list[Timer], after: list[Timer] | None, step: dict) -> None:
    """Unsupported when `impl` is on the wall clock and the outcome of `step` hangs on the spec's timers closer
    than its clock resolves: `before` the step (the ones an advance fires, in order) and `after` it (the ones
    still to fire, the step's own among them; None when the spec could not take the step)."""
    lead_of = getattr(impl, "clock_lead_ms", None)
    if lead_of is None:
        return
    moved = step.get("advance_ms") if isinstance(step.get("advance_ms"), int) else 0
    lead = lead_of(moved)
    there = f"the target's wall clock may be {lead:.1f} ms ahead of the scenario's there"
    near = [t.due for t in after or () if 0 <= t.due <= lead]
    if near:
        raise Unsupported(f"a timer of the spec is due {min(near)} ms after this step, and {there}: below its "
                          f"resolution (a broker with a larger --time-scale resolves it)")
    fired = [t for t in before if t.due <= moved] if moved else []
    for i, a in enumerate(fired):
        for b in fired[i + 1:]:
            if b.due - a.due > lead:
                break
            if a.group == b.group and (a.armed_by, a.kind) != (b.armed_by, b.kind):
                raise Unsupported(f"timers of the spec ({a.kind}, {b.kind}) fire {b.due - a.due} ms apart in this "
                                  f"advance, armed by {'one step' if a.armed_by == b.armed_by else 'different steps'}, "
                                  f"and {there}: their order is below its resolution (a broker with a larger "
                                  f"--time-scale resolves what the steps' timing decides)")


def spec_timers(sc: Any) -> dict[int, list[Timer]]:
    """The spec's timers before each step of a scenario (step number -> timers; the number after the last
    step: once it is done), from the spec run on its steps; as far as it runs (the spec target itself reports
    a scenario it fails)."""
    ref = Reference(check_config(sc.config))
    seen = SpecTimers()
    out: dict[int, list[Timer]] = {}
    for step in sc.steps:
        out[step.number] = seen.step((w.coord for w in ref.worlds), step.number)
        try:
            if step.kind in ("expect", "snapshot"):
                if ref.check(step.body) is not None:
                    return out
            elif step.kind != "assign":
                ref.act(step.body)
        except Exception:     # noqa: BLE001 - the spec's own failure: its target says it, with the step
            return out
    if sc.steps:
        out[sc.steps[-1].number + 1] = seen.step((w.coord for w in ref.worlds), sc.steps[-1].number + 1)
    return out


def after_step(ref: Reference, seen: SpecTimers, step: dict, number: int) -> list[Timer] | None:
    """The spec's timers once `step` (an action) is done, from a copy of the reference that takes it (the
    reference itself is left as it was); None when the spec cannot take it."""
    trial = copy.deepcopy(ref)
    try:
        trial.act(step)
    except Exception:     # noqa: BLE001 - the step taken for real says what the spec does with it
        return None
    probe = copy.copy(seen)
    probe._starts, probe._steps = list(seen._starts), list(seen._steps)
    return probe.step((w.coord for w in trial.worlds), number + 1)
