"""The spec as the reference: the scenario runner's spec target, one step at a time.

The runner's spec target (`checkers/scenarios/runner.py`) keeps one world
per behaviour of the table so far: every combination of the choices Kafka
leaves open (a new leader, a tied vote) is explored by copying worlds, and
an `expect` or `snapshot` step keeps the worlds that fit it.  The harness
drives it with the steps it sends the implementation and with `expect` /
`snapshot` steps holding what the implementation answered, so the worlds
left are the behaviours of the spec the implementation may be following:
where the spec allows several answers, the implementation's must be one of
them and the spec follows it.  Nothing here re-implements the runner.
"""
from __future__ import annotations

from groupspec.checkers.scenarios.model import STEP_KINDS, Scenario, Step
from groupspec.checkers.scenarios.runner import MAX_RUNS, Result, World, run_step, new_world


class Reference:
    """The behaviours of the spec consistent with the steps so far (the runner's worlds)."""

    def __init__(self, config: dict, name: str = "conform"):
        self.scenario = Scenario("<conform>", name, config=dict(config))
        self.worlds: list[World] = [new_world("spec", self.scenario.config, None)]
        self.n = 0

    def _step(self, body: dict) -> Step:
        self.n += 1
        kind = next(k for k in STEP_KINDS if k in body)
        return Step(self.n, kind, body)

    def act(self, body: dict) -> None:
        """Run an action (send, advance_ms, storage, coordinator) in every world, once per choice.  The
        spec's own failures propagate: EngineError (no row covers it), InvariantViolation."""
        self.worlds, _ = run_step(self._step(body), self.worlds, "spec", self.scenario, [MAX_RUNS])

    def check(self, body: dict) -> Result | None:
        """Keep the worlds that fit an `expect` or `snapshot` step; the failure if none does (the worlds
        are then left as they were)."""
        self.worlds, failure = run_step(self._step(body), self.worlds, "spec", self.scenario)
        return failure

    # -- what the harness's strategies read (any world will do: they only steer the search) ----------

    @property
    def coord(self):
        return self.worlds[0].coord

    @property
    def env(self) -> dict:
        return self.worlds[0].env
