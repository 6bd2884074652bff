"""The newer commands keep the promise (issue 25): `replay`, `simulate`, `conform`, `prove`, `export tla`
and `docs --site` given what a hostile user gives them.  Each bad input is one line on stderr naming the
file and record (or the flag), what is wrong and what to do, exit 2, before the work; a trace of the
wrong shape is never a traceback, a crash or gigabytes of memory (Hypothesis writes them); nothing a
user wrote is overwritten or deleted.  Signals: tests/test_command_signals.py."""
from __future__ import annotations

import copy
import json
import math
import random
import sys
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from groupspec.checkers.review.counterexample import to_itf
from groupspec.checkers.world.itf_replay import TraceError, load_trace, replay
from groupspec.checkers.world.presets import PRESETS
from groupspec.checkers.world.state_space import WorldModel
from groupspec.spec.world import ALL_VARS

from test_cli_input import refused, run_cli

ROOT = Path(__file__).resolve().parent.parent




# -- replay: traces of the closed world ----------------------------------------------------------

TINY = WorldModel(PRESETS["tiny"])


def _walk(model: WorldModel, steps: int, seed: int) -> list:
    """A path of the world's own steps from its initial state, chosen at random (seeded)."""
    rng = random.Random(seed)
    cur = model.init_states()[0]
    path = [(None, model.flat(cur))]
    for _ in range(steps):
        succ, _ = model.successors(cur)
        step, cur = succ[rng.randrange(len(succ))]
        path.append((step, model.flat(cur)))
    return path


def _tlc_value(t, v):
    """A value as TLC's -dumpTrace json writes the exported module's: elements as indices (clients by name),
    sets as lists, functions as objects of keys."""
    if t.kind in ("bool", "int"):
        return v
    if t.kind == "enum":
        return t.values[v] if t.name != "Error" else __import__("groupspec.spec.kafka").spec.kafka.ERRORS[v]
    if t.kind == "dom":
        return f"c{v}" if t.name == "Client" and v >= 0 else v
    if t.kind == "set":
        return [i for i in range(v.bit_length()) if v >> i & 1]
    if t.kind == "map":
        return {(f"c{i}" if t.key == "Client" else str(i)): _tlc_value(t.value, x) for i, x in enumerate(v)}
    return {f: _tlc_value(ft, x) for f, ft, x in zip(t.values, t.args, v)}


PATH = _walk(TINY, 10, seed=3)
ITF = json.loads(json.dumps(to_itf(PATH, TINY, "")))
TLC = {"counterexample": {"state": [[i + 1, {v.name: _tlc_value(v.type, x) for v, x in zip(ALL_VARS, s)}]
                                    for i, (_, s) in enumerate(PATH)]}}


@pytest.mark.parametrize("doc", [ITF, TLC], ids=["itf", "tlc"])
def test_a_walk_of_the_world_replays_in_either_format(tmp_path, doc):
    f = tmp_path / "t.json"
    f.write_text(json.dumps(doc))
    fmt, states = load_trace(f)
    r = replay(WorldModel(PRESETS["tiny"]), states)
    assert (r.departs, r.violation, len(r.steps)) == (-1, None, 10)


def _itf(change) -> dict:
    doc = copy.deepcopy(ITF)
    change(doc["states"])
    return doc


def _set(i, var, value):
    return lambda states: states[i].__setitem__(var, value)


