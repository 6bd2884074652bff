"""Tests for groupspec.spec.assignors: Kafka's RangeAssignor and RoundRobinAssignor.

Worked examples come from the seed article 004 (also in
scenarios/assignors-from-seed-004.yaml), from the javadoc of Kafka's
RoundRobinAssignor, and from cases worked out by hand by following the Java
code (RangeAssignor.assign, RoundRobinAssignor.assign with its
CircularIterator).  Hypothesis properties check the invariants that hold for
any input.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

try:
    from groupspec.spec.assignors import (
        ASSIGNORS,
        format_partition,
        parse_partition,
        range_assign,
        roundrobin_assign,
    )
except ImportError:  # package not installed: run from the source tree
    from spec.assignors import (  # type: ignore[no-redef]
        ASSIGNORS,
        format_partition,
        parse_partition,
        range_assign,
        roundrobin_assign,
    )

SETTINGS = settings(max_examples=200)


def P(*names: str) -> list[tuple[str, int]]:
    """Partitions written as in the seed: P("t0-0", "t1-2")."""
    return [parse_partition(n) for n in names]


def written(assignment: dict[str, list[tuple[str, int]]]) -> dict[str, list[str]]:
    return {m: [format_partition(p) for p in ps] for m, ps in assignment.items()}


# --------------------------------------------------------------------------
# The seed's worked examples (seed 004)
# --------------------------------------------------------------------------


def test_seed_range_one_topic_five_partitions_three_consumers():
    result = range_assign({"t": 5}, {"c0": ["t"], "c1": ["t"], "c2": ["t"]})
    assert result == {"c0": P("t-0", "t-1"), "c1": P("t-2", "t-3"), "c2": P("t-4")}


def test_seed_roundrobin_two_topics_two_consumers():
    subs = {"C0": ["t0", "t1"], "C1": ["t0", "t1"]}
    result = roundrobin_assign({"t0": 3, "t1": 3}, subs)
    assert result == {"C0": P("t0-0", "t0-2", "t1-1"), "C1": P("t0-1", "t1-0", "t1-2")}


def test_seed_range_leaves_a_consumer_idle():
    subs = {"Ca": ["Ta", "Tb"], "Cb": ["Ta", "Tb"], "Cc": ["Ta", "Tb"]}
    result = range_assign({"Ta": 2, "Tb": 2}, subs)
    assert result == {"Ca": P("Ta-0", "Tb-0"), "Cb": P("Ta-1", "Tb-1"), "Cc": []}


def test_seed_roundrobin_spreads_over_all_consumers():
    subs = {"Ca": ["Ta", "Tb"], "Cb": ["Ta", "Tb"], "Cc": ["Ta", "Tb"]}
    result = roundrobin_assign({"Ta": 2, "Tb": 2}, subs)
    assert result == {"Ca": P("Ta-0", "Tb-1"), "Cb": P("Ta-1"), "Cc": P("Tb-0")}


def test_range_javadoc_example():
    # RangeAssignor's javadoc: C0, C1 on t0, t1 of 3 partitions each.
    subs = {"C0": ["t0", "t1"], "C1": ["t0", "t1"]}
    result = range_assign({"t0": 3, "t1": 3}, subs)
    assert result == {"C0": P("t0-0", "t0-1", "t1-0", "t1-1"), "C1": P("t0-2", "t1-2")}


_SCENARIOS = Path(__file__).resolve().parents[2] / "shared" / "scenarios" / "assignors-from-seed-004.yaml"


def _seed_steps():
    if not _SCENARIOS.exists():
        return []
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(_SCENARIOS.read_text(encoding="utf-8"))
    return [
        pytest.param(step, id=f"{sc['scenario']}-{i}")
        for sc in doc["scenarios"]
        for i, step in enumerate(sc["steps"])
        if "assign" in step
    ]


@pytest.mark.parametrize("step", _seed_steps())
def test_seed_scenario_file(step):
    """The same examples, read from the shared scenario file when it is there."""
    result = ASSIGNORS[step["assign"]](step["partitions"], step["subscriptions"])
    expected = {m: P(*ps) for m, ps in step["result"].items()}
    assert result == expected


# --------------------------------------------------------------------------
# Members subscribing to different topics, worked out from the Java code
# --------------------------------------------------------------------------


def test_roundrobin_javadoc_unequal_subscriptions():
    # RoundRobinAssignor's javadoc: C0 on t0; C1 on t0, t1; C2 on t0, t1, t2;
    # t0, t1, t2 have 1, 2, 3 partitions.
    subs = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
    parts = {"t0": 1, "t1": 2, "t2": 3}
    expected = {"C0": P("t0-0"), "C1": P("t1-0"), "C2": P("t1-1", "t2-0", "t2-1", "t2-2")}
    assert roundrobin_assign(parts, subs) == expected
    # Range, topic by topic: t0 -> [C0, C1, C2] gets 1 partition: C0;
    # t1 -> [C1, C2], 2 partitions: one each; t2 -> [C2]: all three.
    assert range_assign(parts, subs) == expected


def test_different_subscriptions_cursor_is_not_reset():
    """A on x, y; B on y only; C on x, y.  x has 2 partitions, y has 4.

    RoundRobin, following ``while (!subscribed(peek())) next(); next()``
    with one cursor over [A, B, C]:
      x-0: A subscribes           -> A; cursor at B
      x-1: B does not, skip to C  -> C; cursor at A (B is not owed a turn)
      y-0: A                      -> A; cursor at B
      y-1: B                      -> B; cursor at C
      y-2: C                      -> C; cursor at A
      y-3: A                      -> A; cursor at B
    Range: x over [A, C]: 2 // 2 = 1 each -> A x-0, C x-1;
           y over [A, B, C]: 4 // 3 = 1, 4 % 3 = 1 extra for A ->
           A y-0 y-1, B y-2, C y-3.
    """
    subs = {"A": ["x", "y"], "B": ["y"], "C": ["x", "y"]}
    parts = {"x": 2, "y": 4}
    assert roundrobin_assign(parts, subs) == {
        "A": P("x-0", "y-0", "y-3"),
        "B": P("y-1"),
        "C": P("x-1", "y-2"),
    }
    assert range_assign(parts, subs) == {
        "A": P("x-0", "y-0", "y-1"),
        "B": P("y-2"),
        "C": P("x-1", "y-3"),
    }


def test_missing_topic_idle_member_and_unsubscribed_topic():
    """'ghost' has no metadata (skipped), 'unused' has no subscriber (ignored),
    'idle' subscribes to nothing but still appears with an empty list.

    Range: a over [m1, m2], 3 partitions -> m1 a-0 a-1, m2 a-2.
    RoundRobin over [idle, m1, m2]: a-0 skips idle -> m1; a-1 -> m2;
    a-2 skips idle -> m1.
    """
    subs = {"m2": ["a", "ghost"], "m1": ["a"], "idle": []}
    parts = {"a": 3, "unused": 5}
    assert range_assign(parts, subs) == {"idle": [], "m1": P("a-0", "a-1"), "m2": P("a-2")}
    assert roundrobin_assign(parts, subs) == {"idle": [], "m1": P("a-0", "a-2"), "m2": P("a-1")}


def test_member_ids_sort_as_strings_not_numbers():
    # String order: c1 < c10 < c2, as Java's String.compareTo sorts them.
    subs = {"c2": ["t"], "c10": ["t"], "c1": ["t"]}
    assert range_assign({"t": 4}, subs) == {"c1": P("t-0", "t-1"), "c10": P("t-2"), "c2": P("t-3")}
    assert roundrobin_assign({"t": 4}, subs) == {"c1": P("t-0", "t-3"), "c10": P("t-1"), "c2": P("t-2")}


def test_topic_with_hyphens_and_zero_partitions():
    subs = {"a": ["my-topic", "empty"], "b": ["my-topic", "empty"]}
    parts = {"my-topic": 3, "empty": 0}
    assert range_assign(parts, subs) == {"a": P("my-topic-0", "my-topic-1"), "b": P("my-topic-2")}
    assert roundrobin_assign(parts, subs) == {"a": P("my-topic-0", "my-topic-2"), "b": P("my-topic-1")}


@pytest.mark.parametrize("assign", [range_assign, roundrobin_assign])
def test_edge_cases(assign):
    assert assign({}, {}) == {}
    assert assign({"t": 3}, {}) == {}
    assert assign({}, {"m": ["t"]}) == {"m": []}
    assert assign({"t": 2}, {"m": []}) == {"m": []}
    # more consumers than partitions
    assert assign({"t": 1}, {"a": ["t"], "b": ["t"]}) == {"a": P("t-0"), "b": []}
    # a topic listed twice by one member counts once (a subscription is a set)
    assert assign({"t": 2}, {"a": ["t", "t"], "b": ["t"]}) == {"a": P("t-0"), "b": P("t-1")}
    # any iterable will do
    assert assign({"t": 2}, {"a": iter(["t"]), "b": ("t",)}) == {"a": P("t-0"), "b": P("t-1")}


@pytest.mark.parametrize("assign", [range_assign, roundrobin_assign])
def test_bad_input(assign):
    with pytest.raises(TypeError, match="single string"):
        assign({"t": 1}, {"a": "t"})
    with pytest.raises(ValueError, match=">= 0"):
        assign({"t": -1}, {"a": ["t"]})
    with pytest.raises(TypeError):
        assign({"t": "3"}, {"a": ["t"]})


@pytest.mark.parametrize("assign", [range_assign, roundrobin_assign])
def test_bounds_refused_before_any_work(assign):
    # 10**8 partitions once hung building the lists; a topic beyond Kafka's int32 is refused as such
    with pytest.raises(ValueError, match=r"100,000,000 partitions together, more than the 1,000,000"):
        assign({"t": 10**8}, {"a": ["t"]})
    with pytest.raises(ValueError, match=r"more than a topic can have: Kafka holds it in an int32"):
        assign({"t": 2**31}, {"a": ["t"]})
    # the total counts the subscribed topics only, with metadata
    assert len(assign({"t": 600_000, "v": 10**8}, {"a": ["t"], "b": ["t", "w"]})["a"]) == 300_000
    with pytest.raises(ValueError, match="1,200,000 partitions"):
        assign({"t": 600_000, "u": 600_000}, {"a": ["t", "u"]})


def test_roundrobin_skips_many_members_without_a_walk():
    # 2,000 members, the last alone on u: Kafka's skip loop passes 1,999 members per partition
    # of u; the bisection finds the subscriber directly (the walk took tens of seconds here)
    subs = {f"m{i:04}": ["t"] for i in range(1999)} | {"m1999": ["t", "u"]}
    got = roundrobin_assign({"t": 2000, "u": 20_000}, subs)
    assert len(got["m1999"]) == 1 + 20_000 and all(len(got[f"m{i:04}"]) == 1 for i in range(1999))


def test_assignors_registry():
    assert ASSIGNORS == {"range": range_assign, "roundrobin": roundrobin_assign}


# --------------------------------------------------------------------------
# Partition names
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, partition",
    [
        ("t0-2", ("t0", 2)),
        ("my-topic-3", ("my-topic", 3)),
        ("t-0", ("t", 0)),
        ("a.b_c-123", ("a.b_c", 123)),
        ("t0--1", ("t0-", 1)),  # a topic may end in '-'; the number has no sign
        ("--5", ("-", 5)),
    ],
)
def test_parse_and_format(text, partition):
    assert parse_partition(text) == partition
    assert format_partition(partition) == text


@pytest.mark.parametrize(
    "text, message",
    [
        ("t0", "no '-'"),
        ("", "no '-'"),
        ("-3", "topic name"),
        ("t0-", "no partition number"),
        ("t0-x", "not a non-negative decimal"),
        ("t0-+1", "not a non-negative decimal"),
        ("t0- 1", "not a non-negative decimal"),
        ("t0-1.5", "not a non-negative decimal"),
        ("t0-\u0661", "not a non-negative decimal"),  # Arabic-Indic digit one
        ("t0-01", "leading zero"),
    ],
)
def test_parse_partition_rejects(text, message):
    with pytest.raises(ValueError, match=message) as info:
        parse_partition(text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize("bad", [("", 1), ("t", -1), ("t", True), ("t", "1"), ("t",), "t-1", None])
def test_format_partition_rejects(bad):
    with pytest.raises(ValueError):
        format_partition(bad)


@SETTINGS
@given(topic=st.text(min_size=1), number=st.integers(min_value=0, max_value=2**31 - 1))
def test_parse_inverts_format(topic, number):
    assert parse_partition(format_partition((topic, number))) == (topic, number)


# --------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------

TOPICS = st.sampled_from(["a", "b", "c", "my-topic", "t0", "T"])
MEMBERS = st.sampled_from(["c0", "c1", "c2", "c10", "C", "m-1", "z"])

subscriptions_st = st.dictionaries(MEMBERS, st.lists(TOPICS, max_size=6), max_size=7)
partitions_st = st.dictionaries(TOPICS, st.integers(min_value=0, max_value=9), max_size=6)
assignor_st = st.sampled_from(sorted(ASSIGNORS))


def expected_partitions(parts, subs):
    subscribed = {t for ts in subs.values() for t in ts}
    return {(t, p) for t in subscribed if t in parts for p in range(parts[t])}


@SETTINGS
@given(name=assignor_st, parts=partitions_st, subs=subscriptions_st)
def test_every_subscribed_partition_assigned_exactly_once(name, parts, subs):
    result = ASSIGNORS[name](parts, subs)
    assert set(result) == set(subs)
    assigned = Counter(p for ps in result.values() for p in ps)
    assert all(n == 1 for n in assigned.values()), assigned
    assert set(assigned) == expected_partitions(parts, subs)


@SETTINGS
@given(name=assignor_st, parts=partitions_st, subs=subscriptions_st)
def test_only_subscribed_topics(name, parts, subs):
    result = ASSIGNORS[name](parts, subs)
    for member, ps in result.items():
        assert {t for t, _ in ps} <= set(subs[member])


@SETTINGS
@given(name=assignor_st, parts=partitions_st, subs=subscriptions_st)
def test_lists_sorted(name, parts, subs):
    for ps in ASSIGNORS[name](parts, subs).values():
        assert ps == sorted(ps)


@SETTINGS
@given(name=assignor_st, parts=partitions_st, subs=subscriptions_st, data=st.data())
def test_independent_of_input_order(name, parts, subs, data):
    """Only the sets matter: not the order of members, topics or dict entries."""
    members = data.draw(st.permutations(list(subs)))
    shuffled_subs = {m: data.draw(st.permutations(subs[m])) for m in members}
    shuffled_parts = dict(data.draw(st.permutations(list(parts.items()))))
    assert ASSIGNORS[name](shuffled_parts, shuffled_subs) == ASSIGNORS[name](parts, subs)


@SETTINGS
@given(parts=partitions_st, subs=subscriptions_st)
def test_range_balanced_and_contiguous_per_topic(parts, subs):
    """Per topic: subscribers in id order hold consecutive ranges covering
    0..n-1, sizes n // c + 1 for the first n % c and n // c for the rest."""
    result = range_assign(parts, subs)
    for topic in {t for ts in subs.values() for t in ts}:
        if topic not in parts:
            continue
        n = parts[topic]
        consumers = sorted(m for m, ts in subs.items() if topic in ts)
        held = [[p for t, p in result[m] if t == topic] for m in consumers]
        sizes = [len(h) for h in held]
        assert max(sizes) - min(sizes) <= 1
        q, r = divmod(n, len(consumers))
        assert sizes == [q + 1] * r + [q] * (len(consumers) - r)
        assert [p for h in held for p in h] == list(range(n))


