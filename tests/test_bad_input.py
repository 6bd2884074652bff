"""Every bad scenario file, request value and config gets one line saying what and where, and exit 2.

The table runs each bad input through the real CLI entry point (in process,
typer's CliRunner): exit 2, exactly one error line naming the file, no
traceback, and result `error` in --json.  Below it, the library's own entry
points (GroupCoordinator with bad config or requests), JUnit XML that stays
well-formed, bounded failure text, and a few runs as a real process.
"""
from __future__ import annotations

import codecs
import json
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import yaml
from typer.testing import CliRunner

from groupspec.checkers.cli import app
from groupspec.checkers.scenarios import model
from groupspec.checkers.scenarios.match import Mismatch, match
from groupspec.impl.coordinator import GroupCoordinator
from groupspec.impl.requests import InvalidRequest
from groupspec.spec.kafka import ConfigError, brief, check_config

ROOT = Path(__file__).resolve().parent.parent

HEAD = "scenario: s\nsteps:\n"
JOIN = ("  - {send: JoinGroup, id: j1, group: g, member: '', client: c, session_timeout_ms: 10000,"
        " protocol_type: consumer, protocols: [range]}\n")
HB = "  - {send: Heartbeat, id: h, group: g, member: m, generation: 1}\n"


def steps(*lines: str) -> str:
    return HEAD + "".join(f"  - {s}\n" for s in lines)


def after_join(*lines: str) -> str:
    return HEAD + JOIN + "".join(f"  - {s}\n" for s in lines)


def with_config(cfg: str) -> str:
    return f"scenario: s\nconfig: {cfg}\nsteps:\n  - advance_ms: 1\n"


def nested(depth: int) -> str:
    return steps("{snapshot: g, members: " + "[" * depth + "]" * depth + "}")


def billion_laughs() -> str:
    inner = "&a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"
    for i in range(1, 10):
        inner = f"&a{i} [" + ", ".join([inner] + [f"*a{i - 1}"] * 8) + "]"
    return "scenario: s\nsteps:\n  - {send: DescribeGroups, id: d, groups: [g]}\n  - expect: d\n    groups:\n      - " \
           + inner + "\n"


SIMPLE = "scenario: s\nsteps:\n  - advance_ms: 1\n"