RAW = {      # name: the file's text, or an ITF trace changed
    "nested tens of thousands deep": "[" * 50_000 + "]" * 50_000,
    "nested inside the states": '{"states": ' + "[" * 50_000 + "]" * 50_000 + "}",
    "not JSON": "{",
    "empty": "",
    "JSON null": "null",
    "not UTF-8": b"\xff\xfe{}",
    "a number of 5,000 digits": '{"states": [{"generation": ' + "7" * 5000 + "}]}",
    "TLC without its state list": {"counterexample": {}},
    "TLC state not a pair": {"counterexample": {"state": [5]}},
    "TLC state a list of objects": {"counterexample": {"state": [{"a": 1}]}},
    "a state that is an int": _itf(lambda s: s.__setitem__(1, 5)),
    "a list of dicts as a state": _itf(lambda s: s.__setitem__(0, [s[0]])),
    "no states": _itf(lambda s: s.clear()),
    "a missing state variable": _itf(lambda s: s[0].pop("state")),
    "Infinity for an int": json.dumps(ITF).replace('"generation": 0', '"generation": Infinity', 1),
    "1e400 for an int": json.dumps(ITF).replace('"generation": 0', '"generation": 1e400', 1),
    "a bool for an int": _itf(_set(0, "generation", True)),
    "a float for an int": _itf(_set(0, "generation", 1.5)),
    "a #bigint past 64 bits": _itf(_set(0, "generation", {"#bigint": "9" * 30})),
    "a member of 10^11": _itf(_set(0, "members", {"#set": ["m100000000000"]})),
    "a set element of 10^9": _itf(_set(0, "members", {"#set": [10**9]})),
    "a map key out of range": _itf(_set(0, "instance_of", {"#map": [["m99", ""]]})),
    "a map missing a key": _itf(_set(0, "instance_of", {"#map": [["m1", ""]]})),
    "a map key given twice": _itf(_set(0, "instance_of", {"#map": [["m0", ""], ["m0", ""], ["m1", ""]]})),
    "a partition of another topic": _itf(_set(0, "pending_offsets", {"#set": ["t5-0"]})),
    "a client of another prefix": _itf(_set(0, "parked_join", {"#map": [["m0", "x1"], ["m1", ""], ["m2", ""]]})),
    "an unknown group state": _itf(_set(0, "state", "Sleeping")),
    "a record missing a field": _itf(lambda s: s[0]["log"].pop("members")),
}
EXPECT = {
    "nested tens of thousands deep": "nested thousands of levels deep",
    "nested inside the states": "nested thousands of levels deep",
    "not JSON": "not a JSON file",
    "empty": "not a JSON file",
    "JSON null": "neither a TLC trace",
    "not UTF-8": "not a JSON file",
    "a number of 5,000 digits": "has 5,000 digits; a trace's numbers are Kafka's, 64-bit at most",
    "TLC without its state list": "TLC's -dumpTrace json has a 'state' list",
    "TLC state not a pair": "counterexample.state[0] is 5; TLC writes each state as [its number",
    "TLC state a list of objects": "counterexample.state[0] is {'a': 1}",
    "a state that is an int": "states[1] is 5; an ITF state is an object of variables",
    "a list of dicts as a state": "states[0] is [{",
    "no states": "the trace has no state",
    "a missing state variable": "state 0: no variable state",
    "Infinity for an int": "state 0, variable generation: inf is not an integer",
    "1e400 for an int": "state 0, variable generation: inf is not an integer",
    "a bool for an int": "True is not an integer",
    "a float for an int": "1.5 is not an integer",
    "a #bigint past 64 bits": "is not an integer",
    "a member of 10^11": "variable members: 'm100000000000' is out of range: this world's Member has 3 elements, "
                         "m0 to m2",
    "a set element of 10^9": "1000000000 is out of range",
    "a map key out of range": "variable instance_of: 'm99' is out of range",
    "a map missing a key": "the map gives no value for key m0",
    "a map key given twice": "the map gives key m0 twice",
    "a partition of another topic": "'t5-0' is out of range: this world has topics t0 to t0",
    "a client of another prefix": "'x1' is not an element of Client (written c0 to c1, or 0 to 1)",
    "an unknown group state": "'Sleeping' is not a value of GroupState",
    "a record missing a field": "variable log: the record has no field members",
}


def _write(tmp_path: Path, name: str) -> Path:
    f = tmp_path / "trace.json"
    raw = RAW[name]
    if isinstance(raw, bytes):
        f.write_bytes(raw)
    else:
        f.write_text(raw if isinstance(raw, str) else json.dumps(raw))
    return f


@pytest.mark.parametrize("name", RAW)
def test_a_file_that_is_no_trace_of_the_world_is_one_message(tmp_path, name):
    f = _write(tmp_path, name)
    tracemalloc.start()
    try:
        with pytest.raises(TraceError) as e:
            replay(TINY, load_trace(f)[1])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert EXPECT[name] in str(e.value), str(e.value)
    assert "\n" not in str(e.value) and len(str(e.value)) < 400
    # checked before anything is built from it: a member m100000000000 once took 20 GB as a bit mask
    assert peak < 64 * 2**20, peak


