"""Reading scenario files (contracts/scenario-format.md, version 1) and rejecting malformed ones.

Every problem is reported as a `ScenarioError` naming the file, the
scenario, the step (numbered from 1) and what is wrong, so the CLI can
print one line and exit 2.  Nothing a file holds may crash the loader,
hang it or be accepted silently: bytes that are not UTF-8, YAML nested
without end or expanded by aliases beyond reason, a value of the wrong
shape anywhere, a config Kafka would refuse.
"""
from __future__ import annotations

import codecs
import json
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from groupspec.impl.requests import (BOOL, INT32, INT64, OPT_STRING, PARTITION_NAME, PARTITIONS, STRING,
                                     InvalidRequest, ListOf, MapOf, OneOf, Record, Scalar, Shape, no_forms)
from groupspec.impl.requests import check as check_request
from groupspec.spec.kafka import APIS, ERRORS, INT64_MAX, ConfigError, brief, check_config, clip

STEP_KINDS = ("send", "expect", "advance_ms", "storage", "coordinator", "snapshot", "assign")
ACTIONS = ("send", "advance_ms", "storage", "coordinator")     # the kinds of step that do something (the rest look)


def is_action(step: dict) -> bool:
    """A scenario step (its raw mapping) that acts on the coordinator, as opposed to one that observes it."""
    return any(k in step for k in ACTIONS)
COORDINATOR_EVENTS = ("unload", "begin_load", "load", "expire_offsets")
STATE_NAMES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
FORM_KEYS = ("bind", "any_of", "not")

# Limits on what a file may ask of the loader and the runner.
MAX_FILE_BYTES = 64 * 2**20        # a scenario file is read whole
MAX_DEPTH = 64                     # mappings and lists inside each other (the format needs about 10)
MAX_ALIAS_NODES = 100_000          # nodes aliases may add beyond those written out (billion laughs)
MAX_NAME = 200                     # characters in a scenario name, a request id or a variable name
MAX_PARTITIONS = 100_000           # partitions an `assign` step lays out

# What a response field of an `expect` step, or a field of a snapshot, must look like.
ERROR_NAME = Scalar("an error name: Kafka's Errors names, e.g. NONE, ILLEGAL_GENERATION",
                    lambda v: isinstance(v, str) and v in ERRORS, unknown="error name")
MEMBER_IDS = ListOf("a list of member ids", OPT_STRING)
SUMMARY = Record("a group summary {group, error, state, protocol_type, protocol, members}",
                 {"group": OPT_STRING, "error": ERROR_NAME,
                  "state": Scalar(f"a state ({', '.join(STATE_NAMES)}) or \"\"",
                                  lambda v: v in ("", None) or v in STATE_NAMES),
                  "protocol_type": OPT_STRING, "protocol": OPT_STRING, "members": MEMBER_IDS})
