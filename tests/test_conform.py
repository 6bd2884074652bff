"""The conformance harness (issue 11): the runtime conforms to the spec; broken coordinators do not.

The default suite runs the `ci` profile on the runtime and each broken
coordinator (tests/broken_coordinators.py) from a seed that finds it within
seconds; `pytest -m slow tests/test_conform.py` runs the longer checks (the
nightly profile's start, longer shrinking to shorter scenarios, fresh seeds).
"""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groupspec.checkers.cli import app
from groupspec.checkers.conform.adapter import SpecAdapter, load_factory, runtime, spec
from groupspec.checkers.conform.harness import PROFILES, run
from groupspec.checkers.conform.lockstep import Divergence, Lockstep
from groupspec.checkers.conform.machine import API_OF, PARAM_FIELDS, RULES, fields_of
from groupspec.checkers.scenarios.model import load_file
from groupspec.checkers.scenarios.runner import run_scenario
from groupspec.checkers.scenarios.targets import run_on_adapter
from groupspec.impl.requests import API_FIELDS
from groupspec.spec.kafka import check_config
from groupspec.spec.schema import TRIGGERS

sys.path.insert(0, str(Path(__file__).parent))
from broken_coordinators import BROKEN  # noqa: E402

# seeds with which each broken coordinator is found within 20 examples (a scan of seeds 0 to 7; across seeds
# it takes 3 to 110 examples: benchmarks/conform.py)
SEEDS = {"wrong_error_code": 0, "missed_generation_fence": 0, "timer_not_cancelled": 4, "parked_answered_never": 0,
         "parked_answered_twice": 0, "lost_offset_on_reload": 1, "leader_not_reelected": 0,
         "session_timeout_off_by_one": 0}


# -- the machine is the table's ---------------------------------------------------------------------

def test_every_trigger_has_a_rule_and_its_fields_come_from_its_parameters():
    for t in TRIGGERS:
        if t.kind == "internal":
            assert t.name not in RULES
            continue
        assert t.name in RULES, t.name
        if t.kind == "request":
            api = API_OF[t.name]
            fields = fields_of(t)
            assert set(fields) <= set(API_FIELDS[api][0]), t.name
    params = {p for t in TRIGGERS for p in t.params}
    assert set(PARAM_FIELDS) <= params, set(PARAM_FIELDS) - params


# -- conformance ------------------------------------------------------------------------------------

def test_the_runtime_conforms_to_the_spec_under_the_ci_profile():
    r = run(runtime, "runtime", seed=20261125, **PROFILES["ci"])
    assert r.result == "ok", r.message + "\n" + (r.scenario_yaml or "")
    assert r.examples >= PROFILES["ci"]["examples"] and r.steps > 500


def test_every_choice_the_spec_makes_is_one_the_spec_accepts():
    # the spec as an implementation follows a random behaviour at each choice Kafka leaves open
    r = run(lambda cfg: SpecAdapter(cfg, seed=1), "spec", examples=30, steps=30, seed=1)
    assert r.result == "ok", r.message + "\n" + (r.scenario_yaml or "")


def test_where_the_spec_allows_several_answers_it_follows_the_implementations():
    # three members; the leader leaves: the runtime makes the lowest member leader, a spec that
    # always takes the last choice makes another; both are accepted, and the spec follows each
    cfg = check_config({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10})
    leaders = []
    for impl in (runtime(cfg), _last_choice(cfg)):
        lock = Lockstep(impl, cfg)
        for _ in range(3):
            lock.send("JoinGroup", {"group": "g0", "member": "", "session_timeout_ms": 1000,
                                    "rebalance_timeout_ms": 1000, "protocol_type": "consumer", "protocols": ["range"],
                                    "require_known_member_id": False})
        lock.act({"advance_ms": 0})
        assert lock.inverse[impl.snapshot("g0")["leader"]] == "m1"
        lock.send("LeaveGroup", {"group": "g0", "members": [{"member": "$m1"}]})    # no Divergence
        leaders.append(lock.inverse[impl.snapshot("g0")["leader"]])
        # the spec kept only the behaviour with the implementation's leader
        assert {{v: k for k, v in w.env.items()}[w.coord.snapshot("g0")["leader"]] for w in lock.ref.worlds} \
            == {leaders[-1]}
    assert leaders[0] != leaders[1] and set(leaders) <= {"m2", "m3"}