@pytest.mark.parametrize("name", ["a member of 10^11", "nested tens of thousands deep", "TLC state not a pair",
                                  "a map key out of range"])
def test_replay_refuses_it_in_one_line(monkeypatch, capsys, tmp_path, name):
    f = _write(tmp_path, name)
    err = refused(monkeypatch, capsys, "replay", "--preset", "tiny", str(f))
    assert err.startswith(f"groupspec: TRACE {f}: ") and EXPECT[name] in err


def test_replay_says_what_a_path_that_is_no_file_is(monkeypatch, capsys, tmp_path):
    import os
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "traces").mkdir()
    for place, what in [(tmp_path / "traces", "is a folder, not a file"),
                        (tmp_path / "pipe", "is a named pipe (FIFO), not a file"),
                        ("/dev/null", "is a character device (like /dev/null), not a file"),
                        (tmp_path / "none.json", "no such file"), ("", "TRACE is empty")]:
        assert what in refused(monkeypatch, capsys, "replay", "--preset", "tiny", str(place)), place


def test_a_waived_invariant_is_judged_with_no_waivers(monkeypatch, capsys, tmp_path):
    # a counterexample of `check --no-waivers` is no pass for replay: it says what it did not check, and
    # --no-waivers judges it as check did
    from groupspec.checkers.search.explicit import check
    import dataclasses
    cfg = dataclasses.replace(PRESETS["static"], waive=())
    model = WorldModel(cfg)
    res = check(model)
    f = tmp_path / "ce.json"
    f.write_text(json.dumps(to_itf(res.path, model, res.violation)))
    code, out, _ = run_cli(monkeypatch, capsys, "replay", "--preset", "static", str(f))
    assert code == 0 and f"not checked in this world: {res.violation}" in out
    code, out, _ = run_cli(monkeypatch, capsys, "replay", "--preset", "static", "--no-waivers", str(f))
    assert code == 1 and f"the trace breaks {res.violation}" in out


def _places(v, prefix=()):
    yield prefix
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _places(x, prefix + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _places(x, prefix + (i,))


scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.integers(),
                    st.sampled_from([2**63, -2**63 - 1, 10**9, -1, 1e400, float("nan"), 1.5]),
                    st.sampled_from(["", "m0", "m2", "m3", "m100000000000", "c1", "c9", "t0-1", "t0-9", "t9-0",
                                     "x1", "-1", "0", "Empty", "NONE", "none", "\ud800", "m-1", "c01"]),
                    st.text(max_size=4))
forms = st.one_of(st.builds(lambda xs: {"#set": xs}, st.lists(scalars, max_size=3)),
                  st.builds(lambda xs: {"#map": xs}, st.lists(st.lists(scalars, min_size=0, max_size=3),
                                                                 max_size=3)),
                  st.builds(lambda s: {"#bigint": s}, st.sampled_from(["1", "-7", "9" * 25, "x", ""])))
hostile = st.one_of(scalars, forms, st.lists(scalars, max_size=3),
                    st.dictionaries(st.sampled_from(["m0", "c0", "0", "#set", "x", "state"]), scalars, max_size=3))


@settings(max_examples=max(120, settings().max_examples), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["itf", "tlc"]), st.data())
def test_malformed_traces_are_a_verdict_or_one_message(tmp_path, fmt, data):
    """Exit 0 (replays, breaks nothing), 1 (departs or breaks an invariant) or 2 (TraceError, one line):
    never another exception, whatever the file holds."""
    doc = copy.deepcopy(ITF if fmt == "itf" else TLC)
    for _ in range(data.draw(st.integers(1, 3), label="changes")):
        places = list(_places(doc))[1:]
        if not places:          # the whole document was deleted: nothing left to change
            break
        path = data.draw(st.sampled_from(places), label="where")
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        op = data.draw(st.sampled_from(["replace", "replace", "delete", "wrap"]), label="how")
        if op == "replace":
            parent[path[-1]] = data.draw(hostile, label="value")
        elif op == "delete":
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(st.sampled_from([[parent[path[-1]]], {"#set": parent[path[-1]]},
                                                          {"#map": [parent[path[-1]]]}]), label="wrapped")
    text = json.dumps(doc)
    if data.draw(st.booleans(), label="bytes cut"):
        text = text[:data.draw(st.integers(0, len(text)), label="cut at")]
    f = tmp_path / "t.json"
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        r = replay(TINY, load_trace(f)[1])
    except TraceError as e:
        assert "\n" not in str(e) and len(str(e)) < 400, str(e)
        return
    assert r.departs >= -1 and r.states >= 1


