"""The pytest plugin (entry point `pytest11`: loaded wherever groupspec is installed).

In a user's suite:

    from mybroker.testing import BrokerAdapter        # a factory: config -> adapter

    def test_my_coordinator_conforms(conform):
        conform(BrokerAdapter)                         # fails with the shrunk scenario on a divergence

`conform(factory, examples=, steps=, seed=, config=, shrink_seconds=)` runs the harness and returns its
report; options set the defaults for a whole run: --conform-profile (ci, nightly), --conform-examples,
--conform-steps, --conform-seed, --conform-shrink-seconds.  A failure's message holds the scenario
file's text; `--conform-save DIR` also writes it there.
"""
from __future__ import annotations

from pathlib import Path

import pytest


def pytest_addoption(parser):
    g = parser.getgroup("groupspec conform", "conformance of a group coordinator to groupspec's spec")
    g.addoption("--conform-profile", default="ci", choices=("ci", "nightly"),
                help="examples and steps of the conform fixture's runs (default: ci)")
    g.addoption("--conform-examples", type=int, default=None, help="examples per conform run")
    g.addoption("--conform-steps", type=int, default=None, help="steps per example")
    g.addoption("--conform-seed", type=int, default=None, help="the seed (printed with every failure)")
    g.addoption("--conform-shrink-seconds", type=float, default=30, help="at most this long shrinking a failure")
    g.addoption("--conform-save", default=None, help="write each failing scenario into this folder")


@pytest.fixture
def conform(request):
    """Run the conformance harness against an adapter factory; fail the test with the shrunk scenario."""
    from .harness import PROFILES, run, scenario_yaml
    opt = request.config.getoption
    prof = PROFILES[opt("--conform-profile")]

    def check(factory, *, examples: int | None = None, steps: int | None = None, seed: int | None = None,
              config: dict | None = None, shrink_seconds: float | None = None):
        report = run(factory, getattr(factory, "__name__", str(factory)),
                     examples=examples or opt("--conform-examples") or prof["examples"],
                     steps=steps or opt("--conform-steps") or prof["steps"],
                     seed=seed if seed is not None else opt("--conform-seed"), overrides=config,
                     shrink_seconds=opt("--conform-shrink-seconds") if shrink_seconds is None else shrink_seconds)
        if report.result != "ok":
            text = scenario_yaml(report.scenario)
            where = ""
            if opt("--conform-save"):
                folder = Path(opt("--conform-save"))
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / f"{request.node.name}-seed{report.seed}.yaml"
                path.write_text(text, encoding="utf-8")
                where = f"\n(saved to {path})"
            pytest.fail(f"{report.result}: {report.message}\nseed {report.seed} (--conform-seed {report.seed} "
                        f"repeats it); the scenario, to replay with `groupspec scenario run`:\n\n{text}{where}",
                        pytrace=False)
        return report
    return check
