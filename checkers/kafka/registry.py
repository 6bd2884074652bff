"""The brokers `groupspec kafka broker start` left running: one state file each, in the state folder.

`broker.py` writes a broker's state when it starts it and removes it when it
stops it; `wire.py` reads it to learn the release, coordinator and time scale
of a broker this project started (an address alone does not say them).  A
state file whose process has ended, or is not that broker any more, is stale
and is removed when the brokers are listed.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import jars


@dataclass
class BrokerState:
    """What the state file records of a running broker."""
    pid: int
    port: int
    controller_port: int
    version: str                 # the Kafka line (3.9, 4.0)
    release: str                 # its pinned release (3.9.2, 4.0.2)
    coordinator: str             # scala or java
    time_scale: int
    config: dict                 # the group config in scenario terms (times time_scale on the broker)
    properties: dict             # the server.properties written
    dir: str
    log: str                     # server.log
    started: float               # epoch seconds
    startup_seconds: float       # from the JVM's start to ready (formatting not included)
    format_seconds: float = 0.0
    warm_up_seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"kafka://127.0.0.1:{self.port}"

    def as_json(self) -> dict:
        return {"address": self.address, **asdict(self)}


def state_home() -> Path:
    """Where the state files (and, by default, the brokers' folders) are: GROUPSPEC_KAFKA_BROKERS, else beside
    the jars."""
    given = os.environ.get("GROUPSPEC_KAFKA_BROKERS")
    return Path(given) if given else jars.home() / "brokers"


def state_file(port: int) -> Path:
    return state_home() / f"{port}.json"


def read_state(path: Path) -> BrokerState | None:
    try:
        return BrokerState(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def ours(state: BrokerState) -> bool:
    """The state's process is alive and is that broker (a pid can be reused by anything after a reboot)."""
    try:
        cmdline = Path(f"/proc/{state.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    props = str(Path(state.dir) / "server.properties").encode()
    return b"kafka.Kafka" in cmdline and props in cmdline


def running() -> list[BrokerState]:
    """Every broker this project started that still runs (state files of ended ones are removed)."""
    out = []
    home = state_home()
    if not home.is_dir():
        return out
    for path in sorted(home.glob("*.json")):
        st = read_state(path)
        if st is not None and ours(st):
            out.append(st)
        else:
            path.unlink(missing_ok=True)
    return sorted(out, key=lambda s: s.port)


def find(port: int) -> BrokerState | None:
    """The broker this project started on `port`, if it runs."""
    st = read_state(state_file(port))
    return st if st is not None and ours(st) else None


def save(state: BrokerState) -> None:
    """Record a broker's state (written at once when its process starts, so that `stop` finds it even if the
    command that started it is interrupted while it waits)."""
    state_file(state.port).write_text(json.dumps(asdict(state), indent=2) + "\n")
