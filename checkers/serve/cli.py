"""`groupspec serve`: the runtime coordinator on a port, for real Kafka clients (server.py)."""
from __future__ import annotations

import asyncio
import errno
import signal
from typing import List, Optional

import typer

from groupspec.checkers.console import config_option, err, fail_input
from groupspec.impl.storage import LogCorrupt, LogOpenError, StorageError
from groupspec.spec.kafka import brief

from .server import Server


def _topics(text: str) -> dict[str, int]:
    """--topics t:3,u:1 -> {t: 3, u: 1}."""
    out: dict[str, int] = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        name, colon, n = item.rpartition(":")
        if not colon or not name or not n.isdigit() or not 1 <= int(n) <= 100_000:
            fail_input(f"--topics {brief(item)}: give name:partitions (1 to 100000), e.g. --topics orders:3,audit:1")
        out[name] = int(n)
    return out


def serve_cmd(
    port: int = typer.Option(9092, "--port", "-p", help="the port to listen on (0: a free one)"),
    host: str = typer.Option("127.0.0.1", "--host", help="the address to listen on, and to advertise"),
    topics: str = typer.Option("", "--topics", help="topics and their partitions, e.g. orders:3,audit:1"),
    config: Optional[List[str]] = typer.Option(None, "--config", help="a coordinator config key=value (repeat it)"),
    log: Optional[str] = typer.Option(None, "--log", help="the durable log: groups and offsets kept across restarts"),
) -> None:
    """Serve the spec's coordinator over Kafka's protocol: real consumers form groups on it, with the runtime's
    behaviour on the wall clock.  Until Ctrl-C or SIGTERM."""
    if not 0 <= port <= 65535:
        fail_input(f"--port {port}: give a port from 0 to 65535")
    try:
        server = Server(config_option(config or []), _topics(topics), host=host, port=port, log=log)
    except (StorageError, LogOpenError, LogCorrupt) as e:
        fail_input(f"--log: {e}")

    async def run() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        up = asyncio.Event()
        serving = asyncio.create_task(server.serve(up))
        waiting = asyncio.create_task(up.wait())
        await asyncio.wait({serving, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if serving.done():
            serving.result()          # it could not listen: the error below says why
        err.print(f"groupspec serve: the spec's coordinator on {host}:{server.port} "
                  f"(topics: {', '.join(f'{t}:{n}' for t, n in server.topics.items()) or 'none'}); Ctrl-C stops it",
                  markup=False, highlight=False)
        await serving

    try:
        asyncio.run(run())
    except asyncio.CancelledError:
        err.print("groupspec serve: stopped", markup=False, highlight=False)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            fail_input(f"--port {port}: in use on {host}; give another, or 0 for a free one")
        fail_input(f"cannot listen on {host}:{port} ({e.strerror or e})")
