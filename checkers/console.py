"""What every command prints and how it refuses bad input: one console for results, one for messages,
and the one-line refusal with exit code 2 (DESIGN.md §4).

A module of its own so that each command's module (conform, traces, kafka) imports these without importing
the command line that registers it.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

import typer
from rich.console import Console

from groupspec.spec.kafka import BOOLEAN_KEYS, CONFIG_DEFAULTS, ConfigError, brief, check_config

# rich (and typer's help) take COLUMNS=0 as a width of 0 and print nothing at all, not even an error: a width
# below 1 is no width, so it is dropped and the terminal's (or 80) is used
if os.environ.get("COLUMNS", "").strip().isdigit() and int(os.environ["COLUMNS"]) < 1:
    del os.environ["COLUMNS"]

# emoji off: a scenario named `:thumbs_up:` is printed as written
err = Console(stderr=True, soft_wrap=True, emoji=False)
out = Console(soft_wrap=True, emoji=False)


def fail_input(message: str) -> None:
    say_error(f"groupspec: {one_line(message)}")
    raise typer.Exit(2)


def say_error(line: str) -> None:
    """One line on the standard error; if that cannot be written (closed, a full device) there is no one left
    to tell, and the exit code still says what happened."""
    try:
        err.print(line, markup=False, highlight=False, soft_wrap=True)
    except OSError:
        pass


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def output_path(option: str, given: str, kind: str, files: tuple = ()) -> Path:
    """Check now, before any work, that `given` (the value of `option`) can be written: a file
    (`kind` "file"), or a folder to write `files` into ("dir"); refuse in one line, exit 2.

    Missing folders are created when the output is written; what must hold now is that the
    nearest existing one is a writable folder (probed with an unnamed temporary file, so
    permissions, a read-only file system and a full device all show) and that nothing in the
    way is a file where a folder is needed or the other way round."""
    what = "a file name" if kind == "file" else "a folder"
    if not given.strip():
        fail_input(f"{option} is empty; give {what}")
    path = Path(given)
    where = f"{option} {path}"
    if kind == "file":
        if path.is_dir():
            fail_input(f"{where}: is a folder; give a file name (e.g. {path / 'report.xml'})")
        if path.exists():
            _probe(where, lambda: open(path, "ab").close(), path)
            return path
    else:
        if path.exists() and not path.is_dir():
            fail_input(f"{where}: is not a folder; give a folder (it is created if missing)")
        for name in files:
            if (path / name).is_dir():
                fail_input(f"{where}: {path / name} is a folder, and a file of that name is written there; "
                           f"move it away or give another folder")
    folder = path if kind == "dir" else path.parent
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        fail_input(f"{where}: {existing} is a file, so no folder can be made under it; give another place")
    _probe(where, lambda: tempfile.TemporaryFile(dir=existing).close(), existing)
    return path


def _probe(where: str, attempt: Callable[[], None], place: Path) -> None:
    try:
        attempt()
    except OSError as e:
        fail_input(f"{where}: cannot write in {place} ({e.strerror or e}); give another place or fix its "
                   f"permissions")
    try:
        st = os.statvfs(place)
    except OSError:                      # pragma: no cover - a file system without statvfs
        return
    free = st.f_bfree if os.geteuid() == 0 else st.f_bavail
    if st.f_blocks and not free:
        fail_input(f"{where}: the device holding {place} is full (no space left); free some space or give "
                   f"another place")


def write_outputs(option: str, path: Path, write: Callable[[], None], after_result: bool = True) -> None:
    """Write an output (its path was checked before the run); a failure now (a device filled up
    meanwhile) is one line and exit 2, after the result was printed if `after_result`."""
    try:
        write()
    except OSError as e:
        done = "the result above is complete, what it wrote there is not" if after_result else \
            "what it wrote there is incomplete"
        fail_input(f"{option} {path}: writing failed ({e.strerror or e}); {done}: free some space or give "
                   f"another place")


def config_option(pairs: list[str]) -> dict:
    """--config key=value (repeated): the coordinator config it gives, each key known and its value of the key's
    type, the whole as the spec checks it; one line and exit 2 otherwise."""
    cfg: dict = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        key = key.strip()
        if not eq or not key:
            fail_input(f"--config {brief(pair)}: give key=value, e.g. group.max.size=3")
        if key not in CONFIG_DEFAULTS:
            fail_input(f"--config {brief(key)}: unknown config key; known: {', '.join(CONFIG_DEFAULTS)}")
        if key in BOOLEAN_KEYS:
            v = value.strip().lower()
            if v not in ("true", "false"):
                fail_input(f"--config {key}: {brief(value.strip())} is not true or false")
            cfg[key] = v == "true"
            continue
        try:
            cfg[key] = int(value.strip())
        except ValueError:
            fail_input(f"--config {key}: {brief(value.strip())} is not an integer")
    try:
        check_config(cfg)
    except ConfigError as e:
        fail_input(f"--config: {e}")
    return cfg