# -- simulate ---------------------------------------------------------------------------------------

SIMULATE = [
    (["--duration", "nan"], "--duration nan: give a number of seconds"),
    (["--duration", "inf"], "--duration inf: give a number of seconds"),
    (["--duration", "-1"], "--duration -1: from 0.001 seconds"),
    (["--duration", "1e300"], "Kafka's clock is a 64-bit count of milliseconds"),
    (["--duration", "5", "--events-per-group", "3"], "--duration and --events-per-group: give one"),
    (["--inject-bug", "sync-in-preparing,,timer-left-armed"], "has an empty name between commas"),
    (["--inject-bug", ","], "',' names no bug"),
    (["--inject-bug", ""], "'' names no bug"),
    (["--inject-bug", "timer-left-armed,timer-left-armed"], "timer-left-armed named more than once"),
    (["--inject-bug", "nope"], "unknown bug 'nope'"),
    (["--fraction", "0.5"], "give --inject-bug too"),
    (["--inject-bug", "all", "--fraction", "nan"], "--fraction nan: between 0 and 1"),
    (["--format", "parquet"], "the name says jsonl; name the file .parquet or leave out --format"),
    (["--groups", "0"], "--groups and --events-per-group must be at least 1"),
]


@pytest.mark.parametrize("args,message", SIMULATE, ids=[" ".join(a) for a, _ in SIMULATE])
def test_simulate_refuses_bad_flags_in_one_line(monkeypatch, capsys, tmp_path, args, message):
    out = tmp_path / "t.jsonl"
    assert message in refused(monkeypatch, capsys, "simulate", "--out", str(out), "--groups", "1", *args)
    assert not out.exists()


