"""`groupspec serve`: the runtime coordinator on a port, for real Kafka clients (server.py), and `groupspec serve
ctl`: faults on cue, through its admin endpoint (admin.py)."""
from __future__ import annotations

import asyncio
import contextlib
import errno
import faulthandler
import json
import os
import signal
import urllib.error
import urllib.request
from pathlib import Path
from typing import List, Optional

import typer

from groupspec.checkers.console import config_option, err, fail_input, out
from groupspec.impl.storage import LogCorrupt, LogOpenError, StorageError
from groupspec.spec.kafka import brief


serve_app = typer.Typer(no_args_is_help=False)
ctl_app = typer.Typer(no_args_is_help=True, help="Faults on cue for a running `groupspec serve`.")
serve_app.add_typer(ctl_app, name="ctl")


def _topics(text: str) -> dict[str, int]:
    """--topics t:3,u:1 -> {t: 3, u: 1}."""
    out: dict[str, int] = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        name, colon, n = item.rpartition(":")
        if not colon or not name or not n.isdigit() or not 1 <= int(n) <= 100_000:
            fail_input(f"--topics {brief(item)}: give name:partitions (1 to 100000), e.g. --topics orders:3,audit:1")
        out[name] = int(n)
    return out


@contextlib.contextmanager
def _no_hypothesis_plugins():
    """kio imports Hypothesis (for its types' strategies), and Hypothesis on import loads every installed plugin
    through the packages' entry points, a quarter of a second of the server's start; the server never runs
    Hypothesis, so its import is told not to (HYPOTHESIS_NO_PLUGINS, Hypothesis's own switch), and the
    environment is left as it was."""
    saved = os.environ.get("HYPOTHESIS_NO_PLUGINS")
    os.environ["HYPOTHESIS_NO_PLUGINS"] = "1"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["HYPOTHESIS_NO_PLUGINS"]
        else:
            os.environ["HYPOTHESIS_NO_PLUGINS"] = saved


@serve_app.callback(invoke_without_command=True)
def serve_cmd(
    ctx: typer.Context,
    port: int = typer.Option(9092, "--port", "-p", help="the port to listen on (0: a free one)"),
    host: str = typer.Option("127.0.0.1", "--host", help="the address to listen on, and to advertise"),
    topics: str = typer.Option("", "--topics", help="topics and their partitions, e.g. orders:3,audit:1"),
    config: Optional[List[str]] = typer.Option(None, "--config", help="a coordinator config key=value (repeat it)"),
    log: Optional[str] = typer.Option(None, "--log", help="the durable log: groups and offsets kept across restarts"),
    trace: Optional[str] = typer.Option(None, "--trace", help="write the complete trace here (JSON Lines; .gz "
                                        "gzips it): `groupspec traces check` validates it"),
    admin_port: Optional[int] = typer.Option(None, "--admin-port", help="the admin endpoint's port on 127.0.0.1, "
                                             "for `groupspec serve ctl` (default: --port + 1; 0: a free one)"),
) -> None:
    """Serve the spec's coordinator over Kafka's protocol: real consumers form groups on it.

    The runtime's behaviour on the wall clock, until Ctrl-C or SIGTERM.  Faults on cue: `groupspec serve ctl
    --help`.  A server that seems stuck prints every thread's stack to stderr on SIGUSR1."""
    if ctx.invoked_subcommand is not None:
        return
    # imported here: the server brings kio (and kio Hypothesis), a second of every other command's start-up
    with _no_hypothesis_plugins():
        from .admin import Admin
        from .server import Server
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    if not 0 <= port <= 65535:
        fail_input(f"--port {port}: give a port from 0 to 65535")
    admin_port = (port + 1 if port else 0) if admin_port is None else admin_port
    if not 0 <= admin_port <= 65535 or (admin_port and admin_port == port):
        fail_input(f"--admin-port {admin_port}: give a port from 0 to 65535 other than --port's")
    if trace is not None and log is not None and Path(trace).resolve() == Path(log).resolve():
        fail_input(f"--trace {trace}: it is the --log file too; give the trace a file of its own")
    try:
        server = Server(config_option(config or []), _topics(topics), host=host, port=port, log=log, trace=trace)
    except (StorageError, LogOpenError, LogCorrupt) as e:
        fail_input(f"--log: {e}")
    except OSError as e:
        fail_input(f"--trace {trace}: cannot write it ({e.strerror or e}); give a file in a folder that exists")

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
        try:
            admin = Admin(server, loop, admin_port).start()
        except OSError as e:
            serving.cancel()
            fail_input(f"--admin-port {admin_port}: cannot listen on 127.0.0.1:{admin_port} ({e.strerror or e}); "
                       f"give another, or 0 for a free one")
        err.print(f"groupspec serve: the spec's coordinator on {host}:{server.port} "
                  f"(topics: {', '.join(f'{t}:{n}' for t, n in server.topics.items()) or 'none'}); "
                  f"admin on 127.0.0.1:{admin.port}; Ctrl-C stops it", markup=False, highlight=False)
        try:
            await serving
        finally:
            admin.stop()

    try:
        asyncio.run(run())
    except asyncio.CancelledError:
        err.print("groupspec serve: stopped", markup=False, highlight=False)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            fail_input(f"--port {port}: in use on {host}; give another, or 0 for a free one")
        fail_input(f"cannot listen on {host}:{port} ({e.strerror or e})")


