"""The implementation adapter: what the harness needs of a group coordinator, and the two that ship.

An adapter drives one implementation of Kafka's classic group coordinator
for one run (one Hypothesis example): it is made by a *factory* called with
the run's config (Kafka's keys, `contracts/scenario-format.md`), used, then
closed.  Everything is in the scenario format's terms: a request is a dict
of its request fields, a response a dict of its response fields, a snapshot
a dict of its snapshot fields.  Member ids are the implementation's own: the
harness learns them from responses and maps them to the spec's.

    class MyCoordinator:                       # no base class needed
        def __init__(self, config): ...
        def send(self, api, request, request_id): ...   # response dict, or None when parked
        def answered(self): ...                # [(request_id, response)] of parked requests answered since
        def advance(self, ms): ...             # the clock moves; due timers fire (the contract's advance_ms)
        def storage_hold(self, hold): ...      # appends wait (True) or complete at once (False)
        def storage_fail_next(self, error): ...    # the next append fails with error
        def storage_complete(self, error): ...     # the oldest held append completes; False if none is held
        def unload(self): ...                  # the offsets partition moves away
        def begin_load(self): ...              # it is being loaded here
        def load(self): ...                    # loading completes from the log
        def mark_dead(self, group): ...        # the group is marked Dead while requests still reach it
        def expire_offsets(self): ...          # the offset-expiry task runs now
        def snapshot(self, group): ...         # {state, generation, leader, members, ...} or None: not held
        def close(self): ...                   # optional

    groupspec conform --adapter mypackage.mymodule:MyCoordinator

An adapter that cannot do some of these (a real broker cannot be told to
mark a group Dead) lists them in `unsupported` (names of the methods); the
harness then never asks for them.  An exception from an adapter method is
reported as a divergence: the implementation failed where the spec answers,
except `Unsupported`: the implementation cannot be asked this at all (a
request no client of it could send, a config it has no key for).  The
harness then leaves the step out, and a scenario that needs it is skipped
with that reason, never passed.  A factory may raise Unsupported too, for a
config its implementation cannot take: the harness draws another (and says
so if it can take none); anything else a factory raises means the adapter
cannot be used at all (one line, exit 2).  An adapter whose implementation fixes some
config keys (Kafka's NewMemberJoinTimeoutMs is a constant) gives them in
`fixed_config`, and the harness draws configs with those values.  An
adapter whose responses carry only the fields of their request's version
(Kafka's JoinGroup v3 has no protocol type) sets `partial_responses`: a
field it leaves out is not compared (the scenario runner notes which); one
that sees a group only from outside (a broker has no API that shows a
group's generation) sets `partial_snapshots`, and the same holds for the
fields its snapshots leave out.
"""
from __future__ import annotations

import importlib
import random
from typing import Any, Callable, Iterable, Protocol, runtime_checkable

from groupspec.impl.coordinator import GroupCoordinator, NotABehaviour
from groupspec.impl.storage import InMemoryLog
from groupspec.spec.kafka import brief

# What a step of the harness may ask of an adapter beyond send/answered/advance/snapshot.
OPTIONAL = ("storage_hold", "storage_fail_next", "storage_complete", "unload", "begin_load", "load", "mark_dead",
            "expire_offsets")
COORDINATOR_EVENTS = ("unload", "begin_load", "load", "expire_offsets")


@runtime_checkable
class Coordinator(Protocol):
    """An implementation of the group coordinator under test (see the module's text)."""

    def send(self, api: str, request: dict, request_id: str) -> dict | None: ...

    def answered(self) -> list[tuple[str, dict]]: ...

    def advance(self, ms: int) -> None: ...

    def storage_hold(self, hold: bool) -> None: ...

    def storage_fail_next(self, error: str) -> None: ...

    def storage_complete(self, error: str) -> bool: ...

    def unload(self) -> None: ...

    def begin_load(self) -> None: ...

    def load(self) -> None: ...

    def mark_dead(self, group: str) -> None: ...

    def expire_offsets(self) -> None: ...

    def snapshot(self, group: str) -> dict | None: ...


Factory = Callable[[dict], Coordinator]


class Unsupported(Exception):
    """What an implementation cannot be asked (the message says what and why); not a divergence."""