def test_simulate_never_writes_one_output_over_another(monkeypatch, capsys, tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text("the user's trace\n")
    (tmp_path / "link.jsonl").symlink_to(trace)
    for bugs in (trace, tmp_path / "." / "t.jsonl", tmp_path / "link.jsonl"):
        err = refused(monkeypatch, capsys, "simulate", "--out", str(trace), "--bugs", str(bugs), "--groups", "1")
        assert "is also --out" in err
    assert trace.read_text() == "the user's trace\n"
    # two devices are no one file: /dev/null may take both
    code, out, _ = run_cli(monkeypatch, capsys, "simulate", "--out", "/dev/null", "--bugs", "/dev/null",
                           "--groups", "1", "--events-per-group", "5")
    assert code == 0 and "written to /dev/null" in out


def test_a_full_disk_during_simulate_names_the_file_and_keeps_the_old_one(monkeypatch, capsys, tmp_path):
    import errno
    from groupspec.impl import trace as T
    out = tmp_path / "t.jsonl"
    out.write_text("before\n")

    def full(self, rec):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(T.JsonLinesSink, "__call__", full)
    err = refused(monkeypatch, capsys, "simulate", "--out", str(out), "--groups", "1")
    assert f"--out {out}: writing failed (No space left on device); nothing was written there" in err
    assert out.read_text() == "before\n" and [p.name for p in tmp_path.iterdir()] == ["t.jsonl"]


# -- conform ------------------------------------------------------------------------------------------

sys.path.insert(0, str(Path(__file__).parent))        # hostile_adapters

CONFORM = [
    (["--shrink-seconds", "nan"], "--shrink-seconds nan: give a number of seconds, 0 or more"),
    (["--shrink-seconds", "inf"], "--shrink-seconds inf: give a number of seconds"),
    (["--shrink-seconds", "-1"], "--shrink-seconds must be 0 or more, got -1"),
    (["--replay", "x.yaml", "--examples", "5", "--out", "o.yaml"], "--examples, --out with --replay: a replay runs "
                                                                  "the scenario files as written"),
    (["--replay", "x.yaml", "--config", "group.max.size=3"], "--config with --replay"),
    (["--adapter", "hostile_adapters:close_raises"], "closing an adapter the factory had just made raised "
                                                     "RuntimeError: 'close broke'"),
    (["--adapter", "hostile_adapters:unsupported_an_int"], "its `unsupported` is 5; give a set of the names"),
    (["--adapter", "hostile_adapters:fixed_config_invalid"], "its fixed_config and --config together: config "
                                                             "group.max.size must be at least 1"),
    (["--adapter", "hostile_adapters:fixed_config_not_a_dict"], "its fixed_config is 5, not a mapping"),
    (["--adapter", "hostile_adapters:factory_fails_on_a_config", "--seed", "1", "--shrink-seconds", "0",
      "--json"], "the factory raised RuntimeError: 'no group.max.size 2' when called with the config"),
    (["--adapter", "hostile_adapters:factory_refuses_every_config_drawn", "--seed", "1", "--examples", "5",
      "--json"], "the factory refused every config drawn (Unsupported: config: only the default"),
]


@pytest.mark.parametrize("args,message", CONFORM, ids=[" ".join(a) for a, _ in CONFORM])
def test_conform_refuses_what_it_cannot_use_in_one_line(monkeypatch, capsys, args, message):
    assert message in refused(monkeypatch, capsys, "conform", *args)


@pytest.mark.parametrize("adapter,where,got", [
    ("close_raises_after_the_first", "(close)", "RuntimeError: 'close broke'"),
    ("snapshot_raises", "(snapshot g0)", "RuntimeError: 'snapshot broke'"),
    ("answered_raises", "(answered)", "RuntimeError: 'answered broke'"),
    ("answered_none", "(answered)", "the implementation None"),
    ("answered_not_pairs", "(answered)", "the implementation [1]"),
    ("snapshot_a_list", "(snapshot g0)", "the implementation [1, 2]"),
])
def test_an_adapter_that_raises_or_answers_out_of_shape_is_a_divergence(monkeypatch, capsys, adapter, where, got):
    # adapter.py's promise: what the implementation raises is its failure, reported with the scenario
    code, out, err = run_cli(monkeypatch, capsys, "conform", "--adapter", f"hostile_adapters:{adapter}", "--seed",
                             "1", "--examples", "20", "--shrink-seconds", "0", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["result"] == "divergence" and doc["divergence"]["kind"] == "error", (out, err)
    assert where in doc["message"] and got in doc["message"] and doc["scenario"]["steps"], doc["message"]
    assert "Traceback" not in err


# -- prove ----------------------------------------------------------------------------------------------

PROVE = [
    (["--bmc", "3", "-i", "x"], "--invariant 'x': no state invariant of this world; use one of leader-is-member"),
    (["--bmc", "3", "-i", "max-size-after-join"], "--invariant 'max-size-after-join' is a step invariant, and BMC "
                                                  "asks about states: `groupspec check` checks it"),
    (["--bmc", "3", "--save", "p.json", "--budget", "nan"], "--budget, --save with --bmc: they are for the "
                                                            "induction proofs"),
    (["--bmc", "3", "--no-strengthen", "--jobs", "2"], "--no-strengthen, --jobs with --bmc"),
    (["--bmc", "3", "--engine", "spacer", "--search", "full", "--check-lemmas", "", "--bound", "2",
      "--spacer-budget", "5"], "--bound, --check-lemmas, --search, --engine, --spacer-budget with --bmc"),
    (["--bmc", "3", "--timeout", "nan"], "--timeout nan: give seconds in (0, 86400]"),
    (["--bmc", "65"], "--bmc 65: give a depth from 0 to 64"),
    (["--budget", "nan"], "--budget nan: give a number of seconds in (0, 3600]"),
    (["--budget", "inf"], "--budget inf: give a number of seconds in (0, 3600]"),
    (["--spacer-budget", "-inf"], "--spacer-budget -inf: give a number of seconds in (0, 3600]"),
    (["--timeout", "nan"], "--timeout nan: give a number of seconds in (0, 600]"),
    (["--timeout", "0"], "--timeout 0: give a number of seconds in (0, 600]"),
    (["--budget", "3601"], "--budget 3601: give a number of seconds in (0, 3600]"),
    (["--save", ""], "--save is empty; give a file name"),
    (["--out", "ce"], "--out is for --bmc's counterexample"),
    (["--preset", "small"], "--preset: a closed world is for --bmc K"),
]


@pytest.mark.parametrize("args,message", PROVE, ids=[" ".join(a) for a, _ in PROVE])
def test_prove_refuses_what_it_would_not_honour_in_one_line(monkeypatch, capsys, tmp_path, args, message):
    # with --bmc, a flag of the induction proofs was ignored, and looked honoured (-i, --save, --budget nan)
    monkeypatch.chdir(tmp_path)
    assert message in refused(monkeypatch, capsys, "prove", *args)
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(option=st.sampled_from(["--timeout", "--budget", "--spacer-budget"]),
       value=st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: not 0 < v <= 600))
def test_a_budget_out_of_range_is_one_line_whatever_it_is(monkeypatch, capsys, option, value):
    if option != "--timeout" and 0 < value <= 3600:
        return
    err = refused(monkeypatch, capsys, "prove", option, repr(value))
    assert err.startswith(f"groupspec: {option} ") and "give a number of seconds in (0, " in err


# -- docs --site: nothing of the user's is deleted -------------------------------------------------------

def test_a_rebuilt_site_keeps_the_users_files(monkeypatch, capsys, tmp_path):
    # with an index.html in the folder, the build emptied it: a user's notes were deleted
    site = tmp_path / "site"
    code, out, err = run_cli(monkeypatch, capsys, "docs", "--site", str(site))
    assert code == 0 and (site / "index.html").is_file(), err
    (site / "notes.txt").write_text("mine\n")
    (site / "states" / "mine.md").write_text("mine too\n")
    code, out, err = run_cli(monkeypatch, capsys, "docs", "--site", str(site), "--json")
    assert code == 0 and json.loads(out)["not_ours"] == ["notes.txt", "states/mine.md"], (out, err)
    assert (site / "notes.txt").read_text() == "mine\n" and (site / "states" / "mine.md").read_text() == "mine too\n"
    assert (site / "index.html").is_file() and not list(site.glob(".groupspec-site-building-*"))


SITE_REFUSED = [
    ({"index.html": "<html>", "notes.txt": "mine"}, "holds files `groupspec docs --site` did not write "
                                                    "(index.html, notes.txt; there is no .groupspec-site.json"),
    ({".groupspec-site.json": json.dumps({"files": ["../notes.txt"]})}, "names '../notes.txt', which is outside "
                                                                        "the site's folder"),
    ({".groupspec-site.json": json.dumps({"files": ["/etc/hostname"]})}, "which is outside the site's folder"),
    ({".groupspec-site.json": "[]"}, "not a list of the files `docs --site` wrote"),
    ({".groupspec-site.json": "\udcff"}, "not a list of the files `docs --site` wrote"),
]


@pytest.mark.parametrize("files,message", SITE_REFUSED, ids=["an older site", "a manifest naming ../",
                                                             "an absolute path", "a list", "not UTF-8"])
def test_docs_site_refuses_a_folder_it_did_not_build(monkeypatch, capsys, tmp_path, files, message):
    site = tmp_path / "site"
    site.mkdir()
    (tmp_path / "notes.txt").write_text("mine")
    for name, text in files.items():
        (site / name).write_bytes(text.encode("utf-8", "surrogateescape"))
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    err = refused(monkeypatch, capsys, "docs", "--site", str(site))
    assert err.startswith(f"groupspec: --site {site}") and message in err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_a_site_install_replaces_only_its_own_files(tmp_path):
    from groupspec.checkers.review.errors import DocsError
    from groupspec.checkers.review.site import MANIFEST, install, site_files
    out, built = tmp_path / "site", tmp_path / "site" / ".groupspec-site-building-1-x"
    for rel, text in {"index.html": "old", "old.html": "old", "gone/x.html": "old", "notes.txt": "mine",
                      "new.html": "mine", built.name + "/index.html": "new", built.name + "/new.html": "new",
                      built.name + "/css/site.css": "new"}.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    ours = {"index.html", "old.html", "gone/x.html"}
    (out / MANIFEST).write_text(json.dumps({"files": sorted(ours)}))
    with pytest.raises(DocsError, match="the new site writes new.html, which `docs --site` did not write"):
        install(built, out, ours)       # the user's new.html: refused, and nothing changed
    assert (out / "old.html").read_text() == "old" and (out / "new.html").read_text() == "mine"
    (out / "new.html").unlink()
    install(built, out, ours)
    assert site_files(out) == {"index.html", "new.html", "css/site.css"}
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        MANIFEST, "css/site.css", "index.html", "new.html", "notes.txt"]
    assert (out / "notes.txt").read_text() == "mine" and not (out / "gone").exists()


