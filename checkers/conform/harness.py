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

from groupspec.checkers.scenarios.model import is_action

from .adapter import AdapterBroken, Factory, Unsupported
from .interrupts import deferred
from .lockstep import Divergence, SpecFailure, replay_in_lockstep
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
        if self.stats.get("coverage"):
            d["coverage"] = self.stats["coverage"]
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
        shrink_seconds: float = 60, database=None, corpus: bool = True) -> Report:
    """Run `examples` examples of up to `steps` steps each of `factory`'s implementation against the spec.
    A failure is shrunk for at most `shrink_seconds` (0: not at all) and reported with its scenario.

    First (`corpus`) the conformance scenarios' steps (tests/scenarios, where the project's tests are beside the
    package; tests/scenarios/generated, a shortest scenario per row from the closed worlds, first) run on the
    implementation side by side with the spec, each under its own config: a fixed suite that fires every
    row of the table, in about three seconds.  Then the generated examples,
    steered towards rows and pairs of rows not fired yet.  A divergence's scenario is then cut down step
    by step while the implementation still diverges the same way (`minimal`): deterministic, so the
    same seed gives the same file."""
    seed = random.randrange(2**32) if seed is None else seed
    start = time.perf_counter()
    covered: dict = {"rows": set(), "pairs": set(), "corpus_scenarios": 0}
    if corpus:
        with deferred():
            hit = _corpus_phase(factory, overrides or {}, covered)
        if hit is not None:
            name, n, e = hit
            found = {"examples": 0, "steps": n, "seconds": round(time.perf_counter() - start, 2),
                     "phase": "corpus", "corpus_scenario": name}
            if isinstance(e, Divergence) and shrink_seconds > 0:
                e = minimal(e, factory)
            stats = {"found_after": found, "coverage": _coverage(covered)}
            return _failed(e, adapter, seed, stats, time.perf_counter() - start)
    machine = machine_for(factory, overrides, on_step=progress)
    phases = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target] + \
        ([Phase.shrink] if shrink_seconds > 0 else [])
    s = settings(max_examples=examples, stateful_step_count=steps, deadline=None, database=database,
                 report_multiple_bugs=False, print_blob=False, verbosity=Verbosity.quiet, phases=phases, derandomize=False,
                 suppress_health_check=list(HealthCheck))
    test = seed_of(seed)(get_state_machine_test(machine, settings=s))
    stats = machine.stats
    stats["started"] = start
    stats["rows"], stats["pairs"] = covered["rows"], covered["pairs"]

    def cov() -> dict:
        return _coverage(covered)
    with deferred():       # a signal stops the run, and is never its finding (interrupts.py)
        try:
            with _shrinking_for(shrink_seconds):
                test()
        except (Divergence, SpecFailure) as e:
            if isinstance(e, Divergence) and shrink_seconds > 0:
                e = minimal(e, factory)
            return _failed(e, adapter, seed, {**stats, "coverage": cov()}, time.perf_counter() - start)
        except Flaky as e:      # the implementation answers differently on the same steps: still a finding
            last = stats.get("last")
            return Report("divergence", adapter, seed, stats.get("examples", 0), stats.get("steps", 0),
                          time.perf_counter() - start, {"kind": "flaky", "where": "", "spec": "", "implementation": ""},
                          last.scenario(about="the implementation did not fail again on the same steps") if last else None,
                          message=f"the implementation is not deterministic on the same steps ({type(e).__name__}); "
                                  f"the last run's steps are shown", stats={"coverage": cov()})
        except Unsatisfiable:   # every config drawn was one the factory refused
            raise AdapterBroken(f"the factory refused every config drawn (Unsupported: {stats.get('refused_config')}); "
                                f"give the config it can take with --config, or fixed_config on the factory "
                                f"(adapter.py)") from None
    return Report("ok", adapter, seed, stats.get("examples", 0), stats.get("steps", 0), time.perf_counter() - start,
                  stats={"unsupported": dict(stats.get("unsupported") or {}), "coverage": cov()})


# -- coverage ------------------------------------------------------------------------------------------

def _coverage(covered: dict) -> dict:
    """What the run fired of the table: rows (of all), and pairs of rows fired one after the other in one
    example (the spec's first behaviour; of the pairs any world can fire, which no run knows: a count)."""
    from groupspec.spec.table import ROWS
    names = {r.name for r in ROWS}
    rows = covered["rows"] & names
    return {"rows": len(rows), "rows_of": len(names), "pairs": len(covered["pairs"]),
            "corpus_scenarios": covered.get("corpus_scenarios", 0), "rows_not_fired": sorted(names - rows)}


def coverage_line(cov: dict) -> str:
    return (f"rows fired {cov['rows']}/{cov['rows_of']}, pairs of consecutive rows {cov['pairs']:,}"
            + (f" ({cov['corpus_scenarios']} conformance scenarios first)" if cov.get("corpus_scenarios") else ""))