def test_a_long_advance_lands_on_each_deadline_so_an_early_timer_shows():
    # one member joins and syncs, then the clock moves far past its session deadline in one step: after
    # it, the correct and the early-expiring coordinator look alike (both removed the member), so only
    # landing 1 ms before the spec's deadline shows the difference
    cfg = check_config({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10})
    early = next(b for b in BROKEN if b.__name__ == "session_expiry_one_ms_early")
    for impl, diverges in ((runtime(cfg), False), (early(cfg), True)):
        lock = Lockstep(impl, cfg)
        lock.send("JoinGroup", {"group": "g0", "member": "", "session_timeout_ms": 1000,
                                "rebalance_timeout_ms": 1000, "protocol_type": "consumer", "protocols": ["range"],
                                "require_known_member_id": False})
        lock.act({"advance_ms": 0})
        lock.send("SyncGroup", {"group": "g0", "member": "$m1", "generation": 1, "assignments": {"$m1": ["t0-0"]}})
        if not diverges:
            lock.act({"advance_ms": 60_000})
            hops = [s["advance_ms"] for s, _ in lock.steps if "advance_ms" in s]
            assert sum(hops) == 60_000 and len(hops) > 2     # the one advance was taken in hops
            assert impl.snapshot("g0")["state"] == "Empty"
            continue
        with pytest.raises(Divergence) as caught:
            lock.act({"advance_ms": 60_000})
        assert caught.value.kind == "snapshot"
        assert sum(s["advance_ms"] for s in caught.value.scenario["steps"] if "advance_ms" in s) < 60_000


def _last_choice(cfg):
    a = SpecAdapter(cfg)
    a.rnd.choice = lambda worlds: worlds[-1]
    return a


# -- teeth ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.__name__)
def test_each_broken_coordinator_is_caught_with_a_scenario_that_replays(broken, tmp_path):
    r = run(broken, broken.__name__, examples=300, steps=30, seed=SEEDS.get(broken.__name__, 0), shrink_seconds=3)
    assert r.result == "divergence", f"{broken.__name__} was not caught"
    assert len(r.scenario["steps"]) <= 60, r.scenario_yaml      # 3 s of shrinking; the slow test shrinks more
    _replays(r, broken, tmp_path)


def _replays(r, broken, tmp_path) -> None:
    """The scenario is in the contract's format: it loads, passes on the spec and the runtime, and fails on
    the broken coordinator."""
    f = tmp_path / "found.yaml"
    f.write_text(r.scenario_yaml, encoding="utf-8")
    [sc] = load_file(f)
    for target in ("spec", "runtime"):
        res = run_scenario(sc, target)
        assert res.result == "pass", (target, res.as_json(), r.scenario_yaml)
    assert run_on_adapter(sc, broken.__name__, broken).result == "fail", r.scenario_yaml


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.__name__)
def test_each_broken_coordinator_is_found_by_the_ci_profile(broken):
    """One seed of the `ci` profile, no shrinking: found (the sweep over ten seeds is benchmarks/conform.py)."""
    r = run(broken, broken.__name__, seed=0, shrink_seconds=0, **PROFILES["ci"])
    assert r.result == "divergence", f"{broken.__name__} was not found"


@pytest.mark.parametrize("name", ["assignment_before_stored", "heartbeat_of_previous_generation",
                                  "group_max_size_off_by_one"])
def test_a_shrunk_scenario_is_the_same_for_the_same_seed_and_replays(name, tmp_path):
    """The shrunk scenario: the same file from the same seed; it fails on the broken coordinator (conform
    --replay), passes on the spec and the runtime; its expectations name members by variables only."""
    import broken_coordinators
    broken = getattr(broken_coordinators, name)
    first, again = (run(broken, name, seed=3, shrink_seconds=2, **PROFILES["ci"]) for _ in range(2))
    assert first.result == "divergence" and first.scenario_yaml == again.scenario_yaml
    _replays(first, broken, tmp_path)
    f = tmp_path / "found.yaml"
    r = invoke("conform", "--adapter", f"broken_coordinators:{name}", "--replay", str(f))
    assert r.exit_code == 1, r.stdout + r.stderr
    assert not _literal_ids(first.scenario["steps"]), first.scenario_yaml