# -- export tla ----------------------------------------------------------------------------------------

EXPORT = [
    (["--workers", "0"], "--workers must be at least 1, got 0"),
    (["--workers", "100000"], "--workers 100,000: at most"),
    (["--clients", "0"], "--clients must be at least 1, got 0"),
    (["--preset", "nope"], "--preset 'nope': unknown preset"),
    (["--liveness", "--symmetry"], "--liveness with --symmetry: TLC checks liveness unsoundly under SYMMETRY"),
]


@pytest.mark.parametrize("args,message", EXPORT, ids=[" ".join(a) for a in (x for x, _ in EXPORT)])
def test_export_tla_refuses_bad_flags_in_one_line(monkeypatch, capsys, tmp_path, args, message):
    assert message in refused(monkeypatch, capsys, "export", "tla", str(tmp_path / "tla"), *args)
    assert not (tmp_path / "tla").exists()


def test_export_tla_writes_both_files_or_neither(monkeypatch, capsys, tmp_path):
    import errno
    import os
    folder = tmp_path / "tla"
    folder.mkdir()
    for name in ("ConsumerGroupWorld.tla", "ConsumerGroupWorld.cfg"):
        (folder / name).write_text("before\n")
    write_text = Path.write_text

    def full(self, text, *a, **k):      # the disk fills up at the second file
        if self.name.endswith(".cfg.%d.partial" % os.getpid()):
            raise OSError(errno.ENOSPC, "No space left on device")
        return write_text(self, text, *a, **k)
    monkeypatch.setattr(Path, "write_text", full)
    err = refused(monkeypatch, capsys, "export", "tla", str(folder))
    assert f"OUT_DIR {folder}: writing failed (No space left on device); nothing was written there" in err
    assert {p.name: p.read_text() for p in folder.iterdir()} == {"ConsumerGroupWorld.tla": "before\n",
                                                                "ConsumerGroupWorld.cfg": "before\n"}
    monkeypatch.setattr(Path, "write_text", write_text)
    code, out, _ = run_cli(monkeypatch, capsys, "export", "tla", str(folder), "--liveness")
    assert code == 0 and "SYMMETRY" not in (folder / "ConsumerGroupWorld.cfg").read_text()
    assert sorted(p.name for p in folder.iterdir()) == ["ConsumerGroupWorld.cfg", "ConsumerGroupWorld.tla"]


