"""A rebalance listener that fails on cue: the commit a consumer makes as its partitions are revoked is refused by
the coordinator, at exactly the moment that hurts.

    groupspec serve --port 9092 --topics orders:2 &          # the spec's coordinator; admin on 127.0.0.1:9093
    python docs/examples/revoke_commit.py [--bootstrap 127.0.0.1:9092] [--admin 127.0.0.1:9093]

Consumer `a` (confluent-kafka, librdkafka) owns both partitions and has processed ten records of each.  The
next append is made to fail (`groupspec serve ctl fail-next MESSAGE_TOO_LARGE`: the coordinator answers that
commit INVALID_COMMIT_OFFSET_SIZE, as Kafka does), then consumer `b` joins.  `a`'s listener commits its progress
as the rebalance takes the partitions away; the commit fails; whoever gets a partition next starts from the last
offset that was committed, and processes those records again.
"""
from __future__ import annotations

import argparse
import time
import urllib.request

from confluent_kafka import Consumer, KafkaException, TopicPartition

PROCESSED = 10       # what consumer `a` has processed of each partition, not yet committed


def _consumer(name: str, bootstrap: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "orders-app", "client.id": name,
                     "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                     "partition.assignment.strategy": "range", "log_level": 0})


def _parts(partitions) -> list[str]:
    return sorted(f"{p.topic}-{p.partition}" for p in partitions)


def listener(name: str, progress: dict) -> dict:
    """The usual pattern: commit what was processed before the partitions go to another consumer."""
    def on_assign(consumer, partitions):
        print(f"{name}: assigned {_parts(partitions)}")

    def on_revoke(consumer, partitions):
        done = [TopicPartition(p.topic, p.partition, progress[(p.topic, p.partition)]) for p in partitions
                if (p.topic, p.partition) in progress]
        if not done:
            return
        try:
            consumer.commit(offsets=done, asynchronous=False)
            print(f"{name}: committed {_parts(done)} at {PROCESSED} as they were revoked")
        except KafkaException as e:       # what the application's listener meets
            print(f"{name}: the commit on revoke FAILED: {e.args[0].str()}")
    return {"on_assign": on_assign, "on_revoke": on_revoke}


def _poll_until(consumers: list, done, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            raise SystemExit("the group did not settle in time: is `groupspec serve` running?")
        for c in consumers:
            c.poll(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--admin", default="127.0.0.1:9093")
    parser.add_argument("--topic", default="orders")
    args = parser.parse_args()

    a = _consumer("a", args.bootstrap)
    a.subscribe([args.topic], **listener("a", {(args.topic, p): PROCESSED for p in range(2)}))
    _poll_until([a], lambda: len(a.assignment()) == 2)

    # the fault, on cue: the next append the coordinator makes fails (what `groupspec serve ctl fail-next` does)
    urllib.request.urlopen(urllib.request.Request(
        f"http://{args.admin}/fail-next?error=MESSAGE_TOO_LARGE", method="POST"), timeout=10).read()
    print("serve: the next append will fail with MESSAGE_TOO_LARGE")

    b = _consumer("b", args.bootstrap)
    b.subscribe([args.topic], **listener("b", {}))
    _poll_until([a, b], lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1)

    for p in b.committed(b.assignment(), timeout=10):
        start = max(p.offset, 0)
        print(f"b: starts {p.topic}-{p.partition} from offset {start}; a had processed {PROCESSED} "
              f"({PROCESSED - start} records processed twice)")
    for c in (a, b):
        c.close()


if __name__ == "__main__":
    main()
