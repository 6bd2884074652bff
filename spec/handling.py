"""What happens around a row: a request, timer or event from arrival to its last output.

A row decides (spec/table.py); this module says, once, what the
coordinator does with the decision.  The runtime coordinator (impl/) and
the closed world the checkers explore (checkers/world/state_space.py) both run a
step through `handle` below; they differ only in what they are (`Host`):
the runtime renders a reply onto the wire and writes a log file, the
closed world writes the reply into its client's response slot and the
record into its one-record log.  The description is data where a later
interpretation (Z3, TLA+) needs to read it: `ROUTES` (where each kind of
output goes), `EAGER` (the rule after every row), `LEAVE` (the LeaveGroup
batch), `RECORD_FIELDS` (what the log holds of a group), and
`require_known_member_id`, `vote` (what KafkaApis and MemberMetadata
derive from a request).

The order of a step, as Kafka's GroupCoordinator runs it:

1. the trigger's row fires; where it leaves a choice open, the host
   follows one outcome (the runtime) or all of them (the closed world);
2. its outputs are routed in the row's order (`ROUTES`); an `append` is
   written and, once the write completes (at once, or later for a held
   write), the completion row fires with the write's error, its replies
   going to the request that caused the append;
3. tombstones of one row are written as one batch, after its other outputs
   (GMM.cleanupGroupMetadata);
4. if the group is in PreparingRebalance, the join is re-checked at once
   (`EAGER`, `Eager`: DelayedJoin.tryComplete after every change), which may fire
   the join-completion rows, and so on until nothing more completes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .concrete import Layout, compile_term
from .engine import EngineError, Outcome, Output
from .kafka import ERRORS, JOIN_REQUIRE_KNOWN_MEMBER_ID_SINCE
from .lang import NONE, Apply, Dom, Fun, Param, Term
from .schema import GroupRecord, PROTOCOL, PROTOLIST, STATES
from .table import completion

PREPARING = STATES.index("PreparingRebalance")


@dataclass(frozen=True)
class Route:
    """Where one kind of row output goes, in words and with its Kafka source."""
    kind: str
    meaning: str
    source: str


ROUTES: dict[str, Route] = {r.kind: r for r in (
    Route("reply", "the response to the request being handled, to the client that sent it (a request "
          "completed by a write's callback is answered then)", "KafkaApis: the request's responseCallback"),
    Route("park", "the request being handled waits on (its API, the member): the sender gets no response now",
          "GC: member.awaitingJoinCallback / awaitingSyncCallback"),
    Route("answer", "the request parked on (its API, the member), if any, gets this response; the slot is "
          "empty again", "GC: maybeInvokeJoinCallback / maybeInvokeSyncCallback"),
    Route("arm", "a timer of the group (or of a member) is armed for a duration", "DelayedOperationPurgatory"),
    Route("cancel", "that timer is cancelled", "DelayedOperationPurgatory"),
    Route("cancel_all", "every timer of the group is cancelled", "GC.onGroupUnloaded"),
    Route("append", "the record built from the output's fields (RECORD_FIELDS, or the committed offsets) is "
          "appended to the log; when the write completes, the completion row (table.completion) fires "
          "with the write's error", "GMM.storeGroup / GMM.storeOffsets and their callbacks"),
    Route("tombstone", "the group's tombstone is written (with the row's other tombstones, one batch)",
          "GMM.cleanupGroupMetadata"),
    Route("delete_offsets", "tombstones of the given partitions' offsets (same batch)",
          "GMM.cleanupGroupMetadata"),
)}

@dataclass(frozen=True)
class Eager:
    """The rule after every row: Kafka re-checks a pending join whenever the group changes
    (GC.maybeCompleteJoin / DelayedJoin.tryComplete), so a join whose members have all
    rejoined completes within the step that made it so.  `skip_after`: rows after which the
    re-check is left out; none in Kafka (a host given some runs a planted bug, such as
    KAFKA-7909's missing re-check after a pending member expires)."""
    trigger: str = "CompleteJoin"
    state: int = PREPARING
    skip_after: frozenset = frozenset()


EAGER = Eager()


@dataclass(frozen=True)
class Leave:
    """LeaveGroup, as GC.handleLeaveGroup runs it: the group-level row first; if its reply says
    `each`, the per-member row for every member identity of the batch, in request order, each
    answering with its `error`; otherwise every identity gets the group-level row's
    `member_error` (if it names one).  After the batch, the eager rule once more: the Java
    coordinator re-checks the join only then (classicGroupLeaveToClassicGroup: maybeCompleteJoinPhase
    after the loop), so its per-member rows say java_check "none"."""
    group: str = "LeaveGroup"
    member: str = "LeaveMember"
    go_on: str = "each"
    member_error: str = "member_error"
    each_error: str = "error"


LEAVE = Leave()


@dataclass(frozen=True)
class JavaWrites:
    """Around a step of the Java coordinator (group.coordinator.new.enable), where it differs from the Scala
    one: Kafka 4.0's CoordinatorRuntime runs every request and timer of a partition as an operation whose
    records are written in order, so

    - a reply of a row marked `java_result` (an operation's own result, not an answer it throws) waits
      behind every write not yet completed when it was made, and goes out when the last of them completes
      (CoordinatorContext.append: waitForPendingWrites, the deferred event queue);
    - when the partition moves away, every write not yet completed fails, oldest first, with `unload_error`,
      its completion row firing as for any failed write, and every reply waiting behind one becomes the
      request's answer from a coordinator that no longer holds the partition (CoordinatorContext.unload:
      deferredEventQueue.failAll); so does a request parked in an operation that waited behind one (a
      JoinGroup or SyncGroup awaiting the join or the sync, even one its member's later request replaced),
      unless something answered it first (GroupCoordinatorService: the operation's failure completes its
      response if not yet done); then the groups are unloaded;
    - a write already made does not fail afterwards (`held_can_fail`): CoordinatorPartitionWriter appends
      with acks=1 and fails only at once, so completing a held write with an error is no behaviour of it;
    - writes are committed in order (`in_order`: the partition's high watermark): a write made while earlier
      ones are held completes (its row fires) right after the last of them completes, with no step of
      its own (CoordinatorRuntime completes a write's operation once the high watermark passes it);
    - a row's tombstones are a write like any other (`tombstones_held`): held while appends are held, the
      row's result waiting for them; their completion fires no row (the Scala coordinator appends them
      straight to the leader's log, GMM.cleanupGroupMetadata, whatever the storage steps say).

    Not in the table yet: a write failing as it is made reverts the whole operation that made it
    (CoordinatorRuntime puts its state back to before the operation; its answer is the write's mapped
    error), which the rows say only of the write of a group a request creates and of an offset commit,
    not of a LeaveGroup or a session expiry that empties a group, nor of a deletion's tombstones; and the
    tombstones of several groups are one write (a DeleteGroups naming several, offset expiry); and its reads
    (ListGroups, DescribeGroups, OffsetFetch) see the state of the last committed write.  Kafka's
    in-process target leaves those steps out, naming why (checkers/kafka/inprocess.py).

    The runtime coordinator (impl/) runs this; the closed world describes the Scala coordinator."""
    unload_error: str = "NOT_COORDINATOR"
    held_can_fail: bool = False
    in_order: bool = True
    tombstones_held: bool = True


JAVA_WRITES = JavaWrites()

# What the log holds of a group (GMM.groupMetadataValue): a term per GroupRecord field over
# the fields the `append` output captured (`rec.<field>`).  Each member's protocols are cut to
# the group's selected protocol: Kafka writes a member's subscription for that protocol only,
# and a load restores the member with that one (`selected_only` is the host's cut of its
# protocol lists).  The committed offsets, the record's last field, come from offset records.
REC: dict[str, Term] = {name: Param("rec." + name, t) for name, t in zip(GroupRecord.values, GroupRecord.args)
                        if name != "offsets"}
SELECTED_ONLY = Param("selected_only", Fun(Dom(PROTOLIST), Dom(PROTOLIST), Dom(PROTOCOL)))
RECORD: dict[str, Term] = {**REC, "protos": REC["protos"].put_all(
    REC["members"], lambda m: Apply(SELECTED_ONLY, REC["protos"][m], REC["protocol"]))}
RECORD_FIELDS = tuple(RECORD)
assert RECORD_FIELDS + ("offsets",) == GroupRecord.values


def require_known_member_id(version: int, instance: Any) -> bool:
    """KafkaApis.handleJoinGroupRequest: a dynamic member (no group.instance.id) of JoinGroup v4+
    must rejoin with the member id the coordinator issued it (KIP-394)."""
    return version >= JOIN_REQUIRE_KNOWN_MEMBER_ID_SINCE and instance is None


def vote(order: tuple, candidates: int) -> int:
    """MemberMetadata.vote: a member's first protocol, in its own order, among the candidates."""
    return next((p for p in order if (candidates >> p) & 1), NONE)


_RECORD_PARAMS = ["selected_only"] + ["rec." + k for k in RECORD_FIELDS]
_RECORD_LAYOUT = Layout({}, {n: i for i, n in enumerate(_RECORD_PARAMS)})
_RECORD = [(k, compile_term(t, _RECORD_LAYOUT)) for k, t in RECORD.items()]


def record_of(fields: dict, selected_only) -> dict:
    """RECORD: the group record an `append` output with these fields writes."""
    p = [selected_only] + [fields[k] for k in RECORD_FIELDS]
    return {k: f((), p, ()) for k, f in _RECORD}


class Host(Protocol):
    """What runs a step: the runtime coordinator, or the closed world.  `ctx` is the host's
    branch of the step (the closed world forks one per outcome it follows)."""

    def outcomes(self, ctx, trigger: str, params: dict) -> list[Outcome]:
        """The outcomes of firing `trigger` to follow (the runtime: the one it chooses; the
        closed world: every one).  [] if no row fires; an outcome whose `row` is None: in
        that branch no row fires (a symbolic host follows every row under its guard, and
        that branch too)."""

    def fork(self, ctx) -> Any:
        """A copy of branch `ctx` to follow another outcome in."""

    def enter(self, ctx, outcome: Outcome, params: dict) -> None:
        """The group takes the outcome's state (the host checks the invariants here)."""

    def route(self, ctx, out: Output) -> None:
        """Route a reply, park, answer or timer output (see ROUTES)."""

    def append(self, ctx, out: Output) -> list[tuple[Any, str | None]]:
        """Write an append: [(branch, error)] for each way the write may complete now (error
        None: held, completed later through `complete`)."""

    def tombstones(self, ctx, outs: list[Output]) -> None:
        """Write one row's tombstones as one batch."""

    def routed(self, ctx, trigger: str) -> None:
        """After a row's outputs are routed (and before the eager re-check)."""

    def in_state(self, ctx, state: int) -> list[tuple[Any, bool]]:
        """[(branch, whether the group is in `state` there)]: one branch for a concrete host,
        both for a symbolic one."""

    eager: Eager     # the rule after every row (EAGER)


def handle(host: Host, ctx, trigger: str, params: dict) -> list[tuple[Any, dict | None]]:
    """Fire `trigger` and everything it entails.  Returns (branch, the fields of the reply the
    row gave, or None) for every branch the step may end in."""
    outcomes = host.outcomes(ctx, trigger, params)
    if not outcomes:
        return [(ctx, None)]
    # fork before the first branch changes anything
    branches = [ctx] + [host.fork(ctx) for _ in outcomes[1:]]
    results: list = []
    for o, c in zip(outcomes, branches):
        host.enter(c, o, params)
        if o.row is None:
            results.append((c, None))
            continue
        reply = None
        live = [c]
        stones = []
        for out in o.outputs:
            k = out.kind
            if k == "append":
                live = [b2 for b in live for b2 in _write(host, b, out)]
            elif k in ("tombstone", "delete_offsets"):
                stones.append(out)
            else:
                if k == "reply":
                    reply = out.fields
                for b in live:
                    host.route(b, out)
        for b in live:
            if stones:
                host.tombstones(b, stones)
            host.routed(b, trigger)
            for b2, _ in settle(host, b, o.row):
                results.append((b2, reply))
    return results


def _write(host: Host, ctx, out: Output) -> list:
    res = []
    for b, error in host.append(ctx, out):
        if error is None:
            res.append(b)
        else:
            res += [b2 for b2, _ in complete(host, b, out.api, out.fields, error)]
    return res


def complete(host: Host, ctx, kind: str, fields: dict, error: str) -> list:
    """An append of `kind` (the fields its output captured) completes with `error`."""
    trigger, params = completion(kind, fields)
    return handle(host, ctx, trigger, {**params, "error": ERRORS.index(error)})


def settle(host: Host, ctx, after) -> list:
    """The eager rule (the host's, EAGER in Kafka) after row `after`: in PreparingRebalance,
    the join completes within the step if it can.  The row says how the Java coordinator re-checks
    (Row.java_recheck), which the rule's rows read from `check_forced` and `check_skipped`."""
    rule = host.eager
    if after.name in rule.skip_after:
        return [(ctx, None)]
    params = recheck_params(after)
    res = []
    for c, inside in host.in_state(ctx, rule.state):
        res += handle(host, c, rule.trigger, params) if inside else [(c, None)]
    return res


def recheck_params(after) -> dict:
    """The eager rule's parameters after row `after` (or AFTER_BATCH): how the Java coordinator
    re-checks there (Row.java_recheck), and whether it is the re-check after a LeaveGroup batch."""
    check = after.java_recheck
    return {"check_forced": check == "complete", "check_skipped": check == "none", "check_batch": after is AFTER_BATCH}


def leave(host: Host, ctx, params: dict, identities: list[dict]) -> list[tuple[Any, dict | None, list]]:
    """LEAVE: (branch, the group-level reply, each identity's error) for every branch."""
    res = []
    for c, top in handle(host, ctx, LEAVE.group, params):
        if top is None:
            raise EngineError(f"{LEAVE.group}: no row replied")
        if not top.get(LEAVE.go_on):
            err = top.get(LEAVE.member_error)
            res.append((c, top, [err] * len(identities) if err is not None else []))
            continue
        branches = [(c, [])]
        for who in identities:
            nxt = []
            for b, errors in branches:
                for b2, r in handle(host, b, LEAVE.member, {**params, **who}):
                    if r is None:      # a row that forgot to answer: a bug of the table, not an answer
                        raise EngineError(f"{LEAVE.member}: a row gave no per-member answer")
                    nxt.append((b2, errors + [r[LEAVE.each_error]]))
            branches = nxt
        for b, errors in branches:
            res += [(b2, top, errors) for b2, _ in settle(host, b, AFTER_BATCH)]
    return res


@dataclass(frozen=True)
class _AfterBatch:
    """What settle reads of a row, for the re-check after a LeaveGroup batch (maybeCompleteJoinPhase)."""
    name: str = "LeaveGroup: after the batch"
    java_recheck: str = "try"


AFTER_BATCH = _AfterBatch()
