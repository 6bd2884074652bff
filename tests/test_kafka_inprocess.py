"""Kafka's own coordinators, in process, beside the spec: the whole scenario suite, the harness, determinism,
and the driver's failures said in one line.

These run Kafka's jars, which the README's setup fetches (`groupspec kafka setup`); without them every test
here fails, saying so.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from typer.testing import CliRunner

from groupspec.checkers.cli import app
from groupspec.checkers.conform.adapter import Unsupported
from groupspec.checkers.conform.harness import run as run_harness
from groupspec.checkers.kafka import inprocess, jars
from groupspec.checkers.paths import default_scenario_paths
from groupspec.checkers.scenarios.model import load_file
from groupspec.checkers.scenarios.report import run_files, scenario_files
from groupspec.checkers.scenarios.targets import run_on_adapter

TARGETS = {"kafka-3.9": inprocess.kafka_39, "kafka-4.0": inprocess.kafka_40}
# What a scenario may be skipped for on Kafka's coordinators: the target's limits, each named in
# docs/kafka-conformance.md.  A skip for any other reason fails the suite.
LIMITS = ("Kafka has no such config", "cannot be null", "is not one Kafka", *inprocess.JAVA_LIMITS)


def _need(line: str) -> None:
    ln = jars.line(line)
    assert jars.fetched(ln), f"Kafka {ln.release}'s jars are not fetched: run .ci/setup (groupspec kafka setup)"


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_scenario_passes_on_kafka_or_is_skipped_for_a_named_limit(target):
    _need(target.removeprefix("kafka-"))
    run = run_files(scenario_files(default_scenario_paths()), target, factory=TARGETS[target])
    bad = [r.as_json() for r in run.results if r.result in ("fail", "error")]
    assert not bad, json.dumps(bad, indent=1)[:3000]
    assert run.passed >= 140, run.passed
    for r in run.results:
        if r.result == "skip":
            assert any(limit in r.message for limit in LIMITS), (r.scenario, r.message)


@pytest.mark.parametrize("examples", [60, pytest.param(300, marks=pytest.mark.slow)])
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_harness_finds_no_divergence_on_kafka(target, examples):
    # 60 sequences in CI (35-50 s a target at 150), 300 in a slow run
    _need(target.removeprefix("kafka-"))
    r = run_harness(TARGETS[target], target, examples=examples, steps=30, seed=20261127, shrink_seconds=5)
    assert r.result == "ok", r.message + "\n" + (r.scenario_yaml if r.scenario else "")
    assert r.steps > examples * 10, r.steps


class Recording:
    """An adapter that keeps every answer it passes on."""

    def __init__(self, impl):
        self.impl, self.answers = impl, []

    def __getattr__(self, name):
        return getattr(self.impl, name)

    def send(self, api, request, request_id):
        got = self.impl.send(api, request, request_id)
        self.answers.append((request_id, got))
        return got

    def answered(self):
        got = self.impl.answered()
        self.answers.extend(got)
        return got


def test_the_same_steps_give_the_same_answers_every_time():
    """Member ids and the choices that hang on them (who leads after the leader leaves) are the same on every
    run, in one driver and across drivers."""
    _need("3.9")
    [sc] = [s for s in load_file(default_scenario_paths()[0] / "kafka" / "leave.yaml")
            if s.name == "kafka-leader-leaves-and-another-member-leads"]
    runs = []
    for _ in range(2):
        made = []
        r = run_on_adapter(sc, "kafka-3.9", lambda cfg: made.append(Recording(inprocess.kafka_39(cfg))) or made[-1])
        assert r.result == "pass", r.as_json()
        runs.append(made[0].answers)
    assert runs[0] == runs[1]
    ids = {a.get("member") for _, a in runs[0] if isinstance(a, dict) and a.get("member")}
    assert len(ids) >= 2 and all("-" in m for m in ids), ids


def test_a_config_kafka_has_no_key_for_skips_the_scenario_with_the_reason(tmp_path):
    _need("3.9")
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"scenario": "new-member-timeout", "config": {"group.new.member.join.timeout.ms": 50},
                                 "steps": [{"send": "ListGroups", "id": "l"}, {"expect": "l", "error": "NONE"}]}))
    [sc] = load_file(f)
    r = run_on_adapter(sc, "kafka-3.9", inprocess.kafka_39)
    assert r.result == "skip" and "group.new.member.join.timeout.ms" in r.message and "constant" in r.message
    with pytest.raises(Unsupported):
        inprocess.kafka_39({"group.new.member.join.timeout.ms": 50})


def test_a_request_no_client_could_send_is_unsupported_not_a_divergence():
    _need("3.9")
    impl = inprocess.kafka_39({})
    try:
        with pytest.raises(Unsupported, match="cannot carry a group.instance.id"):
            impl.send("JoinGroup", {"group": "g", "member": "", "instance": "i", "version": 3,
                                    "session_timeout_ms": 10000, "protocol_type": "consumer", "protocols": ["range"]},
                      "j")
        assert impl.send("ListGroups", {}, "l") == {"error": "NONE", "groups": []}
    finally:
        impl.close()


def test_the_java_coordinator_leaves_out_what_the_table_does_not_say_and_keeps_its_log():
    """Kafka 4.0's target refuses, naming why, a step where the Java coordinator does what the table does not
    say yet (spec/handling.py JAVA_WRITES); a refused step changes nothing."""
    _need("4.0")
    impl = inprocess.kafka_40(dict(inprocess.kafka_40.fixed_config))
    try:
        impl.storage_hold(True)
        assert impl.send("OffsetCommit", {"group": "o", "member": "", "generation": -1, "offsets": {"t-0": 3}},
                         "c") is None
        with pytest.raises(Unsupported, match=re.escape(inprocess.JAVA_READS_COMMITTED)):
            impl.send("OffsetFetch", {"group": "o", "partitions": ["t-0"]}, "f")
        with pytest.raises(Unsupported, match=re.escape(inprocess.JAVA_HELD_WRITES_DO_NOT_FAIL)):
            impl.storage_complete("NOT_ENOUGH_REPLICAS")
        # the held commit is still there, and completes
        assert impl.storage_complete("NONE") is True
        assert impl.answered() == [("c", {"errors": {"t-0": "NONE"}})]
        assert impl.snapshot("o")["offsets"] == {"t-0": 3}
    finally:
        impl.close()


def test_a_driver_that_dies_is_said_in_one_line():
    _need("3.9")
    d = inprocess.Driver(jars.line("3.9"))
    d.proc.kill()
    d.proc.wait()
    with pytest.raises(inprocess.DriverError, match="driver has exited"):
        d.call(op="new", config={}, seed=0)


def test_scenario_run_without_the_jars_is_one_line_and_exit_2(tmp_path, monkeypatch):
    """Setup has not fetched Kafka (an empty cache): the command says what to run."""
    env = {**os.environ, "GROUPSPEC_KAFKA_HOME": str(tmp_path / "empty")}
    suite = str(default_scenario_paths()[0] / "kafka" / "sync.yaml")
    p = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "scenario", "run", suite, "--target",
                        "kafka-3.9"], capture_output=True, text=True, env=env, timeout=120)
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert p.returncode == 2, p.stdout + p.stderr
    assert len(lines) == 1 and "jars are not in" in lines[0] and "kafka setup" in lines[0], p.stderr
    assert "Traceback" not in p.stderr


def test_setup_again_fetches_and_builds_nothing():
    _need("3.9")
    assert jars.setup(jars.line("3.9"), log=lambda m: pytest.fail(f"setup did something again: {m}")) is False


def test_maven_unreachable_is_one_line_saying_what_to_do_offline(tmp_path, monkeypatch):
    """A Maven that cannot reach Central (a stand-in that fails as Maven does offline)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text("#!/bin/sh\necho '[ERROR] Failed to execute goal: Could not transfer artifact "
                   "org.apache.kafka:kafka_2.13:pom:3.9.2 from/to central: Unknown host repo.maven.apache.org'\nexit 1\n")
    mvn.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "GROUPSPEC_KAFKA_HOME": str(tmp_path / "cache")}
    p = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "kafka", "setup", "--version", "3.9"],
                       capture_output=True, text=True, env=env, timeout=120)
    errors = [x for x in p.stderr.splitlines() if x.startswith("groupspec:")]
    assert p.returncode == 2 and len(errors) == 1, p.stderr
    assert "Unknown host" in errors[0] and "offline" in errors[0] and "GROUPSPEC_KAFKA_HOME" in errors[0]
    assert "Traceback" not in p.stderr


def test_kafka_report_lists_each_target_and_the_findings(tmp_path):
    _need("3.9")
    out = tmp_path / "kafka-conformance.md"
    r = CliRunner().invoke(app, ["kafka", "report", "--target", "kafka-3.9", "--examples", "5", "--out", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "| `kafka-3.9` | 3.9.2 |" in text
    assert "sync-v5-must-name-protocol-type-and-name" in text
    assert "Unexplained differences: none." in text
