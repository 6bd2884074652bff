"""A target on the wall clock leaves out the steps its clock cannot decide (checkers/conform/wallclock.py):
those after which the spec has a timer due within how far the target's clock may run ahead.  Shown on the
runtime coordinator dressed as a wall-clock target with a fixed lead: what it leaves out depends on the lead
and on the spec's timers only."""
from __future__ import annotations

from pathlib import Path

import pytest

from groupspec.checkers.conform.adapter import Unsupported, runtime
from groupspec.checkers.conform.lockstep import replay_in_lockstep
from groupspec.checkers.conform.wallclock import Timer, check_resolution
from groupspec.checkers.scenarios.model import load_file
from groupspec.checkers.scenarios.targets import run_on_adapter
from groupspec.spec.kafka import NEW_COORDINATOR, check_config

REPO = Path(__file__).resolve().parents[1]
# a join at 0, advance 49, a second join extending the delay to 100, then expectations 1 ms either side
DELAY = next(s for s in load_file(REPO / "tests/scenarios/kafka/join-rebalance.yaml")
             if s.name == "kafka-initial-rebalance-delay-extends-when-a-member-joins")


class Leading:
    """The runtime, with a wall clock `lead` ms ahead (as a broker's target says of itself)."""

    def __init__(self, config: dict, lead: float):
        self.inner, self.lead, self.asked = runtime(config), lead, []

    def clock_lead_ms(self, advance_ms: int = 0) -> float:
        self.asked.append(advance_ms)
        return self.lead

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_a_step_next_to_a_timer_is_left_out_naming_the_distance_and_the_lead():
    r = run_on_adapter(DELAY, "leading", factory=lambda cfg: Leading(cfg, 1.5))
    assert r.result == "skip" and r.step == 2, r
    assert "a timer of the spec is due 1 ms after this step" in r.message
    assert "may be 1.5 ms ahead" in r.message and "--time-scale" in r.message


def test_a_clock_within_the_timers_distances_runs_every_step():
    made = []
    r = run_on_adapter(DELAY, "leading", factory=lambda cfg: made.append(Leading(cfg, 0.5)) or made[-1])
    assert r.result == "pass", r
    assert 49 in made[0].asked and 0 in made[0].asked     # advances are judged at their end, the rest at once


def test_a_target_not_on_the_wall_clock_is_never_asked():
    assert run_on_adapter(DELAY, "runtime", factory=runtime).result == "pass"


def _timers(spec):
    """(due, armed by[, kind[, group]]): a heartbeat of group g unless said."""
    return [Timer(*t, *("heartbeat", "g")[len(t) - 2:]) for t in spec]


@pytest.mark.parametrize("before,after,step,left_out", [
    ([(5, 1)], [], {"advance_ms": 5}, False),          # due at the advance's end: fires on both sides
    ([(6, 1)], [(1, 1)], {"advance_ms": 5}, True),     # due 1 ms after it
    ([(8, 1)], [(3, 1)], {"advance_ms": 5}, False),    # 3 ms after it, beyond the lead
    ([], [(0, 2)], {"send": "JoinGroup"}, True),       # armed by the step, due now: a broker fires it at once
    ([], [(3, 2)], {"send": "JoinGroup"}, False),
    ([(4, 1), (4, 2)], [], {"advance_ms": 9}, True),   # one instant, armed by two steps: either order
    ([(3, 1), (4, 2)], [], {"advance_ms": 9}, True),   # 1 ms apart, within the lead
    ([(4, 1), (4, 1)], [], {"advance_ms": 9}, False),  # armed by one step: one phase, the spec's order
    ([(4, 1), (4, 1, "sync")], [], {"advance_ms": 9}, True),   # one step, two kinds: two timer threads
    ([(1, 1), (4, 2)], [], {"advance_ms": 9}, False),  # 3 ms apart
    ([(1, 1), (2, 1), (3, 2)], [], {"advance_ms": 9}, True),   # 1 and 3: 2 ms apart, different steps
    ([(4, 1, "heartbeat", "g"), (4, 2, "heartbeat", "h")], [], {"advance_ms": 9}, False),  # two groups
])
def test_which_timers_are_too_near(before, after, step, left_out):
    impl = Leading(check_config({}), 2.0)
    if left_out:
        with pytest.raises(Unsupported, match="below its resolution"):
            check_resolution(impl, _timers(before), _timers(after), step)
    else:
        check_resolution(impl, _timers(before), _timers(after), step)


def test_the_lockstep_leaves_the_step_out_before_either_side_takes_it():
    """A scenario of the other coordinator runs side by side with the spec: the step near a timer is left out
    there too, and nothing of it reached the target."""
    steps = [s.body for s in DELAY.steps]
    impl = Leading(check_config({**DELAY.config, NEW_COORDINATOR: True}), 1.5)
    with pytest.raises(Unsupported, match="due 1 ms after this step") as left_out:
        replay_in_lockstep(steps, impl, check_config({**DELAY.config, NEW_COORDINATOR: True}))
    assert left_out.value.step == 2
    assert impl.inner.coord.clock.now() == 0      # the advance of step 2 never reached it


def test_a_step_arming_a_timer_due_at_once_is_left_out_before_it_is_taken():
    """With no initial rebalance delay a first join arms a join timer due now: the spec answers at the next
    advance, a broker at once.  Side by side with the spec, the step is foreseen on a copy of the spec and left
    out before either side takes it."""
    config = check_config({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10})
    join = {"send": "JoinGroup", "id": "j", "group": "g", "member": "", "client": "c", "session_timeout_ms": 500,
            "protocol_type": "consumer", "protocols": ["range"], "require_known_member_id": False}
    impl = Leading(config, 1.5)
    with pytest.raises(Unsupported, match="due 0 ms after this step") as left_out:
        replay_in_lockstep([join], impl, config)
    assert left_out.value.step == 1 and impl.inner.coord.groups == {}
