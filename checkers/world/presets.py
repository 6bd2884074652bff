"""The worlds the checkers explore: what a closed world is made of, and the named ones.

`WorldConfig` is a world's configuration: its bounds (clients, topics,
partitions, generations, member ids), the faults it switches on, and the
invariants it waives and why.  `PRESETS` are the worlds the command line,
the tests and the benchmarks name.  `world_problem` says what in a
configuration cannot be served: values that make no world (no client, a
preset's group.instance.ids for another number of clients), and sizes past
`WORLD_LIMITS`.  The limits were measured on this kind of machine, but they
bound the configuration's own fields, so they live beside them: whoever
adds a bound adds its limit here, and a library caller meets the same
refusal as the command line.  What turns a configuration into a transition
system is `checkers/world/state_space.py`.
"""
from __future__ import annotations

from dataclasses import dataclass

from groupspec.spec.schema import INSTANCE, MEMBER, PARTITION, PROTOCOL, PROTOLIST, PTYPE
from groupspec.spec.world import CLIENT


@dataclass
class WorldConfig:
    clients: int = 2
    topics: int = 1
    partitions: int = 2            # per topic
    max_generation: int = 2
    member_ids: int = 4            # how many member ids the coordinator may ever issue
    crash: bool = True
    expiry: bool = True            # session and pending-member timers fire
    failover: bool = True          # the coordinator unloads and a new one loads the last record
    append_failure: bool = True    # a group-metadata append may fail
    commits: bool = True
    leaves: bool = True
    max_size: int = 1 << 30        # group.max.size
    instances: tuple | None = None  # each client's group.instance.id (an index; equal ones: a zombie), or None
    restart: bool = False          # a crashed client may be restarted
    loss: bool = False             # the network may lose a request or response (clients time out)
    waive: tuple = ()              # ((invariant, why), ...): invariants this world does not check, and why
    duplication: bool = False      # the network may deliver a request twice
    reordering: bool = False       # a request may be overtaken by its client's later ones (spec/world.py)
    late_duplication: bool = False  # a request's copy may arrive again after its client's later ones
    # Timely clients: every client rejoins within the rebalance timeout and syncs within the session
    # timeout, so the DelayedJoin completes when all have rejoined (it never expires) and the
    # pending-sync timer never fires (the initial delay still does).  In such a world without faults
    # the group needs one generation per membership change, and the generation bound becomes a
    # property: a successor cut by it is a rebalance no client caused (`rebalance_budget`).
    timely: bool = False
    rebalance_budget: bool = False
    # A client's poll loop may hang after its JoinGroup response: it never syncs, and its heartbeat
    # thread keeps heartbeating (spec/world.py).  Only worlds without session expiry say that the
    # heartbeats keep its session alive: under abstract time an armed session timer may fire anyway.
    hung_poll: bool = False
    # A dynamic member may close while the group rebalances (its JoinGroup or SyncGroup parked or
    # answered, not yet read), sending LeaveGroup: `leaves` lets only a stable member leave.
    leaves_rebalancing: bool = False

    FAULTS = ("crash", "expiry", "failover", "append_failure", "loss", "duplication", "reordering", "restart",
              "hung_poll", "late_duplication")

    def __post_init__(self):
        if self.rebalance_budget:
            faults = [f for f in self.FAULTS if getattr(self, f)]
            if faults or not self.timely:
                raise ValueError(
                    "--rebalance-budget holds only for timely clients without faults (a fault or a timeout may "
                    "cause a rebalance no client asked for); turn on --timely and turn off: "
                    f"{', '.join('--' + f.replace('_', '-') for f in faults) or 'nothing else'}")

    def sizes(self) -> dict:
        n_inst = max(1, len({i for i in (self.instances or ()) if i is not None}))
        return {MEMBER: self.member_ids, INSTANCE: n_inst, PARTITION: self.topics * self.partitions, PROTOCOL: 1,
                PROTOLIST: 1, PTYPE: 1, CLIENT: self.clients}

    def symmetry_classes(self) -> list[list[int]]:
        """Clients that renaming may exchange: those configured alike (the same group.instance.id)."""
        inst = self.instances or (None,) * self.clients
        classes: dict = {}
        for c in range(self.clients):
            classes.setdefault(inst[c], []).append(c)
        return list(classes.values())



