"""The closed world: the coordinator, N consumer clients, and the network between them.

The world's state is one flat tuple: the group's variables (schema.py) first,
so the coordinator's compiled rows run on it unchanged, then the clients'
and the network's variables declared here.  The clients follow the
consumer's side of the classic protocol (the Java consumer's
AbstractCoordinator / ConsumerCoordinator, eager rebalancing): they are
rows in the same language, triggered per client.

The network holds at most one request from each client to the coordinator
and one response back (a consumer has one request to the coordinator in
flight at a time on its main path); a parked request's answer is routed to
the client whose request was parked (`parked_join`, `parked_sync`).

Reordering (a fault, switched on separately): a client may give up on a
request that is still in the network (request.timeout.ms) and go on; the
request stays in flight as a late one (`rq_late*`, one per client) and may
reach the coordinator after the client's later requests.  The client no
longer waits for its answer (the Java client matches responses by
correlation id), so whatever the coordinator answers to a late request is
dropped.  Reordering between different clients needs no fault: every
client's messages are delivered independently.

A hung poll loop (a fault, switched on separately: `hung_poll`): a client
whose JoinGroup succeeded never sends its SyncGroup, while its heartbeat
thread goes on heartbeating (the class of KAFKA-12890, a group stuck in
CompletingRebalance).  Its heartbeats are the environment's choice, and so
is the heartbeat thread's LeaveGroup once max.poll.interval.ms has passed:
the coordinator's pending-sync timeout is what must remove it.

Member ids are never reused (real ids are UUIDs): `used_ids` records every
id ever issued, and the size of the member domain bounds how many ids a
world can issue.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from .lang import (BOOL, FALSE, INT, NONE, TRUE, Apply, Dom, Enum, Fun, If, Lowest, MapOf, Not, Or, Param, Record, SetOf,
                   Var,
                   default_of, empty, lift, none)
from .rows import Row, sets
from .vocabulary import E
from .schema import PARAM_TYPES, Error, GroupRecord, GroupState, INSTANCE, MEMBER, PARTITION, STATE_VARS, STATES, VarDecl

CLIENT = "Client"
Phase = Enum("ClientPhase", "idle", "joining", "syncing", "stable", "left", "crashed", "hung")
Kind = Enum("Message", "none", "join", "sync", "heartbeat", "commit", "leave")

WORLD_VARS: tuple[VarDecl, ...] = (
    VarDecl("c_phase", MapOf(CLIENT, Phase), "each client's phase of the protocol", 0),
    VarDecl("c_member", MapOf(CLIENT, Dom(MEMBER)), "the member id a client holds (none: it has no id)", NONE),
    VarDecl("c_gen", MapOf(CLIENT, INT), "the generation a client believes it is in (-1: none)", -1),
    VarDecl("c_owned", MapOf(CLIENT, SetOf(PARTITION)), "the partitions a client believes it owns", 0),
    VarDecl("rq", MapOf(CLIENT, Kind), "the request a client has in flight to the coordinator", 0),
    VarDecl("rq_member", MapOf(CLIENT, Dom(MEMBER)), "that request's member id", NONE),
    VarDecl("rq_gen", MapOf(CLIENT, INT), "that request's generation", -1),
    VarDecl("rq_assign", MapOf(CLIENT, MapOf(MEMBER, SetOf(PARTITION))), "a leader's SyncGroup assignment", 0),
    VarDecl("rq_parts", MapOf(CLIENT, SetOf(PARTITION)), "the partitions an OffsetCommit commits (those the client "
            "owned when it sent it)", 0),
    VarDecl("rq_late", MapOf(CLIENT, Kind), "a request the client gave up on, still in the network (reordering)", 0),
    VarDecl("rq_late_member", MapOf(CLIENT, Dom(MEMBER)), "that late request's member id", NONE),
    VarDecl("rq_late_gen", MapOf(CLIENT, INT), "that late request's generation", -1),
    VarDecl("rq_late_assign", MapOf(CLIENT, MapOf(MEMBER, SetOf(PARTITION))), "that late SyncGroup's assignment",
            0),
    VarDecl("rq_late_parts", MapOf(CLIENT, SetOf(PARTITION)), "that late OffsetCommit's partitions", 0),
    # the response fields come last: the checker stores a client's variables as one tuple and
    # writes a response by replacing its tail
    VarDecl("rs", MapOf(CLIENT, Kind), "the response in flight to a client", 0),
    VarDecl("rs_error", MapOf(CLIENT, Error), "that response's error", 1),
    VarDecl("rs_member", MapOf(CLIENT, Dom(MEMBER)), "that response's member id", NONE),
    VarDecl("rs_gen", MapOf(CLIENT, INT), "that response's generation", -1),
    VarDecl("rs_leader", MapOf(CLIENT, Dom(MEMBER)), "that response's leader", NONE),
    VarDecl("rs_members", MapOf(CLIENT, SetOf(MEMBER)), "that response's member list (the leader's)", 0),
    VarDecl("rs_assignment", MapOf(CLIENT, SetOf(PARTITION)), "that response's assignment (SyncGroup)", 0),
    VarDecl("parked_join", MapOf(MEMBER, Dom(CLIENT)), "the client whose JoinGroup is parked for a member", NONE),
    VarDecl("parked_sync", MapOf(MEMBER, Dom(CLIENT)), "the client whose SyncGroup is parked for a member", NONE),
    VarDecl("used_ids", SetOf(MEMBER), "every member id the coordinator has issued", 0),
    VarDecl("log_has", BOOL, "the log holds a group record", False),
    VarDecl("log", GroupRecord, "the group's last record in the log", None),
)

ALL_VARS = tuple(STATE_VARS) + WORLD_VARS
WORLD_INDEX = {v.name: i for i, v in enumerate(ALL_VARS)}
N_GROUP = len(STATE_VARS)


class W:
    """Terms for the world's variables: `W.c_phase`, `W.rq`, ... (and the group's, `W.members`)."""


for _v in ALL_VARS:
    setattr(W, _v.name, Var(_v.name, _v.type))

C = Param("client", Dom(CLIENT))
# the world's own parameters of its invariants: the generation budget (the bound a rebalance-budget
# world declares)
GENERATION_BUDGET = Param("generation_budget", INT)
WORLD_INVARIANT_PARAMS = ("generation_budget",)
ASSIGN = Param("assign", Fun(MapOf(MEMBER, SetOf(PARTITION)), SetOf(MEMBER)))
WORLD_PARAMS = {"client": Dom(CLIENT), "assign": ASSIGN.type}


def ph(name: str):
    return lift(name, Phase)


def kd(name: str):
    return lift(name, Kind)


# -- the client table ------------------------------------------------------------------

def _send(kind: str, member=None, gen=None, assign=None, parts=None) -> dict:
    upd = dict(rq=W.rq.put(C, kd(kind)),
               rq_member=W.rq_member.put(C, W.c_member[C] if member is None else member),
               rq_gen=W.rq_gen.put(C, W.c_gen[C] if gen is None else gen))
    if assign is not None:
        upd["rq_assign"] = W.rq_assign.put(C, assign)
    if parts is not None:
        upd["rq_parts"] = W.rq_parts.put(C, parts)
    return upd


def _rejoin(reset_member: bool = False) -> dict:
    """Eager rebalancing: give up every partition, then JoinGroup again."""
    member = none(MEMBER) if reset_member else W.c_member[C]
    upd = dict(c_owned=W.c_owned.put(C, empty(PARTITION)), c_phase=W.c_phase.put(C, ph("joining")),
               c_member=W.c_member.put(C, member), c_gen=W.c_gen.put(C, -1 if reset_member else W.c_gen[C]))
    upd.update(_send("join", member=member, gen=lift(-1, INT)))
    return upd


def _to_late() -> dict:
    """The request in flight becomes a late one; the client no longer waits for it."""
    return dict(rq_late=W.rq_late.put(C, W.rq[C]), rq_late_member=W.rq_late_member.put(C, W.rq_member[C]),
                rq_late_gen=W.rq_late_gen.put(C, W.rq_gen[C]), rq_late_assign=W.rq_late_assign.put(C, W.rq_assign[C]),
                rq_late_parts=W.rq_late_parts.put(C, W.rq_parts[C]),
                rq=W.rq.put(C, kd("none")), rq_member=W.rq_member.put(C, none(MEMBER)),
                rq_gen=W.rq_gen.put(C, lift(-1, INT)),
                rq_assign=W.rq_assign.put(C, W.rq_assign[C].fill(empty(PARTITION))),
                rq_parts=W.rq_parts.put(C, empty(PARTITION)))


def _consume() -> dict:
    """The client has read its response: the slot is empty, and so that states differ only in
    what is still to be read, its fields go back to their defaults."""
    return dict(rs=W.rs.put(C, kd("none")), rs_error=W.rs_error.put(C, E("NONE")),
                rs_member=W.rs_member.put(C, none(MEMBER)), rs_gen=W.rs_gen.put(C, lift(-1, INT)),
                rs_leader=W.rs_leader.put(C, none(MEMBER)), rs_members=W.rs_members.put(C, empty(MEMBER)),
                rs_assignment=W.rs_assignment.put(C, empty(PARTITION)))


def _stop() -> dict:
    """The client stops for good (fatal error, leave, crash): it owns nothing, and the id and
    generation it held are forgotten (nothing reads them again; a restart starts afresh)."""
    return dict(c_owned=W.c_owned.put(C, empty(PARTITION)), c_member=W.c_member.put(C, none(MEMBER)),
                c_gen=W.c_gen.put(C, lift(-1, INT)))


ALL = STATES
got = lambda kind: W.rs[C] == kd(kind)  # noqa: E731
err = lambda name: W.rs_error[C] == E(name)  # noqa: E731
# one exchange at a time: nothing in flight either way (a consumer awaits each response)
idle_line = (W.rq[C] == kd("none")) & (W.rs[C] == kd("none"))
alive = Not(Or(W.c_phase[C] == ph("left"), W.c_phase[C] == ph("crashed")))
hung = W.c_phase[C] == ph("hung")
# a live client whose poll loop runs: it reads its responses and acts on them (a hung one only
# heartbeats, from its heartbeat thread)
awake = alive & Not(hung)
# the errors with which the Java heartbeat thread gives up the generation (resetGenerationOnResponseError)
fenced_beat = Or(err("ILLEGAL_GENERATION"), err("UNKNOWN_MEMBER_ID"), err("FENCED_INSTANCE_ID"))
# a request still in the network, no response yet, and no late request already (the bound)
_overtakable = Not(W.rq[C] == kd("none")) & (W.rs[C] == kd("none")) & (W.rq_late[C] == kd("none"))
src = "consumer: AbstractCoordinator / ConsumerCoordinator (eager)"

CLIENT_ROWS: list[Row] = [
    Row("client starts and joins", "ClientStart", ALL, (W.c_phase[C] == ph("idle")) & idle_line,
        [sets(c_phase=W.c_phase.put(C, ph("joining")), **_send("join", member=none(MEMBER), gen=lift(-1, INT)))],
        None, src),
    # JoinGroup responses
    Row("join: member id required, rejoin with it", "ClientReceive", ALL,
        awake & got("join") & err("MEMBER_ID_REQUIRED"),
        [sets(c_member=W.c_member.put(C, W.rs_member[C]), **_consume()),
         sets(**_send("join", gen=lift(-1, INT)))], None, src + " (KIP-394)"),
    Row("join: joined, the leader assigns and syncs", "ClientReceive", ALL,
        awake & got("join") & err("NONE") & (W.rs_leader[C] == W.rs_member[C]),
        [sets(c_member=W.c_member.put(C, W.rs_member[C]), c_gen=W.c_gen.put(C, W.rs_gen[C]),
              c_phase=W.c_phase.put(C, ph("syncing"))),
         sets(**_send("sync", assign=Apply(ASSIGN, W.rs_members[C])), **_consume())], None,
        src + "; the leader runs the group's assignor (seed 004)"),
    Row("join: joined as a follower, sync", "ClientReceive", ALL,
        awake & got("join") & err("NONE") & Not(W.rs_leader[C] == W.rs_member[C]),
        [sets(c_member=W.c_member.put(C, W.rs_member[C]), c_gen=W.c_gen.put(C, W.rs_gen[C]),
              c_phase=W.c_phase.put(C, ph("syncing")), **_consume()),
         sets(**_send("sync", assign=W.rq_assign[C].fill(empty(PARTITION))))], None, src),
    Row("join: fatal error, the client stops", "ClientReceive", ALL,
        awake & got("join") & Or(err("GROUP_MAX_SIZE_REACHED"), err("INCONSISTENT_GROUP_PROTOCOL"),
                                 err("FENCED_INSTANCE_ID"), err("INVALID_SESSION_TIMEOUT")),
        [sets(c_phase=W.c_phase.put(C, ph("left")), **_stop(), **_consume())],
        None, src + " (non-retriable errors)"),
    Row("join: unknown member id, rejoin without it", "ClientReceive", ALL,
        awake & got("join") & err("UNKNOWN_MEMBER_ID"),
        [sets(**_consume()), sets(**_rejoin(reset_member=True))], None, src + " (resetStateAndRejoin)"),
    Row("join: retriable error, rejoin", "ClientReceive", ALL,
        awake & got("join") & Not(Or(err("NONE"), err("MEMBER_ID_REQUIRED"), err("UNKNOWN_MEMBER_ID"),
                                     err("GROUP_MAX_SIZE_REACHED"), err("INCONSISTENT_GROUP_PROTOCOL"),
                                     err("FENCED_INSTANCE_ID"), err("INVALID_SESSION_TIMEOUT"))),
        [sets(**_consume()), sets(**_rejoin())], None, src),
    # SyncGroup responses
    Row("sync: assignment received", "ClientReceive", ALL, awake & got("sync") & err("NONE"),
        [sets(c_owned=W.c_owned.put(C, W.rs_assignment[C]), c_phase=W.c_phase.put(C, ph("stable")),
              **_consume())], None, src + " (onJoinComplete)"),
    Row("sync: unknown member, rejoin without an id", "ClientReceive", ALL,
        awake & got("sync") & err("UNKNOWN_MEMBER_ID"),
        [sets(**_consume()), sets(**_rejoin(reset_member=True))], None, src),
    Row("fenced: another process has this group.instance.id, stop", "ClientReceive", ALL,
        awake & Or(got("sync"), got("heartbeat"), got("commit")) & err("FENCED_INSTANCE_ID"),
        [sets(c_phase=W.c_phase.put(C, ph("left")), **_stop(), **_consume())],
        None, src + " (FencedInstanceIdException is fatal, KIP-345)"),
    Row("sync: error, rejoin", "ClientReceive", ALL,
        awake & got("sync") & Not(Or(err("NONE"), err("UNKNOWN_MEMBER_ID"), err("FENCED_INSTANCE_ID"))),
        [sets(**_consume()), sets(**_rejoin())], None, src),
    # Heartbeat and OffsetCommit responses
    Row("heartbeat or commit: fine", "ClientReceive", ALL,
        awake & Or(got("heartbeat"), got("commit")) & Not(Or(err("REBALANCE_IN_PROGRESS"),
                                                             err("ILLEGAL_GENERATION"), err("UNKNOWN_MEMBER_ID"),
                                                             err("FENCED_INSTANCE_ID"))),
        [sets(**_consume())], None, src),
    Row("heartbeat or commit: rebalance in progress, rejoin", "ClientReceive", ALL,
        awake & Or(got("heartbeat"), got("commit")) & Or(err("REBALANCE_IN_PROGRESS"), err("ILLEGAL_GENERATION")),
        [sets(**_consume()), sets(**_rejoin())], None, src + "; seed 003"),
    Row("heartbeat or commit: unknown member, rejoin without an id", "ClientReceive", ALL,
        awake & Or(got("heartbeat"), got("commit")) & err("UNKNOWN_MEMBER_ID"),
        [sets(**_consume()), sets(**_rejoin(reset_member=True))], None, src),
    Row("a response the client no longer waits for", "ClientReceive", ALL,
        Not(got("none")) & (Not(alive) | got("leave") | (hung & Not(got("heartbeat")))),
        [sets(**_consume())], None, src + " (a hung client's poll loop reads nothing: only the heartbeat thread's "
                                          "responses are handled)"),
    # what a stable client does
    Row("heartbeat", "ClientHeartbeat", ALL, (W.c_phase[C] == ph("stable")) & idle_line,
        [sets(**_send("heartbeat"))], None, src + " (the heartbeat thread)"),
    Row("commit offsets", "ClientCommit", ALL, (W.c_phase[C] == ph("stable")) & idle_line,
        [sets(**_send("commit", parts=W.c_owned[C]))], None, src + " (commitSync of the partitions it owns)"),
    Row("leave the group", "ClientLeave", ALL, (W.c_phase[C] == ph("stable")) & idle_line,
        [sets(c_phase=W.c_phase.put(C, ph("left")), **_stop(), **_send("leave"))], None, src + " (close)"),
    # A consumer closed while its group rebalances (switch `leaves_rebalancing`): its JoinGroup or
    # SyncGroup was answered or is parked, and close() sends LeaveGroup all the same (the Java
    # consumer leaves whenever it holds a member id and is not UNJOINED); the answer it awaited is
    # never read (the action forgets: the connection is closed).
    Row("leave the group during a rebalance", "ClientLeaveRebalancing", ALL,
        Or(W.c_phase[C] == ph("joining"), W.c_phase[C] == ph("syncing")) & W.c_member[C].is_some() & idle_line,
        [sets(c_phase=W.c_phase.put(C, ph("left")), **_stop(), **_send("leave"))], None,
        src + " (close during a rebalance: maybeLeaveGroup once the member id is known)"),
    Row("request timed out, rejoin", "ClientTimeout", ALL,
        (Or(W.c_phase[C] == ph("joining"), W.c_phase[C] == ph("syncing"))) & idle_line,
        [sets(**_rejoin())], None, src + " (request.timeout.ms: a lost request or response)"),
    Row("request timed out in the network, rejoin (it arrives late)", "ClientOvertake", ALL,
        (Or(W.c_phase[C] == ph("joining"), W.c_phase[C] == ph("syncing"))) & _overtakable,
        [sets(**_to_late()), sets(**_rejoin())], None,
        src + " (request.timeout.ms while the request is delayed, not lost: fault `reordering`)"),
    Row("heartbeat or commit timed out in the network (it arrives late)", "ClientOvertake", ALL,
        (W.c_phase[C] == ph("stable")) & Or(W.rq[C] == kd("heartbeat"), W.rq[C] == kd("commit")) & _overtakable,
        [sets(**_to_late())], None,
        src + " (the heartbeat thread sends the next heartbeat; fault `reordering`)"),
    Row("restart after a crash", "ClientRestart", ALL, (W.c_phase[C] == ph("crashed")) & idle_line,
        [sets(c_phase=W.c_phase.put(C, ph("joining")), c_member=W.c_member.put(C, none(MEMBER)),
              c_gen=W.c_gen.put(C, -1), **_send("join", member=none(MEMBER), gen=lift(-1, INT)))],
        None, "fault: the consumer process is restarted (a static member rejoins with its group.instance.id)"),
    Row("crash", "ClientCrash", ALL, alive & Not(W.c_phase[C] == ph("idle")),
        [sets(c_phase=W.c_phase.put(C, ph("crashed")), **_stop())],
        None, "fault: the consumer process dies"),
    # A hung poll loop (fault `hung_poll`, the class of KAFKA-12890): the JoinGroup response is in,
    # but the application thread never gets to SyncGroup (an assignor that blocks, a poll() that is
    # never called again), while the heartbeat thread, which the Java consumer enables once the
    # JoinGroup succeeds (COMPLETING_REBALANCE and STABLE), keeps the member's session alive.
    Row("join: joined, then the poll loop hangs before SyncGroup", "ClientHang", ALL,
        awake & got("join") & err("NONE"),
        [sets(c_member=W.c_member.put(C, W.rs_member[C]), c_gen=W.c_gen.put(C, W.rs_gen[C]),
              c_phase=W.c_phase.put(C, ph("hung")), **_consume())], None,
        "fault: the consumer's application thread hangs after its JoinGroup response (KAFKA-12890)"),
    Row("hung: the heartbeat thread heartbeats", "ClientHungHeartbeat", ALL, hung & idle_line,
        [sets(**_send("heartbeat"))], None,
        src + " (AbstractCoordinator.HeartbeatThread runs while the poll loop does not)"),
    Row("hung: heartbeat answered, the heartbeat thread goes on", "ClientReceive", ALL,
        hung & got("heartbeat") & Not(fenced_beat),
        [sets(**_consume())], None,
        src + " (HeartbeatResponseHandler: REBALANCE_IN_PROGRESS outside STABLE is ignored; a rejoin would "
              "wait for poll())"),
    Row("hung: heartbeat refused, the heartbeat thread stops", "ClientReceive", ALL,
        hung & got("heartbeat") & fenced_beat,
        [sets(c_phase=W.c_phase.put(C, ph("left")), **_stop(), **_consume())], None,
        src + " (resetGenerationOnResponseError: UNJOINED disables the heartbeat thread, and the hung poll "
              "loop never rejoins)"),
    # The Java heartbeat thread leaves the group once poll() has not been called for
    # max.poll.interval.ms.  A separate choice, and not a fair one: the coordinator must not depend on
    # it (a client whose poll() keeps running without getting to SyncGroup never times out, a static
    # member sends no LeaveGroup, other clients have no such timer), and a world where it is
    # eventually taken would hide a coordinator that never removes a member that does not sync.
    Row("hung past max.poll.interval.ms: the heartbeat thread leaves", "ClientPollTimeout", ALL, hung & idle_line,
        [sets(c_phase=W.c_phase.put(C, ph("left")), **_stop(), **_send("leave"))], None,
        src + " (HeartbeatThread: pollTimeoutExpired, maybeLeaveGroup)"),
]


# -- the messages: what a client's request is to the coordinator ----------------------------

@dataclass(frozen=True)
class Message:
    """A client's request of one kind: the coordinator API it is, the trigger parameters taken
    from the request's fields (`fields`: parameter -> a term over REQ and the group's
    variables) or fixed for every client of the world (`fixed`), and whether the client reads
    the answer.  Every request also carries WHO."""
    api: str
    fields: dict
    fixed: dict
    answered: bool = True


# A request in flight, as the coordinator receives it (the client's `rq_*` variables, or its
# late request's `rq_late_*`), and the sending client's configured group.instance.id.
REQ = {"member": Param("req.member", Dom(MEMBER)), "gen": Param("req.gen", INT),
       "assign": Param("req.assign", MapOf(MEMBER, SetOf(PARTITION))), "parts": Param("req.parts", SetOf(PARTITION))}
CLIENT_INSTANCE = Param("client_instance", Dom(INSTANCE))
# Who the request is from (KafkaApis / GC.validateCurrentMember): the coordinator knows a member
# id only while the member (or a pending member) holds it; a request with an id it does not
# know names nobody it holds.
WHO = {"member": If(REQ["member"].in_(W.members | W.pending), REQ["member"], none(MEMBER)),
       "member_empty": REQ["member"] == none(MEMBER), "instance": CLIENT_INSTANCE}


# The member id a JoinGroup without one is given: the lowest never issued (real ids are UUIDs,
# never reused; the size of the member domain bounds how many ids a world can issue, and a
# JoinGroup without an id once they are spent is cut as a bound, not a behaviour).
FRESH = Lowest(W.parked_join.keys_where(lambda c: TRUE()) - W.used_ids)

# The closed world describes Kafka 3.9's Scala coordinator (group.coordinator.new.enable=false): its hosts
# (the explicit search, BMC, the TLA+ export) run the rows that can fire under it (table.rows_for).  The Java
# coordinator's runtime around a step (handling.JAVA_WRITES) is the runtime coordinator's alone.
WORLD_COORDINATOR = False

MESSAGES: dict[str, Message] = {
    # a consumer of Kafka 3.9: JoinGroup at its newest version, one protocol type and list, the
    # session and rebalance timeouts alike for every client
    "join": Message("JoinGroup", {}, {"session_ms": 10_000, "rebalance_ms": 10_000, "req_ptype": 0,
                                      "req_ptype_empty": False, "req_protos": 0}),
    # SyncGroup without a protocol type and name: version 4 (version 5 must name them)
    "sync": Message("SyncGroup", {"generation": REQ["gen"], "assignments": REQ["assign"]},
                    {"req_ptype": NONE, "req_ptype_given": False, "req_protocol": NONE,
                     "req_protocol_given": False, "sync_v5": False}),
    "heartbeat": Message("Heartbeat", {"generation": REQ["gen"]}, {}),
    # what a client commits is its position, offset 1 on every partition: durability is checked by
    # comparing the group's offsets with the log's, so one value serves
    "commit": Message("OffsetCommit", {"generation": REQ["gen"], "commit_parts": REQ["parts"]},
                      {"commit": 1, "commit_v9": True}),
    # AbstractCoordinator.maybeLeaveGroup sends LeaveGroup as the consumer closes: nothing reads the answer
    "leave": Message("LeaveGroup", {}, {}, answered=False),
}


def fixed_params(sizes: dict) -> dict[str, dict]:
    """The parameters every request of a kind carries (MESSAGES' `fixed`), in a world of `sizes`: a map-typed
    one as a tuple with every key alike.  The one reading of them the world's interpreters share."""
    return {name: {k: (tuple([v] * sizes[PARAM_TYPES[k].key]) if PARAM_TYPES[k].kind == "map" else v)
                   for k, v in m.fixed.items()}
            for name, m in MESSAGES.items()}

# What a client reads of each API's response: its response slot's variable -> the response
# field (a reply's member id may echo the request's: rows.ECHO)
READS: dict[str, dict] = {
    "JoinGroup": {"rs_error": "error", "rs_member": "member", "rs_gen": "generation", "rs_leader": "leader",
                  "rs_members": "members"},
    "SyncGroup": {"rs_error": "error", "rs_assignment": "assignment"},
    "Heartbeat": {"rs_error": "error"},
    "OffsetCommit": {"rs_error": "error_all"},
}


# -- what a row's outputs do to the closed world (spec/handling.py's ROUTES, as updates) ----
#
# The closed world's meaning of each route, as simultaneous updates of its variables, written
# in terms of the output's fields (`out.<field>`, `rec.<field>` for a group record), the
# member it is about (`at`) and the client whose request is being handled (`sender`; none:
# nobody waits for the answer).
# The checker compiles these; Z3 and TLA+ read the same terms.
SENDER = Param("sender", Dom(CLIENT))
AT = Param("at", Dom(MEMBER))       # the member an output is about: whose request it parks or answers
OUT = {name: Param("out." + name, t) for name, t in (
    ("member", Dom(MEMBER)), ("error", Error), ("error_all", Error), ("generation", INT),
    ("leader", Dom(MEMBER)), ("members", SetOf(MEMBER)), ("assignment", SetOf(PARTITION)),
    ("commit", MapOf(PARTITION, INT)), ("commit_parts", SetOf(PARTITION)))}
RESPONSE_VARS = ("rs", "rs_error", "rs_member", "rs_gen", "rs_leader", "rs_members", "rs_assignment")
MESSAGE_OF = {m.api: kind for kind, m in MESSAGES.items()}


@dataclass(frozen=True)
class Effect:
    """What a route does to the closed world when `when` holds: simultaneous updates."""
    when: object
    updates: dict


def _respond(to, api: str) -> dict:
    """Client `to`'s response slot gets the response to `api`: what the client reads of it
    (READS), the rest of the slot at its defaults."""
    reads = READS[api]
    upd = {"rs": W.rs.put(to, kd(MESSAGE_OF[api]))}
    for var in RESPONSE_VARS[1:]:
        decl = WORLD_VARS[WORLD_INDEX[var] - len(STATE_VARS)]
        upd[var] = getattr(W, var).put(to, OUT[reads[var]] if var in reads else lift(decl.initial, decl.type.value))
    return upd


def _routes() -> dict:
    from .handling import RECORD
    r = {}
    for api in READS:
        r[("reply", api)] = Effect(SENDER.is_some(), _respond(SENDER, api))
    for api in ("LeaveGroup", "LeaveMember"):     # the client has closed: nobody reads these
        r[("reply", api)] = Effect(FALSE(), {})
    for api, slot in (("JoinGroup", "parked_join"), ("SyncGroup", "parked_sync")):
        parked = getattr(W, slot)
        r[("park", api)] = Effect(TRUE(), {slot: parked.put(AT, SENDER)})   # a late request parks for nobody
        to = parked[AT]
        r[("answer", api)] = Effect(to.is_some(), {slot: parked.put(AT, none(CLIENT)),
                                                   **_respond(to, api)})
    # the log keeps the group's last record and every committed offset: a coordinator that takes
    # over loads both (GMM.loadGroupsAndOffsets)
    kept = {f: W.log[f] for f in GroupRecord.values}
    r[("append", "offsets")] = Effect(TRUE(), {"log_has": TRUE(), "log": Record(GroupRecord, **{
        **kept, "offsets": W.log["offsets"].put_all(OUT["commit_parts"], lambda p: OUT["commit"][p])})})
    for kind in ("sync", "empty", "static_replace", "create"):
        r[("append", kind)] = Effect(TRUE(), {"log_has": TRUE(), "log": Record(GroupRecord, **{
            **RECORD, "offsets": W.log["offsets"]})})
    # the record is gone: nothing can load it again (offset tombstones: offsets never expire here)
    r[("tombstone", "")] = Effect(TRUE(), {"log_has": FALSE(), "log": Record(GroupRecord, **{
        f: (W.log[f].fill(lift(record_initial(f, t), t.value)) if t.kind == "map" else lift(record_initial(f, t), t))
        for f, t in zip(GroupRecord.values, GroupRecord.args)})})
    return r


def record_initial(name: str, t):
    """An empty log's record field (of a map: each entry's): as the group's variable of that
    name starts (no committed offset: -1, as the group's `offsets`)."""
    group = {v.name: v.initial for v in STATE_VARS}
    if t.kind == "map":
        return group.get(name, NONE if t.value.kind == "dom" else 0)
    return group.get(name, default_of(t))


ROUTE_EFFECTS: dict = _routes()


@dataclass(frozen=True)
class Failover:
    """The coordinator moves (Action Failover), while it holds the group (`enabled`): the group
    is unloaded here (`unload`'s rows), the requests parked at the old coordinator are gone
    (`forget`), and the new one loads the log's last record (`load`'s rows with `record`) if the
    log holds one (`when`).  A group the coordinator does not hold has nothing to move: Kafka
    unloads and loads a partition's groups, and a world whose group never existed (or was
    deleted) is the same before and after."""
    enabled: object
    unload: str
    forget: Effect
    load: str
    record: object
    when: object


FAILOVER = Failover(Not(W.state == lift("Absent", GroupState)), "Unload",
                    Effect(TRUE(), {"parked_join": W.parked_join.fill(none(CLIENT)),
                                    "parked_sync": W.parked_sync.fill(none(CLIENT))}),
                    "Load", W.log, W.log_has)


# After every row the closed world records every member id the group holds as issued: ids are
# never reused (real ones are UUIDs).  The explicit and BMC hosts apply it as the bitwise union it
# is; the TLA+ export prints this term.
ISSUED = Effect(TRUE(), {"used_ids": W.used_ids | W.members | W.pending})

# A client that closes its connection (an action that `forgets`): the answers to its parked
# requests are never delivered to it, so the parked slots that name it are empty again.
FORGOTTEN = Effect(TRUE(), {slot: getattr(W, slot).put_all(getattr(W, slot).keys_where(lambda x: x == C),
                                                            lambda m: none(CLIENT))
                            for slot in ("parked_join", "parked_sync")})


# A write of a group record may fail (fault `append_failure`: NOT_ENOUGH_REPLICAS, the
# completion row sees the error).  Offset commits are always written here: a failed commit is
# answered with its error and changes nothing the world checks.
APPEND_ERRORS = (("NONE", ()), ("NOT_ENOUGH_REPLICAS", ("append_failure",)))


def append_errors(kind: str, cfg) -> list[str]:
    """The errors a write of `kind` may complete with in world `cfg` (APPEND_ERRORS)."""
    return [e for e, switches in APPEND_ERRORS
            if all(getattr(cfg, f) for f in switches) and (e == "NONE" or kind != "offsets")]


# -- the world's actions, and their fairness ----------------------------------------------
#
# Every way the closed world can move is one of these.  Fairness is declared here, per
# action, as TLA+ writes WF_vars(A) / SF_vars(A): a weakly fair action that stays enabled is
# eventually taken; a strongly fair one that is enabled again and again is; an unfair one
# (`none`) is the environment's free choice, or a fault.  Fairness holds per `per` (one
# condition for each client, each message in flight, each member's timer), and actions that
# name the same `process` share one condition, as the steps of a PlusCal `fair process` do.
# Liveness reads only this: renaming a row never changes fairness.
WEAK, STRONG, UNFAIR = "weak", "strong", "none"

# What each action does is declared with it (`how`), as data the world's step (spec/world_step.py)
# reads: every interpreter runs that one step, so a new action of one of these shapes is picked up
# by all of them.  `scope` says what the action reads and writes: its client's own variables
# ("client"), its client's request and the coordinator ("message"), or the coordinator alone
# ("group").


@dataclass(frozen=True)
class Slot:
    """Where a client's message waits in the network: its per-client variables, the kind first
    (none: the slot is empty); a request's others are REQ's fields, in REQ's order."""
    name: str
    vars: tuple

    # made once (hosts that compile terms and effects know them by identity)
    @cached_property
    def kind(self):
        return getattr(W, self.vars[0])[C]

    @cached_property
    def occupied(self):
        return Not(self.kind == kd("none"))

    @cached_property
    def emptied(self) -> "Effect":
        """Every variable of the slot back to its initial value, at client C."""
        ups = {}
        for name in self.vars:
            decl = WORLD_VARS[WORLD_INDEX[name] - N_GROUP]
            t = decl.type.value
            ups[name] = getattr(W, name).put(C, getattr(W, name)[C].fill(lift(decl.initial, t.value))
                                             if t.kind == "map" else lift(decl.initial, t))
        return Effect(TRUE(), ups)

    def moved_to(self, other: "Slot") -> "Effect":
        """What is in this slot moves to `other` (field by field), and this slot is emptied, at client C."""
        return Effect(TRUE(), {**self.emptied.updates,
                               **{o: getattr(W, o).put(C, getattr(W, v)[C]) for v, o in zip(self.vars, other.vars)}})


REQUEST = Slot("request", ("rq", "rq_member", "rq_gen", "rq_assign", "rq_parts"))
LATE = Slot("late request", ("rq_late", "rq_late_member", "rq_late_gen", "rq_late_assign", "rq_late_parts"))
RESPONSE = Slot("response", RESPONSE_VARS)
NOTHING = Effect(TRUE(), {})


@dataclass(frozen=True)
class FireClient:
    """The client's rows of the action's trigger (CLIENT_ROWS)."""
    scope = "client"
    label = "c{client}: {row}"


@dataclass(frozen=True)
class Lose:
    """The network loses what is in a client's `slot`."""
    slot: Slot
    label: str
    scope = "client"


@dataclass(frozen=True)
class Deliver:
    """The request in a client's `slot` reaches the coordinator, which handles it (if `when`, a
    condition on the client, also holds); `answered`: whether the client waits for the answer; `then`: what
    becomes of the request in the network (emptied: it has arrived; NOTHING: a copy stays in
    flight); `what`: how the request is named, `label`: how the step is."""
    slot: Slot
    answered: bool
    then: Effect
    what: str = "{kind}"
    label: str = "deliver c{client}'s {what}"
    when: object = None
    scope = "message"

    def offered(self, kind: str):
        """The condition on the client under which this delivers a request of `kind`."""
        return _offered(self, kind)


@dataclass(frozen=True)
class FireTimer:
    """The coordinator's timer of the action's trigger fires, where it is armed (`armed`)."""
    scope = "group"


@dataclass(frozen=True)
class Move:
    """The coordinator moves (FAILOVER)."""
    failover: Failover
    scope = "group"


@dataclass(frozen=True)
class Action:
    name: str
    meaning: str
    fairness: str             # WEAK, STRONG or UNFAIR
    per: str                  # what each fairness condition is about: client, message, member, group
    switch: tuple = ()        # the world's switches (WorldConfig fields) that enable it, any of them; () always
    timely: str = ""          # its fairness in a world of timely clients, if different
    process: str = ""         # actions whose fairness is one condition (a client's own progress)
    fault: bool = False       # a fault: no progress may depend on it
    forgets: bool = False     # the client closes its connection: answers to its parked requests are lost
    trigger: str = ""         # the table trigger it fires (client rows, coordinator timers)
    how: object = FireClient()   # what it does (the shapes above)


OWN = "its own progress"
ACTIONS: tuple[Action, ...] = (
    # the clients (spec/world.py's CLIENT_ROWS, one trigger each)
    Action("ClientStart", "a client starts and joins", WEAK, "client", process=OWN, trigger="ClientStart"),
    Action("ClientReceive", "a client reads the response in flight to it", WEAK, "client", process=OWN,
           trigger="ClientReceive"),
    Action("ClientTimeout", "a client gives up on a request (request.timeout.ms) and rejoins", WEAK, "client",
           ("loss", "reordering"), process=OWN, forgets=True, trigger="ClientTimeout"),
    Action("ClientRestart", "a crashed consumer process is started again", WEAK, "client", ("restart",),
           process=OWN, fault=True, forgets=True, trigger="ClientRestart"),
    Action("ClientHeartbeat", "a stable client heartbeats (its heartbeat thread)", UNFAIR, "client",
           timely=STRONG, trigger="ClientHeartbeat"),
    Action("ClientCommit", "a stable client commits the offsets of the partitions it owns", UNFAIR, "client",
           ("commits",), trigger="ClientCommit"),
    Action("ClientLeave", "a stable dynamic member closes and leaves the group", UNFAIR, "client", ("leaves",),
           trigger="ClientLeave"),
    Action("ClientLeaveRebalancing", "a dynamic member closes during a rebalance and leaves the group", UNFAIR,
           "client", ("leaves_rebalancing",), forgets=True, trigger="ClientLeaveRebalancing"),
    Action("ClientCrash", "the consumer process dies", UNFAIR, "client", ("crash",), fault=True, forgets=True,
           trigger="ClientCrash"),
    Action("ClientOvertake", "a client gives up on a request still in the network, which arrives late",
           UNFAIR, "client", ("reordering",), trigger="ClientOvertake"),
    # a hung poll loop (fault `hung_poll`, the class of KAFKA-12890): none of its moves is fair, or
    # the heartbeat thread's leave would unstick the group by itself and hide a coordinator that
    # never removes the member
    Action("ClientHang", "a client's poll loop hangs after its JoinGroup response, before SyncGroup", UNFAIR,
           "client", ("hung_poll",), fault=True, trigger="ClientHang"),
    Action("ClientHungHeartbeat", "a hung client's heartbeat thread heartbeats", UNFAIR, "client", ("hung_poll",),
           trigger="ClientHungHeartbeat"),
    Action("ClientPollTimeout", "a hung client's heartbeat thread leaves the group at max.poll.interval.ms", UNFAIR,
           "client", ("hung_poll",), fault=True, trigger="ClientPollTimeout"),
    # the network
    Action("Deliver", "the coordinator receives a client's request and handles it (spec/handling.py)", WEAK,
           "message", how=Deliver(REQUEST, True, REQUEST.emptied)),
    Action("DeliverLate", "a request its client gave up on, or a late copy, reaches the coordinator; nobody reads "
           "the answer", WEAK, "message", ("reordering", "late_duplication"),
           how=Deliver(LATE, False, LATE.emptied, what="late {kind}")),
    Action("Duplicate", "the coordinator receives a request and a copy of it stays in flight", UNFAIR, "message",
           ("duplication",), fault=True,
           how=Deliver(REQUEST, True, NOTHING, label="deliver c{client}'s {what} (a copy stays in flight)")),
    # a copy that arrives again after the client's later requests (a retransmission delayed in the network,
    # a proxy that retries): the copy waits as a late request, and DeliverLate delivers it
    Action("DuplicateLate", "the coordinator receives a request, and a copy of it arrives again later, after the "
           "client's next requests", UNFAIR, "message", ("late_duplication",), fault=True,
           how=Deliver(REQUEST, True, REQUEST.moved_to(LATE), when=LATE.kind == kd("none"),
                       label="deliver c{client}'s {what} (a copy arrives again later)")),
    Action("LoseRequest", "the network loses a client's request", UNFAIR, "client", ("loss",), fault=True,
           how=Lose(REQUEST, "the network loses c{client}'s request")),
    Action("LoseResponse", "the network loses the response to a client", UNFAIR, "client", ("loss",),
           fault=True, how=Lose(RESPONSE, "the network loses the response to c{client}")),
    # the coordinator's timers: an armed timer eventually fires
    Action("HeartbeatExpiry", "a member's session timer fires", WEAK, "member", ("expiry",),
           trigger="HeartbeatExpiry", how=FireTimer()),
    Action("PendingExpiry", "a pending member's timer fires", WEAK, "member", ("expiry",), trigger="PendingExpiry",
           how=FireTimer()),
    Action("JoinTimer", "the delayed join expires", WEAK, "group", trigger="JoinTimer", how=FireTimer()),
    Action("SyncTimer", "the pending-sync timer expires", WEAK, "group", trigger="SyncTimer", how=FireTimer()),
    # the coordinator moves: unloaded here, loaded from the log there
    Action("Failover", "the group's offsets partition moves: Unload, then Load of the log's last record",
           UNFAIR, "group", ("failover",), fault=True, how=Move(FAILOVER)),
)
ACTION_BY_NAME = {a.name: a for a in ACTIONS}
# When each timer action may fire: when the table's timer of its trigger is armed (table.TIMERS),
# per member for a member's timer.  Timely clients rejoin within the rebalance timeout and sync
# within the session timeout, so a world of them never sees these timers fire (the initial
# delay still does):
TIMELY_SILENT = ("join", "sync")


def armed(trigger: str, timely: bool) -> list:
    """The conditions under which a timer of `trigger` may fire in a world (timely or not): the
    table's armed conditions of that trigger's timers (table.TIMERS), minus TIMELY_SILENT's."""
    from .table import TIMERS
    return [cond for name, (trig, cond) in TIMERS.items() if trig == trigger and not (timely and name in TIMELY_SILENT)]


TIMER_LABELS = {"HeartbeatExpiry": "session timer of m{member} fires",
                "PendingExpiry": "pending timer of m{member} fires",
                "JoinTimer": "the delayed join expires", "SyncTimer": "the sync timer expires"}
CLIENT_TRIGGERS = tuple(a.trigger for a in ACTIONS if a.trigger.startswith("Client"))
# the client triggers whose rows send LeaveGroup: a static member (group.instance.id) never does
# (AbstractCoordinator.maybeLeaveGroup: its membership ends only by session expiry, KIP-345); a hung
# static member past max.poll.interval.ms only stops heartbeating, which the coordinator sees as a crash
LEAVE_TRIGGERS = ("ClientLeave", "ClientLeaveRebalancing", "ClientPollTimeout")


def fairness(action: Action, timely: bool) -> str:
    return action.timely if timely and action.timely else action.fairness


def switched_on(action: Action, cfg) -> bool:
    """Whether a world's switches enable an action: any of its switches is on."""
    return not action.switch or any(getattr(cfg, f) for f in action.switch)


def offered_to(action: Action, cfg, static: bool) -> bool:
    """Whether a client may take the action in world `cfg`: its switches, and a static member
    (group.instance.id) never sends LeaveGroup (LEAVE_TRIGGERS)."""
    return switched_on(action, cfg) and not (static and action.trigger in LEAVE_TRIGGERS)


_OFFERED: dict = {}


def _offered(how: Deliver, kind: str):
    """Made once per delivery and kind: hosts that compile terms know them by identity."""
    got = _OFFERED.get((id(how), kind))
    if got is None:
        is_kind = how.slot.kind == kd(kind)
        got = _OFFERED[(id(how), kind)] = (how, is_kind if how.when is None else how.when & is_kind)
    return got[1]


# -- the bounds of a world's search -----------------------------------------------------------
# Steps a bound cuts are the search's, not the protocol's: a state whose successors a bound cut
# is no deadlock (the TLA+ export lets it stutter).
#
# The generation bound: a coordinator step that takes the group past `max_generation` is cut.  A
# world with a rebalance budget makes the bound a property instead: one generation more is kept,
# for the invariant `rebalance-budget` to report.
MAX_GENERATION = Param("max_generation", INT)
_WITHIN = {budget: W.generation <= (MAX_GENERATION + 1 if budget else MAX_GENERATION) for budget in (False, True)}


def within_bound(cfg):
    """The condition a coordinator step's end must meet not to be cut (the generation bound)."""
    return _WITHIN[bool(cfg.rebalance_budget)]


# The member-id budget: a JoinGroup without a member id once every id of the member domain was
# issued (FRESH names none) is cut.  Real ids are UUIDs, never spent.
FRESH_ID = Param("fresh", Dom(MEMBER))
ID_BUDGET_SPENT = REQ["member"].is_none() & FRESH_ID.is_none()


# coordinator triggers the closed world never fires, and why
NOT_IN_WORLD = {
    "OffsetFetch": "the clients never send OffsetFetch (it reads offsets; no protocol decision depends on it)",
    "DescribeGroup": "the clients never send DescribeGroups (an admin request)",
    "ListGroups": "the clients never send ListGroups (an admin request)",
    "ListGroupsEntry": "the clients never send ListGroups (an admin request)",
    "DeleteGroup": "the clients never send DeleteGroups (an admin request)",
    "ExpireOffsets": "offsets never expire in the closed world (no retention clock)",
    "MarkDead": "the closed world never deletes the group's partition",
}


# -- end-to-end properties --------------------------------------------------------------

def _stable_now():
    """Clients that are stable and believe they are in the group's current generation."""
    return W.c_phase.keys_where(lambda p: p == ph("stable"))


def _current(c):
    return W.c_gen[c] == W.generation


from .invariants import Invariant  # noqa: E402
from .lang import Exists, ForAll, Implies  # noqa: E402

WORLD_INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "no-shared-partition",
        "No two clients that believe they are in the current generation own the same partition.",
        ForAll(_stable_now(), lambda a: ForAll(_stable_now(), lambda b: Or(
            a == b, Not(_current(a) & _current(b)), (W.c_owned[a] & W.c_owned[b]).is_empty()))),
        "the consumer's contract with the coordinator; seeds 001, 004", scope="closed-world",
        note="Static membership breaks it by design: a second process with the same group.instance.id "
             "replaces the member id without a rebalance (GC.updateStaticMemberAndRebalance), so the old "
             "process keeps its partitions in the same generation until its next heartbeat or commit is "
             "fenced (groupspec check --preset static --no-waivers; tests/scenarios/findings.yaml)."),
    Invariant(
        "no-shared-partition-among-members",
        "No two clients whose member ids are members of the group and that believe they are in its current "
        "generation own the same partition.",
        ForAll(_stable_now(), lambda a: ForAll(_stable_now(), lambda b: Or(
            a == b, Not(_current(a) & _current(b)), Not(W.c_member[a].in_(W.members)),
            Not(W.c_member[b].in_(W.members)), (W.c_owned[a] & W.c_owned[b]).is_empty()))),
        "GC.updateStaticMemberAndRebalance (a replaced member id is no longer a member: fenced)",
        scope="closed-world"),
    Invariant(
        "assignment-delivered",
        "A client that is stable in the group's current generation, with a member id of the group, owns "
        "exactly the partitions the group assigns that member.",
        ForAll(_stable_now(), lambda a: Or(Not(_current(a)), Not(W.c_member[a].in_(W.members)),
                                           W.c_owned[a] == W.assignment[W.c_member[a]])),
        "GC.setAndPropagateAssignment, GC.doSyncGroup (Stable: the stored assignment)", scope="closed-world"),
    Invariant(
        "stable-assignment-covers",
        "In a Stable group every partition is assigned to some member (the leader's assignor runs over every "
        "member that joined).",
        Implies(W.state == lift("Stable", GroupState),
                ForAll(W.offsets.keys_where(lambda v: TRUE()),     # every partition: the keys of a partition map
                       lambda p: Exists(W.members, lambda m: p.in_(W.assignment[m])))),
        "the leader's assignor (RangeAssignor), GC.setAndPropagateAssignment; seed 004", scope="closed-world"),
    Invariant(
        "offsets-durable",
        "While the coordinator holds the group, its committed offsets are exactly those in the log: an "
        "acknowledged commit is never lost, not even by a coordinator failover, and nothing is committed that "
        "the log does not hold.",
        Implies(Not(Or(W.state == lift("Absent", GroupState), W.state == lift("Dead", GroupState))),
                W.offsets == W.log["offsets"]),
        "GMM.storeOffsets (the cache is updated only once the append succeeds), GMM.loadGroupsAndOffsets",
        scope="closed-world",
        note="The closed world completes appends at once, so between steps nothing is in flight to the log."),
    Invariant(
        "membership-durable",
        "A Stable group is what its last record in the log says: the same generation, protocol, leader and "
        "members, and each member's assignment. Whatever a Stable group holds about its membership is stored, "
        "so a coordinator that takes over loads this very group: no member id or assignment is answered that "
        "the log does not hold.",
        Implies(W.state == lift("Stable", GroupState),
                W.log_has & (W.generation == W.log["generation"]) & (W.protocol == W.log["protocol"])
                & (W.leader == W.log["leader"]) & (W.members == W.log["members"])
                & ForAll(W.members, lambda m: W.assignment[m] == W.log["assignment"][m])),
        "GC.doSyncGroup (setAndPropagateAssignment only in storeGroup's callback, once the append succeeded), "
        "GC.updateStaticMemberAndRebalance (in Stable the new member id is stored before its JoinGroup is "
        "answered, and reverted if the append fails), GMM.storeGroup, GMM.loadGroupsAndOffsets",
        scope="closed-world",
        note="The closed world completes appends at once, so between steps no group record is in flight to the "
             "log; where appends take time, a Stable group runs ahead of its record while a static member's new "
             "id is being stored. Assignments are compared for members only: GMM.storeGroup writes one per "
             "member, whatever else the leader sent."),
    Invariant(
        "no-fencing-by-an-older-generation",
        "No client holds an assignment of a generation newer than the group's (a group the coordinator does "
        "not hold counts as generation 0): a SyncGroup is answered only once its generation is stored, so not "
        "even a coordinator failover takes the group back behind a client's assignment, to fence it "
        "(ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID) by an older generation or a group it has lost.",
        ForAll(_stable_now(), lambda c: W.c_gen[c] <= W.generation),
        "GC.doSyncGroup (answered in storeGroup's callback), GMM.loadGroupsAndOffsets (the last stored "
        "generation), GC.validateHeartbeat, GC.validateOffsetCommit (a generation other than the group's is "
        "fenced)",
        scope="closed-world",
        note="Only the generation: member ids have no order (Kafka's are UUIDs), so the closed world cannot "
             "tell a client fenced by an older member id of its group.instance.id (a replacement answered but "
             "never stored, KAFKA-10284) from a zombie fenced by a newer one. membership-durable catches that "
             "at its cause: the replacement is answered while the log still holds the old id."),
    Invariant(
        "rebalance-budget",
        "In a world of timely clients without faults, the group needs at most one generation per membership "
        "change (each client joins once and leaves at most once): no rebalance happens that no client caused, "
        "so there is no endless rebalance loop.",
        W.generation <= GENERATION_BUDGET,
        "GC.prepareRebalance is called only for a join of a new member, a rejoin of the leader or with new "
        "metadata, a leave, an expiry or a failed append; seeds 001, 003", scope="closed-world",
        note="Checked only in worlds that declare the budget (`timely`, no faults, `rebalance_budget`: preset "
             "`settle`), whose generation bound is then the property: a rebalance loop reaches it."),
    Invariant(
        "no-shared-member-id",
        "No two live clients hold the same member id.",
        ForAll(W.c_member.keys_where(lambda m: m.is_some()), lambda a: ForAll(
            W.c_member.keys_where(lambda m: m.is_some()), lambda b: Or(
                a == b, Not(W.c_member[a] == W.c_member[b]),
                W.c_phase[a] == ph("crashed"), W.c_phase[a] == ph("left"),
                W.c_phase[b] == ph("crashed"), W.c_phase[b] == ph("left")))),
        "GM.generateMemberId (clientId-UUID: every id is new)", scope="closed-world"),
)


# -- where a behaviour may end -------------------------------------------------------------
# The world has ended when every client has left, crashed or hangs (a hung poll loop gets no
# assignment whatever the coordinator does): nothing is owed to anyone, and the world may stop
# there.  Anywhere else a state without a successor is a deadlock, unless a bound of the search
# (the generation bound, the member-id budget) cut its successors off: those steps are the
# search's, not the protocol's (the TLA+ export lets them stutter, and lets an ended world stop).
ENDED = W.c_phase.keys_where(lambda p: Not(Or(p == ph("left"), p == ph("crashed"), p == ph("hung")))).is_empty()