# -- every newer command: a path that is no file (or no folder) of the right kind ----------------------

KINDS = {"fifo": "is a named pipe (FIFO)", "/dev/null": "is a character device (like /dev/null)",
         "folder": "is a folder", "missing": "no such file"}
SCENARIOS = "give a scenario file (.yaml, .yml, .json) or a folder of them"
# (command with {p} for the path, the kind of path, what the one line says); a path that is fine for the
# command (/dev/null as an output file, a missing output) is not in the table
PATHS = [
    (["replay", "--preset", "tiny", "{p}"], kind, f"TRACE {{p}}: {said}") for kind, said in KINDS.items()
] + [
    (["conform", "--replay", "{p}"], "fifo", f"--replay {{p}}: is a named pipe (FIFO), not a regular file; {SCENARIOS}"),
    (["conform", "--replay", "{p}"], "/dev/null", "--replay {p}: is a character device (like /dev/null)"),
    (["conform", "--replay", "{p}"], "folder", f"--replay {{p}}: no scenario files (.yaml, .yml, .json) there; "
                                               f"{SCENARIOS}"),
    (["conform", "--replay", "{p}"], "missing", f"--replay {{p}}: no such file or folder; {SCENARIOS}"),
    (["conform", "--out", "{p}"], "fifo", "--out {p}: a named pipe no process reads; start its reader first"),
    (["conform", "--out", "{p}"], "folder", "--out {p}: is a folder; give a file name"),
    (["simulate", "--groups", "1", "--out", "{p}"], "fifo", "--out {p}: a named pipe no process reads"),
    (["simulate", "--groups", "1", "--out", "{p}"], "folder", "--out {p}: is a folder; give a file name"),
    (["prove", "--save", "{p}"], "fifo", "--save {p}: a named pipe no process reads"),
    (["prove", "--save", "{p}"], "folder", "--save {p}: is a folder; give a file name"),
] + [
    (args, kind, f"{where} {{p}}: is not a folder; give a folder") for kind in ("fifo", "/dev/null")
    for args, where in ((["export", "tla", "{p}"], "OUT_DIR"), (["prove", "--bmc", "2", "--out", "{p}"], "--out"),
                        (["docs", "--site", "{p}"], "--site"), (["docs", "--out", "{p}"], "--out"))
]