PRESETS: dict[str, WorldConfig] = {
    "tiny": WorldConfig(clients=2, topics=1, partitions=2, max_generation=1, member_ids=3, crash=False,
                        expiry=False, failover=False, append_failure=False, commits=False, leaves=True),
    "small": WorldConfig(clients=2, topics=1, partitions=2, max_generation=1, member_ids=3, crash=True,
                         expiry=True, failover=False, append_failure=False, commits=False, leaves=True),
    # the tiny world over two generations: stale requests of an older generation, leader re-election
    "twogen": WorldConfig(clients=2, topics=1, partitions=2, max_generation=2, member_ids=3, crash=False,
                          expiry=False, failover=False, append_failure=False, commits=False, leaves=True),
    # every fault but reordering at one generation (seconds)
    "faults": WorldConfig(clients=2, topics=1, partitions=2, max_generation=1, member_ids=3, crash=True,
                          expiry=True, failover=True, append_failure=True, commits=True, leaves=True),
    # every fault but reordering, two generations, two topics of two partitions: the largest world
    # measured to fit CI's two minutes (3.4M states, 80 s with 2 workers); a third client takes it
    # far past 25M states (docs/guide/verify.md, "Why ci has 2 clients"): CI runs settle3 for 3 clients
    "ci": WorldConfig(clients=2, topics=2, partitions=2, max_generation=2, member_ids=4, crash=True, expiry=True,
                      failover=True, append_failure=True, commits=True, leaves=True),
    # static membership (KIP-345): two consumer processes configured with the same group.instance.id
    # (a zombie and its replacement), crashes and restarts
    "static": WorldConfig(clients=2, topics=1, partitions=2, max_generation=2, member_ids=4, crash=True,
                          expiry=True, failover=False, append_failure=True, commits=False, leaves=True,
                          instances=(0, 0), restart=True,
                          waive=(("no-shared-partition", "two processes share one group.instance.id: Kafka "
                                  "fences the old one only at its next heartbeat or commit (KIP-345); "
                                  "no-shared-partition-among-members is what holds"),)),
    # timely clients, no faults: the group needs one generation per membership change (a join and
    # a leave per client), so the generation bound is a property (rebalance-budget): a rebalance
    # loop, a rejoin no client needed, breaks it; no bound cuts these worlds, so liveness is exact
    # in them (a livelock within one generation is a lasso)
    "settle": WorldConfig(clients=2, topics=2, partitions=2, max_generation=4, member_ids=4, crash=False,
                          expiry=False, failover=False, append_failure=False, commits=True, leaves=True,
                          timely=True, rebalance_budget=True),
    "settle3": WorldConfig(clients=3, topics=2, partitions=2, max_generation=6, member_ids=6, crash=False,
                           expiry=False, failover=False, append_failure=False, commits=True, leaves=True,
                           timely=True, rebalance_budget=True),
    # KAFKA-12890's world: a client's poll loop may hang after its JoinGroup response, heartbeating
    # but never syncing; no session expiry, because the hung client's heartbeats keep its session
    # alive (so only the pending-sync timeout can remove it); two generations, for the group to
    # settle again after the timeout.  Its liveness check (seconds) is what catches a coordinator
    # that lets a heartbeat stand in for the SyncGroup.
    "hung": WorldConfig(clients=2, topics=1, partitions=2, max_generation=2, member_ids=3, crash=False,
                        expiry=False, failover=False, append_failure=False, commits=False, leaves=True,
                        hung_poll=True),
    "deep": WorldConfig(clients=3, topics=2, partitions=2, max_generation=3, member_ids=6, crash=True, expiry=True,
                        failover=True, append_failure=True, commits=True, leaves=True),
}


# What a world may ask for: the CLI refuses more, saying why (measured on this kind of machine).
WORLD_LIMITS = {
    # every client multiplies the states about sixfold per level: 3 clients with faults do not
    # finish in hours (`deep`), 4 without faults pass 500,000 states at depth 34, and 8 reach
    # only depth 23 by then
    "clients": (8, "the states grow about sixfold per client and level: 4 clients without faults "
                   "already pass 500,000 states, and 8 reach only depth 23 by then"),
    # a member id is an entry of every per-member map of every state, and a new one may be issued
    # at each join: on `small`, 64 ids run at 12k states/s against 32k with 3, and the states grow
    "member_ids": (64, "each id is an entry of every per-member map of every state and may be issued "
                       "at any join (the presets use 3 to 6; 64 already run at a third of their speed)"),
    # every state holds each partition's committed offset; the partitions do not add states
    "partitions_total": (1024, "every state holds each partition's committed offset (topics x "
                               "partitions), and more partitions add no behaviour to the world"),
    # Kafka's generationId is an int32
    "max_generation": (2**31 - 1, "Kafka's generation id is an int32"),
}


def world_problem(cfg: WorldConfig) -> str | None:
    """What in `cfg` the checker cannot serve, as a message naming the option, or None."""
    for name, least in (("clients", 1), ("topics", 1), ("partitions", 1), ("member_ids", 1),
                        ("max_generation", 1)):
        value = getattr(cfg, name)
        if value < least:
            why = " (with 0 no join can complete: the first generation is 1)" if name == "max_generation" else ""
            return f"--{name.replace('_', '-')} must be at least {least}, got {value}{why}"
    for name in ("clients", "member_ids", "max_generation"):
        limit, why = WORLD_LIMITS[name]
        if getattr(cfg, name) > limit:
            return f"--{name.replace('_', '-')} {getattr(cfg, name):,}: at most {limit:,}, because {why}"
    limit, why = WORLD_LIMITS["partitions_total"]
    if cfg.topics * cfg.partitions > limit:
        return (f"--topics {cfg.topics:,} x --partitions {cfg.partitions:,}: at most {limit:,} partitions in "
                f"all, because {why}")
    if cfg.instances is not None and len(cfg.instances) != cfg.clients:
        return (f"--clients {cfg.clients}: this preset gives its {len(cfg.instances)} clients their "
                f"group.instance.ids, so it needs exactly {len(cfg.instances)} clients")
    return None
