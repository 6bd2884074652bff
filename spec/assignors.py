"""Kafka's two classic consumer-side partition assignors, as pure functions.

In the classic group protocol the group coordinator does not assign
partitions: the member elected leader runs the assignor the group agreed on
(``partition.assignment.strategy``) over every member's subscription and
sends the result back in its SyncGroup request.  This module holds the two
built-in assignors that predate the sticky ones:

* ``range``      -- ``org.apache.kafka.clients.consumer.RangeAssignor``
* ``roundrobin`` -- ``org.apache.kafka.clients.consumer.RoundRobinAssignor``

Both extend ``AbstractPartitionAssignor``, whose ``assign(Cluster, ...)``
first builds ``partitionsPerTopic`` from metadata (leaving out topics with no
metadata) and then calls the abstract
``assign(Map<String, Integer> partitionsPerTopic, Map<String, Subscription>)``.
The functions here are that inner method: they take the partition counts and
the subscriptions and return ``{member id: [partitions]}``.

Sources: the Java classes above in apache/kafka
(``clients/src/main/java/org/apache/kafka/clients/consumer/``, together with
``internals/AbstractPartitionAssignor.java`` and
``common/utils/CircularIterator.java``), and the seed article
``004_484d9133ec216657.txt`` ("Kafka为Consumer分派分区:RangeAssignor和
RoundRobinAssignor"), whose worked examples are in
``scenarios/assignors-from-seed-004.yaml``.

Ordering of names: Kafka sorts member ids (``Collections.sort`` /
``Utils.sorted``) and topics (``TreeSet``) with ``String.compareTo``, which
compares UTF-16 code units.  Python compares code points.  The two orders are
the same for ASCII (and for any text in the Basic Multilingual Plane); they
differ only when a character outside the BMP (encoded in Java as a surrogate
pair, U+D800..U+DFFF) is compared with one in U+E000..U+FFFF.  Member ids
(client.id + "-" + UUID) and topic names (``[a-zA-Z0-9._-]``) are ASCII in
practice, so plain ``sorted`` is used.

Deliberate differences from the Java code, none of which changes which
partitions a member gets:

* A member's list is in (topic, partition) order.  Kafka's RangeAssignor walks
  topics in ``HashMap`` iteration order, so in Java the order of topics within
  one member's list is an accident of hashing; here topics are walked sorted.
  (RoundRobin's lists are in that order in Java too.)
* Each member's subscription is treated as a set.  In Kafka it comes from
  the consumer's ``Set<String>`` subscription, so it never holds a topic
  twice; the Java RangeAssignor would count a member twice for a topic
  listed twice, which cannot happen in a real group.
* An empty group gives ``{}``.  Java's RoundRobinAssignor would throw from
  ``new CircularIterator`` on an empty member list.
* A negative partition count is rejected with ``ValueError`` (Java throws
  from ``new ArrayList<>(negative)``); a count of 0 gives no partitions
  (Kafka's metadata step already leaves such topics out).
* Bounds (``ValueError`` saying which and why, before any work): a topic's
  partition count is at most ``MAX_TOPIC_PARTITIONS`` (2**31 - 1: Kafka
  holds it in an int32), and the subscribed topics hold at most
  ``MAX_PARTITIONS`` partitions together.  The result lists every partition,
  so its time and memory grow with that total (measured: a million
  partitions over 1,000 members take 0.25 s and 110 MB); Kafka itself could
  not lay out billions of partitions in one consumer's heap either.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping

__all__ = [
    "ASSIGNORS",
    "MAX_PARTITIONS",
    "MAX_TOPIC_PARTITIONS",
    "Partition",
    "format_partition",
    "parse_partition",
    "range_assign",
    "roundrobin_assign",
]

Partition = tuple[str, int]
"""A topic partition, ``(topic, partition number)``: Kafka's ``TopicPartition``."""

Assignment = dict[str, list[Partition]]

MAX_TOPIC_PARTITIONS = 2**31 - 1
"""A topic's largest partition count: Kafka holds it in an int32."""

MAX_PARTITIONS = 1_000_000
"""The most partitions the subscribed topics may hold together (see the module docstring)."""


# --------------------------------------------------------------------------
# input normalisation shared by both assignors
# --------------------------------------------------------------------------


