"""Scenario requests and responses as Kafka's own protocol messages, for every Kafka target.

A scenario speaks in the contract's fields (`contracts/scenario-format.md`);
Kafka speaks in its messages, one schema per API and version.  The messages
are kio's entities (kio is generated from Kafka's JSON schemas), so no
message is encoded by hand: the broker target writes them to a socket with
kio, and the in-process targets send them to the JVM driver as the JSON of
Kafka's own `*JsonConverter` classes (`to_json`, `from_json`), which the
driver reads back into Kafka's `*Data` classes at the same version.

A request is built at one version; a field that version cannot carry (a
group.instance.id before JoinGroup v5, `require_known_member_id: false`
with JoinGroup v4 or later for a dynamic member) makes the request one no
client could send: `NotExpressible` says so, and the target reports the
step as one it cannot run.  Versions: `spec/kafka.py` request_version, as
the runtime reads them.

Assignments and protocol metadata are bytes on the wire.  A partition list
goes as Kafka's ConsumerProtocol assignment (version 0), so a real broker
and a real client read it as they would a consumer's; protocol metadata
goes as the scenario's metadata string's bytes (different strings,
different bytes: Kafka compares the bytes to see changed metadata).

The other way (`parse_request`), for a server on Kafka's protocol: a
request message in the contract's fields, the inverse of `request`.
"""
from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import struct
import typing
from functools import lru_cache
from typing import Any

from kio import index as kio_index
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.static.constants import EntityType

from groupspec.spec.handling import require_known_member_id
from groupspec.spec.kafka import ERROR_CODES, request_version

API_KEYS = {"JoinGroup": 11, "SyncGroup": 14, "Heartbeat": 12, "LeaveGroup": 13, "OffsetCommit": 8,
            "OffsetFetch": 9, "DescribeGroups": 15, "ListGroups": 16, "DeleteGroups": 42}
ERROR_NAMES = {code: name for name, code in ERROR_CODES.items()}


class NotExpressible(ValueError):
    """A scenario request no Kafka client could send at its version (the message says which field)."""


# ---------------------------------------------------------------- kio's entities

def defined(api: str, version: int) -> bool:
    """Whether kio has `api`'s request and response at `version`, read from kio's index of its schemas
    without importing them (importing every version of the group APIs took half a second of serve's start)."""
    entities = schema_name_map.get(api_key_map.get(API_KEYS[api], ""), {}).get(version, {})
    return EntityType.request in entities and EntityType.response in entities


@lru_cache(maxsize=None)
def request_class(api: str, version: int) -> type:
    try:
        return kio_index.load_request_schema(API_KEYS[api], version)
    except Exception:      # noqa: BLE001 - kio's lookup errors: a version its schemas do not define
        raise NotExpressible(f"{api} version {version} is not one Kafka's schemas define") from None


@lru_cache(maxsize=None)
def response_class(api: str, version: int) -> type:
    return kio_index.load_response_schema(API_KEYS[api], version)


