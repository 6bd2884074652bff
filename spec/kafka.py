"""Kafka's own names: error codes, config keys with their defaults and checks, API versions.

Users see these names everywhere (DESIGN.md §4); numeric codes appear in
machine output.  Codes are those of `org.apache.kafka.common.protocol.Errors`.
Also here, because every layer needs it and this module imports nothing:
`brief`, how an error message shows a value a user gave.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

INT16_MAX = 2**15 - 1
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1

ERROR_CODES: dict[str, int] = {
    "UNKNOWN_SERVER_ERROR": -1,
    "NONE": 0,
    "OFFSET_OUT_OF_RANGE": 1,
    "CORRUPT_MESSAGE": 2,
    "UNKNOWN_TOPIC_OR_PARTITION": 3,
    "INVALID_FETCH_SIZE": 4,
    "LEADER_NOT_AVAILABLE": 5,
    "NOT_LEADER_OR_FOLLOWER": 6,
    "REQUEST_TIMED_OUT": 7,
    "MESSAGE_TOO_LARGE": 10,
    "OFFSET_METADATA_TOO_LARGE": 12,
    "NETWORK_EXCEPTION": 13,
    "COORDINATOR_LOAD_IN_PROGRESS": 14,
    "COORDINATOR_NOT_AVAILABLE": 15,
    "NOT_COORDINATOR": 16,
    "INVALID_TOPIC_EXCEPTION": 17,
    "RECORD_LIST_TOO_LARGE": 18,
    "NOT_ENOUGH_REPLICAS": 19,
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": 20,
    "INVALID_REQUIRED_ACKS": 21,
    "ILLEGAL_GENERATION": 22,
    "INCONSISTENT_GROUP_PROTOCOL": 23,
    "INVALID_GROUP_ID": 24,
    "UNKNOWN_MEMBER_ID": 25,
    "INVALID_SESSION_TIMEOUT": 26,
    "REBALANCE_IN_PROGRESS": 27,
    "INVALID_COMMIT_OFFSET_SIZE": 28,
    "GROUP_AUTHORIZATION_FAILED": 30,
    "UNSUPPORTED_VERSION": 35,
    "KAFKA_STORAGE_ERROR": 56,
    "NON_EMPTY_GROUP": 68,
    "GROUP_ID_NOT_FOUND": 69,
    "MEMBER_ID_REQUIRED": 79,
    "FENCED_INSTANCE_ID": 82,
    "GROUP_MAX_SIZE_REACHED": 81,
    "UNSTABLE_OFFSET_COMMIT": 88,
    "GROUP_SUBSCRIBED_TO_TOPIC": 86,
}

ERRORS: tuple[str, ...] = tuple(ERROR_CODES)

# Config keys the coordinator reads, with Kafka's defaults (KafkaConfig /
# GroupCoordinatorConfig, Kafka 3.9).  NewMemberJoinTimeoutMs is a constant
# in GroupCoordinator.scala; the scenario contract exposes it as a key.
# group.coordinator.new.enable says which of Kafka's two coordinators serves
# classic groups: false, the Scala GroupCoordinator (Kafka 3.9's default, and
# the implementation the table was written from); true, the Java coordinator
# (GroupCoordinatorService, Kafka 4.0's default) as of Kafka 4.0.2.  Rows where
# the two differ carry both behaviours, each with its source
# (docs/kafka-conformance.md lists them).
NEW_COORDINATOR = "group.coordinator.new.enable"
CONFIG_DEFAULTS: dict[str, int | bool] = {
    "group.min.session.timeout.ms": 6_000,
    "group.max.session.timeout.ms": 1_800_000,
    "group.max.size": 2_147_483_647,
    "group.initial.rebalance.delay.ms": 3_000,
    "group.new.member.join.timeout.ms": 300_000,
    "offsets.retention.minutes": 10_080,
    NEW_COORDINATOR: False,
}
BOOLEAN_KEYS = frozenset({NEW_COORDINATOR})


def coordinator_name(config: Mapping) -> str:
    """Which coordinator a config describes, as documents say it."""
    return ("Kafka 4.0's Java coordinator (group.coordinator.new.enable=true)" if config.get(NEW_COORDINATOR)
            else "Kafka 3.9's Scala GroupCoordinator (group.coordinator.new.enable=false)")


class ConfigError(ValueError):
    """A coordinator config Kafka (or, where stricter, this project) refuses; the message says which key and why."""


# What Kafka itself checks (GroupCoordinatorConfig's ConfigDef, 3.9): every key
# is an INT, so a 32-bit signed integer; group.max.size and
# offsets.retention.minutes are atLeast(1).  Kafka has no check on the session
# timeouts, the initial delay or NewMemberJoinTimeoutMs (a constant); ours are
# stricter there, because a negative timer duration or min > max describes no
# broker anyone runs (every JoinGroup would get INVALID_SESSION_TIMEOUT) and
# would only make a scenario or model check meaningless:
#   (key, lowest allowed, why)
_CONFIG_MINIMUM: tuple[tuple[str, int, str], ...] = (
    ("group.min.session.timeout.ms", 0, "a timeout cannot be negative"),
    ("group.max.session.timeout.ms", 0, "a timeout cannot be negative"),
    ("group.max.size", 1, "Kafka's own check: atLeast(1)"),
    ("group.initial.rebalance.delay.ms", 0, "a delay cannot be negative"),
    ("group.new.member.join.timeout.ms", 0, "a timeout cannot be negative"),
    ("offsets.retention.minutes", 1, "Kafka's own check: atLeast(1)"),
)


def config_problems(config: Any) -> list[str]:
    """Every problem with a coordinator config (Kafka's names; absent keys take Kafka's defaults), one line each.

    The one place config is checked: through `check_config`, the scenario loader
    reports them (exit 2) and GroupCoordinator refuses to start with them.
    """
    if config is None:
        return []
    if not isinstance(config, Mapping):
        return [f"config must be a mapping of Kafka config keys to integers, got {brief(config)}"]
    problems = []
    unknown = [k for k in config if k not in CONFIG_DEFAULTS]
    if unknown:
        more = f" (and {len(unknown) - 3} more)" if len(unknown) > 3 else ""
        problems.append(f"unknown config key {', '.join(brief(k) for k in unknown[:3])}{more}; known: "
                        f"{', '.join(CONFIG_DEFAULTS)}")
    for k, v in config.items():
        if k not in CONFIG_DEFAULTS:
            continue
        if k in BOOLEAN_KEYS:
            if not isinstance(v, bool):
                problems.append(f"config {k} must be true or false, got {brief(v)}")
            continue
        if not isinstance(v, int) or isinstance(v, bool):
            problems.append(f"config {k} must be an integer, got {brief(v)}")
        elif not INT32_MIN <= v <= INT32_MAX:
            problems.append(f"config {k} must fit Kafka's INT type ({INT32_MIN} to {INT32_MAX}), got {brief(v)}")
    if problems:
        return problems
    full = {**CONFIG_DEFAULTS, **config}
    for key, lowest, why in _CONFIG_MINIMUM:
        if full[key] < lowest:
            problems.append(f"config {key} must be at least {lowest} ({why}), got {full[key]}")
    lo, hi = full["group.min.session.timeout.ms"], full["group.max.session.timeout.ms"]
    if lo > hi:
        problems.append(f"config group.min.session.timeout.ms ({lo}) is above group.max.session.timeout.ms ({hi}): "
                        f"no session timeout would be accepted; make the minimum at most the maximum")
    return problems


def check_config(config: Any) -> dict[str, int | bool]:
    """The full config (defaults filled in), or ConfigError naming the problems (the first three)."""
    problems = config_problems(config)
    if problems:
        more = f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
        raise ConfigError("; ".join(problems[:3]) + more)
    return {**CONFIG_DEFAULTS, **(config or {})}


# The request versions Kafka 3.9 defines for each API: "validVersions" in
# clients/src/main/resources/common/message/*Request.json.  Every one of these
# starts at 0 in 3.9 (Kafka 4.0 drops some old ones, KIP-896).  A request of
# another version is one Kafka cannot decode (requests.check refuses it).
OLDEST_VERSION: dict[str, int] = {
    "JoinGroup": 0,
    "SyncGroup": 0,
    "Heartbeat": 0,
    "LeaveGroup": 0,
    "OffsetCommit": 0,
    "OffsetFetch": 0,
    "DescribeGroups": 0,
    "ListGroups": 0,
    "DeleteGroups": 0,
}
# The newest: a request without `version` is of this version.
NEWEST_VERSION: dict[str, int] = {
    "JoinGroup": 9,
    "SyncGroup": 5,
    "Heartbeat": 4,
    "LeaveGroup": 5,
    "OffsetCommit": 9,
    "OffsetFetch": 9,
    "DescribeGroups": 5,
    "ListGroups": 5,
    "DeleteGroups": 2,
}

APIS: tuple[str, ...] = tuple(NEWEST_VERSION)

# The versions a request may have: Kafka 3.9's, and one more for DescribeGroups:
# version 6 (KIP-1043, Kafka 4.0) answers GROUP_ID_NOT_FOUND for an unknown
# group, a row the table models (DESCRIBE_GROUP_ID_NOT_FOUND_SINCE below).
ACCEPTED_VERSIONS: dict[str, tuple[int, int]] = {
    api: (OLDEST_VERSION[api], NEWEST_VERSION[api] + (api == "DescribeGroups")) for api in APIS}

# JoinGroup v4 introduced the MEMBER_ID_REQUIRED round trip (KIP-394); KafkaApis
# derives requireKnownMemberId = version >= 4 && groupInstanceId == null.
JOIN_REQUIRE_KNOWN_MEMBER_ID_SINCE = 4
# DescribeGroups answers GROUP_ID_NOT_FOUND for an unknown group from v6 on.
DESCRIBE_GROUP_ID_NOT_FOUND_SINCE = 6
# SyncGroup must name its protocol type and name from v5 on (KafkaApis: areMandatoryProtocolTypeAndNamePresent).
SYNC_PROTOCOL_MANDATORY_SINCE = 5


def request_version(api: str, req: Mapping) -> int:
    """The version a scenario request is of: its own `version`, else the newest Kafka 3.9 defines for the
    API that carries the request as written.  That is the newest, but for two requests the newest would
    refuse: a JoinGroup with `require_known_member_id: false` from a dynamic member is of version 3 (Kafka
    requires a known member id from version 4, KIP-394), and a SyncGroup naming neither a protocol type nor
    a name of version 4 (version 5 refuses it).  Every interpreter reads versions here: the runtime, and
    the Kafka targets that send the request to Kafka itself."""
    version = req.get("version")
    if version is not None:
        return version
    if api == "JoinGroup" and req.get("require_known_member_id") is False and req.get("instance") is None:
        return JOIN_REQUIRE_KNOWN_MEMBER_ID_SINCE - 1
    if api == "SyncGroup" and req.get("protocol_type") is None and req.get("protocol") is None:
        return SYNC_PROTOCOL_MANDATORY_SINCE - 1
    return NEWEST_VERSION[api]


# ---------------------------------------------------------------- showing what a user gave, in messages

def clip(text: str, limit: int = 200) -> str:
    """Text for one line of a message: control characters (newlines too) and lone surrogates escaped,
    at most about `limit` characters."""
    if len(text) > limit:
        text = text[:max(limit - 3, 1)] + "..."
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def brief(value: Any, limit: int = 60) -> str:
    """A short rendering of a value for an error message: at most about `limit` characters.

    Never the whole repr: values can be huge (alias bombs, 50 MB strings),
    deeply nested, self-containing, or integers too long for str().
    """
    out: list[str] = []
    budget = [limit]

    def emit(s: str) -> bool:
        if budget[0] <= 0:
            return False
        out.append(s[:budget[0]])
        budget[0] -= len(s)
        return budget[0] > 0

    def walk(v: Any, path: tuple) -> bool:
        if isinstance(v, (str, bytes)):
            return emit(repr(v[:budget[0] + 1]))
        if isinstance(v, bool) or v is None or isinstance(v, float):
            return emit(repr(v))
        if isinstance(v, int):
            if v.bit_length() > 128:
                return emit(f"<an integer of {int(v.bit_length() * 0.30103) + 1} digits>")
            return emit(repr(v))
        if isinstance(v, (list, tuple, set, frozenset, dict)):
            if id(v) in path:
                return emit("...")
            path = path + (id(v),)
            opening, closing = ("{", "}") if isinstance(v, (dict, set, frozenset)) else \
                               ("(", ")") if isinstance(v, tuple) else ("[", "]")
            if not emit(opening):
                return False
            for i, item in enumerate(v.items() if isinstance(v, dict) else v):
                if i and not emit(", "):
                    return False
                if isinstance(v, dict):
                    if not (walk(item[0], path) and emit(": ") and walk(item[1], path)):
                        return False
                elif not walk(item, path):
                    return False
            return emit(closing)
        return emit(f"<{type(v).__name__}>" if not hasattr(v, "isoformat") else v.isoformat())

    walk(value, ())
    text = "".join(out)
    return text if budget[0] >= 0 else text[:max(limit - 3, 1)] + "..."


# The errors a log append may fail with: what the replica manager answers a write of the group
# metadata topic, which GMM.storeGroup and maybeConvertOffsetCommitError translate
# (spec/table.py).  The harness and the simulator inject failed writes from this list.
APPEND_FAILURES = ("NOT_LEADER_OR_FOLLOWER", "REQUEST_TIMED_OUT", "MESSAGE_TOO_LARGE", "KAFKA_STORAGE_ERROR",
                   "UNKNOWN_TOPIC_OR_PARTITION", "NOT_ENOUGH_REPLICAS")