class CoordinatorAdapter:
    """Any `GroupCoordinator` (the runtime's, or one driven by another table) as an adapter."""

    unsupported: frozenset = frozenset()

    def __init__(self, coord: GroupCoordinator):
        self.coord = coord
        self._answers: list[tuple[str, dict]] = []

    def send(self, api: str, request: dict, request_id: str) -> dict | None:
        try:
            return self.coord.send(api, request, on_response=lambda r, rid=request_id: self._answers.append((rid, r)),
                                   request_id=request_id)
        except NotABehaviour as e:
            raise Unsupported(str(e)) from None

    def answered(self) -> list[tuple[str, dict]]:
        out, self._answers = self._answers, []
        return out

    def advance(self, ms: int) -> None:
        self.coord.advance(ms)

    def storage_hold(self, hold: bool) -> None:
        self.coord.storage_hold(hold)

    def storage_fail_next(self, error: str) -> None:
        self.coord.storage_fail_next(error)

    def storage_complete(self, error: str) -> bool:
        try:
            return self.coord.storage_complete(error)
        except NotABehaviour as e:
            raise Unsupported(str(e)) from None

    def unload(self) -> None:
        self.coord.unload()

    def begin_load(self) -> None:
        self.coord.begin_load()

    def load(self) -> None:
        self.coord.load()

    def mark_dead(self, group: str) -> None:
        self.coord.mark_dead(group)

    def expire_offsets(self) -> None:
        try:
            self.coord.expire_offsets()
        except NotABehaviour as e:
            raise Unsupported(str(e)) from None

    def snapshot(self, group: str) -> dict | None:
        return self.coord.snapshot(group)

    def close(self) -> None:
        pass


def perform(impl: Coordinator, step: dict) -> Any:
    """Do a scenario step other than send, expect or snapshot (advance_ms, storage, coordinator) on an
    adapter."""
    if "advance_ms" in step:
        return impl.advance(step["advance_ms"])
    if "storage" in step:
        (key, val), = step["storage"].items()
        return {"hold": impl.storage_hold, "fail_next_append": impl.storage_fail_next,
                "complete": impl.storage_complete}[key](val)
    ev = step["coordinator"]
    return impl.mark_dead(ev["mark_dead"]) if isinstance(ev, dict) else getattr(impl, ev)()


def runtime(config: dict, engine=None) -> CoordinatorAdapter:
    """The runtime coordinator (impl/): its python-statemachine lifecycle, every coordinator invariant
    checked after every row (debug), its log in memory (the harness makes thousands of them; the file
    log's fsync would be most of the time).  `engine`: another table's rows (mutation testing)."""
    return CoordinatorAdapter(GroupCoordinator(config, log=InMemoryLog(), lifecycle=True, debug=True,
                                               engine=engine))


class SpecAdapter:
    """The table itself, through the scenario runner's spec target (`checkers/scenarios/runner.py`): every
    step runs once per combination of the choices Kafka leaves open (a new leader, a tied vote), each
    behaviour in a world of its own.  The harness uses it as the reference, keeping the worlds whose
    answers fit the implementation's (`reference.Reference`).  As an implementation under test (`--adapter
    spec`) it follows one behaviour, a random one (seeded) at each choice: every answer it gives is one the
    spec allows, so the harness must accept all of them."""

    unsupported: frozenset = frozenset()

    def __init__(self, config: dict, seed: int | None = 0):
        from .reference import Reference
        self.ref = Reference(config)
        self.rnd = random.Random(seed)
        self._seen: dict[str, dict] = {}

    def _one(self) -> None:
        if len(self.ref.worlds) > 1:
            self.ref.worlds = [self.rnd.choice(self.ref.worlds)]

    def _do(self, step: dict) -> None:
        try:
            self.ref.act(step)
        except NotABehaviour as e:
            raise Unsupported(str(e)) from None
        self._one()

    def send(self, api: str, request: dict, request_id: str) -> dict | None:
        self._do({"send": api, "id": request_id, **request})
        got = self.ref.worlds[0].responses.get(request_id)
        if got is not None:
            self._seen[request_id] = got
        return got

    def answered(self) -> list[tuple[str, dict]]:
        new = [(rid, r) for rid, r in self.ref.worlds[0].responses.items() if self._seen.get(rid) is not r]
        self._seen.update(new)
        return new

    def advance(self, ms: int) -> None:
        self._do({"advance_ms": ms})

    def storage_hold(self, hold: bool) -> None:
        self._do({"storage": {"hold": hold}})

    def storage_fail_next(self, error: str) -> None:
        self._do({"storage": {"fail_next_append": error}})

    def storage_complete(self, error: str) -> bool:
        if not self.ref.worlds[0].coord.appends:
            return False
        self._do({"storage": {"complete": error}})
        return True

    def unload(self) -> None:
        self._do({"coordinator": "unload"})

    def begin_load(self) -> None:
        self._do({"coordinator": "begin_load"})

    def load(self) -> None:
        self._do({"coordinator": "load"})

    def mark_dead(self, group: str) -> None:
        self._do({"coordinator": {"mark_dead": group}})

    def expire_offsets(self) -> None:
        self._do({"coordinator": "expire_offsets"})

    def snapshot(self, group: str) -> dict | None:
        return self.ref.worlds[0].coord.snapshot(group)

    def close(self) -> None:
        pass


