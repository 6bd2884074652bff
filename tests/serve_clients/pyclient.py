"""One consumer of a real Kafka client library, as a process of its own, driven over stdin/stdout.

    python pyclient.py --kind kafka-python|confluent|aiokafka --bootstrap HOST:PORT --group G --topics t \
        --client-id C --assignor range|roundrobin [--instance-id I] [--session-ms 6000] [--heartbeat-ms 500] \
        [--poll-ms 10000]

Prints one JSON object a line on stdout:
  {"event": "started"}
  {"event": "assigned", "partitions": ["t-0", ...], "generation": G or null}   on every completed rebalance
  {"event": "revoked", "partitions": [...], "generation": G or null}
  {"event": "committed", "partition": "t-0", "offset": 5}  /  {"event": "commit_failed", ..., "error": "..."}
  {"event": "offset", "partition": "t-0", "offset": N or null}                (answer to `committed t-0`)
  {"event": "closed"}
  {"event": "join_redone", "generation": G}        (kafka-python only: see its second race below)
and reads commands on stdin: `commit t-0 5`, `committed t-0`, `close` (a clean close: LeaveGroup for a dynamic
member, then exit 0).  End of stdin is a close too.  The consumer is used only by the thread that polls it.
The client library logs to stderr at INFO, or at the level GROUPSPEC_CLIENT_LOG names (DEBUG: its whole story,
for a client that hangs; kafka-python 3.0's sync calls wait without a timeout, dpkp/kafka-python#3121).

kafka-python 3.0.12 has a lost-join race (found here: under load, about 1 run in 15-30 of a lone consumer): its
coordinator's snapshot of the subscribed topics' metadata is refreshed only by a metadata update, so a leader that
assigns before the first update after `subscribe` records an assignment snapshot the update then contradicts, and
rejoins for it, a rejoin `need_rejoin()` reports only through that snapshot.  If a `poll` returns while the rejoin
is in flight and the leader's new snapshot matches the metadata before the next `poll`, `need_rejoin()` is false:
the finished join is never collected, no heartbeat is sent, and the member's session expires though the
coordinator answered its SyncGroup (the server's trace has the answer; the client's coordinator connection has no
request in flight).  Java's consumer fixed the same class in KAFKA-9815 (a metadata-driven rebalance sets
rejoinNeeded).  The kafka-python driver fetches the metadata once after subscribing (`topics()`, as an
application that checks its topics exist does), so every snapshot its leader takes is already current.

It has a second race of the same root (found here: about 1 run in 8 of the four-consumer life under load): a poll
whose timer expires as its join finishes leaves the finished join uncollected, and when the member still needs to
rejoin, the next poll sees the join task done and starts a new one instead of collecting it (base.py's
`ensure_active_group_async`: `if self._join_task is None or self._join_task.is_done`), so the group rebalances once
more.  The driver does not change that; it watches for it: a join scheduled while the last one succeeded and is
uncollected is reported as {"event": "join_redone"}, and the test allows one more generation for each.
"""
from __future__ import annotations

import argparse
import asyncio
import faulthandler
import json
import logging
import os
import queue
import signal
import struct
import sys
import threading
import time


def say(**event) -> None:
    print(json.dumps(event), flush=True)


def split(name: str) -> tuple[str, int]:
    topic, _, partition = name.rpartition("-")
    return topic, int(partition)


def names(tps) -> list[str]:
    return sorted(f"{tp.topic}-{tp.partition}" for tp in tps)


def commands() -> queue.Queue:
    """stdin's lines, read by a thread of their own (None: stdin is closed)."""
    q: queue.Queue = queue.Queue()

    def read():
        for line in sys.stdin:
            if line.strip():
                q.put(line.split())
        q.put(None)
    threading.Thread(target=read, daemon=True).start()
    return q


def pending(q: queue.Queue):
    while True:
        try:
            yield q.get_nowait()
        except queue.Empty:
            return


def reporting(base: type, generation):
    """A rebalance listener of the client's own class `base` that says each revocation and assignment, with the
    generation the client holds then."""
    class Listener(base):
        def on_partitions_revoked(self, revoked):
            say(event="revoked", partitions=names(revoked), generation=generation())

        def on_partitions_assigned(self, assigned):
            say(event="assigned", partitions=names(assigned), generation=generation())
    return Listener()


