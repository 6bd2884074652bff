"""What every command prints and how it refuses bad input: one console for results, one for messages,
and the one-line refusal with exit code 2 (DESIGN.md §4).

A module of its own so that each command's module (conform, traces, kafka) imports these without importing
the command line that registers it.
"""
from __future__ import annotations

import errno
import math
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

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


def kind_of(st: os.stat_result) -> str:
    """What a path that is no regular file is, in words ("a folder", "a named pipe (FIFO)", ...)."""
    mode = st.st_mode
    return ("a folder" if stat.S_ISDIR(mode) else "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else
            "a character device (like /dev/null)" if stat.S_ISCHR(mode) else
            "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def input_file(where: str, given: str, what: str) -> Path:
    """`given` (the value of `where`: an argument or a flag) as a regular file to read, or one line and exit 2
    saying what is there instead (nothing, a link to nothing, a folder, a pipe, a device); `what` says what
    to give."""
    if not given.strip():
        fail_input(f"{where} is empty; give {what}")
    path = Path(given)
    try:
        st = path.stat()
    except FileNotFoundError:
        if path.is_symlink():
            fail_input(f"{where} {path}: a symbolic link to {os.readlink(path)}, which does not exist; give {what}")
        fail_input(f"{where} {path}: no such file; give {what}")
    except OSError as e:
        fail_input(f"{where} {path}: cannot be read ({e.strerror or e}); give {what}")
    if not stat.S_ISREG(st.st_mode):
        fail_input(f"{where} {path}: is {kind_of(st)}, not a file; give {what}")
    return path


def finite(option: str, value: float | None, what: str) -> None:
    """A number option must be a number: nan and inf pass every comparison a range check makes (or fail
    it for the wrong reason) and end as a traceback where they are turned into an int."""
    if value is not None and not math.isfinite(value):
        fail_input(f"{option} {value}: give {what}")


def distinct_files(named: list[tuple[str, Path]]) -> None:
    """No two of `named` ((option, path): the outputs, and the inputs read with them) are one file: an
    output written over an input, or over another output, loses it.  Devices (/dev/null) may be named
    twice; a file not yet there is compared by where its name leads."""
    seen: dict = {}
    for option, path in named:
        try:
            st = path.stat()
        except OSError:
            key = os.path.realpath(path)
        else:
            if stat.S_ISCHR(st.st_mode):
                continue
            key = (st.st_dev, st.st_ino)
        if key in seen:
            fail_input(f"{option} {path}: is also {seen[key][0]} {seen[key][1]}, and one would overwrite the "
                       f"other; give another file")
        seen[key] = (option, path)


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
            _probe(where, lambda: _open_to_write(path), path)
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


_PIPES: list[int] = []


def _open_to_write(path: Path) -> None:
    """Open an existing output to append, without waiting: a named pipe no process reads is refused (ENXIO)
    rather than waited on.  A pipe's probe stays open while the command runs: closed now, it would tell the
    reader that the output ended before it began."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
    if stat.S_ISFIFO(os.fstat(fd).st_mode):
        _PIPES.append(fd)
    else:
        os.close(fd)


def _probe(where: str, attempt: Callable[[], None], place: Path) -> None:
    try:
        attempt()
    except OSError as e:
        if e.errno == errno.ENXIO:      # a named pipe nobody reads, or a socket: nothing to write to
            fail_input(f"{where}: a named pipe no process reads; start its reader first, or give a file"
                       if stat.S_ISFIFO(os.stat(place).st_mode) else
                       f"{where}: is {kind_of(os.stat(place))}, which cannot be opened to write; give a file")
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


def write_outputs(option: str, path: Path, write: Callable[[], None], after_result: bool = True,
                  kept: bool = False) -> None:
    """Write an output (its path was checked before the run); a failure now (a device filled up
    meanwhile) is one line and exit 2, after the result was printed if `after_result`; `kept`: it was
    being written beside its place (`whole_or_nothing`), so what was there is as it was."""
    try:
        write()
    except OSError as e:
        done = "nothing was written there (what was there is as it was)" if kept else \
            "the result above is complete, what it wrote there is not" if after_result else \
            "what it wrote there is incomplete"
        fail_input(f"{option} {path}: writing failed ({e.strerror or e}); {done}: free some space or give "
                   f"another place")


@contextmanager
def whole_or_nothing(path: Path) -> Iterator[Path]:
    """Where to write the output `path`: a file beside it, renamed onto it once complete, so that a failure,
    a full disk or a signal leaves what was there before (a link is kept, the file it names replaced); a
    device or a pipe (/dev/null, a named pipe) is written in place."""
    if path.exists() and not path.is_file():
        yield path
        return
    target = path.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        yield partial
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


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