def spec(config: dict, seed: int | None = 0) -> SpecAdapter:
    return SpecAdapter(config, seed)


BUILTIN: dict[str, Factory] = {"runtime": runtime, "spec": spec}
# Kafka's own coordinators (checkers/kafka): loaded by name like a user's adapter, so that using the spec or
# the runtime never starts a JVM or needs Kafka's jars
KAFKA: dict[str, str] = {"kafka-3.9": "groupspec.checkers.kafka.inprocess:kafka_39",
                         "kafka-4.0": "groupspec.checkers.kafka.inprocess:kafka_40"}
BROKER_SCHEME = "kafka://"


class AdapterError(ValueError):
    """`--adapter` names nothing usable (one line: what, where, how to fix)."""


class AdapterBroken(RuntimeError):
    """The adapter could not be made or used at all (its factory raised on a valid config, say)."""


def load_factory(name: str) -> Factory:
    """`runtime`, `spec`, `kafka-3.9`, `kafka-4.0`, `kafka://host:port` (a broker), or `module:factory` (a
    callable taking the config and returning an adapter)."""
    if name in BUILTIN:
        return BUILTIN[name]
    if name in KAFKA:
        return load_factory(KAFKA[name])
    if name.startswith(BROKER_SCHEME):
        broker = load_factory("groupspec.checkers.kafka.wire:broker_factory")
        return broker(name)
    if ":" not in name:
        raise AdapterError(f"--adapter {brief(name)}: give runtime, spec, {', '.join(KAFKA)}, kafka://host:port, or "
                           f"module:factory (a dotted module path and the name of a callable in it that takes the "
                           f"config, e.g. mypkg.broker:Adapter)")
    module_name, _, attr = name.partition(":")
    if not module_name or not attr:
        raise AdapterError(f"--adapter {brief(name)}: both the module and the factory name are needed "
                           f"(module:factory)")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:   # noqa: BLE001 - any import failure is the user's module's, said in one line
        raise AdapterError(f"--adapter {brief(name)}: module {module_name!r} cannot be imported "
                           f"({type(e).__name__}: {brief(str(e), 120)}); check the name and that it is on "
                           f"PYTHONPATH") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AdapterError(f"--adapter {brief(name)}: module {module_name!r} has no {attr!r}; name a "
                               f"callable that takes the config and returns an adapter")
        obj = getattr(obj, part)
    if not callable(obj):
        raise AdapterError(f"--adapter {brief(name)}: {attr!r} is {brief(obj)}, not callable; name a class or "
                           f"function that takes the config and returns an adapter")
    return obj


def missing_methods(adapter: Any) -> list[str]:
    """The adapter's methods the harness needs that it lacks (beyond those it declares unsupported)."""
    skip = set(getattr(adapter, "unsupported", ()) or ())
    need: Iterable[str] = ("send", "answered", "advance", "snapshot", *OPTIONAL)
    return [m for m in need if m not in skip and not callable(getattr(adapter, m, None))]
