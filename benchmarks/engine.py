"""How fast the compiled table runs: guard evaluations, row firings, runtime requests.

    .venv/bin/python benchmarks/engine.py [--seconds 2]

Prints one JSON object.  Guards and firings run over the states a real
group goes through (collected by driving the runtime through a rebalance),
so the figures are those the explicit-state checker and the runtime see.
"""
from __future__ import annotations

import argparse
import json
import platform
import time

from groupspec.impl.coordinator import GroupCoordinator
from groupspec.spec import engine as E


def collect_states(c: GroupCoordinator) -> list[tuple]:
    states = []
    orig = c._fire

    def spy(g, trigger, params):
        states.append(g.state)
        orig(g, trigger, params)
    c._fire = spy
    ids = []
    for client in ("a", "b", "c"):
        r = c.send("JoinGroup", dict(group="g", member="", client=client, session_timeout_ms=10_000,
                                     rebalance_timeout_ms=10_000, protocol_type="consumer", protocols=["range"]))
        ids.append(r["member"])
    for mid in ids:
        c.send("JoinGroup", dict(group="g", member=mid, client="x", session_timeout_ms=10_000,
                                 rebalance_timeout_ms=10_000, protocol_type="consumer", protocols=["range"]))
    c.advance(0)
    c.send("SyncGroup", dict(group="g", member=ids[0], generation=1,
                             assignments={m: [f"t-{i}"] for i, m in enumerate(ids)}))
    for mid in ids:
        c.send("Heartbeat", dict(group="g", member=mid, generation=1))
    c._fire = orig
    return states


def stable_maps(state: tuple) -> tuple:
    return E.get(state, "session_ms")


def timed(fn, seconds: float) -> tuple[int, float]:
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        n += fn()
    return n, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    c = GroupCoordinator({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10},
                         lifecycle=False)
    states = collect_states(c)
    engine = E.Engine()
    rows = [cr for crs in engine.by_trigger.values() for cr in crs]
    from groupspec.spec.lang import default_of
    from groupspec.spec.schema import PARAM_TYPES
    width = len(stable_maps(states[-1]))
    def default(t):
        if t.kind == "map":
            return tuple([default(t.value)] * width)
        if t.kind == "record":
            return tuple(default(ft) for ft in t.args)
        return default_of(t)
    base = {n: default(t) for n, t in PARAM_TYPES.items() if t.kind != "fun"}
    p = E.make_params({**base, **c.cfg_params, "coord": 0, "group_id_ok": True, "member": 0,
                       "member_empty": False, "instance": -1, "generation": 1, "timer_member": 0,
                       "session_ms": 10_000, "rebalance_ms": 10_000, "req_protos": 0, "req_ptype": 0})

    def guards():
        for s in states:
            bit = 1 << s[E.STATE_I]
            for cr in rows:
                if cr.state_mask & bit:
                    cr.guard(s, p, ())
        return sum(1 for s in states for cr in rows if cr.state_mask & (1 << s[E.STATE_I]))
    n_guards, t_guards = timed(guards, args.seconds)

    stable = states[-1]

    def beats():
        for _ in range(1000):
            engine.fire(stable, "Heartbeat", p)
        return 1000
    n_fire, t_fire = timed(beats, args.seconds)

    rt = GroupCoordinator({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10})
    collect_states(rt)
    mid = next(iter(rt.groups["g"].slot_of))

    def requests():
        for _ in range(200):
            rt.send("Heartbeat", dict(group="g", member=mid, generation=1))
        return 200
    n_req, t_req = timed(requests, args.seconds)
    print(json.dumps({
        "benchmark": "engine", "python": platform.python_version(), "rows": len(rows),
        "guard_evaluations_per_second": round(n_guards / t_guards),
        "row_firings_per_second": round(n_fire / t_fire),
        "runtime_requests_per_second": round(n_req / t_req),
    }, indent=2))


if __name__ == "__main__":
    main()
