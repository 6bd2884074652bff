"""Running the harness: examples of the generated machine, a seed, and the shrunk scenario of a failure."""
from __future__ import annotations

import random
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

import yaml
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as seed_of
from hypothesis.errors import Flaky, Unsatisfiable
from hypothesis.stateful import get_state_machine_test

from .adapter import AdapterBroken, Factory
from .interrupts import deferred
from .lockstep import Divergence, SpecFailure
from .machine import machine_for

# Profiles: `ci` fits the project's test budget; `nightly` is the long run (docs/guide/implementations.md).
PROFILES = {"ci": {"examples": 60, "steps": 30}, "nightly": {"examples": 3000, "steps": 80}}


@dataclass
class Report:
    result: str                     # ok, divergence, spec-failure
    adapter: str
    seed: int
    examples: int
    steps: int
    seconds: float
    divergence: dict | None = None
    scenario: dict | None = None
    message: str = ""
    stats: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        d: dict[str, Any] = {"result": self.result, "adapter": self.adapter, "seed": self.seed,
                             "examples": self.examples, "steps": self.steps, "seconds": round(self.seconds, 2)}
        if self.stats.get("unsupported"):
            d["steps_not_supported"] = dict(self.stats["unsupported"])
        if self.stats.get("found_after"):
            d["found_after"] = self.stats["found_after"]
        if self.result != "ok":
            d.update(message=self.message, divergence=self.divergence, scenario=self.scenario,
                     scenario_length=len(self.scenario["steps"]) if self.scenario else 0)
        return d

    @property
    def scenario_yaml(self) -> str:
        return scenario_yaml(self.scenario) if self.scenario else ""


def scenario_yaml(sc: dict) -> str:
    """A scenario in the contract's YAML, as a person would write it (flow style for short values)."""
    class _Dumper(yaml.SafeDumper):
        pass

    def _dict(dumper, d):
        flow = all(not isinstance(v, (dict, list)) or len(str(v)) < 40 for v in d.values()) and len(str(d)) < 70
        return dumper.represent_mapping("tag:yaml.org,2002:map", d.items(), flow_style=flow)

    def _list(dumper, items):
        return dumper.represent_sequence("tag:yaml.org,2002:seq", items, flow_style=len(str(items)) < 70 and
                                         all(not isinstance(x, dict) or len(str(x)) < 40 for x in items))
    _Dumper.add_representer(dict, _dict)
    _Dumper.add_representer(list, _list)
    top = dict(sc)
    steps = top.pop("steps")
    text = yaml.dump(top, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)
    text += "steps:\n" + "".join("  - " + yaml.dump(s, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                                                     width=110).strip().replace("\n", "\n    ") + "\n" for s in steps)
    return text


def run(factory: Factory, adapter: str = "", examples: int = 60, steps: int = 30, seed: int | None = None,
        overrides: dict | None = None, progress: Callable[[dict], None] | None = None,
        shrink_seconds: float = 60, database=None) -> Report:
    """Run `examples` examples of up to `steps` steps each of `factory`'s implementation against the spec.
    A failure is shrunk for at most `shrink_seconds` (0: not at all) and reported with its scenario."""
    seed = random.randrange(2**32) if seed is None else seed
    machine = machine_for(factory, overrides, on_step=progress)
    phases = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if shrink_seconds > 0 else [])
    s = settings(max_examples=examples, stateful_step_count=steps, deadline=None, database=database,
                 report_multiple_bugs=False, print_blob=False, verbosity=Verbosity.quiet, phases=phases, derandomize=False,
                 suppress_health_check=list(HealthCheck))
    test = seed_of(seed)(get_state_machine_test(machine, settings=s))
    start = time.perf_counter()
    stats = machine.stats
    stats["started"] = start
    with deferred():       # a signal stops the run, and is never its finding (interrupts.py)
        try:
            with _shrinking_for(shrink_seconds):
                test()
        except (Divergence, SpecFailure) as e:
            return _failed(e, adapter, seed, stats, time.perf_counter() - start)
        except Flaky as e:      # the implementation answers differently on the same steps: still a finding
            last = stats.get("last")
            return Report("divergence", adapter, seed, stats.get("examples", 0), stats.get("steps", 0),
                          time.perf_counter() - start, {"kind": "flaky", "where": "", "spec": "", "implementation": ""},
                          last.scenario(about="the implementation did not fail again on the same steps") if last else None,
                          message=f"the implementation is not deterministic on the same steps ({type(e).__name__}); "
                                  f"the last run's steps are shown")
        except Unsatisfiable:   # every config drawn was one the factory refused
            raise AdapterBroken(f"the factory refused every config drawn (Unsupported: {stats.get('refused_config')}); "
                                f"give the config it can take with --config, or fixed_config on the factory "
                                f"(adapter.py)") from None
    return Report("ok", adapter, seed, stats.get("examples", 0), stats.get("steps", 0), time.perf_counter() - start,
                  stats={"unsupported": dict(stats.get("unsupported") or {})})


@contextmanager
def _shrinking_for(seconds: float):
    """Bound Hypothesis's shrinking (its own bound is five minutes; a CI run wants less).  Hypothesis has
    no setting for it: this sets its engine's module constant for the run, and puts it back."""
    try:
        from hypothesis.internal.conjecture import engine
    except ImportError:         # pragma: no cover - a Hypothesis without it shrinks for its own bound
        yield
        return
    saved = getattr(engine, "MAX_SHRINKING_SECONDS", None)
    if saved is None:           # pragma: no cover
        yield
        return
    engine.MAX_SHRINKING_SECONDS = max(1, int(seconds))
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = saved


def _failed(e: Exception, adapter: str, seed: int, stats: dict, seconds: float) -> Report:
    found = stats.get("found_after", {})
    if isinstance(e, SpecFailure):
        return Report("spec-failure", adapter, seed, stats.get("examples", 0), stats.get("steps", 0), seconds,
                      {"kind": "spec", "step": e.step, "where": type(e.error).__name__, "spec": str(e.error),
                       "implementation": ""}, e.scenario, message=str(e), stats={"found_after": found})
    return Report("divergence", adapter, seed, stats.get("examples", 0), stats.get("steps", 0), seconds,
                  e.as_json(), e.scenario, message=str(e), stats={"found_after": found})
