"""What the tests of `groupspec serve` share: a server on its own event loop in a thread, a raw client of
one request, and the CLI started as a process."""
from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import threading
import time

from groupspec.checkers.kafka import framing, messages
from groupspec.checkers.serve.admin import Admin
from groupspec.checkers.serve.server import Server

CLI = [sys.executable, "-m", "groupspec.checkers.cli"]


@contextlib.contextmanager
def in_thread(srv: Server, admin: bool = False):
    """`srv` serving on a loop of its own (with its admin endpoint on a free port: `srv.admin`), until the block
    ends; every task is cancelled then and the thread must end."""
    ready = threading.Event()
    loop = asyncio.new_event_loop()

    async def main():
        up = asyncio.Event()
        task = asyncio.create_task(srv.serve(up))
        await up.wait()
        srv.admin = Admin(srv, loop, 0).start() if admin else None
        ready.set()
        try:
            await task
        except asyncio.CancelledError:      # the test is over
            pass
    thread = threading.Thread(target=lambda: loop.run_until_complete(main()), daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield srv
    finally:
        if srv.admin is not None:
            srv.admin.stop()
        loop.call_soon_threadsafe(lambda: [t.cancel() for t in asyncio.all_tasks(loop)])
        thread.join(10)
        assert not thread.is_alive()


def call(port: int, entity, correlation: int = 1, sock: socket.socket | None = None):
    """Send one request (on `sock`, or a connection of its own) and read its answer in the contract's fields;
    None if the server closed the connection instead."""
    own = sock is None
    s = sock or socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(framing.encode_request(entity, correlation, "c"))
        buf = bytearray()
        while (data := framing.take_frame(buf)) is None:
            chunk = s.recv(65536)
            if not chunk:
                return None        # closed
            buf += chunk
    finally:
        if own:
            s.close()
    api = next(a for a, k in messages.API_KEYS.items() if k == entity.__api_key__)
    return messages.response(api, framing.decode_response(data, messages.response_class(api, entity.__version__))[1])


def start_cli(*args: str) -> tuple[subprocess.Popen, int, int]:
    """`groupspec serve ARGS` in a process of its own: (the process, its Kafka port, its admin port)."""
    proc = subprocess.Popen([*CLI, "serve", "--port", "0", *args], stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    if "the spec's coordinator on 127.0.0.1:" not in line:
        proc.kill()
        raise AssertionError(line + proc.stderr.read())
    return proc, int(line.split("127.0.0.1:")[1].split()[0]), int(line.split("admin on 127.0.0.1:")[1].split(";")[0])


def kafka_python_group(port: int, consumers: int, heartbeat_ms: int = 500, seconds: float = 30,
                       steady_s: float = 1.0) -> list:
    """`consumers` kafka-python consumers of group g on topic t, each polled by a thread of its own (as an
    application polls) until each holds a share of t's partitions, unchanged for `steady_s` (a consumer holding
    all of them is a group still forming); then the threads stop and the caller owns and closes the consumers.

    One thread polling the consumers in turn kept a group rebalancing for good: a leader's join completes only
    once the others have rejoined, which they do in their own polls, after the leader's poll has returned, and
    kafka-python 3.0.12 then redoes the join it never collected (serve_clients/pyclient.py), a new rebalance
    each time."""
    import logging

    import kafka
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    group = [kafka.KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", group_id="g", client_id=f"c{i}",
                                 session_timeout_ms=6000, heartbeat_interval_ms=heartbeat_ms) for i in range(consumers)]
    held: list[frozenset] = [frozenset()] * consumers
    stop = threading.Event()

    def poll(i: int, c) -> None:
        c.subscribe(["t"])
        c.topics()      # the metadata before the first poll: kafka-python 3.0.12's lost join (serve_clients/pyclient.py)
        while not stop.is_set():
            c.poll(timeout_ms=100)
            held[i] = frozenset(c.assignment())

    def formed() -> tuple | None:
        now = list(held)
        return tuple(now) if all(now) and sum(map(len, now)) == len(frozenset().union(*now)) else None  # none twice

    threads = [threading.Thread(target=poll, args=(i, c), daemon=True) for i, c in enumerate(group)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + seconds
    since, last = time.monotonic(), None
    while time.monotonic() < deadline:
        now = formed()
        if now != last:
            since, last = time.monotonic(), now
        elif now is not None and time.monotonic() - since >= steady_s:
            break
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join(10)
    return group