# -- the conformance scenarios, first --------------------------------------------------------------------

_LOADED: list | None = None


def _corpus() -> list:
    global _LOADED
    if _LOADED is None:
        from groupspec.checkers.paths import REPO, generated_first
        from groupspec.checkers.scenarios.model import ScenarioError, load_file
        _LOADED = []
        # the project's suite, the part generated from the closed worlds first (a shortest scenario per row)
        for f in generated_first(REPO.joinpath("tests", "scenarios").rglob("*.yaml")):
            try:
                _LOADED.extend((sc.name, dict(sc.config), [st.body for st in sc.steps]) for sc in load_file(f))
            except (ScenarioError, OSError):
                continue
    return _LOADED


def _corpus_phase(factory: Factory, overrides: dict, covered: dict):
    """Each conformance scenario's actions on the implementation and the spec side by side (the spec's
    answers, not the scenario's, are what count: under the implementation's fixed config and the run's
    overrides).  The first divergence: (scenario, step, the divergence), or None."""
    from groupspec.spec.kafka import check_config
    fixed = getattr(factory, "fixed_config", None) or {}
    for name, config, steps in _corpus():
        try:
            cfg = check_config({**config, **fixed, **overrides})
        except ValueError:
            continue
        try:
            impl = factory(cfg)
        except Exception:       # noqa: BLE001 - a config it cannot take (or cannot make): the generated phase says
            continue
        locks: list = []
        try:
            hit = replay_in_lockstep(steps, impl, cfg, watch=lambda lock, *found: locks.append(lock) if not locks else None)
        except Unsupported:
            hit = None
        except Exception:       # noqa: BLE001 - a scenario this phase cannot run (an unbound name): not a finding
            hit = None
        finally:
            close = getattr(impl, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:       # noqa: BLE001 - a failing close is the generated phase's to find
                    pass
        covered["corpus_scenarios"] += 1
        if locks:
            fired = list(locks[0].ref.coord.fired)
            covered["rows"] |= set(fired)
            covered["pairs"] |= set(zip(fired, fired[1:]))
        if hit is not None:
            return name, hit[0], hit[1]
    return None


# -- the scenario of a divergence, cut down ----------------------------------------------------------

MAX_REPLAYS = 600


def minimal(found: Divergence, factory: Factory) -> Divergence:
    """The divergence's scenario with every action (and the expectations after it) left out that the
    implementation still diverges the same way (kind) without, until none can be: a local minimum, found
    the same way every time.  Each try replays the actions on a fresh implementation beside the spec."""
    best = found
    units = _units(best.scenario["steps"])
    tries = 0
    changed = True
    while changed and tries < MAX_REPLAYS:
        changed = False
        i = 0
        while i < len(units) and tries < MAX_REPLAYS:
            if not is_action(units[i][0]):
                i += 1
                continue
            tries += 1
            got = _diverges([s for j, u in enumerate(units) if j != i for s in u], best, factory)
            if got is not None:
                best, units, changed = got, _units(got.scenario["steps"]), True
            else:
                i += 1
    return best


def _units(steps: list[dict]) -> list[list[dict]]:
    units: list[list[dict]] = []
    for s in steps:
        if is_action(s) or not units:
            units.append([s])
        else:
            units[-1].append(s)
    return units


def _diverges(steps: list[dict], like: Divergence, factory: Factory) -> Divergence | None:
    config = like.scenario["config"]
    try:
        impl = factory(config)
    except Exception:       # noqa: BLE001
        return None
    try:
        hit = replay_in_lockstep(steps, impl, config)
    except Exception:       # noqa: BLE001 - a step left out that a later one needs (a name it bound)
        return None
    finally:
        close = getattr(impl, "close", None)
        if callable(close):
            try:
                close()
            except Exception:       # noqa: BLE001
                pass
    if hit is None or not isinstance(hit[1], Divergence) or hit[1].kind != like.kind:
        return None
    if len(hit[1].scenario["steps"]) >= len(like.scenario["steps"]):
        return None
    return hit[1]


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
    cov = stats.get("coverage")
    if isinstance(e, SpecFailure):
        return Report("spec-failure", adapter, seed, stats.get("examples", 0), stats.get("steps", 0), seconds,
                      {"kind": "spec", "step": e.step, "where": type(e.error).__name__, "spec": str(e.error),
                       "implementation": ""}, e.scenario, message=str(e), stats={"found_after": found, "coverage": cov})
    return Report("divergence", adapter, seed, stats.get("examples", 0), stats.get("steps", 0), seconds,
                  e.as_json(), e.scenario, message=str(e), stats={"found_after": found, "coverage": cov})