ERRORS_BY_API = {
    "LeaveGroup": ListOf("a list of error names, one per member in request order", ERROR_NAME),
    "OffsetCommit": MapOf("a mapping of partition (topic-N) to error name", PARTITION_NAME, ERROR_NAME),
    "DeleteGroups": MapOf("a mapping of group id to error name", OPT_STRING, ERROR_NAME),
}
ANY_ERRORS = OneOf("a list of error names or a mapping to error names", *ERRORS_BY_API.values())
RESPONSE_FIELDS: dict[str, Shape] = {
    "error": ERROR_NAME,
    "member": OPT_STRING,
    "generation": INT32,
    "leader": OPT_STRING,
    "protocol": OPT_STRING,
    "protocol_type": OPT_STRING,
    "members": MEMBER_IDS,
    "assignment": OneOf("a list of partitions (topic-N), or a mapping of member id to partitions", PARTITIONS,
                        MapOf("", STRING, PARTITIONS)),
    "offsets": MapOf("a mapping of partition (topic-N) to offset", PARTITION_NAME, INT64),
    "errors": ANY_ERRORS,
    "groups": ListOf("a list of group summaries {group, error, state, protocol_type, protocol, members}", SUMMARY),
    "skip_assignment": BOOL,
}
SNAPSHOT_FIELDS: dict[str, Shape] = {
    "state": Scalar(f"one of the states {', '.join(STATE_NAMES)}, or null (no such group)",
                    lambda v: v is None or v in STATE_NAMES),
    "generation": INT32,
    "leader": OPT_STRING,
    "protocol": OPT_STRING,
    "protocol_type": OPT_STRING,
    "members": MEMBER_IDS,
    "pending_members": MEMBER_IDS,
    "static_members": MapOf("a mapping of group.instance.id to member id", STRING, OPT_STRING),
    "assignment": MapOf("a mapping of member id to partitions (topic-N)", STRING, PARTITIONS),
    "offsets": MapOf("a mapping of partition (topic-N) to offset", PARTITION_NAME, INT64),
}
GROUP_ID = Scalar("a group id (a string)", lambda v: isinstance(v, str))
ASSIGN_FIELDS = Record("an `assign` step", {
    "assign": Scalar("range or roundrobin", lambda v: v in ("range", "roundrobin")),
    "partitions": MapOf("a mapping of topic to its partition count", STRING,
                        Scalar("a partition count from 0 to 10000", lambda v: type(v) is int and 0 <= v <= 10_000)),
    "subscriptions": MapOf("a mapping of member to the topics it subscribes to", STRING,
                           ListOf("a list of topics", STRING)),
    "result": MapOf("a mapping of member to partitions (topic-N)", STRING, PARTITIONS),
}, required=("partitions", "subscriptions", "result"))


class ScenarioError(ValueError):
    """The scenario file itself is malformed (exit 2, result `error`)."""

    def __init__(self, file: str, message: str, scenario: str | None = None, step: int | None = None):
        self.file, self.scenario, self.step, self.message = file, scenario, step, message
        where = file
        if scenario:
            where += f": scenario {brief(scenario, MAX_NAME)}"
        if step is not None:
            where += f", step {step}"
        super().__init__(f"{where}: {message}")


@dataclass
class Step:
    number: int
    kind: str
    body: dict


@dataclass
class Scenario:
    file: str
    name: str
    about: str = ""
    config: dict = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)


# ---------------------------------------------------------------------- reading the file

def load_file(path: Path) -> list[Scenario]:
    """Parse and check one file (one scenario, or a list under `scenarios:`)."""
    fname = str(path)
    doc = _parse(fname, _decode(fname, _read(fname, Path(path))))
    _measure(fname, doc)
    if isinstance(doc, dict) and "scenarios" in doc:
        extra = [k for k in doc if k != "scenarios"]
        if extra:
            raise ScenarioError(fname, f"a file with `scenarios:` has no other top-level keys; found "
                                       f"{_names(extra)} (move them into a scenario)")
        items = doc["scenarios"]
        if not isinstance(items, list) or not items:
            raise ScenarioError(fname, f"`scenarios:` must be a non-empty list of scenarios, got {brief(items)}")
    elif isinstance(doc, dict):
        items = [doc]
    else:
        raise ScenarioError(fname, "a scenario file is a mapping with `scenario:` and `steps:` "
                                   f"(or a list under `scenarios:`), got {brief(doc)}")
    out, names = [], set()
    for i, item in enumerate(items, 1):
        sc = _scenario(fname, item, i)
        if sc.name in names:
            raise ScenarioError(fname, f"two scenarios are named {brief(sc.name, MAX_NAME)}; names must be unique")
        names.add(sc.name)
        out.append(sc)
    return out