def said_commit(cmd: list, error: Exception | None = None) -> None:
    """What a `commit PARTITION OFFSET` command came to: committed, or the client's error."""
    if error is None:
        say(event="committed", partition=cmd[1], offset=int(cmd[2]))
    else:
        say(event="commit_failed", partition=cmd[1], offset=int(cmd[2]), error=f"{type(error).__name__}: {error}")


# kafka-python --------------------------------------------------------------------------------------------------

def watch_redone_joins(coordinator) -> None:
    """Report each join kafka-python starts while its previous join succeeded and was never collected (the second
    race in the module's docstring; a failed one is retried by design): it schedules every join through its
    manager's `call_soon`, which this wraps on the one manager instance, only looking."""
    manager, schedule = coordinator._manager, coordinator._manager.call_soon
    join = type(coordinator)._do_join_and_sync_async

    def call_soon(coro, *args):
        previous = coordinator._join_task
        if getattr(coro, "__func__", None) is join and previous is not None and previous.succeeded():
            logging.warning("kafka-python starts a join while its successful join of generation %s is uncollected",
                            coordinator._generation.generation_id)
            say(event="join_redone", generation=coordinator._generation.generation_id)
        return schedule(coro, *args)
    manager.call_soon = call_soon


def run_kafka_python(a, q) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.errors import KafkaConnectionError
    from kafka.structs import OffsetAndMetadata

    assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}[a.assignor]
    c = KafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group, client_id=a.client_id,
                      group_instance_id=a.instance_id, partition_assignment_strategy=[assignor],
                      session_timeout_ms=a.session_ms, heartbeat_interval_ms=a.heartbeat_ms,
                      max_poll_interval_ms=a.poll_ms, enable_auto_commit=False, auto_offset_reset="earliest")

    def generation():
        return c._coordinator._generation.generation_id

    watch_redone_joins(c._coordinator)
    c.subscribe(a.topics, listener=reporting(ConsumerRebalanceListener, generation))
    if not a.no_metadata_fetch:
        # the subscribed topics' metadata fetched once before the first poll: kafka-python 3.0.12 loses a join
        # when its leader's first assignment predates it (KAFKA-9815's class; the module's docstring)
        c.topics()
    say(event="started")
    while True:
        try:
            c.poll(timeout_ms=100)
        except KafkaConnectionError as e:
            # kafka-python 3 raises from poll when its only broker refuses a connection (a server restarting);
            # an application's poll loop goes on, and so does this one
            say(event="poll_failed", error=f"{type(e).__name__}: {e}")
            time.sleep(0.1)
        for cmd in pending(q):
            if cmd is None or cmd[0] == "close":
                c.close()
                say(event="closed")
                return
            tp = TopicPartition(*split(cmd[1]))
            if cmd[0] == "commit":
                try:
                    c.commit({tp: OffsetAndMetadata(int(cmd[2]), "", -1)})
                    said_commit(cmd)
                except Exception as e:        # noqa: BLE001 - the client's error is the answer
                    said_commit(cmd, e)
            elif cmd[0] == "committed":
                say(event="offset", partition=cmd[1], offset=c.committed(tp))


# confluent-kafka (librdkafka) ----------------------------------------------------------------------------------

def cgmd_generation(raw: bytes) -> int | None:
    """The generation in librdkafka's serialized consumer group metadata (rd_kafka_consumer_group_metadata_write:
    the magic "CGMDv2:", then the generation id as a native int32, then the group id, member id, ...)."""
    magic = b"CGMDv2:"
    if not raw.startswith(magic):
        return None
    return struct.unpack_from("=i", raw, len(magic))[0]