def _literal_ids(v, key: str = "") -> list:
    """Member ids written as literals (anything but a `$variable`, a form, "" or the made-up unknown id)."""
    if isinstance(v, list):
        return [x for i in v for x in _literal_ids(i, key)]
    if isinstance(v, dict):
        if key == "assignment":
            return [k for k in v if not k.startswith("$")]
        return [x for k, i in v.items() if k != "bind" for x in _literal_ids(i, key if k in ("any_of", "not") else k)]
    if key in ("member", "leader", "members") and isinstance(v, str):
        return [] if v.startswith("$") or v in ("", "unknown-member-id") else [v]
    return []


@pytest.mark.slow
@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.__name__)
def test_each_broken_coordinator_shrinks_to_a_short_scenario(broken, tmp_path):
    r = run(broken, broken.__name__, examples=2000, steps=40, seed=7, shrink_seconds=120)
    assert r.result == "divergence", f"{broken.__name__} was not caught"
    assert len(r.scenario["steps"]) <= 15, r.scenario_yaml
    _replays(r, broken, tmp_path)


@pytest.mark.slow
def test_the_runtime_conforms_for_long():
    r = run(runtime, "runtime", examples=1000, steps=80, seed=1)
    assert r.result == "ok", r.message + "\n" + (r.scenario_yaml or "")


# -- the command line and the pytest plugin -----------------------------------------------------------

