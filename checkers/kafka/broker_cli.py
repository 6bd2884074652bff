"""`groupspec kafka broker`: start and stop single-node Kafka brokers to run scenarios and the harness on.

    groupspec kafka broker start --version 3.9 --coordinator scala    # prints kafka://127.0.0.1:PORT
    groupspec scenario run --target kafka://127.0.0.1:PORT
    groupspec kafka broker stop --port PORT                            # or --all
"""
from __future__ import annotations

import json
from typing import List, Optional

import typer

from groupspec.checkers.console import err, fail_input, out
from groupspec.spec.kafka import CONFIG_DEFAULTS, brief

from . import broker, jars, registry

broker_app = typer.Typer(no_args_is_help=True,
                         help="Single-node Kafka brokers (KRaft) from the fetched jars, as targets over the wire.")


def _config(pairs: list[str]) -> tuple[dict, dict]:
    """--config key=value: the group keys (scenario terms, integers; scaled by --time-scale) and any other
    Kafka broker key (written to server.properties as given)."""
    group: dict = {}
    other: dict = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key:
            fail_input(f"--config {brief(pair)}: give key=value, e.g. group.max.size=3")
        if key == "group.new.member.join.timeout.ms":
            fail_input(f"--config {key}: Kafka has no such config; it is a constant 300000 ms in both coordinators")
        if key in broker.GROUP_KEYS:
            try:
                group[key] = int(value)
            except ValueError:
                fail_input(f"--config {key}: {brief(value)} is not an integer")
        elif key in CONFIG_DEFAULTS or "\n" in key + value or not all(c.isalnum() or c in "._-" for c in key):
            fail_input(f"--config {brief(key)}: not a broker config key this command can set")
        else:
            other[key] = value
    return group, other


@broker_app.command("start")
def start_cmd(
    version: str = typer.Option("3.9", "--version", "-v", help=f"the Kafka line ({', '.join(jars.LINES)})"),
    coordinator: Optional[str] = typer.Option(None, "--coordinator", "-c",
                                              help="scala or java (default: the line's own, 3.9 scala, 4.0 java)"),
    port: Optional[int] = typer.Option(None, "--port", "-p", help="the client port on 127.0.0.1 (default: a free one)"),
    config: Optional[List[str]] = typer.Option(None, "--config", help=(
        "key=value (repeat it): the group keys in scenario milliseconds (default: the suite's, "
        + ", ".join(f"{k}={v}" for k, v in broker.SUITE_CONFIG.items())
        + "), or any other broker key, written as given")),
    time_scale: int = typer.Option(broker.DEFAULT_TIME_SCALE, "--time-scale", help=(
        "real milliseconds per scenario millisecond: the broker's group timeouts are this many times the config's, "
        "and the wire target stretches every timeout and advance alike")),
    folder: Optional[str] = typer.Option(None, "--dir", help="the broker's folder (config, data, server.log; default: "
                                                             "one per port in the state folder)"),
    timeout: float = typer.Option(broker.START_TIMEOUT_S, "--timeout", help="seconds to wait for it to be ready"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Start a broker in the background and wait until its group coordinator answers; print its address."""
    group, other = _config(config or [])
    if not 1 <= timeout <= 3600:
        fail_input(f"--timeout {timeout:g}: give seconds from 1 to 3600")
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err,
                        transient=True, disable=as_json)
    try:
        with progress:
            task = progress.add_task("starting", total=None)
            state = broker.start(version, coordinator, port, group, other, folder, time_scale, timeout,
                                 progress=lambda m: progress.update(task, description=m))
    except broker.BrokerError as e:
        fail_input(str(e))
    if as_json:
        print(json.dumps(state.as_json(), indent=2))
        return
    scale = f", time scale {state.time_scale}" if state.time_scale != 1 else ""
    out.print(state.address, markup=False, highlight=False)
    err.print(f"Kafka {state.release} ({state.coordinator} coordinator{scale}) ready in {state.startup_seconds:.1f} s "
              f"(pid {state.pid}); server.log: {state.log}", markup=False, highlight=False, soft_wrap=True)
    err.print(f"stop it with: groupspec kafka broker stop --port {state.port}", markup=False, highlight=False)


@broker_app.command("stop")
def stop_cmd(
    port: Optional[int] = typer.Option(None, "--port", "-p", help="the broker's client port"),
    all_: bool = typer.Option(False, "--all", help="every broker this project started"),
    timeout: float = typer.Option(broker.STOP_TIMEOUT_S, "--timeout", help="seconds after SIGTERM before SIGKILL"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Stop a broker started with `start` (SIGTERM, then SIGKILL after --timeout); its folder is kept."""
    if port is not None and all_:
        fail_input("give --port or --all, not both")
    if not 0 <= timeout <= 3600:
        fail_input(f"--timeout {timeout:g}: give seconds from 0 to 3600")
    live = registry.running()
    if all_:
        targets = live
    elif port is not None:
        targets = [s for s in live if s.port == port]
        if not targets:
            fail_input(f"no broker of this project runs on port {port}"
                       + (f" (running: {', '.join(str(s.port) for s in live)})" if live else ""))
    else:
        if len(live) != 1:
            fail_input("no broker of this project is running" if not live else
                       f"{len(live)} brokers are running (ports {', '.join(str(s.port) for s in live)}); give --port "
                       f"or --all")
        targets = live
    done = [(s, broker.stop(s, timeout)) for s in targets]
    if as_json:
        print(json.dumps({"stopped": [{"port": s.port, "pid": s.pid, "how": how, "log": s.log} for s, how in done]},
                         indent=2))
        return
    if not done:
        out.print("no broker of this project is running", markup=False)
    for s, how in done:
        out.print(f"port {s.port}: {how} (Kafka {s.release}, {s.coordinator}; server.log kept: {s.log})",
                  markup=False, highlight=False, soft_wrap=True)


@broker_app.command("list")
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """The brokers this project started that are running."""
    live = registry.running()
    if as_json:
        print(json.dumps({"brokers": [s.as_json() for s in live]}, indent=2))
        return
    if not live:
        out.print("no broker of this project is running", markup=False)
    for s in live:
        out.print(f"{s.address}  Kafka {s.release} {s.coordinator}, time scale {s.time_scale}, pid {s.pid}, "
                  f"server.log {s.log}", markup=False, highlight=False, soft_wrap=True)