def run_confluent(a, q) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    conf = {"bootstrap.servers": a.bootstrap, "group.id": a.group, "client.id": a.client_id,
            "partition.assignment.strategy": a.assignor, "session.timeout.ms": a.session_ms,
            "heartbeat.interval.ms": a.heartbeat_ms, "max.poll.interval.ms": a.poll_ms,
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "group.protocol": "classic"}
    if a.instance_id:
        conf["group.instance.id"] = a.instance_id
    c = Consumer(conf)

    def generation():
        return cgmd_generation(c.consumer_group_metadata())

    c.subscribe(a.topics, on_assign=lambda _c, ps: say(event="assigned", partitions=names(ps), generation=generation()),
                on_revoke=lambda _c, ps: say(event="revoked", partitions=names(ps), generation=generation()))
    say(event="started")
    while True:
        c.poll(0.1)
        for cmd in pending(q):
            if cmd is None or cmd[0] == "close":
                c.close()
                say(event="closed")
                return
            topic, partition = split(cmd[1])
            if cmd[0] == "commit":
                try:
                    done = c.commit(offsets=[TopicPartition(topic, partition, int(cmd[2]))], asynchronous=False)
                    errors = [str(tp.error) for tp in done if tp.error is not None]
                    if errors:
                        raise KafkaException(errors[0])
                    say(event="committed", partition=cmd[1], offset=int(cmd[2]))
                except KafkaException as e:
                    say(event="commit_failed", partition=cmd[1], offset=int(cmd[2]), error=str(e))
            elif cmd[0] == "committed":
                got = c.committed([TopicPartition(topic, partition)], timeout=10)[0]
                say(event="offset", partition=cmd[1], offset=got.offset if got.offset >= 0 else None)


# aiokafka ------------------------------------------------------------------------------------------------------

def run_aiokafka(a, q) -> None:
    asyncio.run(_aiokafka(a, q))


async def _aiokafka(a, q) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}[a.assignor]
    c = AIOKafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group, client_id=a.client_id,
                         group_instance_id=a.instance_id, partition_assignment_strategy=(assignor,),
                         session_timeout_ms=a.session_ms, heartbeat_interval_ms=a.heartbeat_ms,
                         max_poll_interval_ms=a.poll_ms, rebalance_timeout_ms=a.poll_ms,
                         enable_auto_commit=False, auto_offset_reset="earliest")

    def generation():
        return c._coordinator.generation

    c.subscribe(a.topics, listener=reporting(ConsumerRebalanceListener, generation))
    await c.start()
    say(event="started")
    while True:
        await c.getmany(timeout_ms=100)
        for cmd in pending(q):
            if cmd is None or cmd[0] == "close":
                await c.stop()
                say(event="closed")
                return
            tp = TopicPartition(*split(cmd[1]))
            if cmd[0] == "commit":
                try:
                    await c.commit({tp: int(cmd[2])})
                    said_commit(cmd)
                except Exception as e:        # noqa: BLE001 - the client's error is the answer
                    said_commit(cmd, e)
            elif cmd[0] == "committed":
                say(event="offset", partition=cmd[1], offset=await c.committed(tp))


KINDS = {"kafka-python": run_kafka_python, "confluent": run_confluent, "aiokafka": run_aiokafka}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--kind", choices=sorted(KINDS), required=True)
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topics", required=True, type=lambda s: s.split(","))
    p.add_argument("--client-id", required=True)
    p.add_argument("--assignor", choices=["range", "roundrobin"], default="range")
    p.add_argument("--instance-id")
    p.add_argument("--session-ms", type=int, default=6000)
    p.add_argument("--heartbeat-ms", type=int, default=500)
    p.add_argument("--poll-ms", type=int, default=10000, help="max.poll.interval.ms (and the rebalance timeout)")
    p.add_argument("--no-metadata-fetch", action="store_true",
                   help="kafka-python: poll without first fetching the subscribed topics' metadata (the lost join's "
                        "trigger; benchmarks/client_join_race.py)")
    a = p.parse_args()
    # a test that waited in vain asks every thread's stack (SIGUSR1): a client that hangs shows where
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # GROUPSPEC_CLIENT_LOG=DEBUG: the client library's own debug log, for a hang that needs its story
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("GROUPSPEC_CLIENT_LOG", "INFO"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    started = time.monotonic()
    KINDS[a.kind](a, commands())
    logging.info("driver done after %.1f s", time.monotonic() - started)


if __name__ == "__main__":
    main()