def _fields(cls: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def _entity_of(tp: Any) -> type | None:
    """The entity class inside a field type (`tuple[Entity, ...]`, `Entity | None`), if any."""
    if dataclasses.is_dataclass(tp):
        return tp
    for a in typing.get_args(tp):
        inner = _entity_of(a)
        if inner is not None:
            return inner
    return None


def build(cls: type, values: dict) -> Any:
    """An entity of `cls` from `values` (kio's field names; nested entities as dicts or lists of dicts):
    every field `values` names must be one of the version's (else NotExpressible), the rest keep the
    schema's defaults."""
    fields = _fields(cls)
    kw = {}
    for name, v in values.items():
        f = fields.get(name)
        if f is None:
            continue
        if v is None and not _nullable(f.type):
            raise NotExpressible(f"{cls.__name__} version {cls.__version__}: {name} cannot be null")
        inner = _entity_of(f.type)
        if inner is not None and v is not None:
            v = tuple(build(inner, x) for x in v) if isinstance(v, (list, tuple)) else build(inner, v)
        elif isinstance(v, list):
            v = tuple(v)
        kw[name] = v
    return cls(**kw)


def _nullable(tp: Any) -> bool:
    return type(None) in typing.get_args(tp)


def needs(cls: type, api: str, version: int, name: str, what: str) -> None:
    if name not in _fields(cls):
        raise NotExpressible(f"{api} version {version} cannot carry {what}")


# ---------------------------------------------------------------- Kafka's JSON form (the JVM driver's)

def _json_name(f: dataclasses.Field) -> str:
    head, *rest = f.name.split("_")
    name = head + "".join(p[:1].upper() + p[1:] for p in rest)
    return name + "Ms" if f.metadata.get("kafka_type", "").startswith("timedelta") else name


def to_json(entity: Any) -> dict:
    """An entity as Kafka's `*JsonConverter.write` writes it: camelCase names, bytes in base64."""
    out = {}
    for f in dataclasses.fields(entity):
        out[_json_name(f)] = _json_value(getattr(entity, f.name))
    return out


def _json_value(v: Any) -> Any:
    if dataclasses.is_dataclass(v):
        return to_json(v)
    if isinstance(v, tuple):
        return [_json_value(x) for x in v]
    if isinstance(v, bytes):
        return base64.b64encode(v).decode("ascii")
    if isinstance(v, datetime.timedelta):
        return int(v / datetime.timedelta(milliseconds=1))
    if isinstance(v, enum.Enum):
        return v.value
    return v


def from_json(cls: type, obj: dict) -> Any:
    """The entity of `cls` from Kafka's JSON form of the same message and version."""
    kw = {}
    for f in dataclasses.fields(cls):
        name = _json_name(f)
        if name not in obj:
            continue
        kw[f.name] = _from_json_value(f.type, f.metadata.get("kafka_type", ""), obj[name])
    return cls(**kw)


def _from_json_value(tp: Any, kafka_type: str, v: Any) -> Any:
    if v is None:
        return None
    inner = _entity_of(tp)
    if inner is not None:
        return tuple(from_json(inner, x) for x in v) if isinstance(v, list) else from_json(inner, v)
    if isinstance(v, list):
        return tuple(_from_json_value(typing.get_args(tp)[0] if typing.get_args(tp) else Any, kafka_type, x)
                     for x in v)
    if kafka_type == "error_code":
        return ErrorCode(v)
    if kafka_type.startswith("timedelta"):
        return datetime.timedelta(milliseconds=v)
    if kafka_type in ("bytes", "records") or _is_bytes(tp):
        return base64.b64decode(v)
    return v


def _is_bytes(tp: Any) -> bool:
    return tp is bytes or bytes in typing.get_args(tp)


# ---------------------------------------------------------------- bytes the coordinator stores and hands out

def _string(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack(">h", len(b)) + b


def encode_assignment(partitions: list[str]) -> bytes:
    """ConsumerProtocol assignment, version 0: the partitions grouped by topic, no user data."""
    by_topic: dict[str, list[int]] = {}
    for p in partitions:
        topic, _, n = p.rpartition("-")
        by_topic.setdefault(topic, []).append(int(n))
    out = struct.pack(">hi", 0, len(by_topic))
    for topic, parts in by_topic.items():
        out += _string(topic) + struct.pack(">i", len(parts)) + b"".join(struct.pack(">i", n) for n in parts)
    return out + struct.pack(">i", -1)


def decode_assignment(data: bytes | None) -> list[str]:
    """The partitions of a ConsumerProtocol assignment (any version: later ones only add fields after);
    no bytes at all is no assignment, as Kafka hands a member the leader left out."""
    if not data:
        return []
    try:
        _version, n = struct.unpack_from(">hi", data, 0)
        at, out = 6, []
        for _ in range(n):
            (ln,) = struct.unpack_from(">h", data, at)
            topic = data[at + 2:at + 2 + ln].decode("utf-8")
            at += 2 + ln
            (k,) = struct.unpack_from(">i", data, at)
            at += 4
            for _ in range(k):
                (p,) = struct.unpack_from(">i", data, at)
                at += 4
                out.append(f"{topic}-{p}")
        return out
    except (struct.error, UnicodeDecodeError):
        raise ValueError(f"an assignment that is not Kafka's ConsumerProtocol format ({len(data)} bytes)") from None


def encode_metadata(protocol_type: str, metadata: str) -> bytes:
    """A protocol's metadata: the scenario's string, as its UTF-8 bytes.  A scenario's metadata says nothing
    of subscriptions, and neither do these bytes to Kafka: for a `consumer` group they are no ConsumerProtocol
    subscription (Kafka's coordinators then know no subscribed topics, as the table does not: they expire a
    Stable group's offsets only when the subscriptions are known, KIP-496); an empty string is no bytes."""
    return metadata.encode("utf-8", "surrogateescape")


# ---------------------------------------------------------------- scenario request -> message

def request(api: str, req: dict) -> tuple[int, Any]:
    """The scenario request `req` of `api` as (version, kio entity); NotExpressible if no client could send it."""
    version = request_version(api, req)
    if api == "JoinGroup":
        _join_expressible(req, version)
    cls = request_class(api, version)
    return version, _BUILD[api](cls, req, api, version)


def _join_expressible(req: dict, version: int) -> None:
    """Kafka derives require_known_member_id from the version: a request that says otherwise has no version."""
    rk, inst = req.get("require_known_member_id"), req.get("instance")
    if rk is not None and rk != require_known_member_id(version, inst):
        raise NotExpressible(f"JoinGroup version {version} {'with' if inst is not None else 'without'} a "
                             f"group.instance.id: Kafka derives require_known_member_id = "
                             f"{str(require_known_member_id(version, inst)).lower()}, the request says "
                             f"{str(rk).lower()}")


def _opt(cls, api, version, values: dict, name: str, value: Any, what: str) -> None:
    """Set an optional field only a newer version has: left out when it holds its default (None)."""
    if value is not None:
        needs(cls, api, version, name, what)
        values[name] = value


def _join(cls, req, api, version):
    ptype = req.get("protocol_type") or ""
    protocols = [{"name": p, "metadata": encode_metadata(ptype, "")} if isinstance(p, str) else
                 {"name": p["name"], "metadata": encode_metadata(ptype, str(p.get("metadata", "")))}
                 for p in req.get("protocols") or []]
    session = req.get("session_timeout_ms", 0)
    values = {"group_id": req.get("group"), "session_timeout": _ms(session),
              # a scenario without a rebalance timeout means the session timeout, as JoinGroup v0 does
              "rebalance_timeout": _ms(req.get("rebalance_timeout_ms", session)),
              "member_id": req.get("member") or "", "protocol_type": ptype, "protocols": protocols}
    _opt(cls, api, version, values, "group_instance_id", req.get("instance"), "a group.instance.id (static member)")
    _opt(cls, api, version, values, "reason", req.get("reason"), "a reason")
    return build(cls, values)


def _sync(cls, req, api, version):
    values = {"group_id": req.get("group"), "generation_id": req.get("generation", -1),
              "member_id": req.get("member") or "",
              "assignments": [{"member_id": m, "assignment": encode_assignment(ps)}
                              for m, ps in (req.get("assignments") or {}).items()]}
    _opt(cls, api, version, values, "group_instance_id", req.get("instance"), "a group.instance.id (static member)")
    _opt(cls, api, version, values, "protocol_type", req.get("protocol_type"), "a protocol type")
    _opt(cls, api, version, values, "protocol_name", req.get("protocol"), "a protocol name")
    return build(cls, values)


def _heartbeat(cls, req, api, version):
    values = {"group_id": req.get("group"), "generation_id": req.get("generation", -1),
              "member_id": req.get("member") or ""}
    _opt(cls, api, version, values, "group_instance_id", req.get("instance"), "a group.instance.id (static member)")
    return build(cls, values)


def _leave(cls, req, api, version):
    members = req.get("members")
    if members is None:
        members = [{"member": req.get("member") or ""}]
    if "members" not in _fields(cls):     # v0-2: one member, no group.instance.id
        if len(members) != 1 or members[0].get("instance") is not None:
            raise NotExpressible(f"LeaveGroup version {version} carries one member id and no group.instance.id")
        return build(cls, {"group_id": req.get("group"), "member_id": members[0].get("member") or ""})
    out = []
    for m in members:
        item = {"member_id": m.get("member") or "", "group_instance_id": m.get("instance")}
        if m.get("reason") is not None:
            item["reason"] = m["reason"]
        out.append(item)
    return build(cls, {"group_id": req.get("group"), "members": out})


def _by_topic(partitions) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for p in partitions:
        topic, _, n = p.rpartition("-")
        out.setdefault(topic, []).append(int(n))
    return out


def _commit(cls, req, api, version):
    offsets = req.get("offsets") or {}
    topics = [{"name": t, "partitions": [{"partition_index": n, "committed_offset": offsets[f"{t}-{n}"],
                                          "committed_metadata": ""} for n in ns]}
              for t, ns in _by_topic(offsets).items()]
    values = {"group_id": req.get("group"), "generation_id_or_member_epoch": req.get("generation", -1),
              "member_id": req.get("member") or "", "topics": topics}
    _opt(cls, api, version, values, "group_instance_id", req.get("instance"), "a group.instance.id (static member)")
    return build(cls, values)


def _fetch(cls, req, api, version):
    parts = req.get("partitions")
    topics = None if parts is None else [{"name": t, "partition_indexes": ns} for t, ns in _by_topic(parts).items()]
    if "groups" in _fields(cls):      # v8+: a batch of groups (of one here)
        return build(cls, {"groups": [{"group_id": req.get("group"), "topics": topics}]})
    if topics is None and version < 2:
        raise NotExpressible(f"OffsetFetch version {version} cannot ask for every partition (version 2 and later)")
    return build(cls, {"group_id": req.get("group"), "topics": topics})


def _describe(cls, req, api, version):
    values = {"groups": list(req.get("groups") or [])}
    if "include_authorized_operations" in _fields(cls):
        values["include_authorized_operations"] = False
    return build(cls, values)


def _list(cls, req, api, version):
    return build(cls, {})


def _delete(cls, req, api, version):
    return build(cls, {"groups_names": list(req.get("groups") or [])})


def _ms(v: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=v)


_BUILD = {"JoinGroup": _join, "SyncGroup": _sync, "Heartbeat": _heartbeat, "LeaveGroup": _leave,
          "OffsetCommit": _commit, "OffsetFetch": _fetch, "DescribeGroups": _describe, "ListGroups": _list,
          "DeleteGroups": _delete}


# ---------------------------------------------------------------- message -> scenario request (a server's side)

def decode_metadata(data: bytes) -> str:
    """A protocol's metadata bytes as the scenario's string: UTF-8, and any byte that is not UTF-8 kept as a
    surrogate escape, so that different bytes stay different strings (Kafka compares the bytes) and
    `encode_metadata`'s strings read back as they were written."""
    return data.decode("utf-8", "surrogateescape")


def parse_request(api: str, msg: Any) -> dict:
    """A request message (kio entity) of `api` in the contract's request fields, with its `version`: the
    inverse of `request` for every request that builds."""
    return {**_PARSE[api](msg), "version": msg.__version__}


def _instance(m, out: dict) -> dict:
    if getattr(m, "group_instance_id", None) is not None:
        out["instance"] = m.group_instance_id
    return out


def _join_request(m) -> dict:
    protocols = [p.name if not p.metadata else {"name": p.name, "metadata": decode_metadata(p.metadata)}
                 for p in m.protocols]
    session = int(m.session_timeout / datetime.timedelta(milliseconds=1))
    rebalance = getattr(m, "rebalance_timeout", None)
    out = {"group": m.group_id, "member": m.member_id, "session_timeout_ms": session,
           "rebalance_timeout_ms": session if rebalance is None else int(rebalance / datetime.timedelta(milliseconds=1)),
           "protocol_type": m.protocol_type, "protocols": protocols}
    if getattr(m, "reason", None) is not None:
        out["reason"] = m.reason
    return _instance(m, out)


def _sync_request(m) -> dict:
    out = {"group": m.group_id, "member": m.member_id, "generation": m.generation_id,
           "assignments": {a.member_id: decode_assignment(a.assignment) for a in m.assignments}}
    if getattr(m, "protocol_type", None) is not None:
        out["protocol_type"] = m.protocol_type
    if getattr(m, "protocol_name", None) is not None:
        out["protocol"] = m.protocol_name
    return _instance(m, out)


def _heartbeat_request(m) -> dict:
    return _instance(m, {"group": m.group_id, "member": m.member_id, "generation": m.generation_id})


def _leave_request(m) -> dict:
    if not hasattr(m, "members"):
        return {"group": m.group_id, "member": m.member_id}
    members = [{"member": x.member_id, **({"instance": x.group_instance_id} if x.group_instance_id is not None
                                         else {}), **({"reason": x.reason} if getattr(x, "reason", None) else {})}
               for x in m.members]
    return {"group": m.group_id, "members": members}


def _commit_request(m) -> dict:
    return _instance(m, {"group": m.group_id, "member": m.member_id, "generation": m.generation_id_or_member_epoch,
                         "offsets": {f"{t.name}-{p.partition_index}": p.committed_offset
                                     for t in m.topics for p in t.partitions}})


def _fetch_request(m) -> dict:
    if hasattr(m, "groups"):
        if len(m.groups) != 1:
            raise NotExpressible(f"OffsetFetch version {m.__version__} asks for {len(m.groups)} groups; a "
                                 f"scenario's request names one")
        (g,) = m.groups
        group, topics = g.group_id, g.topics
    else:
        group, topics = m.group_id, m.topics
    parts = None if topics is None else [f"{t.name}-{n}" for t in topics for n in t.partition_indexes]
    return {"group": group, "partitions": parts}


_PARSE = {"JoinGroup": _join_request, "SyncGroup": _sync_request, "Heartbeat": _heartbeat_request,
          "LeaveGroup": _leave_request, "OffsetCommit": _commit_request, "OffsetFetch": _fetch_request,
          "DescribeGroups": lambda m: {"groups": list(m.groups)}, "ListGroups": lambda m: {},
          "DeleteGroups": lambda m: {"groups": list(m.groups_names)}}


# ---------------------------------------------------------------- scenario response -> message (a server's side)

def build_response(api: str, version: int, resp: dict, request: dict, details: dict | None = None) -> Any:
    """The contract's response `resp` to `request` (both in the contract's fields) as Kafka's message at
    `version`: the inverse of `response`.  What the contract's response leaves out, a message takes from the
    request (a LeaveGroup's members) or from `details`: group -> member -> what Kafka keeps of the member
    (GroupCoordinator.member_details, with `assignment` bytes for a Stable group's DescribeGroups), which a
    JoinGroup answer gives the leader and a DescribeGroups answer anyone."""
    cls = response_class(api, version)
    return build(cls, {"throttle_time": _ms(0), **_ANSWER[api](resp, request, details or {}, version)})


def _code(name: str | None) -> ErrorCode:
    return ErrorCode(ERROR_CODES[name or "NONE"])


def _join_answer(r: dict, req: dict, details: dict, version: int) -> dict:
    # an error answer selects no protocol: null where the version allows it (7 and later), else Kafka's default ""
    unset = None if version >= 7 else ""
    mine = details.get(req.get("group"), {})
    return {"error_code": _code(r.get("error")), "generation_id": r.get("generation", -1),
            "protocol_type": r.get("protocol_type", unset), "protocol_name": r.get("protocol") or unset,
            "leader": r.get("leader") or "", "skip_assignment": bool(r.get("skip_assignment", False)),
            "member_id": r.get("member") or "",
            "members": [{"member_id": m, "group_instance_id": mine.get(m, {}).get("instance"),
                         "metadata": encode_metadata("", mine.get(m, {}).get("metadata", ""))}
                        for m in r.get("members") or []]}


def _sync_answer(r: dict, req: dict, details: dict, version: int) -> dict:
    return {"error_code": _code(r.get("error")), "protocol_type": r.get("protocol_type"),
            "protocol_name": r.get("protocol"),
            "assignment": encode_assignment(r["assignment"]) if r.get("assignment") else b""}


def _leave_answer(r: dict, req: dict, details: dict, version: int) -> dict:
    members = req.get("members") or []
    return {"error_code": _code(r.get("error")),
            "members": [{"member_id": m.get("member") or "", "group_instance_id": m.get("instance"),
                         "error_code": _code(e)} for m, e in zip(members, r.get("errors") or [])]}


def _commit_answer(r: dict, req: dict, details: dict, version: int) -> dict:
    errors = r.get("errors") or {}
    return {"topics": [{"name": t, "partitions": [{"partition_index": n, "error_code": _code(errors[f"{t}-{n}"])}
                                                   for n in ns]} for t, ns in _by_topic(errors).items()]}


def _fetch_answer(r: dict, req: dict, details: dict, version: int) -> dict:
    offsets, errors = r.get("offsets") or {}, r.get("errors") or {}
    topics = [{"name": t, "partitions": [
        {"partition_index": n, "committed_offset": offsets[f"{t}-{n}"], "committed_leader_epoch": -1,
         "metadata": "", "error_code": _code(errors.get(f"{t}-{n}"))} for n in ns]}
        for t, ns in _by_topic(offsets).items()]
    if version >= 8:
        return {"groups": [{"group_id": req.get("group"), "topics": topics, "error_code": _code(r.get("error"))}]}
    return {"topics": topics, "error_code": _code(r.get("error"))}


def _describe_answer(r: dict, req: dict, details: dict, version: int) -> dict:
    return {"groups": [{"error_code": _code(g.get("error")), "group_id": g.get("group"),
                        "group_state": g.get("state") or "", "protocol_type": g.get("protocol_type") or "",
                        "protocol_data": g.get("protocol") or "", "authorized_operations": -2147483648,
                        "members": [_member_summary(m, details.get(g.get("group"), {}).get(m, {}))
                                    for m in g.get("members") or []]} for g in r.get("groups") or []]}


def _member_summary(member: str, d: dict) -> dict:
    """Kafka's MemberSummary: metadata and assignment only where `d` has them (a Stable group's members)."""
    return {"member_id": member, "group_instance_id": d.get("instance"), "client_id": d.get("client", ""),
            "client_host": d.get("host", ""), "member_metadata": encode_metadata("", d["metadata"]) if "assignment" in d
            else b"", "member_assignment": d.get("assignment", b"")}


def _list_answer(r: dict, req: dict, details: dict, version: int) -> dict:
    return {"error_code": _code(r.get("error")),
            "groups": [{"group_id": g.get("group"), "protocol_type": g.get("protocol_type") or "",
                        "group_state": g.get("state") or "", "group_type": "classic"} for g in r.get("groups") or []]}


_ANSWER = {"JoinGroup": _join_answer, "SyncGroup": _sync_answer,
           "Heartbeat": lambda r, req, md, v: {"error_code": _code(r.get("error"))},
           "LeaveGroup": _leave_answer, "OffsetCommit": _commit_answer, "OffsetFetch": _fetch_answer,
           "DescribeGroups": _describe_answer, "ListGroups": _list_answer,
           "DeleteGroups": lambda r, req, md, v: {"results": [{"group_id": g, "error_code": _code(e)}
                                                             for g, e in (r.get("errors") or {}).items()]}}


def error_answer(api: str, request: dict, error: str) -> dict:
    """The contract's response to `request` that says only `error`, everywhere the response has an error: what
    Kafka's request classes give as their error response (getErrorResponse), for what it did not expect."""
    if api == "OffsetCommit":
        return {"errors": {p: error for p in request.get("offsets") or {}}}
    if api == "DescribeGroups":
        return {"groups": [{"group": g, "error": error} for g in request.get("groups") or []]}
    if api == "DeleteGroups":
        return {"errors": {g: error for g in request.get("groups") or []}}
    if api == "LeaveGroup":
        return {"error": error, "errors": [error for _ in request.get("members") or []]}
    return {"error": error}


# ---------------------------------------------------------------- message -> scenario response

def error_name(code: Any) -> str:
    code = code.value if isinstance(code, enum.Enum) else int(code)
    return ERROR_NAMES.get(code) or ErrorCode(code).name.upper()


def response(api: str, msg: Any) -> dict:
    """A response message (kio entity) in the contract's response fields: those its version carries."""
    return _READ[api](msg)


def _carried(m, **fields: str) -> dict:
    """The response fields (scenario name: message field) the message's version carries; the others are
    left out, not given as null: a response of that version says nothing about them."""
    return {k: getattr(m, f) for k, f in fields.items() if hasattr(m, f)}


def _join_response(m) -> dict:
    return {"error": error_name(m.error_code), "member": m.member_id, "generation": m.generation_id,
            "leader": m.leader, "protocol": m.protocol_name, "members": [x.member_id for x in m.members],
            **_carried(m, protocol_type="protocol_type", skip_assignment="skip_assignment")}


def _sync_response(m) -> dict:
    return {"error": error_name(m.error_code), "assignment": decode_assignment(m.assignment),
            **_carried(m, protocol_type="protocol_type", protocol="protocol_name")}


def _heartbeat_response(m) -> dict:
    return {"error": error_name(m.error_code)}


def _leave_response(m) -> dict:
    out = {"error": error_name(m.error_code)}
    if hasattr(m, "members"):
        out["errors"] = [error_name(x.error_code) for x in m.members]
    return out


def _commit_response(m) -> dict:
    return {"errors": {f"{t.name}-{p.partition_index}": error_name(p.error_code)
                       for t in m.topics for p in t.partitions}}


def _fetch_response(m) -> dict:
    if hasattr(m, "groups"):
        (g,) = m.groups
        error, topics = g.error_code, g.topics
    else:
        error, topics = getattr(m, "error_code", ErrorCode.none), m.topics
    offsets, errors = {}, {}
    for t in topics:
        for p in t.partitions:
            offsets[f"{t.name}-{p.partition_index}"] = p.committed_offset
            errors[f"{t.name}-{p.partition_index}"] = error_name(p.error_code)
    out = {"error": error_name(error), "offsets": offsets}
    if any(e != "NONE" for e in errors.values()):
        out["errors"] = errors
    return out


def _describe_response(m) -> dict:
    return {"error": "NONE", "groups": [
        {"group": g.group_id, "error": error_name(g.error_code), "state": g.group_state,
         "protocol_type": g.protocol_type, "protocol": g.protocol_data, "members": [x.member_id for x in g.members]}
        for g in m.groups]}


def _list_response(m) -> dict:
    return {"error": error_name(m.error_code), "groups": [
        {"group": g.group_id, "protocol_type": g.protocol_type,
         **({"state": g.group_state} if hasattr(g, "group_state") else {})} for g in m.groups]}


def _delete_response(m) -> dict:
    return {"error": "NONE", "errors": {r.group_id: error_name(r.error_code) for r in m.results}}


_READ = {"JoinGroup": _join_response, "SyncGroup": _sync_response, "Heartbeat": _heartbeat_response,
         "LeaveGroup": _leave_response, "OffsetCommit": _commit_response, "OffsetFetch": _fetch_response,
         "DescribeGroups": _describe_response, "ListGroups": _list_response, "DeleteGroups": _delete_response}