def _topic_sets(subscriptions: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    """Each member's subscribed topics as a set (see the module docstring)."""
    result: dict[str, frozenset[str]] = {}
    for member, topics in subscriptions.items():
        if not isinstance(member, str):
            raise TypeError(f"member id must be a str, got {member!r}")
        if isinstance(topics, (str, bytes)):
            # A bare string is iterable, and would silently subscribe to its
            # characters; it is almost certainly a mistake for [topic].
            raise TypeError(
                f"subscription of member {member!r} must be an iterable of topic "
                f"names, not the single string {topics!r}"
            )
        topic_set = frozenset(topics)
        for topic in topic_set:
            if not isinstance(topic, str):
                raise TypeError(f"topic of member {member!r} must be a str, got {topic!r}")
        result[member] = topic_set
    return result


def _partition_count(partitions_per_topic: Mapping[str, int], topic: str) -> int | None:
    """The partition count of ``topic``, or None if the metadata has no entry."""
    count = partitions_per_topic.get(topic)
    if count is None:
        return None
    if isinstance(count, bool) or not isinstance(count, int):
        raise TypeError(f"partition count of topic {topic!r} must be an int, got {count!r}")
    if count < 0:
        raise ValueError(f"partition count of topic {topic!r} must be >= 0, got {count}")
    if count > MAX_TOPIC_PARTITIONS:
        raise ValueError(f"partition count of topic {topic!r} is {count:,}, more than a topic can have: "
                         f"Kafka holds it in an int32 (at most {MAX_TOPIC_PARTITIONS:,})")
    return count


def _partition_counts(partitions_per_topic: Mapping[str, int], topics: Iterable[str]) -> dict[str, int]:
    """The partition count of each of `topics` that the metadata has, checked and bounded
    before anything is laid out (both assignors list every partition of these topics)."""
    counts = {}
    for topic in topics:
        count = _partition_count(partitions_per_topic, topic)
        if count is not None:
            counts[topic] = count
    total = sum(counts.values())
    if total > MAX_PARTITIONS:
        raise ValueError(f"the subscribed topics have {total:,} partitions together, more than the "
                         f"{MAX_PARTITIONS:,} an assignment is computed for here (it lists every partition, "
                         f"so time and memory grow with the total); use fewer or smaller topics")
    return counts


def _empty_assignment(members: Iterable[str]) -> Assignment:
    # Both Java assignors start by putting an empty list for every member, so
    # a member that gets nothing still appears in the result.
    return {member: [] for member in sorted(members)}


# --------------------------------------------------------------------------
# RangeAssignor
# --------------------------------------------------------------------------


def range_assign(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Iterable[str]],
) -> dict[str, list[Partition]]:
    """Kafka's ``RangeAssignor.assign(partitionsPerTopic, subscriptions)``.

    Works topic by topic (RangeAssignor's javadoc; seed 004, "RangeAssignor是
    逐个topic进行分区计算的"):

    1. invert the subscriptions into topic -> consumers subscribed to it;
    2. for each topic, skip it if ``partitions_per_topic`` has no entry for it
       (Kafka's ``if (numPartitionsForTopic == null) continue;`` -- the
       metadata step has already logged "Skipping assignment for topic ...");
    3. sort that topic's consumers by member id;
    4. with ``n`` partitions and ``c`` consumers, consumer ``i`` (0-based)
       gets the contiguous range starting at ``(n // c) * i + min(i, n % c)``
       of length ``n // c`` plus one if ``i < n % c``: the first ``n % c``
       consumers get one extra partition.

    Seed example: topic ``t`` with 5 partitions, consumers c0, c1, c2 gives
    c0: [t-0, t-1], c1: [t-2, t-3], c2: [t-4].  Because each topic is split
    on its own, the same first consumers get the extra partition of every
    topic, so with several topics the load can be lopsided (seed: Ta and Tb of
    2 partitions, three consumers -> Cc gets nothing).

    Every member of ``subscriptions`` is a key of the result, possibly with an
    empty list.  Each member's list is in (topic, partition) order.
    """
    topic_sets = _topic_sets(subscriptions)
    assignment = _empty_assignment(topic_sets)

    consumers_per_topic: dict[str, list[str]] = {}
    for member, topics in topic_sets.items():
        for topic in topics:
            consumers_per_topic.setdefault(topic, []).append(member)

    # Kafka iterates its HashMap of topics; any order gives the same sets of
    # partitions per member, and sorted topics keep each member's list sorted.
    counts = _partition_counts(partitions_per_topic, consumers_per_topic)
    for topic in sorted(counts):
        count = counts[topic]
        # Plain string order == Java String.compareTo for ASCII ids (see the
        # module docstring).
        consumers = sorted(consumers_per_topic[topic])
        per_consumer, with_extra = divmod(count, len(consumers))
        for i, member in enumerate(consumers):
            start = per_consumer * i + min(i, with_extra)
            length = per_consumer + (1 if i < with_extra else 0)
            assignment[member].extend((topic, p) for p in range(start, start + length))
    return assignment


# --------------------------------------------------------------------------
# RoundRobinAssignor
# --------------------------------------------------------------------------


