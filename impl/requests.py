"""Decoding requests: the shapes of the fields each API accepts.

A request is a dict of the scenario format's request fields.  A field of
the wrong type is a request Kafka could not even decode: it is rejected here
with `InvalidRequest`, naming the field, before the coordinator sees it.
Values of the right type but out of range (a negative session timeout, a
generation from the future) are the protocol's business and get Kafka's
error codes from the table.
"""
from __future__ import annotations

import re
from typing import Any

PARTITION = re.compile(r"^.+-(0|[1-9][0-9]*)$")


class InvalidRequest(ValueError):
    """A request field has a type or shape no Kafka request could have."""


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _opt_str(v: Any) -> bool:
    return v is None or isinstance(v, str)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _partition(v: Any) -> bool:
    return isinstance(v, str) and bool(PARTITION.match(v))


def _partitions(v: Any) -> bool:
    return isinstance(v, list) and all(_partition(p) for p in v)


def _protocols(v: Any) -> bool:
    return isinstance(v, list) and all(
        _str(p) or (isinstance(p, dict) and _str(p.get("name")) and set(p) <= {"name", "metadata"}) for p in v)


def _assignments(v: Any) -> bool:
    return isinstance(v, dict) and all(_str(k) and _partitions(ps) for k, ps in v.items())


def _offsets(v: Any) -> bool:
    return isinstance(v, dict) and all(_partition(k) and _int(o) for k, o in v.items())


def _members(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(m, dict) and set(m) <= {"member", "instance", "reason"} and _opt_str(m.get("member"))
        and _opt_str(m.get("instance")) for m in v)


FIELDS = {
    "group": (_opt_str, "a string (or null)"),
    "member": (_opt_str, "a string (\"\" for none)"),
    "instance": (_opt_str, "a string or null"),
    "client": (_opt_str, "a string"),
    "host": (_opt_str, "a string"),
    "reason": (_opt_str, "a string"),
    "session_timeout_ms": (_int, "an integer"),
    "rebalance_timeout_ms": (_int, "an integer"),
    "protocol_type": (_opt_str, "a string"),
    "protocol": (_opt_str, "a string"),
    "protocols": (_protocols, "a list of protocol names or {name, metadata}"),
    "require_known_member_id": (lambda v: isinstance(v, bool), "true or false"),
    "version": (_int, "an integer"),
    "generation": (_int, "an integer"),
    "assignments": (_assignments, "a mapping of member id to partitions (topic-N)"),
    "members": (_members, "a list of {member, instance}"),
    "offsets": (_offsets, "a mapping of partition (topic-N) to an integer offset"),
    "partitions": (lambda v: v is None or _partitions(v), "a list of partitions (topic-N)"),
    "groups": (lambda v: isinstance(v, list) and all(_opt_str(g) for g in v), "a list of group ids"),
}


def check(api: str, req: dict) -> None:
    """Raise InvalidRequest if a field of `req` cannot be a field of a Kafka `api` request."""
    if not isinstance(req, dict):
        raise InvalidRequest(f"{api}: a request is a mapping of fields")
    for name, value in req.items():
        spec = FIELDS.get(name)
        if spec is None:
            raise InvalidRequest(f"{api}: unknown field {name!r}")
        ok, what = spec
        if not ok(value):
            raise InvalidRequest(f"{api}: field {name!r} must be {what}, got {value!r}")