def _read(fname: str, path: Path) -> bytes:
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise ScenarioError(fname, "not a regular file (a folder, device or pipe); give a scenario file "
                                       "(.yaml, .yml, .json) or a folder of them")
        if st.st_size > MAX_FILE_BYTES:
            raise ScenarioError(fname, f"the file is {st.st_size:,} bytes; scenario files are at most "
                                       f"{MAX_FILE_BYTES:,} (split it into several)")
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise ScenarioError(fname, f"cannot read the file ({e.strerror or e}); check the path and its "
                                   f"permissions") from None
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioError(fname, f"the file is over {MAX_FILE_BYTES:,} bytes; split it into several")
    return data


# What YAML allows in a file (YAML 1.1 "printable", as PyYAML's reader checks it).
NOT_PRINTABLE = re.compile("[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010FFFF]")
_WIDE_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
              (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))


def _decode(fname: str, data: bytes) -> str:
    """The file's text: UTF-8 (a UTF-8 byte-order mark is allowed), only characters YAML allows."""
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    hint = next((f" (it starts with a {name} byte-order mark: it is {name})" for bom, name in _WIDE_BOMS
                 if data.startswith(bom)), "")
    try:
        text = data[skip:].decode("utf-8")
    except UnicodeDecodeError as e:
        at = skip + e.start
        raise ScenarioError(fname, f"not UTF-8: byte {data[at]:#04x} at offset {at} cannot start or continue a "
                                   f"UTF-8 character{hint or ' (Latin-1 or another legacy encoding?)'}; "
                                   f"save the file as UTF-8") from None
    bad = NOT_PRINTABLE.search(text)
    if bad:
        at = skip + len(text[:bad.start()].encode("utf-8"))
        char = bad.group()
        why = " (NUL bytes: the file looks like UTF-16 or binary)" if char == "\0" else ""
        raise ScenarioError(fname, f"character U+{ord(char):04X} at byte offset {at} is not allowed in YAML{why}; "
                                   f"save the file as UTF-8 text")
    return text


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):   # libyaml's parser where installed: 50 MB in seconds
    """Safe YAML that also refuses a key given twice in one mapping (YAML keeps the last one silently)
    and turns a value Python cannot build (a 5000-digit integer, 2024-13-45) into an error with its line."""

    _tags: dict[str, str] = {}

    def resolve(self, kind, value, implicit):
        """A plain scalar's tag depends on its text alone: remembered (50 MB files repeat their values)."""
        if kind is not yaml.ScalarNode or not implicit[0]:
            return super().resolve(kind, value, implicit)
        tag = self._tags.get(value)
        if tag is None:
            tag = super().resolve(kind, value, implicit)
            if len(self._tags) < 100_000:
                self._tags[value] = tag
        return tag

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node.start_mark)
                except TypeError:
                    continue               # an unhashable key: the constructor below says so
                if first is not key_node.start_mark:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {brief(key)} is given twice in one mapping (first at line "
                                    f"{first.line + 1}); keep one", key_node.start_mark)
        return super().construct_mapping(node, deep)

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError, TypeError) as e:
            what = f"cannot read this value ({clip(str(e), 100)})"
            if node.tag == "tag:yaml.org,2002:int":
                what = f"an integer of {len(node.value):,} characters is too long (Python reads at most 4300 digits)"
            raise yaml.constructor.ConstructorError(None, None, what, node.start_mark) from None


_JSON_START = re.compile(r"[ \t\r\n]*[\[{]")


