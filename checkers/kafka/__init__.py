"""Kafka itself as the oracle: Kafka's own coordinators as conformance targets.

    jars.py        the pinned Kafka releases, fetched by Maven (`groupspec kafka setup`), and the driver built
    jvm/           the driver: Kafka's coordinators in a JVM of their own, spoken to in JSON lines (README)
    messages.py    scenario requests as Kafka's messages at a version, and Kafka's answers back
    inprocess.py   the targets kafka-3.9 and kafka-4.0: the coordinators in process, time and log stepped
    broker.py      single-node KRaft brokers from the jars (`groupspec kafka broker`), one per config (Fleet)
    registry.py    the brokers left running: one state file each
    wire.py        a broker as a target over Kafka's wire protocol (kafka://host:port), encoded by kio
    report.py      `groupspec kafka report`: every target's suite and harness, every difference settled
"""