# name -> (file content, fragment of the one-line message)
BAD: dict[str, tuple[str | bytes, str]] = {
    # bytes that are not UTF-8 text
    "latin-1": (b"scenario: s\nabout: caf\xe9\nsteps:\n  - advance_ms: 1\n", "not UTF-8: byte 0xe9 at offset 22"),
    "utf-16-bom": (SIMPLE.encode("utf-16"), "UTF-16 byte-order mark"),
    "utf-16-le-no-bom": (SIMPLE.encode("utf-16-le"), "U+0000 at byte offset 1"),
    "utf-16-be-no-bom": (SIMPLE.encode("utf-16-be"), "U+0000 at byte offset 0"),
    "utf-32-bom": (codecs.BOM_UTF32_LE + SIMPLE.encode("utf-32-le"), "UTF-32 byte-order mark"),
    "random-bytes": (bytes(range(256)) * 4, "not UTF-8: byte 0x80 at offset 128"),
    "control-character": (b"scenario: s\x07\nsteps:\n  - advance_ms: 1\n", "U+0007 at byte offset 11"),
    # YAML that is not a document of the format, or asks too much
    "not-yaml": ("scenario: s\nsteps: [\n", "not valid YAML at line"),
    "empty-file": ("", "a scenario file is a mapping"),
    "two-documents": (SIMPLE + "---\n" + SIMPLE, "not valid YAML"),
    "python-tag": ("scenario: !!python/object/apply:os.system [echo]\nsteps: []\n", "not valid YAML at line 1"),
    "nested-100000": (nested(100_000), "not valid YAML"),
    "nested-100": (nested(100), "nested more than 64 levels"),
    "billion-laughs": (billion_laughs(), "alias bomb"),
    "self-containing": ("scenario: s\nsteps:\n  - &a [*a]\n", "contains itself"),
    "duplicate-key": (steps("{send: Heartbeat, id: h, id: h2, group: g}"), "the key 'id' is given twice"),
    "json-duplicate-key": ('{"scenario": "d", "scenario": "e", "steps": [{"advance_ms": 1}]}',
                           "line 1, column 19: the key 'scenario' is given twice"),
    "json-nested-100": ('{"scenario": "s", "steps": [{"snapshot": "g", "members": ' + "[" * 100 + "]" * 100 + "}]}",
                        "nested more than 64 levels"),
    "5000-digit-int": (steps("{advance_ms: " + "9" * 5000 + "}"), "too long"),
    "bad-date": (steps("{advance_ms: 2024-13-45}"), "month must be in 1..12"),
    # the file and scenario level
    "scenarios-empty": ("scenarios: []\n", "`scenarios:` must be a non-empty list"),
    "scenarios-not-list": ("scenarios: {a: 1}\n", "`scenarios:` must be a non-empty list"),
    "scenarios-and-more": ("scenarios:\n  - scenario: s\n    steps: [{advance_ms: 1}]\nconfig: {}\n",
                           "no other top-level keys"),
    "scenario-not-mapping": ("scenarios: [5]\n", "scenario #1 is not a mapping"),
    "no-name": ("steps: [{advance_ms: 1}]\n", "has no `scenario:` name"),
    "name-two-lines": ('scenario: "a\\nb"\nsteps: [{advance_ms: 1}]\n', "name of one line"),
    "name-a-list": ("scenario: [a]\nsteps: [{advance_ms: 1}]\n", "name of one line"),
    "same-name-twice": ("scenarios:\n  - {scenario: s, steps: [{advance_ms: 1}]}\n"
                        "  - {scenario: s, steps: [{advance_ms: 1}]}\n", "names must be unique"),
    "unknown-scenario-key": ("scenario: s\nstep: []\nsteps: [{advance_ms: 1}]\n", "unknown key(s) 'step'"),
    "10000-unknown-keys": ("scenario: s\nsteps: [{advance_ms: 1}]\n" + "".join(f"x{i}: 1\n" for i in range(10_000)),
                           "unknown key(s) 'x0', 'x1', 'x2', 'x3', 'x4' and 9995 more"),
    "about-a-list": ("scenario: s\nabout: [1, 2]\nsteps: [{advance_ms: 1}]\n", "`about:` is free text"),
    "steps-a-mapping": ("scenario: s\nsteps: {advance_ms: 1}\n", "`steps:` must be a non-empty list"),
    "steps-empty": ("scenario: s\nsteps: []\n", "`steps:` must be a non-empty list"),
    # config: Kafka's checks and ours, all in spec.kafka.config_problems
    "config-max-size-negative": (with_config("{group.max.size: -1}"), "group.max.size must be at least 1"),
    "config-max-size-zero": (with_config("{group.max.size: 0}"), "group.max.size must be at least 1"),
    "config-min-above-max": (with_config("{group.min.session.timeout.ms: 100, group.max.session.timeout.ms: 10}"),
                             "is above group.max.session.timeout.ms"),
    "config-negative-delay": (with_config("{group.initial.rebalance.delay.ms: -5}"),
                              "group.initial.rebalance.delay.ms must be at least 0"),
    "config-negative-min-session": (with_config("{group.min.session.timeout.ms: -1}"),
                                    "group.min.session.timeout.ms must be at least 0"),
    "config-negative-join-timeout": (with_config("{group.new.member.join.timeout.ms: -1}"),
                                     "group.new.member.join.timeout.ms must be at least 0"),
    "config-zero-retention": (with_config("{offsets.retention.minutes: 0}"),
                              "offsets.retention.minutes must be at least 1"),
    "config-beyond-int": (with_config("{group.max.size: 1099511627776}"), "Kafka's INT type"),
    "config-string": (with_config("{group.max.size: '5'}"), "group.max.size must be an integer"),
    "config-bool": (with_config("{group.max.size: true}"), "group.max.size must be an integer"),
    "config-a-list": (with_config("[group.max.size]"), "config must be a mapping"),
    "config-unknown-key": (with_config("{group.max.sise: 3}"), "unknown config key 'group.max.sise'"),
    "config-10000-unknown-keys": (with_config("{" + ", ".join(f"k{i}: {i}" for i in range(10_000)) + "}"),
                                  "unknown config key 'k0', 'k1', 'k2' (and 9997 more)"),
    # steps of any kind
    "step-not-mapping": (steps("5"), "a step is a mapping"),
    "step-two-kinds": (steps("{advance_ms: 5, snapshot: g}"), "exactly one of"),
    "step-no-kind": (steps("{wait: 5}"), "exactly one of"),
    "advance-extra-key": (steps("{advance_ms: 5, note: x}"), "has no field(s) 'note'"),
    "advance-negative": (steps("{advance_ms: -1}"), "advance_ms must be a whole number"),
    "advance-string": (steps("{advance_ms: '5'}"), "advance_ms must be a whole number"),
    "advance-beyond-long": (steps("{advance_ms: 18446744073709551616}"), "advance_ms must be a whole number"),
    "advances-beyond-long-in-all": (steps("{advance_ms: 1000000000000000000}", "{advance_ms: 9223372036854775807}",
                                          "{send: OffsetCommit, id: c, group: g, offsets: {t-0: 1}}"),
                                    "the clock would reach 10,223,372,036,854,775,807 ms, beyond Kafka's INT64"),
    # send
    "send-api-list": (steps("{send: [JoinGroup], id: a, group: g}"), "unknown API ['JoinGroup']"),
    "send-unknown-api": (steps("{send: JoinGroupz, id: a, group: g}"), "unknown API 'JoinGroupz'"),
    "send-no-id": (steps("{send: Heartbeat, group: g}"), "needs an `id`"),
    "send-id-list": (steps("{send: Heartbeat, id: [a], group: g}"), "needs an `id`"),
    "send-id-twice": (steps("{send: Heartbeat, id: a, group: g}", "{send: Heartbeat, id: a, group: g}"),
                      "used twice"),
    "send-no-group": (steps("{send: Heartbeat, id: a, member: m}"), "Heartbeat needs a 'group'"),
    "send-unknown-field": (steps("{send: Heartbeat, id: a, group: g, protocols: [range]}"),
                           "Heartbeat has no field 'protocols'"),
    "send-timeout-string": (steps("{send: JoinGroup, id: a, group: g, session_timeout_ms: '500'}"),
                            "'session_timeout_ms' must be an integer"),
    "send-generation-2**70": (steps("{send: Heartbeat, id: a, group: g, generation: 1180591620717411303424}"),
                              "Kafka's INT32"),
    "send-version-99": (steps("{send: Heartbeat, id: a, group: g, version: 99}"),
                        "version' 99 is not one Kafka 3.9 defines for Heartbeat (0 to 4)"),
    "send-version-negative": (steps("{send: Heartbeat, id: a, group: g, version: -1}"), "'version' must be"),
    "send-delete-version-3": (steps("{send: DeleteGroups, id: a, groups: [g], version: 3}"), "(0 to 2)"),
    "send-protocols-string": (steps("{send: JoinGroup, id: a, group: g, protocols: range}"),
                              "'protocols' must be a list"),
    "send-protocol-metadata-int": (steps("{send: JoinGroup, id: a, group: g, protocols: [{name: r, metadata: 5}]}"),
                                   "'protocols[0]' must be a protocol name or"),
    "send-members-strings": (steps("{send: LeaveGroup, id: a, group: g, members: [m]}"), "'members[0]'"),
    "send-offset-string": (steps("{send: OffsetCommit, id: a, group: g, offsets: {t-0: '1'}}"),
                           "'offsets.t-0' must be an integer"),
    "send-offset-key": (steps("{send: OffsetCommit, id: a, group: g, offsets: {nodash: 1}}"),
                        "keys of 'offsets' must be a partition (topic-N)"),
    "send-partition-beyond-int": (steps("{send: OffsetFetch, id: a, group: g, partitions: [t-2147483648]}"),
                                  "'partitions' must be"),
    "send-bind-in-request": (steps("{send: Heartbeat, id: a, group: {bind: g}}"),
                             "is for expect and snapshot steps"),
    "send-bare-dollar": (steps("{send: Heartbeat, id: a, group: $}"), "`$` must be followed by a variable name"),
    "send-group-no": (steps("{send: Heartbeat, id: a, group: no}"), "got False (YAML reads unquoted yes, no, on"),
    "send-groups-string": (steps("{send: DeleteGroups, id: a, groups: g}"), "'groups' must be a list of group ids"),
    # expect
    "expect-list": (after_join("{expect: [j1]}"), "`expect:` takes the id of an earlier request"),
    "expect-unknown-id": (after_join("{expect: j2}"), "names no earlier request"),
    "expect-error-int": (after_join("{expect: j1, error: 5}"), "'error' must be an error name"),
    "expect-error-unknown": (after_join("{expect: j1, error: NOT_AN_ERROR}"), "unknown error name 'NOT_AN_ERROR'"),
    "expect-any-of-int": (after_join("{expect: j1, error: {any_of: 5}}"), "needs a non-empty list of alternatives"),
    "expect-any-of-empty": (after_join("{expect: j1, error: {any_of: []}}"), "needs a non-empty list"),
    "expect-any-of-bad-alt": (after_join("{expect: j1, error: {any_of: [NONE, BOGUS]}}"),
                              "'error.any_of[1]': unknown error name"),
    "expect-bind-list": (after_join("{expect: j1, member: {bind: [a]}}"), "{bind: name} needs a variable name"),
    "expect-bind-dollar": (after_join("{expect: j1, member: {bind: $a}}"), "{bind: name} needs a variable name"),
    "expect-not-int": (after_join("{expect: j1, error: {not: 5}}"), "'error.not' must be an error name"),
    "expect-pending-yes": (after_join("{expect: j1, pending: 'yes'}"), "'pending' must be true or false"),
    "expect-pending-and-fields": (after_join("{expect: j1, pending: true, error: NONE}"),
                                  "cannot go with response fields"),
    "expect-groups-strings": ("scenario: s\nsteps:\n  - {send: ListGroups, id: l}\n  - {expect: l, groups: [g]}\n",
                              "'groups[0]' must be a group summary"),
    "expect-summary-unknown-key": ("scenario: s\nsteps:\n  - {send: ListGroups, id: l}\n"
                                   "  - {expect: l, groups: [{group: g, size: 3}]}\n", "has no field 'size'"),
    "expect-leave-errors-int": ("scenario: s\nsteps:\n  - {send: LeaveGroup, id: l, group: g, members: []}\n"
                                "  - {expect: l, errors: 5}\n", "'errors' must be a list of error names"),
    "expect-commit-errors-list": ("scenario: s\nsteps:\n  - {send: OffsetCommit, id: c, group: g}\n"
                                  "  - {expect: c, errors: [NONE]}\n", "'errors' must be a mapping of partition"),
    "expect-members-string": (after_join("{expect: j1, members: a}"), "'members' must be a list of member ids"),
    "expect-generation-string": (after_join("{expect: j1, generation: '1'}"), "'generation' must be an integer"),
    "expect-unknown-field": (after_join("{expect: j1, eror: NONE}"), "a response has no field(s) 'eror'"),
    # snapshot
    "snapshot-list": (steps("{snapshot: [g]}"), "'snapshot' must be a group id"),
    "snapshot-state-unknown": (steps("{snapshot: g, state: Rebalancing}"), "'state' must be one of the states"),
    "snapshot-members-mapping": (steps("{snapshot: g, members: {a: 1}}"), "'members' must be a list"),
    "snapshot-offsets-list": (steps("{snapshot: g, offsets: [1]}"), "'offsets' must be a mapping"),
    "snapshot-unknown-field": (steps("{snapshot: g, size: 3}"), "a snapshot has no field(s) 'size'"),
    # storage
    "storage-fail-next-int": (steps("{storage: {fail_next_append: 5}}"), "'storage.fail_next_append' must be"),
    "storage-fail-next-null": (steps("{storage: {fail_next_append: null}}"), "'storage.fail_next_append' must be"),
    "storage-complete-int": (steps("{storage: {complete: 7}}"), "'storage.complete' must be an error name"),
    "storage-hold-no": (steps("{storage: {hold: 'no'}}"), "'storage.hold' must be true or false"),
    "storage-string": (steps("{storage: hold}"), "`storage:` is one of"),
    "storage-two-keys": (steps("{storage: {hold: true, complete: NONE}}"), "`storage:` is one of"),
    "storage-complete-nothing-held": (steps("{storage: {complete: NONE}}"), "no append is held"),
    # coordinator
    "mark-dead-int": (steps("{coordinator: {mark_dead: 5}}"), "'coordinator.mark_dead' must be a group id"),
    "mark-dead-extra": (steps("{coordinator: {mark_dead: g, now: true}}"), "unknown coordinator event"),
    "coordinator-unknown": (steps("{coordinator: explode}"), "unknown coordinator event 'explode'"),
    "coordinator-list": (steps("{coordinator: [load]}"), "unknown coordinator event ['load']"),
    # assign
    "assign-unknown": (steps("{assign: lru, partitions: {t: 1}, subscriptions: {a: [t]}, result: {a: [t-0]}}"),
                       "'assign.assign' must be range or roundrobin"),
    "assign-negative-count": (steps("{assign: range, partitions: {t: -1}, subscriptions: {a: [t]}, result: {}}"),
                              "a partition count from 0 to 10000"),
    "assign-huge": (steps("{assign: range, partitions: {t: 10000, u: 10000, v: 10000, w: 10000, x: 10000, "
                          "y: 10000, z: 10000, a: 10000, b: 10000, c: 10000, d: 10000}, subscriptions: {a: [t]}, "
                          "result: {}}"), "lays out 110,000 partitions"),
    "assign-result-topic": (steps("{assign: range, partitions: {t: 1}, subscriptions: {a: [t]}, result: {a: [t]}}"),
                            "'assign.result.a[0]' must be a partition"),
    "assign-no-subscriptions": (steps("{assign: range, partitions: {t: 1}, result: {}}"),
                                "'assign' needs 'subscriptions'"),
    # found only while running
    "unbound-variable": (steps("{send: Heartbeat, id: a, group: g, member: $nobody}"),
                         "$nobody is used before a `{bind: nobody}` binds it"),
    "variable-of-wrong-type": (after_join("{expect: j1, member: {bind: m}}",
                                          "{send: Heartbeat, id: h, group: g, member: $m, generation: $m}"),
                               "'generation' must be an integer"),
    "variable-not-a-group": (after_join("{expect: j1, members: {bind: ms}}", "{coordinator: {mark_dead: $ms}}"),
                             "must be a group id, and it holds []"),
}


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    f = tmp_path / f"{name}.yaml"
    if isinstance(content, bytes):
        f.write_bytes(content)
    else:
        f.write_text(content, encoding="utf-8")
    return f


