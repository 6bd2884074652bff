"""Fuzzing the inputs: malformed scenario documents through the CLI, arbitrary request values through
GroupCoordinator.send.  Allowed outcomes only: exit 0/1/2 with no traceback (2 with one error line per
malformed scenario), and for a request a response with Kafka's error names or InvalidRequest."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

from groupspec.checkers.cli import app
from groupspec.impl.coordinator import GroupCoordinator
from groupspec.impl.requests import API_FIELDS, FIELDS, InvalidRequest
from groupspec.spec.kafka import APIS, ERRORS

ROOT = Path(__file__).resolve().parent / "scenarios"
# the project's profile (tests/conftest.py) sets the pace; these tests want at least this many examples
EXAMPLES = max(120, settings().max_examples)
FAST = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


def _sources() -> list[dict]:
    """Valid scenarios of the suite, cut to their first steps (what is mutated)."""
    out = []
    for f in sorted(ROOT.rglob("*.yaml")):
        doc = yaml.safe_load(f.read_text())
        for sc in doc["scenarios"] if "scenarios" in doc else [doc]:
            out.append({**sc, "steps": sc["steps"][:8]})
    return out


SOURCES = _sources()

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.sampled_from([2**70, -2**70, 2**31, 2**63, -1, 0]),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6),
    st.sampled_from(["$", "$nope", "$a", "NONE", "Empty", "t-0", "t-99999999999", "JoinGroup", "", "g", "é",
                     "\u2028", "x" * 300]))
forms = st.sampled_from([{"bind": "a"}, {"bind": 5}, {"bind": ["a"]}, {"any_of": 5}, {"any_of": []},
                         {"any_of": ["NONE", 3]}, {"not": None}, {"not": {"not": "x"}}, {"bind": "$a"},
                         {"any_of": [{"bind": "z"}]}, {"not": [1]}]).map(copy.deepcopy)   # mutated later: fresh
hostile = st.one_of(scalars, forms, st.lists(scalars, max_size=3), st.dictionaries(st.text(max_size=4), scalars,
                                                                                    max_size=3))


def _paths(v, prefix=()):
    yield prefix
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _paths(x, prefix + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _paths(x, prefix + (i,))


@st.composite
def mutated_scenarios(draw):
    """A valid scenario with 1-3 places replaced by a wrong type, deleted, wrapped, or given an extra key."""
    sc = copy.deepcopy(draw(st.sampled_from(SOURCES)))
    for _ in range(draw(st.integers(1, 3))):
        places = list(_paths(sc))[1:]
        path = draw(st.sampled_from(places))
        parent = sc
        for k in path[:-1]:
            parent = parent[k]
        last = path[-1]
        op = draw(st.sampled_from(["replace", "replace", "delete", "wrap", "extra"]))
        if op == "replace":
            parent[last] = draw(hostile)
        elif op == "delete":
            del parent[last]
        elif op == "wrap":
            parent[last] = draw(st.sampled_from([[parent[last]], {"any_of": [parent[last]]}, {"x": parent[last]},
                                                 {"not": parent[last]}, [[[[parent[last]]]]]]))
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["id", "group", "error", "generation", "extra", "send", "expect",
                                         "version"]))] = draw(hostile)
        if not sc.get("steps") or not isinstance(sc.get("steps"), list):
            break
    return sc


def _run(f: Path, target: str):
    r = CliRunner().invoke(app, ["scenario", "run", str(f), "--target", target])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    out = r.stdout + r.stderr
    assert "Traceback" not in out and r.exit_code in (0, 1, 2), out
    lines = r.stdout.splitlines()
    if r.exit_code == 2:
        errors = [ln for ln in lines if ln.startswith(f"[{target}] error")]
        assert len(errors) == 1 and str(f) in errors[0] and len(errors[0]) < 1000, r.stdout
    assert len(lines) == 2, r.stdout                 # one result line (one scenario), one summary line
    return r


@FAST
@given(mutated_scenarios(), st.sampled_from(["spec", "runtime"]), st.sampled_from(["yaml", "json"]))
def test_mutated_scenarios_exit_0_1_or_2_never_a_traceback(tmp_path_factory, sc, target, fmt):
    f = tmp_path_factory.mktemp("fuzz") / f"mutated.{fmt}"
    f.write_text(yaml.safe_dump(sc, allow_unicode=True) if fmt == "yaml" else json.dumps(sc), encoding="utf-8")
    assert _run(f, target).exit_code in (0, 1, 2)


@FAST
@given(st.sampled_from(SOURCES), st.data())
def test_mangled_bytes_exit_0_1_or_2_never_a_traceback(tmp_path_factory, sc, data):
    raw = bytearray(yaml.safe_dump({**sc, "steps": sc["steps"][:3]}).encode())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        op = data.draw(st.sampled_from(["byte", "cut", "dup"]))
        if op == "byte":
            raw[at] = data.draw(st.integers(0, 255))
        elif op == "cut":
            del raw[at:at + data.draw(st.integers(1, 20))]
        else:
            raw[at:at] = raw[at:at + data.draw(st.integers(1, 40))]
        if not raw:
            raw = bytearray(b"x")
    f = tmp_path_factory.mktemp("fuzz") / "mangled.yaml"
    f.write_bytes(bytes(raw))
    assert _run(f, "runtime").exit_code in (0, 1, 2)


# ---------------------------------------------------------------------- GroupCoordinator.send

anything = st.recursive(
    scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                     st.dictionaries(st.one_of(st.text(max_size=4),
                                                               st.sampled_from(["t-0", "name", "member", "instance",
                                                                                "metadata"])), inner, max_size=3)),
    max_leaves=8)
plausible = {
    "group": st.sampled_from(["g", "", None, "h"]), "member": st.sampled_from(["", None, "m", "x"]),
    "instance": st.sampled_from([None, "i", "j"]), "version": st.integers(-1, 10),
    "session_timeout_ms": st.one_of(st.integers(-2**31, 2**31 - 1), st.integers(0, 20_000)),
    "rebalance_timeout_ms": st.one_of(st.integers(-2**31, 2**31 - 1), st.integers(-10, 20_000)),
    "generation": st.one_of(st.integers(-2**31, 2**31 - 1), st.integers(-2, 4)),
    "offsets": st.dictionaries(st.sampled_from(["t-0", "t-1", "t-2147483647"]), st.integers(-2**63, 2**63 - 1),
                               max_size=2),
    "protocols": st.lists(st.sampled_from(["range", "roundrobin"]), max_size=2),
    "protocol_type": st.sampled_from(["consumer", "", None]), "protocol": st.sampled_from(["range", None]),
    "groups": st.lists(st.sampled_from(["g", "", None, "h"]), max_size=3),
    "partitions": st.one_of(st.none(), st.lists(st.sampled_from(["t-0", "t-5"]))),
    "members": st.lists(st.fixed_dictionaries({"member": st.sampled_from(["", None, "x"])},
                                              optional={"instance": st.sampled_from([None, "i"])}), max_size=2),
    "assignments": st.dictionaries(st.sampled_from(["x", "m"]), st.lists(st.sampled_from(["t-0", "t-1"]))),
    "require_known_member_id": st.booleans(),
}


def _request(api: str):
    fields, required = API_FIELDS[api]

    def value(name):
        return st.one_of(plausible[name], plausible[name], plausible[name], anything) if name in plausible \
            else anything
    return st.fixed_dictionaries({f: value(f) for f in required},
                                 optional={f: value(f) for f in fields if f not in required})


requests = st.sampled_from(APIS).flatmap(lambda api: st.tuples(st.just(api), st.one_of(_request(api), _request(api),
                                                                                       anything)))


@FAST
@given(st.lists(st.one_of(requests, st.tuples(st.just("advance"), st.integers(0, 10**7))), max_size=20),
       st.booleans())
def test_send_answers_anything_with_a_response_or_invalid_request(seq, debug):
    c = GroupCoordinator({"group.min.session.timeout.ms": 10, "group.initial.rebalance.delay.ms": 0},
                         lifecycle=debug, debug=debug)
    issued = []
    for api, req in seq:
        if api == "advance":
            c.advance(req)
            continue
        if isinstance(req, dict) and req.get("member") == "x" and issued:
            req = {**req, "member": issued[-1]}
        try:
            resp = c.send(api, req)
        except InvalidRequest as e:
            assert len(str(e)) < 500
            continue
        if resp is None:
            continue
        errors = resp.get("errors")
        errors = list(errors.values()) if isinstance(errors, dict) else errors or []
        assert all(e in ERRORS for e in [resp.get("error", "NONE"), *errors])
        if isinstance(resp.get("member"), str) and resp["member"]:
            issued.append(resp["member"])


# mappings with the fields' own keys, some missing, some extra, of any values: where a record's check can go wrong
near_records = st.dictionaries(st.sampled_from(["name", "metadata", "member", "instance", "reason", "x"]),
                               st.one_of(st.sampled_from(["range", "", None]), scalars), max_size=4)
near = st.recursive(st.one_of(scalars, near_records), lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["t-0", "m", "t-x"]), inner, max_size=2)),
    max_leaves=6)


@FAST
@given(st.sampled_from(sorted(FIELDS)).flatmap(
    lambda name: st.tuples(st.just(name), st.one_of(plausible.get(name, anything), anything, near))))
def test_a_fields_quick_check_agrees_with_its_problem(field):
    """Shape.ok (the runtime's check of every request) passes exactly the values `problem` finds nothing wrong in."""
    name, value = field
    assert FIELDS[name].ok(value) == (FIELDS[name].problem(value, name) is None)