def _json_object(pairs: list) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        raise ValueError("a key given twice")
    return d


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _parse(fname: str, text: str) -> Any:
    if _JSON_START.match(text):
        # JSON is YAML, but libyaml (YAML 1.1) refuses some JSON (the escape of a character outside the BMP,
        # "\ud83d\ude00"), and Python's json reads 50 MB in a second; what json refuses, YAML reads or explains
        try:
            return json.loads(text, object_pairs_hook=_json_object, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            pass
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = " ".join(str(getattr(e, "problem", None) or e).split())
        raise ScenarioError(fname, f"not valid YAML{at}: {clip(problem)}") from None
    except RecursionError:
        raise ScenarioError(fname, f"not valid YAML: nested too deeply (more than {MAX_DEPTH} levels "
                                   f"are refused anyway)") from None


def _measure(fname: str, doc: Any) -> None:
    """Refuse a document nested deeper than MAX_DEPTH, containing itself, or that aliases blow up.

    Nodes are counted with aliases expanded, memoized by object (an alias is
    the same object as its anchor), so counting is linear in what is written
    even for a billion laughs.  Iterative: no recursion on deep values.
    """
    containers = (dict, list, tuple)
    if not isinstance(doc, containers):
        return
    expanded: dict[int, int] = {}       # id -> nodes below and including it, aliases expanded
    written = [0]                       # nodes as written out: each container and its entries counted once
    on_path: set[int] = set()

    def enter(v) -> list:
        """A frame: [container, its containers, next one, nodes so far]; a mapping's keys count as nodes."""
        kids = [x for x in (v.values() if isinstance(v, dict) else v) if isinstance(x, containers)]
        entries = 2 * len(v) if isinstance(v, dict) else len(v)
        written[0] += 1 + entries
        on_path.add(id(v))
        return [v, kids, 0, 1 + entries - len(kids)]

    stack = [enter(doc)]
    while stack:
        frame = stack[-1]
        v, kids, i, _ = frame
        if i == len(kids):
            stack.pop()
            on_path.discard(id(v))
            expanded[id(v)] = frame[3]
            if stack:
                stack[-1][3] += frame[3]
            continue
        frame[2] = i + 1
        child = kids[i]
        if id(child) in expanded:
            frame[3] += expanded[id(child)]
        elif id(child) in on_path:
            raise ScenarioError(fname, "a value contains itself (an alias inside its own anchor); "
                                       "YAML values here must be trees")
        elif len(stack) >= MAX_DEPTH:
            raise ScenarioError(fname, f"values are nested more than {MAX_DEPTH} levels deep; "
                                       f"the format needs about 10")
        else:
            stack.append(enter(child))
    if expanded[id(doc)] > written[0] + MAX_ALIAS_NODES:
        raise ScenarioError(fname, f"aliases expand the document to {brief(expanded[id(doc)])} nodes, over "
                                   f"{MAX_ALIAS_NODES:,} more than are written out (an alias bomb?); "
                                   f"write the repeated parts out or alias less")


# ---------------------------------------------------------------------- scenarios and steps

def _names(keys) -> str:
    keys = list(keys)
    more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
    return ", ".join(brief(k, 40) for k in keys[:5]) + more


def _one_line_name(v: Any) -> bool:
    return isinstance(v, str) and 0 < len(v) <= MAX_NAME and v.isprintable()


def _scenario(fname: str, item: Any, index: int) -> Scenario:
    if not isinstance(item, dict):
        raise ScenarioError(fname, f"scenario #{index} is not a mapping with `scenario:` and `steps:`, "
                                   f"got {brief(item)}")
    name = item.get("scenario")
    if name is None:
        raise ScenarioError(fname, f"scenario #{index} has no `scenario:` name")
    if not _one_line_name(name):
        raise ScenarioError(fname, f"scenario #{index}: `scenario:` must be a name of one line, 1 to {MAX_NAME} "
                                   f"characters, got {brief(name)}")
    unknown = [k for k in item if k not in ("scenario", "about", "config", "steps")]
    if unknown:
        raise ScenarioError(fname, f"unknown key(s) {_names(unknown)}; allowed: scenario, about, config, steps", name)
    about = item.get("about")
    if about is not None and not isinstance(about, str):
        raise ScenarioError(fname, f"`about:` is free text (a string), got {brief(about)}", name)
    config = item.get("config")
    try:
        check_config(config)
    except ConfigError as e:
        raise ScenarioError(fname, str(e), name) from None
    steps = item.get("steps")
    if not isinstance(steps, list) or not steps:
        raise ScenarioError(fname, f"`steps:` must be a non-empty list of steps, got {brief(steps)}", name)
    sc = Scenario(fname, name, about or "", dict(config or {}))
    ids: dict[str, str] = {}
    clock = 0      # the scenario's clock: steps move it, never back, so its end is known before running
    for n, raw in enumerate(steps, 1):
        try:
            sc.steps.append(_step(n, raw, ids))
            if "advance_ms" in raw:
                clock += raw["advance_ms"]
                if clock > INT64_MAX:      # the coordinator stamps records with the time: Kafka's INT64 ms
                    raise _StepError(f"the clock would reach {clock:,} ms, beyond Kafka's INT64 time "
                                     f"({INT64_MAX:,} ms); advance less in all")
        except _StepError as e:
            raise ScenarioError(fname, str(e), name, n) from None
    return sc


class _StepError(Exception):
    """What is wrong with one step (the caller adds file, scenario and step number)."""


def _var_only(v: Any, shape: Shape, path: str) -> str | None:
    """Values of requests and of other actions: a `$name` stands for any value."""
    if isinstance(v, str) and v.startswith("$"):
        return "" if _one_line_name(v[1:]) else f"'{path}': `$` must be followed by a variable name"
    if isinstance(v, dict) and len(v) == 1 and next(iter(v)) in FORM_KEYS:
        return (f"'{path}': {{{next(iter(v))}: ...}} is for expect and snapshot steps; an action takes values "
                f"(`$name` for one bound earlier)")
    return None


def _expected(v: Any, shape: Shape, path: str) -> str | None:
    """Values an expect or snapshot step compares: `$name`, `{bind: name}`, `{any_of: [...]}`, `{not: x}`."""
    if isinstance(v, str) and v.startswith("$"):
        return _var_only(v, shape, path)
    if not (isinstance(v, dict) and len(v) == 1 and next(iter(v)) in FORM_KEYS):
        return None
    key, x = next(iter(v.items()))
    if key == "bind":
        if _one_line_name(x) and not x.startswith("$"):
            return ""
        return f"'{path}': {{bind: name}} needs a variable name (without `$`), got {brief(x)}"
    if key == "any_of":
        if not isinstance(x, list) or not x:
            return f"'{path}': {{any_of: [...]}} needs a non-empty list of alternatives, got {brief(x)}"
        return next((p for i, alt in enumerate(x) if (p := shape.problem(alt, f"{path}.any_of[{i}]", _expected))),
                    "")
    return shape.problem(x, f"{path}.not", _expected) or ""


def _check(shape: Shape, value: Any, path: str, forms=_expected) -> None:
    problem = shape.problem(value, path, forms)
    if problem:
        raise _StepError(problem)


def _only(raw: dict, allowed, what: str) -> None:
    unknown = [k for k in raw if k not in allowed]
    if unknown:
        raise _StepError(f"{what} has no field(s) {_names(unknown)}; allowed: {', '.join(allowed)}")


def _step(n: int, raw: Any, ids: dict[str, str]) -> Step:
    if not isinstance(raw, dict):
        raise _StepError(f"a step is a mapping with one of: {', '.join(STEP_KINDS)}; got {brief(raw)}")
    kinds = [k for k in STEP_KINDS if k in raw]
    if len(kinds) != 1:
        raise _StepError(f"a step has exactly one of {', '.join(STEP_KINDS)}; found {_names(kinds or list(raw))}")
    kind = kinds[0]
    _STEPS[kind](raw, ids)
    return Step(n, kind, raw)


def _send(raw: dict, ids: dict[str, str]) -> None:
    api = raw["send"]
    if not isinstance(api, str) or api not in APIS:
        raise _StepError(f"unknown API {brief(api)}; known: {', '.join(APIS)}")
    rid = raw.get("id")
    if not _one_line_name(rid):
        raise _StepError(f"a `send` step needs an `id` naming its request (one line, 1 to {MAX_NAME} characters), "
                         f"got {brief(rid)}")
    if rid in ids:
        raise _StepError(f"request id {brief(rid)} is used twice; give each request its own id")
    try:
        check_request(api, {k: v for k, v in raw.items() if k not in ("send", "id")}, _var_only)
    except InvalidRequest as e:
        raise _StepError(str(e)) from None
    ids[rid] = api


def _expect(raw: dict, ids: dict[str, str]) -> None:
    rid = raw["expect"]
    if not isinstance(rid, str):
        raise _StepError(f"`expect:` takes the id of an earlier request (a string), got {brief(rid)}")
    if rid not in ids:
        raise _StepError(f"`expect: {clip(rid, 60)}` names no earlier request (send one with `id: "
                         f"{clip(rid, 60)}` first)")
    _only(raw, ("expect", "pending", *RESPONSE_FIELDS), "a response")
    if "pending" in raw:
        _check(BOOL, raw["pending"], "pending", forms=no_forms)
        fields = [k for k in raw if k not in ("expect", "pending")]
        if raw["pending"] and fields:
            raise _StepError(f"`pending: true` means no response yet: it cannot go with response fields "
                             f"({_names(fields)}); expect those in a later step")
    shapes = {**RESPONSE_FIELDS, "errors": ERRORS_BY_API.get(ids[rid], ANY_ERRORS)}
    for k, v in raw.items():
        if k in shapes:
            _check(shapes[k], v, k)


def _advance(raw: dict, ids) -> None:
    _only(raw, ("advance_ms",), "an `advance_ms` step")
    v = raw["advance_ms"]
    if type(v) is not int or not 0 <= v <= INT64_MAX:
        raise _StepError(f"advance_ms must be a whole number of milliseconds from 0 to {INT64_MAX}, got {brief(v)}")


_STORAGE = {"hold": BOOL, "complete": ERROR_NAME, "fail_next_append": ERROR_NAME}


def _storage(raw: dict, ids) -> None:
    _only(raw, ("storage",), "a `storage` step")
    v = raw["storage"]
    if not isinstance(v, dict) or len(v) != 1 or next(iter(v)) not in _STORAGE:
        raise _StepError(f"`storage:` is one of {{hold: true|false}}, {{complete: NONE|<ERROR>}}, "
                         f"{{fail_next_append: <ERROR>}}; got {brief(v)}")
    key, val = next(iter(v.items()))
    _check(_STORAGE[key], val, f"storage.{key}", forms=no_forms)


def _coordinator(raw: dict, ids) -> None:
    _only(raw, ("coordinator",), "a `coordinator` step")
    v = raw["coordinator"]
    if isinstance(v, dict) and len(v) == 1 and "mark_dead" in v:
        _check(GROUP_ID, v["mark_dead"], "coordinator.mark_dead", forms=_var_only)
    elif not isinstance(v, str) or v not in COORDINATOR_EVENTS:
        raise _StepError(f"unknown coordinator event {brief(v)}; known: {', '.join(COORDINATOR_EVENTS)}, "
                         f"{{mark_dead: <group>}}")


def _snapshot(raw: dict, ids) -> None:
    _only(raw, ("snapshot", *SNAPSHOT_FIELDS), "a snapshot")
    _check(GROUP_ID, raw["snapshot"], "snapshot", forms=_var_only)
    for k, v in raw.items():
        if k in SNAPSHOT_FIELDS:
            _check(SNAPSHOT_FIELDS[k], v, k)


def _assign(raw: dict, ids) -> None:
    _check(ASSIGN_FIELDS, raw, "assign", forms=no_forms)
    total = sum(raw["partitions"].values())
    if total > MAX_PARTITIONS:
        raise _StepError(f"`assign` lays out {total:,} partitions; at most {MAX_PARTITIONS:,}")


_STEPS = {"send": _send, "expect": _expect, "advance_ms": _advance, "storage": _storage,
          "coordinator": _coordinator, "snapshot": _snapshot, "assign": _assign}