def invoke(*args: str):
    r = CliRunner().invoke(app, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.stdout + r.stderr
    return r


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_gets_one_line_and_exit_2(tmp_path, name):
    content, fragment = BAD[name]
    f = write(tmp_path, name, content)
    r = invoke("scenario", "run", str(f), "--target", "runtime")
    assert r.exit_code == 2, r.stdout + r.stderr
    errors = [ln for ln in r.stdout.splitlines() if ln.startswith("[runtime] error")]
    assert len(errors) == 1 and len(r.stdout.splitlines()) == 2, r.stdout   # the error and the summary
    assert str(f) in errors[0] and fragment in errors[0], errors[0]
    assert len(errors[0]) < 600, errors[0]
    r = invoke("scenario", "run", str(f), "--target", "spec", "--json")
    assert r.exit_code == 2
    doc = json.loads(r.stdout)
    assert [s["result"] for s in doc["scenarios"]] == ["error"] and doc["errors"] == 1
    assert fragment in doc["scenarios"][0]["message"] and doc["scenarios"][0]["file"] == str(f)
    assert "expected" not in doc["scenarios"][0] and "got" not in doc["scenarios"][0]


def test_a_malformed_file_does_not_stop_a_folder_run(tmp_path):
    for name, (content, _) in BAD.items():
        write(tmp_path, name, content)
    write(tmp_path, "zz-good", "scenario: good\nsteps:\n  - advance_ms: 1\n  - {snapshot: g, state: null}\n")
    r = invoke("scenario", "run", str(tmp_path), "--target", "runtime", "--junit", str(tmp_path / "out" / "j.xml"))
    assert r.exit_code == 2
    assert f"[runtime] pass   {tmp_path / 'zz-good.yaml'}: good" in r.stdout
    assert sum(ln.startswith("[runtime] error") for ln in r.stdout.splitlines()) == len(BAD)
    assert f"runtime: 1 passed, 0 failed, {len(BAD)} errors" in r.stdout
    suite = ET.parse(tmp_path / "out" / "j.xml").getroot()[0]
    assert suite.get("errors") == str(len(BAD)) and len(suite) == len(BAD) + 1


def test_a_utf8_byte_order_mark_is_fine(tmp_path):
    f = write(tmp_path, "bom", codecs.BOM_UTF8 + b"scenario: s\nsteps:\n  - advance_ms: 1\n")
    assert invoke("scenario", "run", str(f)).exit_code == 0


def test_json_that_libyaml_refuses_is_read_as_json(tmp_path):
    f = tmp_path / "a.json"        # an escaped character outside the BMP, and the JSON escape of /
    f.write_text('{"scenario": "s\\/\\ud83d\\ude00", "steps": [{"advance_ms": 1}]}')
    assert [sc.name for sc in model.load_file(f)] == ["s/\U0001F600"]


def test_the_loader_uses_libyaml_and_keeps_line_numbers(tmp_path):
    if yaml.__with_libyaml__:
        assert issubclass(model._Loader, yaml.CSafeLoader)
    f = write(tmp_path, "dup", "scenario: s\nsteps:\n  - send: Heartbeat\n    id: h\n    group: g\n    id: i\n")
    with pytest.raises(model.ScenarioError, match=r"at line 6, column 5: the key 'id' is given twice in one mapping "
                                                  r".first at line 4"):
        model.load_file(f)


def test_devices_and_folders_are_refused_not_read(tmp_path):
    r = invoke("scenario", "run", "/dev/zero")
    assert r.exit_code == 2 and "/dev/zero: is a character device (like /dev/null), not a regular file" in r.stderr


# ---------------------------------------------------------------------- output stays one line, bounded, well-formed

def test_junit_and_lines_survive_any_characters_in_names_and_messages(tmp_path):
    nasty = "bad\nname\x01\x1b[31m\ufffe"
    (tmp_path / f"{nasty}.yaml").write_text(after_join("{expect: j1, error: NONE}"))         # fails
    (tmp_path / f"{nasty}2.yaml").write_text('scenario: "x\\x0c"\nsteps: [{advance_ms: 1}]\n')  # an error
    junit = tmp_path / "j.xml"
    r = invoke("scenario", "run", str(tmp_path), "--junit", str(junit))
    assert r.exit_code == 2
    assert len(r.stdout.splitlines()) == 3, r.stdout          # two results and the summary, one line each
    root = ET.parse(junit).getroot()                           # well-formed XML 1.0
    cases = list(root.iter("testcase"))
    assert len(cases) == 2 and all("\\x01" in c.get("classname") for c in cases)
    assert root.find(".//failure") is not None and root.find(".//error") is not None


def test_failure_text_is_bounded(tmp_path):
    f = write(tmp_path, "huge", after_join("{expect: j1, error: MEMBER_ID_REQUIRED, member: '" + "x" * 200_000 + "'}"))
    r = invoke("scenario", "run", str(f), "--junit", str(tmp_path / "j.xml"))
    assert r.exit_code == 1 and len(r.stdout) < 2000
    r = invoke("scenario", "run", str(f), "--json")
    assert len(r.stdout) < 3000 and json.loads(r.stdout)["scenarios"][0]["result"] == "fail"
    assert (tmp_path / "j.xml").stat().st_size < 4000


def test_junit_to_an_unwritable_place_is_one_line_and_exit_2(tmp_path):
    f = write(tmp_path, "ok", "scenario: s\nsteps:\n  - advance_ms: 1\n")
    r = invoke("scenario", "run", str(f), "--junit", str(tmp_path))        # a folder
    assert r.exit_code == 2 and "is a folder; give a file name" in r.stderr and len(r.stderr.splitlines()) == 1


def test_as_a_process_no_traceback(tmp_path):
    write(tmp_path, "latin", BAD["latin-1"][0])
    write(tmp_path, "bomb", BAD["billion-laughs"][0])
    write(tmp_path, "good", "scenario: s\nsteps:\n  - advance_ms: 1\n")
    r = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "scenario", "run", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stdout + r.stderr and not r.stderr
    assert "1 passed, 0 failed, 2 errors" in r.stdout


# ---------------------------------------------------------------------- the library's entry points

@pytest.mark.parametrize("config, fragment", [
    ({"group.max.size": -1}, "group.max.size must be at least 1"),
    ({"group.min.session.timeout.ms": 7, "group.max.session.timeout.ms": 6}, "is above"),
    ({"offsets.retention.minutes": -1}, "offsets.retention.minutes must be at least 1"),
    ({"group.initial.rebalance.delay.ms": -1}, "must be at least 0"),
    ({"group.max.sise": 3}, "unknown config key"),
    ({"group.max.size": "3"}, "must be an integer"),
    ({"group.max.size": 2**31}, "Kafka's INT type"),
    ([("group.max.size", 3)], "config must be a mapping"),
])
def test_the_coordinator_refuses_bad_config(config, fragment):
    with pytest.raises(ConfigError) as e:
        GroupCoordinator(config)
    assert fragment in str(e.value) and isinstance(e.value, ValueError)


def test_good_config_is_filled_with_kafka_defaults():
    assert check_config({"group.max.size": 4})["group.max.session.timeout.ms"] == 1_800_000
    assert check_config(None)["group.max.size"] == 2**31 - 1


@pytest.mark.parametrize("api, req, fragment", [
    ("Heartbeat", {"member": "m", "generation": 1}, "Heartbeat needs a 'group'"),
    ("JoinGroup", {}, "JoinGroup needs a 'group'"),
    ("Nope", {"group": "g"}, "unknown API 'Nope'"),
    (["JoinGroup"], {"group": "g"}, "unknown API"),
    ("Heartbeat", ["group", "g"], "a request is a mapping"),
    ("Heartbeat", {"group": "g", "generation": 2**70}, "Kafka's INT32"),
    ("Heartbeat", {"group": "g", "version": 5}, "(0 to 4)"),
    ("OffsetCommit", {"group": "g", "offsets": {"t-0": 2**64}}, "Kafka's INT64"),
    ("JoinGroup", {"group": "g", "protocols": [{"name": "r", "metadata": ["x" * 10**6]}]}, "protocols[0]"),
    ("LeaveGroup", {"group": "g", "members": [{"member": "m", "extra": 1}]}, "'members[0]' has no field 'extra'"),
])
def test_send_answers_bad_requests_with_invalid_request(api, req, fragment):
    c = GroupCoordinator()
    with pytest.raises(InvalidRequest) as e:
        c.send(api, req)
    assert fragment in str(e.value) and len(str(e.value)) < 400


@pytest.mark.parametrize("call, fragment", [
    (lambda c: c.advance(-5), "advance: the clock moves forward by a whole number of ms >= 0, got -5"),
    (lambda c: c.advance(1.5), "got 1.5"),
    (lambda c: c.advance(True), "got True"),
    (lambda c: c.storage_hold("no"), "storage_hold: true or false, got 'no'"),
    (lambda c: c.storage_fail_next(5), "storage_fail_next: one of Kafka's error names"),
    (lambda c: c.storage_fail_next("DISK_ON_FIRE"), "got 'DISK_ON_FIRE'"),
    (lambda c: c.storage_complete(None), "storage_complete: one of Kafka's error names"),
    (lambda c: c.mark_dead(5), "mark_dead: a group id (a string), got 5"),
])
def test_the_coordinators_other_entry_points_refuse_bad_arguments(call, fragment):
    c = GroupCoordinator()
    with pytest.raises(InvalidRequest) as e:
        call(c)
    assert fragment in str(e.value)
    assert c.fail_next is None and c.hold is False and c.clock.now() == 0     # nothing changed


def test_the_clock_stops_short_of_kafkas_int64_time():
    c = GroupCoordinator()
    c.advance(2**63 - 2)
    with pytest.raises(InvalidRequest, match="past Kafka's INT64 time"):
        c.advance(2)
    assert c.clock.now() == 2**63 - 2
    c.advance(1)
    assert c.send("OffsetCommit", {"group": "g", "offsets": {"t-0": 1}})["errors"] == {"t-0": "NONE"}


def test_kafka_decodable_but_out_of_range_values_get_kafka_errors():
    c = GroupCoordinator({"group.min.session.timeout.ms": 10})
    r = c.send("JoinGroup", {"group": "g", "member": "", "session_timeout_ms": -5, "protocol_type": "consumer",
                             "protocols": ["range"]})
    assert r["error"] == "INVALID_SESSION_TIMEOUT"
    assert c.send("Heartbeat", {"group": "g", "member": "m", "generation": -2**31})["error"] == "UNKNOWN_MEMBER_ID"
    assert c.send("JoinGroup", {"group": "", "member": ""})["error"] == "INVALID_GROUP_ID"


# ---------------------------------------------------------------------- helpers that keep errors short and work bounded

def test_brief_is_short_whatever_the_value():
    laughs: list = ["lol"] * 9
    for _ in range(40):
        laughs = [laughs] * 9                      # 9**40 strings if expanded
    loop: list = []
    loop.append(loop)
    for v in (laughs, loop, 10**10000, "x" * 10**7, {"a": [1, {"b": None}]} , b"\0" * 10**6):
        t = time.perf_counter()
        assert len(brief(v)) <= 60 and time.perf_counter() - t < 0.1
    assert brief({"a": [1, 2]}) == "{'a': [1, 2]}"


def test_matching_a_set_is_not_exponential():
    expected = [{"not": "z"}] * 24 + ["q"]          # every pairing but the last fits: 25! tries the naive way
    got = [f"m{i}" for i in range(25)]
    t = time.perf_counter()
    with pytest.raises(Mismatch):
        match(expected, got, {}, "members")
    match([{"not": "z"}] * 24 + ["m3"], got, {}, "members")
    assert time.perf_counter() - t < 2


def test_matching_a_long_set_needs_no_deep_recursion():
    # pairing by augmenting paths recursed once per element of a path: 1,500 groups expected
    # `{state: Empty}` overflowed Python's stack (an internal error)
    from groupspec.checkers.scenarios.match import match_summaries
    n = 1100                                         # Python's stack holds 1,000 calls
    got = [{"group": f"g{i}", "state": "Empty"} for i in range(n)]
    match_summaries([{"state": "Empty"}] * n, got, {}, "groups")
    with pytest.raises(Mismatch):
        match_summaries([{"state": "Empty"}] * (n - 1) + [{"state": "Stable"}], got, {}, "groups")


def test_a_long_set_that_binds_pairs_without_deep_recursion_and_backtracks():
    # pairing elements that bind variables recursed once per element: 1,100 groups overflowed the stack
    from groupspec.checkers.scenarios.match import match_summaries
    n = 1100
    env: dict = {}
    match_summaries([{"group": {"bind": f"v{i}"}} for i in range(n)], [{"group": f"g{i}"} for i in range(n)], env,
                    "groups")
    assert sorted(env.values()) == sorted(f"g{i}" for i in range(n))
    env = {}
    match([{"bind": "x"}, "a"], ["a", "b"], env, "members")        # x must give up 'a' to the plain element
    assert env == {"x": "b"}
    with pytest.raises(Mismatch):
        match([{"bind": "x"}, "$x"], ["a", "b"], {}, "members")


def test_set_matching_pairs_exactly_when_some_pairing_fits():
    import itertools
    import random
    rnd = random.Random(7)
    for _ in range(400):
        n = rnd.randint(1, 6)
        allowed = [rnd.sample(range(n), rnd.randint(0, n)) for _ in range(n)]
        expected = [{"any_of": a} if a else {"any_of": [-1]} for a in allowed]
        fits = any(all(j in allowed[i] for i, j in enumerate(p)) for p in itertools.permutations(range(n)))
        try:
            match(expected, list(range(n)), {}, "members")
            paired = True
        except Mismatch:
            paired = False
        assert paired == fits, allowed


def test_a_bug_of_ours_is_one_error_line_and_the_other_files_still_run(tmp_path, monkeypatch):
    from groupspec.checkers.scenarios import report
    write(tmp_path, "a", "scenario: boom\nsteps:\n  - advance_ms: 1\n")
    write(tmp_path, "b", "scenario: fine\nsteps:\n  - advance_ms: 1\n")
    real = report.run_scenario
    monkeypatch.setattr(report, "run_scenario", lambda sc, t: 1 / 0 if sc.name == "boom" else real(sc, t))
    r = invoke("scenario", "run", str(tmp_path))
    assert r.exit_code == 2 and "internal error while running the scenario (ZeroDivisionError" in r.stdout
    assert "pass   " + str(tmp_path / "b.yaml") in r.stdout


def test_a_temporary_folder_without_room_for_the_log_is_said_as_such_not_as_our_bug(tmp_path, monkeypatch):
    from groupspec.checkers.scenarios import runner
    from groupspec.impl.storage import LogOpenError

    def no_room(path):
        raise LogOpenError(f"metadata log {path}: cannot open and recover it (No space left on device)")
    monkeypatch.setattr(runner, "FileLog", no_room)
    f = write(tmp_path, "a", "scenario: s\nsteps:\n  - advance_ms: 1\n")
    r = invoke("scenario", "run", str(f), "--target", "runtime")
    assert r.exit_code == 2 and "internal error" not in r.stdout, r.stdout
    assert "cannot run it: the runtime's log could not be made in" in r.stdout
    assert "No space left on device" in r.stdout and "set TMPDIR" in r.stdout
    assert invoke("scenario", "run", str(f), "--target", "spec").exit_code == 0    # the spec needs no log


SEMANTICS = """
scenarios:
  - scenario: absent-any-of-null
    steps:
      - {snapshot: g, state: {any_of: [null, Empty]}}
  - scenario: absent-with-members
    steps:
      - {snapshot: g, state: null, members: [a]}
  - scenario: leave-errors-in-order-inside-any-of
    config: {group.min.session.timeout.ms: 10, group.initial.rebalance.delay.ms: 0}
    steps:
      - {send: JoinGroup, id: j, group: g, member: "", client: c, session_timeout_ms: 1000, protocol_type: consumer,
         protocols: [range], version: 3}
      - {advance_ms: 0}
      - {expect: j, error: NONE, member: {bind: m}}
      - {send: LeaveGroup, id: l, group: g, members: [{member: $m}, {member: nobody}]}
      - {expect: l, errors: {any_of: [[UNKNOWN_MEMBER_ID, NONE]]}}
"""


@pytest.mark.parametrize("target", ["spec", "runtime"])
def test_forms_keep_their_meaning_and_an_absent_group_has_no_fields(tmp_path, target):
    from groupspec.checkers.scenarios.runner import run_scenario
    f = write(tmp_path, "semantics", SEMANTICS)
    got = {sc.name: run_scenario(sc, target).result for sc in model.load_file(f)}
    assert got == {"absent-any-of-null": "pass", "absent-with-members": "fail",
                   "leave-errors-in-order-inside-any-of": "fail"}


def test_a_runtime_that_breaks_an_invariant_fails_the_scenario_not_the_run(tmp_path, monkeypatch):
    from groupspec.impl.lifecycle import IllegalMove
    write(tmp_path, "a", after_join("{expect: j1, error: MEMBER_ID_REQUIRED}"))
    write(tmp_path, "b", "scenario: fine\nsteps:\n  - advance_ms: 1\n")

    def broken(self, api, req, **kw):
        raise IllegalMove("illegal move Empty -> Stable\n" + "x" * 10_000)
    monkeypatch.setattr(GroupCoordinator, "send", broken)
    r = invoke("scenario", "run", str(tmp_path), "--target", "runtime")
    assert r.exit_code == 1 and len(r.stdout.splitlines()) == 3 and len(r.stdout) < 1500, r.stdout
    assert "FAIL" in r.stdout and "IllegalMove: illegal move Empty -> Stable\\nxxx" in r.stdout
    assert f"{tmp_path / 'a.yaml'}: s: step 1 (IllegalMove)" in r.stdout      # where it broke


# ---------------------------------------------------------------------- the spec target's work stays bounded

def _joins(n: int, group: str = "g") -> list:
    return [{"send": "JoinGroup", "id": f"j{i}", "group": group, "member": "", "client": f"c{i}",
             "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "protocol_type": "consumer",
             "protocols": ["range"], "require_known_member_id": False} for i in range(n)]


def _spec_run(tmp_path, name: str, steps: list):
    f = tmp_path / f"{name}.json"
    f.write_text(json.dumps({"scenario": name, "steps": steps}))
    start = time.perf_counter()
    r = invoke("scenario", "run", str(f), "--target", "spec")
    return r, time.perf_counter() - start


def test_thousands_of_groups_cost_linear_time_on_the_spec_target(tmp_path):
    # each step copied every group of the world, and a set of summaries was paired n x n: 3,000 groups took
    # minutes
    n = 2000
    steps = [{"send": "OffsetCommit", "id": f"c{i}", "group": f"g{i}", "offsets": {"t-0": i}} for i in range(n)]
    steps += [{"send": "ListGroups", "id": "l"}, {"expect": "l", "groups": [{"group": f"g{i}"} for i in range(n)]}]
    r, secs = _spec_run(tmp_path, "groups", steps)
    assert r.exit_code == 0 and secs < 20, (secs, r.stdout)


def test_choices_that_decide_nothing_are_not_explored(tmp_path):
    # a row's choices (the leader after a removal) were made even where they decide nothing, and every
    # combination explored: eight members joining took minutes
    r, secs = _spec_run(tmp_path, "joins", _joins(8) + [{"advance_ms": 20000}])
    assert r.exit_code == 0 and secs < 10, (secs, r.stdout)


def test_a_scenario_with_more_behaviours_than_the_spec_target_explores_is_an_error_not_a_hang(tmp_path, monkeypatch):
    from groupspec.checkers.scenarios import runner
    monkeypatch.setattr(runner, "MAX_RUNS", 3000)      # what twelve members joining need, with ten
    r, secs = _spec_run(tmp_path, "joins", _joins(10) + [{"advance_ms": 20000}])
    assert r.exit_code == 2 and "step 11: the spec's behaviours up to this step are more than" in r.stdout, r.stdout
    assert "--target runtime" in r.stdout