@pytest.mark.parametrize("args,kind,message", PATHS, ids=[f"{a[0]} {a[-2] if a[-1] == '{p}' else a[-1]} {k}"
                                                          for a, k, _ in PATHS])
def test_a_path_of_the_wrong_kind_is_one_line_saying_what_it_is(monkeypatch, capsys, tmp_path, args, kind,
                                                                message):
    import os
    path = {"fifo": tmp_path / "pipe", "/dev/null": Path("/dev/null"), "folder": tmp_path / "folder",
            "missing": tmp_path / "missing.json"}[kind]
    if kind == "fifo":
        os.mkfifo(path)             # nobody reads it: opening it to write or read would wait for ever
    elif kind == "folder":
        path.mkdir()
    monkeypatch.chdir(tmp_path)
    err = refused(monkeypatch, capsys, *[a.replace("{p}", str(path)) for a in args])
    assert message.replace("{p}", str(path)) in err, err


def _parses(kind, text: str) -> bool:
    try:
        kind(text)
    except ValueError:
        return False
    return True


def _bad_int(lo: int, hi: int):
    return st.one_of(st.integers().filter(lambda v: not lo <= v <= hi).map(str),
                     st.text(max_size=12).filter(lambda t: not _parses(int, t)))


def _bad_float(lo: float, hi: float):
    return st.one_of(st.floats().filter(lambda v: not (lo < v <= hi and math.isfinite(v))).map(repr),
                     st.text(max_size=12).filter(lambda t: not _parses(float, t)))


# (the command, the option, its values that must be refused): every one is refused before any work
FLAGS = [
    (["export", "tla", "OUT"], "--workers", _bad_int(1, 4)),
    (["simulate", "--out", "t.jsonl", "--groups", "1"], "--duration", _bad_float(0.0009, 9.3e15)),
    (["simulate", "--out", "t.jsonl", "--groups", "1", "--inject-bug", "all"], "--fraction", _bad_float(-1e-300, 1)),
    (["simulate", "--out", "t.jsonl"], "--groups", _bad_int(1, math.inf)),
    (["prove"], "--bmc", _bad_int(0, 64)),
    (["prove", "--bmc", "0"], "--timeout", _bad_float(0, 86_400)),
    (["prove"], "--bound", _bad_int(1, 6)),
    (["prove", "--save", "p.json"], "--jobs", _bad_int(1, 4)),
    (["conform", "--out", "c.yaml"], "--shrink-seconds", _bad_float(-1e-300, math.inf)),
]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(range(len(FLAGS))), data=st.data())
def test_hostile_flag_values_are_one_line_and_nothing_written(monkeypatch, capsys, tmp_path, which, data):
    command, option, values = FLAGS[which]
    value = data.draw(values, label=option)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(monkeypatch, capsys, *command, f"{option}={value}")
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, (command, value, err)
    assert err.startswith("groupspec") and list(tmp_path.iterdir()) == [], err
