"""Kafka's own names: error codes, config keys with their defaults, API versions.

Users see these names everywhere (DESIGN.md §4); numeric codes appear in
machine output.  Codes are those of `org.apache.kafka.common.protocol.Errors`.
"""
from __future__ import annotations

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
CONFIG_DEFAULTS: dict[str, int] = {
    "group.min.session.timeout.ms": 6_000,
    "group.max.session.timeout.ms": 1_800_000,
    "group.max.size": 2_147_483_647,
    "group.initial.rebalance.delay.ms": 3_000,
    "group.new.member.join.timeout.ms": 300_000,
    "offsets.retention.minutes": 10_080,
}

# The newest request version Kafka 3.9 defines for each API
# (clients/src/main/resources/common/message/*Request.json).
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

# JoinGroup v4 introduced the MEMBER_ID_REQUIRED round trip (KIP-394); KafkaApis
# derives requireKnownMemberId = version >= 4 && groupInstanceId == null.
JOIN_REQUIRE_KNOWN_MEMBER_ID_SINCE = 4
# DescribeGroups answers GROUP_ID_NOT_FOUND for an unknown group from v6 on.
DESCRIBE_GROUP_ID_NOT_FOUND_SINCE = 6