def roundrobin_assign(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Iterable[str]],
) -> dict[str, list[Partition]]:
    """Kafka's ``RoundRobinAssignor.assign(partitionsPerTopic, subscriptions)``.

    Lays out every partition of every subscribed topic, topics sorted by name
    (a ``TreeSet``) and partitions by number, skipping topics missing from
    ``partitions_per_topic``; then deals them round the members sorted by
    member id (RoundRobinAssignor's javadoc; seed 004, "首先将这个group中的所有
    consumer订阅的所有的topic-partition按顺序展开,然后,依次对于每一个
    topic-partition,在consumer进行round robin").

    How the dealing advances, exactly as Kafka's ``CircularIterator`` loop::

        while (!subscriptions.get(assigner.peek()).topics().contains(topic))
            assigner.next();
        assignment.get(assigner.next()).add(partition);

    There is one cursor over the sorted members for the whole assignment; it
    is never reset between partitions or topics.  For each partition, members
    at the cursor that do not subscribe to the partition's topic are passed
    over (the cursor moves past them, and they are not owed anything for
    it); the first member that subscribes gets the partition and the cursor
    moves one past it.  So the next partition starts looking at the member
    after the one that was just served, not after the ones that were skipped.

    When every member subscribes to the same topics this is a plain deal, and
    member counts differ by at most one.  When subscriptions differ it can be
    badly unbalanced (RoundRobinAssignor's javadoc: C0 on t0, C1 on t0, t1,
    C2 on t0, t1, t2, with 1, 2 and 3 partitions -> C0: [t0-0], C1: [t1-0],
    C2: [t1-1, t2-0, t2-1, t2-2]).

    Seed examples: t0 and t1 of 3 partitions, C0 and C1 on both ->
    C0: [t0-0, t0-2, t1-1], C1: [t0-1, t1-0, t1-2]; Ta and Tb of 2
    partitions, Ca, Cb, Cc on both -> Ca: [Ta-0, Tb-1], Cb: [Ta-1],
    Cc: [Tb-0].

    Every member of ``subscriptions`` is a key of the result, possibly with an
    empty list.  Each member's list is in (topic, partition) order.
    """
    topic_sets = _topic_sets(subscriptions)
    assignment = _empty_assignment(topic_sets)
    # Plain string order == Java String.compareTo for ASCII ids (see the
    # module docstring).
    members = sorted(topic_sets)

    counts = _partition_counts(partitions_per_topic, set().union(*topic_sets.values()))
    # each topic's subscribers, as indices into ``members`` in order
    subscribers: dict[str, list[int]] = {}
    for i, member in enumerate(members):
        for topic in topic_sets[member]:
            subscribers.setdefault(topic, []).append(i)

    # ``cursor`` is the index of the member the CircularIterator would return
    # next.  Kafka's skip loop (advance while the member does not subscribe)
    # stops at the first subscriber at or after the cursor, wrapping round:
    # found by bisection in the topic's subscribers, so a partition costs
    # O(log members) however many members are passed over.  Every topic here
    # has a subscriber (the topics come from the subscriptions).
    cursor = 0
    for topic in sorted(counts):
        subs = subscribers[topic]
        for p in range(counts[topic]):
            k = bisect_left(subs, cursor)
            chosen = subs[k] if k < len(subs) else subs[0]
            assignment[members[chosen]].append((topic, p))
            cursor = (chosen + 1) % len(members)
    return assignment


ASSIGNORS: dict[str, Callable[[Mapping[str, int], Mapping[str, Iterable[str]]], dict[str, list[Partition]]]] = {
    # Keys are the assignors' ``name()``, the protocol names members send in
    # JoinGroup.
    "range": range_assign,
    "roundrobin": roundrobin_assign,
}


# --------------------------------------------------------------------------
# partition names
# --------------------------------------------------------------------------


def parse_partition(text: str) -> Partition:
    """Parse Kafka's ``TopicPartition.toString()`` form, ``topic-N``.

    The partition number follows the *last* ``-``, because topic names may
    themselves contain ``-`` (legal topic characters are ``[a-zA-Z0-9._-]``):
    ``"t0-2" -> ("t0", 2)``, ``"my-topic-3" -> ("my-topic", 3)``.

    The number must be a non-negative decimal written without sign, spaces or
    leading zeros (as ``TopicPartition.toString()`` writes it), so that
    ``format_partition(parse_partition(s)) == s``.  Anything else raises
    ``ValueError`` saying what is wrong.
    """
    if not isinstance(text, str):
        raise TypeError(f"partition must be given as a str like 't0-2', got {text!r}")
    topic, sep, number = text.rpartition("-")
    if not sep:
        raise ValueError(
            f"invalid partition {text!r}: expected 'topic-N' (e.g. 't0-2'), found no '-'"
        )
    if not topic:
        raise ValueError(f"invalid partition {text!r}: the topic name before '-{number}' is empty")
    if not number:
        raise ValueError(f"invalid partition {text!r}: no partition number after the last '-'")
    if not (number.isascii() and number.isdigit()):
        raise ValueError(
            f"invalid partition {text!r}: partition number {number!r} after the last '-' "
            "is not a non-negative decimal integer"
        )
    if len(number) > 1 and number[0] == "0":
        raise ValueError(
            f"invalid partition {text!r}: partition number {number!r} has a leading zero"
        )
    return (topic, int(number))


def format_partition(p: Partition) -> str:
    """Write a partition as Kafka's ``TopicPartition.toString()`` does: ``topic-N``.

    ``("t0", 2) -> "t0-2"``; the inverse of :func:`parse_partition`.
    """
    try:
        topic, number = p
    except (TypeError, ValueError):
        raise ValueError(f"invalid partition {p!r}: expected a (topic, number) pair") from None
    if not isinstance(topic, str) or not topic:
        raise ValueError(f"invalid partition {p!r}: topic must be a non-empty str")
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise ValueError(f"invalid partition {p!r}: number must be an int >= 0")
    return f"{topic}-{number}"
