"""A conformance divergence as a reviewer reads it (`conform --walkthrough DIR`): the scenario's steps in
Kafka's words, run again on the spec and on a fresh implementation side by side (lockstep.py), with the
spec's group beside the implementation's after each step, members named by the scenario's variables on
both sides, what differs marked, the answers each gave, and the step where they part.  The steps are
review/walkthrough.py's, rendered there as Markdown and HTML like every other counterexample."""
from __future__ import annotations

from typing import Any

from groupspec.checkers.review import walkthrough as W
from groupspec.checkers.scenarios.model import is_action
from groupspec.spec.kafka import brief

from .adapter import Unsupported
from .lockstep import Divergence, Lockstep, replay_in_lockstep



def step_words(step: dict) -> str:
    """A scenario's action in Kafka's words: `JoinGroup from m1, generation 2`, `the clock advances 3000 ms`."""
    if "send" in step:
        member = step.get("member")
        who = member.lstrip("$") if isinstance(member, str) and member else "a new member"
        gen = f", generation {step['generation']}" if step.get("generation") not in (None, -1) else ""
        instance = f" (group.instance.id {step['instance']})" if step.get("instance") else ""
        return f"{step['send']} {step['id']} from {who}{instance}{gen}"
    if "advance_ms" in step:
        return f"the clock advances {step['advance_ms']} ms"
    if "storage" in step:
        (what, value), = step["storage"].items()
        return {"hold": "the log holds the group's next append",
                "fail_next_append": f"the group's next append will fail with {value}",
                "complete": f"the held append completes: {value}"}.get(what, f"storage {what} {value}")
    ev = step["coordinator"]
    return f"the coordinator is told to {ev if isinstance(ev, str) else brief(ev)}"


def _named(v: Any, names: dict[str, str]) -> Any:
    """A snapshot's value with member ids replaced by the scenario's variables (`m1`)."""
    if isinstance(v, str):
        return names.get(v, v)
    if isinstance(v, list):
        return [_named(x, names) for x in v]
    if isinstance(v, dict):
        return {names.get(k, k): _named(x, names) for k, x in v.items()}
    return v


class _Recorder:
    """Each step both sides took: what was done, the spec's group beside the implementation's."""

    def __init__(self, implementation: str):
        self.title = implementation
        self.steps: list[dict] = []
        self.done = 0           # the lockstep's steps already shown
        self.fired = 0          # rows the spec's first world had fired at the last step

    def __call__(self, lock: Lockstep, diverged: Divergence | None = None) -> None:
        new = [s for s, _ in lock.steps[self.done:]]
        self.done = len(lock.steps)
        action = next((s for s in reversed(new) if is_action(s)), None)
        world = lock.ref.worlds[0]
        fired = world.coord.fired[self.fired:] if len(world.coord.fired) >= self.fired else world.coord.fired
        self.fired = len(world.coord.fired)
        notes = []
        for s in new:
            if "expect" not in s or s.get("pending"):
                continue
            theirs = _answer(s)
            mine = world.responses.get(s["expect"])
            mine = _answer(_named(mine, _inverse(world.env))) if isinstance(mine, dict) else theirs
            notes.append(f"{s['expect']} answered {theirs}" + ("" if mine == theirs else
                         f" by the implementation; {mine} by the spec"))
        if len(lock.ref.worlds) > 1:
            notes.append(f"{len(lock.ref.worlds)} behaviours of the spec fit so far; the first is shown")
        if diverged is not None:
            notes.append(f"they part: {diverged.kind} ({diverged.where}): {diverged.what}")
        # the group the scenario's requests name (a conformance scenario's may not be the harness's g0)
        named = [g for g in lock.groups if any(s.get("group") == g for s, _ in lock.steps)]
        group = (named or lock.groups)[0]
        mine = W.snapshot_view(_named(world.coord.snapshot(group), _inverse(world.env)))
        try:
            theirs = W.snapshot_view(_named(lock.impl.snapshot(group), lock.inverse))
        except Exception as e:      # noqa: BLE001 - the implementation's failure is shown, not raised again
            theirs = {W.STATE: f"(its snapshot failed: {type(e).__name__}: {brief(str(e), 120)})"}
        self.steps.append({"step": len(self.steps) + 1,
                           "action": step_words(action) if action else "the implementation is observed",
                           "rows": W.row_links(fired), "notes": notes, "group": mine,
                           "beside": {"title": self.title, "group": theirs}})


def _inverse(env: dict) -> dict[str, str]:
    """A spec world's member ids -> the scenario's variables it bound."""
    return {v: k for k, v in env.items() if isinstance(v, str)}


def _answer(resp: dict) -> str:
    """An answer as `NONE (member m1, generation 1, leader m1)`: its error, then the fields that say
    something, member ids by their variables (a scenario's `$m1` and `{bind: m1}` both as m1)."""
    def plain(v: Any) -> Any:
        if isinstance(v, dict) and set(v) == {"bind"}:
            return v["bind"]
        if isinstance(v, str) and v.startswith("$"):
            return v[1:]
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {plain(k): plain(x) for k, x in v.items()}
        return v
    fields = {k: plain(v) for k, v in resp.items() if k != "expect" and v not in (None, "", [], {}, -1)}
    error = fields.pop("error", None)      # shown as answered; an answer without one says so
    said = ", ".join(f"{k} {W.text(v)}" for k, v in fields.items() if not isinstance(v, bool) or v)
    return (error or "with no error field") + (f" ({said})" if said else "")


def walkthrough(scenario: dict, factory, implementation: str) -> str:
    """The scenario run again on the spec and on a fresh implementation, as Markdown."""
    rec = _Recorder(implementation)
    impl = factory(dict(scenario.get("config") or {}))
    try:
        found = replay_in_lockstep(scenario["steps"], impl, scenario.get("config") or {}, watch=rec)
    except Unsupported as e:
        found, rec.steps = None, rec.steps + [{"step": len(rec.steps) + 1, "action": "a step the implementation "
                                              f"cannot be asked: {e}", "rows": [], "notes": [], "group": {}}]
    finally:
        close = getattr(impl, "close", None)
        if close is not None:
            try:
                close()
            except Exception:       # noqa: BLE001 - closing after the walkthrough; the run reported it already
                pass
    W.mark_changes(rec.steps)
    if found is None:
        return W.to_markdown(rec.steps, f"Conformance: {implementation}", "the implementation and the spec agree "
                             "on every step of this scenario now (a flaky implementation, or one with state "
                             "outside the scenario)", "The scenario's steps, on the spec and on the implementation.")
    _, e = found
    meaning = f"{e.kind} ({e.where}): {e.what}" if isinstance(e, Divergence) else str(e)
    return W.to_markdown(rec.steps, f"Divergence: {implementation} and the spec", meaning,
                         f"The scenario's steps on the spec and on a fresh {implementation}, side by side (the "
                         f"group as each holds it after the step; ≠ where they differ).",
                         "the implementation parts from the spec here")