# ------------------------------------------------------------------ ctl: faults on cue

ADMIN_HELP = "the admin endpoint of the server (its start line names it): host:port"


@ctl_app.callback()
def ctl(ctx: typer.Context,
        admin: str = typer.Option("127.0.0.1:9093", "--admin", envvar="GROUPSPEC_SERVE_ADMIN", help=ADMIN_HELP)) -> None:
    """Apply a fault to a running `groupspec serve`: it prints the server's answer (JSON)."""
    host, colon, port = admin.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        fail_input(f"--admin {brief(admin)}: give host:port, e.g. --admin 127.0.0.1:9093")
    ctx.obj = admin


def _call(ctx: typer.Context, method: str, path: str, **query) -> None:
    admin = ctx.obj
    args = "&".join(f"{k}={urllib.request.quote(str(v))}" for k, v in query.items() if v is not None)
    url = f"http://{admin}{path}" + (f"?{args}" if args else "")
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=15) as answer:
            body = json.loads(answer.read())
    except urllib.error.HTTPError as e:
        try:
            why = json.loads(e.read()).get("error", e.reason)
        except ValueError:
            why = e.reason
        fail_input(f"the server refused it: {why}")
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        fail_input(f"no groupspec serve admin endpoint answers at {admin} ({reason}); is the server running? "
                   f"Its start line names the admin port (--admin, or GROUPSPEC_SERVE_ADMIN)")
    out.print_json(data=body)


MS = typer.Option(None, "--ms", min=0, help="for this many milliseconds (default: until undone)")


@ctl_app.command("hold")
def ctl_hold(ctx: typer.Context, ms: Optional[int] = MS) -> None:
    """Hold appends: nothing written is acknowledged (a leader's SyncGroup waits) until `release`, or --ms."""
    _call(ctx, "POST", "/hold", ms=ms)


@ctl_app.command("release")
def ctl_release(ctx: typer.Context,
                error: str = typer.Option("NONE", "--error", help="complete the held appends with this error")) -> None:
    """Stop holding appends and complete the held ones (with --error: fail them)."""
    _call(ctx, "POST", "/release", error=error)


@ctl_app.command("fail-next")
def ctl_fail_next(ctx: typer.Context, error: str = typer.Argument(..., help="e.g. NOT_ENOUGH_REPLICAS")) -> None:
    """The next append fails with ERROR."""
    _call(ctx, "POST", "/fail-next", error=error)


@ctl_app.command("move")
def ctl_move(ctx: typer.Context, ms: Optional[int] = MS) -> None:
    """The coordinator moves away (groups unloaded; clients look for it again) until `load`, or for --ms."""
    _call(ctx, "POST", "/move", ms=ms)


@ctl_app.command("load")
def ctl_load(ctx: typer.Context) -> None:
    """The coordinator comes back: its groups loaded from the log."""
    _call(ctx, "POST", "/load")


@ctl_app.command("expire-offsets")
def ctl_expire_offsets(ctx: typer.Context) -> None:
    """Kafka's offset expiry sweep, now (offsets older than offsets.retention.minutes go)."""
    _call(ctx, "POST", "/expire-offsets")


@ctl_app.command("drop")
def ctl_drop(ctx: typer.Context,
             client: Optional[str] = typer.Option(None, "--client", help="only this client id's connections")) -> None:
    """Close client connections (parked requests go unanswered, as when a broker's socket dies)."""
    _call(ctx, "POST", "/drop", client=client)


@ctl_app.command("status")
def ctl_status(ctx: typer.Context) -> None:
    """The coordinator's status, its groups, the held appends and the connections."""
    _call(ctx, "GET", "/status")