def invoke(*args: str):
    r = CliRunner().invoke(app, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.stdout + r.stderr
    return r


def test_conform_json_on_the_runtime():
    r = invoke("conform", "--adapter", "runtime", "--examples", "5", "--steps", "10", "--seed", "3", "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["result"] == "ok" and doc["seed"] == 3 and doc["examples"] >= 5 and doc["steps"] > 0
    cov = doc["coverage"]       # what the run fired of the table, the conformance scenarios first
    assert cov["corpus_scenarios"] > 100 and cov["rows"] > 0.9 * cov["rows_of"] and cov["pairs"] > cov["rows"]
    assert len(cov["rows_not_fired"]) == cov["rows_of"] - cov["rows"]


def test_conform_json_on_a_broken_coordinator_gives_the_scenario(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    r = invoke("conform", "--adapter", "broken_coordinators:session_timeout_off_by_one", "--examples", "200",
               "--seed", "1", "--shrink-seconds", "3", "--json")
    assert r.exit_code == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["result"] == "divergence" and doc["scenario"]["steps"] and doc["divergence"]["kind"] in ("response", "pending", "snapshot")
    assert doc["found_after"]["steps"] >= 1 and doc["coverage"]["rows"] > 0


@pytest.mark.parametrize("args, fragment", [
    (["--adapter", "nosuch"], "runtime, spec, kafka-3.9, kafka-4.0, kafka://host:port, or module:factory"),
    (["--adapter", "no_such_module_here:f"], "cannot be imported"),
    (["--adapter", "json:nothing"], "has no 'nothing'"),
    (["--adapter", "json:__doc__"], "not callable"),
    (["--adapter", "json:loads"], "the factory raised"),
    (["--adapter", "builtins:dict"], "the adapter has no send"),
    (["--config", "group.max.size"], "key=value"),
    (["--config", "group.max.sizes=3"], "unknown config key"),
    (["--config", "group.max.size=0"], "at least 1"),
    (["--examples", "0"], "--examples"),
    (["--profile", "weekly"], "unknown profile"),
    (["--replay", "/no/such/file.yaml"], "no such file"),
])
def test_conform_bad_input_is_one_line_and_exit_2(args, fragment):
    r = invoke("conform", *args)
    assert r.exit_code == 2, r.stdout + r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and fragment in lines[0], r.stderr


def test_replay_runs_a_scenario_against_an_adapter(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(textwrap.dedent("""\
        scenario: one-member
        config: {group.initial.rebalance.delay.ms: 0, group.min.session.timeout.ms: 10}
        steps:
          - {send: JoinGroup, id: j, group: g, member: "", session_timeout_ms: 100, rebalance_timeout_ms: 100,
             protocol_type: consumer, protocols: [range], require_known_member_id: false}
          - {advance_ms: 0}
          - {expect: j, error: NONE, member: {bind: m}, leader: $m, generation: 1}
          - {snapshot: g, state: CompletingRebalance, members: [$m]}
        """), encoding="utf-8")
    assert invoke("conform", "--adapter", "runtime", "--replay", str(f)).exit_code == 0
    f.write_text(f.read_text().replace("generation: 1}", "generation: 2}"), encoding="utf-8")
    r = invoke("conform", "--adapter", "spec", "--replay", str(f))
    assert r.exit_code == 1 and "FAIL" in r.stdout and "generation" in r.stdout


def test_load_factory_finds_a_module_attribute():
    assert load_factory("runtime") is runtime and load_factory("spec") is spec
    assert load_factory("groupspec.checkers.conform.adapter:runtime") is runtime


pytest_plugins = ["pytester"]


def test_the_pytest_plugin_gives_a_conform_fixture(pytester):
    pytester.syspathinsert(str(Path(__file__).parent))
    pytester.makepyfile(textwrap.dedent("""
        from groupspec.checkers.conform.adapter import runtime
        from broken_coordinators import session_timeout_off_by_one

        def test_runtime(conform):
            assert conform(runtime, examples=5, steps=10, seed=1).result == "ok"

        def test_broken(conform):
            conform(session_timeout_off_by_one, examples=200, seed=1, shrink_seconds=2)
        """))
    res = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    res.assert_outcomes(passed=1, failed=1)
    res.stdout.fnmatch_lines(["*divergence*", "*--conform-seed 1*", "*send: JoinGroup*"])


# -- the harness as a mutation checker ----------------------------------------------------------------

@pytest.mark.slow
def test_the_harness_kills_a_mutant_the_closed_world_cannot_see(monkeypatch):
    # a duration: the closed world's time is abstract, the harness's is concrete
    from groupspec.checkers.conform.mutants import BUDGET, harness_kills
    monkeypatch.setitem(BUDGET, "seed", 2)
    from groupspec.checkers.search.mutate import mutants
    from groupspec.spec.table import ROWS
    [(m, i, row)] = [(m, i, row) for m, i, row in mutants()
                     if m.operator == "drop-effect" and "`session_ms`" in m.detail
                     and m.row.startswith("JoinGroup: pending member rejoins and starts a rebalance (Empty)")][:1]
    rows = list(ROWS)
    rows[i] = row
    killed = harness_kills(rows)
    assert killed is not None, m
    assert harness_kills(list(ROWS)) is None


def test_mutate_reports_kills_per_checker():
    from groupspec.checkers.search.mutate import summary
    base = {"fires_in": ["tiny"], "killed_by": "x", "world": "tiny"}
    results = [{**base, "outcome": "killed", "checker": "explicit search"},
               {**base, "outcome": "killed", "checker": "liveness"},
               {**base, "outcome": "killed", "checker": "harness", "killed_by": "harness: r1"},
               {**base, "outcome": "killed", "checker": "scenarios", "killed_by": "scenario: a.yaml: s"},
               {**base, "outcome": "survived", "equivalent": "durations"},
               {**base, "fires_in": [], "outcome": "not covered", "not_covered": "its row never fires", "equivalent": ""},
               {**base, "outcome": "equivalent", "equivalent": "identical state graphs"}]
    s = summary(results)
    assert s["killed_by_checker"] == {"lint": 0, "explicit search": 1, "liveness": 1, "generated scenarios": 0,
                                      "scenarios": 1, "harness": 1}
    # one rate over every mutant not shown equivalent: a row no world reaches is untested, not equivalent
    assert s["kill_rate"] == round(4 / 6, 3) and s["not_covered"] == 1 and s["equivalent"] == 1
    assert s["survivors"] == {"durations": 1, "not covered: its row never fires": 1}