@SETTINGS
@given(
    members=st.lists(MEMBERS, min_size=1, unique=True),
    topics=st.lists(TOPICS, unique=True),
    parts=partitions_st,
    data=st.data(),
)
def test_roundrobin_balanced_with_identical_subscriptions(members, topics, parts, data):
    subs = {m: data.draw(st.permutations(topics)) for m in members}
    result = roundrobin_assign(parts, subs)
    sizes = [len(ps) for ps in result.values()]
    assert max(sizes) - min(sizes) <= 1
    # and it is a plain deal: the k-th partition goes to the (k mod m)-th member
    ordered = sorted(expected_partitions(parts, subs))
    ids = sorted(members)
    for k, partition in enumerate(ordered):
        assert partition in result[ids[k % len(ids)]]


class _CircularIterator:
    """A literal transcription of Kafka's org.apache.kafka.common.utils.CircularIterator."""

    def __init__(self, items):
        if not items:
            raise ValueError("CircularIterator can only be used on non-empty lists")
        self._items = list(items)
        self._it = iter(self._items)
        self._peek = None
        self._has_peek = False

    def next(self):
        if self._has_peek:
            value, self._peek, self._has_peek = self._peek, None, False
            return value
        try:
            return next(self._it)
        except StopIteration:
            self._it = iter(self._items)
            return next(self._it)

    def peek(self):
        if not self._has_peek:
            self._peek = self.next()
            self._has_peek = True
        return self._peek


def _java_roundrobin(parts, subs):
    """RoundRobinAssignor.assign, step by step as the Java code does it."""
    assignment = {m: [] for m in subs}
    if not subs:
        return assignment
    assigner = _CircularIterator(sorted(subs))
    all_partitions = [
        (t, p) for t in sorted({t for ts in subs.values() for t in ts}) if t in parts for p in range(parts[t])
    ]
    for topic, p in all_partitions:
        while topic not in subs[assigner.peek()]:
            assigner.next()
        assignment[assigner.next()].append((topic, p))
    return assignment


@SETTINGS
@given(parts=partitions_st, subs=subscriptions_st)
def test_roundrobin_matches_java_circular_iterator(parts, subs):
    assert roundrobin_assign(parts, subs) == _java_roundrobin(parts, subs)
