"""Decoding requests: which fields each API has, and the shape of each field.

A request is a dict of the scenario format's request fields.  A field of
the wrong type or outside what Kafka's wire format can carry (a 2**70
generation: Kafka's is an INT32; a version Kafka 3.9 does not define for the
API) is a request Kafka could not even decode: it is rejected here with
`InvalidRequest`, naming the field, before the coordinator sees it.  Values
that Kafka can decode but that are out of range for the protocol (a negative
session timeout, a generation from the future) are the protocol's business
and get Kafka's error codes from the table.

This is the one declaration of request fields: the runtime coordinator
checks every request with `check`, and the scenario loader checks each
`send` step with it too (passing `forms` so that `$name` variables are
accepted where a value goes).  `Shape` and its kinds also describe the
response and snapshot fields the loader checks.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Iterable

from groupspec.spec.kafka import (ACCEPTED_VERSIONS, APIS, INT16_MAX, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN,
                                  brief)

PARTITION = re.compile(r"^.+-(0|[1-9][0-9]{0,9})$")


class InvalidRequest(ValueError):
    """A request field has a type or shape no Kafka request could have."""


# A hook for values that stand for others (the scenario format's `$name`,
# `{bind: ..}`, `{any_of: ..}`, `{not: ..}`): given a value, its shape and
# where it is, it answers None (not such a value: check the shape), "" (fine)
# or what is wrong with it.
Forms = Callable[[Any, "Shape", str], "str | None"]


def no_forms(value: Any, shape: "Shape", path: str) -> str | None:
    return None


class Shape:
    """What a value must look like; `problem` says what is wrong with one (None: nothing)."""

    def __init__(self, what: str):
        self.what = what

    def problem(self, value: Any, path: str, forms: Forms = no_forms) -> str | None:
        said = forms(value, self, path)
        if said is not None:
            return said or None
        return self._problem(value, path, forms)

    def _problem(self, value: Any, path: str, forms: Forms) -> str | None:
        raise NotImplementedError

    def ok(self, value: Any) -> bool:
        """`problem(value, path)` is None (no forms): the runtime's check of every request, which builds
        no path and no message for a value that has none to tell."""
        raise NotImplementedError

    def bad(self, value: Any, path: str) -> str:
        return f"'{path}' must be {self.what}, got {brief(value)}"


class Scalar(Shape):
    def __init__(self, what: str, test: Callable[[Any], bool], unknown: str = ""):
        super().__init__(what)
        self.test, self.unknown = test, unknown
        self.ok = test

    def _problem(self, value, path, forms):
        if self.test(value):
            return None
        if self.unknown and isinstance(value, str):     # a name from a fixed list, misspelt
            return f"'{path}': unknown {self.unknown} {brief(value)} ({self.what})"
        if isinstance(value, bool) and self.test("x"):  # a string wanted: YAML 1.1 turned `no`, `on`... into a bool
            return f"{self.bad(value, path)} (YAML reads unquoted yes, no, on, off as true or false: quote it)"
        return self.bad(value, path)


class ListOf(Shape):
    def __init__(self, what: str, item: Shape):
        super().__init__(what)
        self.item = item

    def _problem(self, value, path, forms):
        if not isinstance(value, list):
            return self.bad(value, path)
        return _first(self.item.problem(x, f"{path}[{i}]", forms) for i, x in enumerate(value))

    def ok(self, value):
        return isinstance(value, list) and all(map(self.item.ok, value))


class MapOf(Shape):
    def __init__(self, what: str, key: Shape, value: Shape):
        super().__init__(what)
        self.key, self.value = key, value

    def _problem(self, value, path, forms):
        if not isinstance(value, dict):
            return self.bad(value, path)
        for k, v in value.items():
            p = self.key.problem(k, path, forms)
            if p:
                return f"keys of {p}"
            p = self.value.problem(v, f"{path}.{_key(k)}", forms)
            if p:
                return p
        return None

    def ok(self, value):
        return isinstance(value, dict) and all(self.key.ok(k) and self.value.ok(v) for k, v in value.items())


class Record(Shape):
    """A mapping with named fields, each of its own shape."""

    def __init__(self, what: str, fields: dict[str, Shape], required: Iterable[str] = ()):
        super().__init__(what)
        self.fields, self.required = fields, tuple(required)

    def _problem(self, value, path, forms):
        if not isinstance(value, dict):
            return self.bad(value, path)
        for k in value:
            if k not in self.fields:
                return f"'{path}' has no field {brief(k)}; allowed: {', '.join(self.fields)}"
        for k in self.required:
            if k not in value:
                return f"'{path}' needs '{k}'"
        return _first(self.fields[k].problem(v, f"{path}.{k}", forms) for k, v in value.items())

    def ok(self, value):
        fields = self.fields
        return (isinstance(value, dict) and all(k in fields for k in value) and all(k in value for k in self.required)
                and all(fields[k].ok(v) for k, v in value.items()))


class OneOf(Shape):
    def __init__(self, what: str, *shapes: Shape):
        super().__init__(what)
        self.shapes = shapes

    def _problem(self, value, path, forms):
        if any(s.problem(value, path, forms) is None for s in self.shapes):
            return None
        return self.bad(value, path)

    def ok(self, value):
        return any(s.ok(value) for s in self.shapes)


def _first(problems: Iterable[str | None]) -> str | None:
    return next((p for p in problems if p), None)


def _key(k: Any) -> str:
    return k if isinstance(k, str) and len(k) <= 40 and k.isprintable() else brief(k, 40)


def _int_in(lo: int, hi: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def _partition(v: Any) -> bool:
    return isinstance(v, str) and bool(PARTITION.match(v)) and int(v.rsplit("-", 1)[1]) <= INT32_MAX


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _opt_str(v: Any) -> bool:
    return v is None or isinstance(v, str)


STRING = Scalar("a string", _str)
OPT_STRING = Scalar("a string or null", _opt_str)
INT32 = Scalar(f"an integer from {INT32_MIN} to {INT32_MAX} (Kafka's INT32)", _int_in(INT32_MIN, INT32_MAX))
INT64 = Scalar(f"an integer from {INT64_MIN} to {INT64_MAX} (Kafka's INT64)", _int_in(INT64_MIN, INT64_MAX))
BOOL = Scalar("true or false", lambda v: isinstance(v, bool))
PARTITION_NAME = Scalar("a partition (topic-N) with N from 0 to 2147483647", _partition)
PARTITIONS = ListOf("a list of partitions (topic-N)", PARTITION_NAME)

FIELDS: dict[str, Shape] = {
    "group": OPT_STRING,
    "member": Scalar("a string (\"\" for none)", _opt_str),
    "instance": OPT_STRING,
    "client": OPT_STRING,
    "host": OPT_STRING,
    "reason": OPT_STRING,
    "session_timeout_ms": INT32,
    "rebalance_timeout_ms": INT32,
    "protocol_type": OPT_STRING,
    "protocol": OPT_STRING,
    "protocols": ListOf("a list of protocol names or {name, metadata}",
                        OneOf("a protocol name or {name: <string>, metadata: <string>}", STRING,
                              Record("{name, metadata}", {"name": STRING, "metadata": STRING}, ["name"]))),
    "require_known_member_id": BOOL,
    "version": Scalar(f"an integer from 0 to {INT16_MAX} (Kafka's INT16)", _int_in(0, INT16_MAX)),
    "generation": INT32,
    "assignments": MapOf("a mapping of member id to partitions (topic-N)", STRING, PARTITIONS),
    "members": ListOf("a list of {member, instance}",
                      Record("{member, instance, reason}", {"member": OPT_STRING, "instance": OPT_STRING,
                                                            "reason": OPT_STRING})),
    "offsets": MapOf("a mapping of partition (topic-N) to an integer offset", PARTITION_NAME, INT64),
    "partitions": OneOf("a list of partitions (topic-N), or null for all", Scalar("null", lambda v: v is None),
                        PARTITIONS),
    "groups": ListOf("a list of group ids", OPT_STRING),
}

# Each API's fields, and those it cannot do without.  client, host and
# version go with every request.
_COMMON = ("version", "client", "host")
API_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "JoinGroup": (("group", "member", "instance", "session_timeout_ms", "rebalance_timeout_ms", "protocol_type",
                   "protocols", "require_known_member_id", "reason"), ("group",)),
    "SyncGroup": (("group", "member", "instance", "generation", "assignments", "protocol_type", "protocol"),
                  ("group",)),
    "Heartbeat": (("group", "member", "instance", "generation"), ("group",)),
    "LeaveGroup": (("group", "members", "member"), ("group",)),
    "OffsetCommit": (("group", "member", "instance", "generation", "offsets"), ("group",)),
    "OffsetFetch": (("group", "partitions"), ("group",)),
    "DescribeGroups": (("groups",), ()),
    "ListGroups": ((), ()),
    "DeleteGroups": (("groups",), ()),
}
API_FIELDS = {api: (fields + _COMMON, required) for api, (fields, required) in API_FIELDS.items()}
assert set(API_FIELDS) == set(APIS) and all(f in FIELDS for fs, _ in API_FIELDS.values() for f in fs)


def check(api: Any, req: Any, forms: Forms = no_forms) -> None:
    """Raise InvalidRequest unless `req` can be a Kafka `api` request (fields, their shapes, the version)."""
    if not isinstance(api, str) or api not in API_FIELDS:
        raise InvalidRequest(f"unknown API {brief(api)}; known: {', '.join(APIS)}")
    if not isinstance(req, dict):
        raise InvalidRequest(f"{api}: a request is a mapping of fields, got {brief(req)}")
    allowed, required = API_FIELDS[api]
    for name in req:
        if name not in allowed:
            raise InvalidRequest(f"{api} has no field {brief(name)}; its fields: {', '.join(allowed)}")
    for name in required:
        if name not in req:
            raise InvalidRequest(f"{api} needs a '{name}'")
    for name, value in req.items():
        shape = FIELDS[name]
        if forms is no_forms and shape.ok(value):
            continue
        problem = shape.problem(value, name, forms)
        if problem:
            raise InvalidRequest(f"{api}: {problem}")
    version = req.get("version")
    lo, hi = ACCEPTED_VERSIONS[api]
    if isinstance(version, int) and not lo <= version <= hi:
        raise InvalidRequest(f"{api}: 'version' {version} is not one Kafka 3.9 defines for {api} "
                             f"({lo} to {hi}); leave it out for the newest")
