"""What the coordinator answers: each API's response fields, and Kafka's mappings of a failed log write to
the error the waiting request gets (the Scala coordinator's, and the Java one's where they differ)."""
from __future__ import annotations

from .lang import FALSE, INT, Const, If, Or, Term, lift, named, none
from .rows import ECHO
from .schema import Error, P, V
from .vocabulary import E, NO_MEMBER, NO_MEMBERS, NO_PARTS, NO_PROTOCOL, kafka_text

# -- responses -------------------------------------------------------------------


def join_error(error: Term | str, member=ECHO) -> dict:
    """JoinGroupResult(memberId, error): no generation, leader or protocol, and skipAssignment false (every
    JoinGroup response of version 9 carries it: found running Kafka 3.9.2, docs/kafka-conformance.md)."""
    return dict(error=lift(error, Error) if isinstance(error, str) else error, member=member,
                generation=Const(-1, INT), leader=NO_MEMBER, protocol=NO_PROTOCOL,
                members=NO_MEMBERS, skip_assignment=FALSE())


def join_info(m: Term, members_to_leader: bool = True) -> dict:
    """The JoinGroupResult of the current generation for member m."""
    return dict(error=E("NONE"), member=m, generation=V.generation, protocol_type=V.protocol_type,
                protocol=V.protocol, leader=V.leader,
                members=If(m == V.leader, V.members, NO_MEMBERS) if members_to_leader else NO_MEMBERS,
                skip_assignment=FALSE())


def sync_error(error: Term | str) -> dict:
    return dict(error=lift(error, Error) if isinstance(error, str) else error, assignment=NO_PARTS,
                protocol_type=none("ProtocolType"), protocol=NO_PROTOCOL)


def commit_errors(error: Term | str) -> dict:
    """OffsetCommit: the same error for every partition of the request."""
    return dict(error_all=lift(error, Error) if isinstance(error, str) else error, partitions=P.commit_parts)


# -- a failed write's error (GMM.storeGroup, GMM.storeOffsets) ---------------------

def store_group_error(e: Term) -> Term:
    """How a failed append of the group's record reaches the request that waits on it: GMM.storeGroup's
    callback (Scala), GroupMetadataManager.appendGroupMetadataErrorToResponseError (Java, Kafka 4.0)."""
    return If(P.cfg_new_coordinator,
              named(f"appendGroupMetadataErrorToResponseError({kafka_text(e)})", _append_error_java(e)),
              named(f"storeGroup's mapping of {kafka_text(e)}", _store_group_error(e)))


def _store_group_error(e: Term) -> Term:
    return If(Or(e == E("UNKNOWN_TOPIC_OR_PARTITION"), e == E("NOT_ENOUGH_REPLICAS"),
                 e == E("NOT_ENOUGH_REPLICAS_AFTER_APPEND")), E("COORDINATOR_NOT_AVAILABLE"),
              If(Or(e == E("NOT_LEADER_OR_FOLLOWER"), e == E("KAFKA_STORAGE_ERROR")), E("NOT_COORDINATOR"),
                 If(e == E("REQUEST_TIMED_OUT"), E("REBALANCE_IN_PROGRESS"),
                    If(Or(e == E("MESSAGE_TOO_LARGE"), e == E("RECORD_LIST_TOO_LARGE"),
                          e == E("INVALID_FETCH_SIZE")), E("UNKNOWN_SERVER_ERROR"), e))))


def _append_error_java(e: Term) -> Term:
    """The Java coordinator's one mapping of a failed write (appendGroupMetadataErrorToResponseError, and
    CoordinatorOperationExceptionHelper.handleOperationException for an operation the write fails whole):
    no case for NOT_ENOUGH_REPLICAS_AFTER_APPEND, and REQUEST_TIMED_OUT is COORDINATOR_NOT_AVAILABLE."""
    return If(Or(e == E("UNKNOWN_TOPIC_OR_PARTITION"), e == E("NOT_ENOUGH_REPLICAS"), e == E("REQUEST_TIMED_OUT")),
              E("COORDINATOR_NOT_AVAILABLE"),
              If(Or(e == E("NOT_LEADER_OR_FOLLOWER"), e == E("KAFKA_STORAGE_ERROR")), E("NOT_COORDINATOR"),
                 If(Or(e == E("MESSAGE_TOO_LARGE"), e == E("RECORD_LIST_TOO_LARGE"), e == E("INVALID_FETCH_SIZE")),
                    E("UNKNOWN_SERVER_ERROR"), e)))


def offset_commit_error(e: Term) -> Term:
    """How a failed append of offsets reaches the OffsetCommit: GMM.maybeConvertOffsetCommitError (Scala);
    the Java coordinator fails the whole write operation, answered through handleOperationException."""
    return If(P.cfg_new_coordinator,
              named(f"handleOperationException({kafka_text(e)})",
                    If(e == E("NETWORK_EXCEPTION"), E("COORDINATOR_LOAD_IN_PROGRESS"), _append_error_java(e))),
              named(f"maybeConvertOffsetCommitError({kafka_text(e)})", _offset_commit_error(e)))


def _offset_commit_error(e: Term) -> Term:
    return If(e == E("NETWORK_EXCEPTION"), E("COORDINATOR_LOAD_IN_PROGRESS"),
              If(Or(e == E("UNKNOWN_TOPIC_OR_PARTITION"), e == E("NOT_ENOUGH_REPLICAS"),
                    e == E("NOT_ENOUGH_REPLICAS_AFTER_APPEND")), E("COORDINATOR_NOT_AVAILABLE"),
                 If(Or(e == E("NOT_LEADER_OR_FOLLOWER"), e == E("KAFKA_STORAGE_ERROR")), E("NOT_COORDINATOR"),
                    If(Or(e == E("MESSAGE_TOO_LARGE"), e == E("RECORD_LIST_TOO_LARGE"),
                          e == E("INVALID_FETCH_SIZE")), E("INVALID_COMMIT_OFFSET_SIZE"), e))))
