"""A complete trace of what the runtime coordinator does (contracts/trace-format.md, version 1).

`GroupCoordinator.trace` is None by default (nothing is written, one `is
None` test per step).  Attach a `TraceWriter` with `TraceWriter(sink).attach(coordinator)`
and every step the coordinator takes is written as records, one group at a time:

- a *step* is what one trigger entails: a request, a timer firing, a held
  append completing, a coordinator event.  Its *lead* record comes first
  (`request` with the response it got within the step, or null if parked;
  `timer`; `storage`; `coordinator`), then what the step caused, in the order
  it happened: `storage` records of appends that completed within the step
  (`"at_once": true`, an extension: the write completed before the step
  ended, so its completion row ran inside the step) and `response` records
  of parked requests answered in the step.
- a `storage` record without `at_once` completes the oldest held append of
  the group: a step of its own.

Extensions (the format allows them; none changes a field's meaning):
`issued` on a JoinGroup `request` (the member id the coordinator made for
an unknown member: a checker replaying the trace issues the same one),
`config` on a group's first record (the coordinator's non-default config,
so a checker knows the timeouts), `loaded` on a `load` (the group's records
the log held, as the storage writes them: a trace that begins at a load,
after a restart, is checked from what was loaded), `at_once` on `storage`, and the
coordinator events `begin_load`, `mark_dead`, `expire_offsets` beside
`load` and `unload`.

Requests that name several groups (DescribeGroups, DeleteGroups) are
written once per group, narrowed to it; ListGroups once per group it
lists or the coordinator holds.
"""
from __future__ import annotations

import gzip
import io
import json
from typing import Any, Callable

from groupspec.spec.engine import STATE_I
from groupspec.spec.schema import STATES

ABSENT = STATES.index("Absent")

VERSION = 1


class TraceWriter:
    """Turns a coordinator's steps into trace records and hands each to `sink(record)`."""

    def __init__(self, sink: Callable[[dict], None], source: str = "coordinator", config: dict | None = None):
        self.sink = sink
        self.source = source
        self.config = {k: v for k, v in (config or {}).items()}
        self.seq: dict[str, int] = {}          # group -> last seq written
        self.status = "active"                 # the coordinator's status, for groups first seen later
        self._depth = 0
        self._buffer: list[dict] = []
        self.issued: str | None = None
        self.coord = None

    def __deepcopy__(self, memo):
        return None        # a copy of a coordinator does not write this coordinator's trace

    def attach(self, coord) -> "TraceWriter":
        self.coord = coord
        coord.trace = self
        source = coord.id_source

        def issuing(client: str, _source=source) -> str:
            self.issued = _source(client)
            return self.issued
        coord.id_source = issuing
        return self

    # -- records ------------------------------------------------------------------

    def _record(self, group: str, kind: str, **fields) -> list[dict]:
        """A record, numbered when it is written (`_write`): a request's record is made after what
        its step caused, and written before it."""
        group = group if isinstance(group, str) else ""       # a null group id (refused) is filed under ""
        return [{"v": VERSION, "group": group, "seq": 0, "ts_ms": self.coord.clock.now(), "source": self.source,
                 "kind": kind, **fields}]

    def _write(self, rec: dict) -> None:
        group = rec["group"]
        first = group not in self.seq
        if first and self.status != "active" and rec["kind"] != "coordinator":
            # a group the trace has not seen yet, while the coordinator is not serving: say so first
            ev = {"not_coordinator": "unload", "loading": "begin_load"}[self.status]
            self._write({"v": VERSION, "group": group, "seq": 0, "ts_ms": rec["ts_ms"], "source": self.source,
                         "kind": "coordinator", "event": ev})
            first = False
        n = self.seq[group] = self.seq.get(group, 0) + 1
        rec["seq"] = n
        if first and self.config:
            rec["config"] = self.config
        self.sink(rec)

    def _emit(self, recs: list[dict]) -> None:
        """What a step caused: after its lead record (held back until the step ends)."""
        if self._depth:
            self._buffer.extend(recs)
        else:
            for r in recs:
                self._write(r)

    # -- steps ----------------------------------------------------------------------

    def begin(self) -> None:
        """A step starts: what it causes is held back until `end` (after the lead record)."""
        self._depth += 1
        if self._depth == 1:
            self._buffer = []
            self.issued = None

    def end(self, leads: list[dict] | None = None) -> None:
        self._depth -= 1
        if self._depth:
            return
        for r in leads or []:
            self._write(r)
        for r in self._buffer:
            self._write(r)
        self._buffer = []

    def lead(self, group: str, kind: str, **fields) -> None:
        """The lead record of a step whose lead is known at its start (timer, storage, coordinator)."""
        for r in self._record(group, kind, **fields):
            self._write(r)

    # -- what the coordinator calls ---------------------------------------------------

    def request(self, api: str, req: dict, rid: Any, reply: dict | None) -> list[dict]:
        """The request records of a request (several for a request that names several groups)."""
        recs: list[dict] = []
        if api == "DescribeGroups":
            for entry in (reply or {}).get("groups", []):
                gid = entry.get("group")
                recs += self._record(gid, "request", id=rid, api=api, request={**req, "groups": [gid]},
                                     response={**reply, "groups": [entry]})
        elif api == "DeleteGroups" and reply is None:     # parked (the Java coordinator: behind held writes)
            for gid in dict.fromkeys(req.get("groups") or []):
                recs += self._record(gid, "request", id=rid, api=api, request={**req, "groups": [gid]}, response=None)
        elif api == "DeleteGroups":
            for gid, e in (reply.get("errors") or {}).items():
                recs += self._record(gid, "request", id=rid, api=api, request={**req, "groups": [gid]},
                                     response={**reply, "errors": {gid: e}})
        elif api == "ListGroups":
            listed = {e["group"]: e for e in (reply or {}).get("groups", [])}
            held = [gid for gid, g in self.coord.groups.items() if gid and g.state[STATE_I] != ABSENT]
            for gid in sorted(set(listed) | set(held) | {g for g in self.seq if g}):
                if gid not in listed and gid not in held:
                    continue
                recs += self._record(gid, "request", id=rid, api=api, request=dict(req),
                                     response={**reply, "groups": [listed[gid]] if gid in listed else []})
        else:
            fields = dict(id=rid, api=api, request=dict(req), response=reply)
            if api == "JoinGroup" and self.issued is not None:
                fields["issued"] = self.issued
            gid = req.get("group")
            recs += self._record(gid if isinstance(gid, str) else "", "request", **fields)
        return recs

    def answer(self, group: str, rid: Any, response: dict) -> None:
        self._emit(self._record(group, "response", id=rid, response=response))

    def answer_parked(self, api: str, req: dict, rid: Any, response: dict) -> None:
        """A parked request answered: a DeleteGroups in each group it named, with that group's error."""
        if api == "DeleteGroups":
            for gid, e in (response.get("errors") or {}).items():
                self.answer(gid, rid, {**response, "errors": {gid: e}})
        else:
            self.answer(req.get("group") or "", rid, response)

    def stored(self, group: str, error: str, at_once: bool, cause: str | None = None, rode: bool = False) -> None:
        """An append completed.  Fields beyond trace format 1's, for the Java coordinator: `cause` "unload"
        (it failed as the offsets partition moved away: its writes fail only so once made); `rode` (a write
        made behind held ones, completing right after them, within their step: JAVA_WRITES.in_order)."""
        extra = {"cause": cause} if cause else {}
        if rode:
            self._emit(self._record(group, "storage", result=error, at_once=True, after_held=True))
        elif at_once:
            self._emit(self._record(group, "storage", result=error, at_once=True))
        else:
            self.lead(group, "storage", result=error, **extra)

    def timer(self, group: str, name: str, member: str | None) -> None:
        fields = {"timer": name}
        if member is not None:
            fields["member"] = member
        self.lead(group, "timer", **fields)

    def event(self, group: str, event: str, **fields) -> None:
        self.lead(group, "coordinator", event=event, **fields)


# -- sinks ---------------------------------------------------------------------------

class JsonLinesSink:
    """Records as JSON Lines, gzip'ed when `gzipped` says so (by default: when the name ends in .gz; a file
    written beside its place and renamed onto it has another name)."""

    def __init__(self, path: str, gzipped: bool | None = None):
        self.path = str(path)
        if gzipped is None:
            gzipped = self.path.endswith(".gz")
        raw = gzip.open(self.path, "wt", encoding="utf-8", compresslevel=3) if gzipped \
            else open(self.path, "w", encoding="utf-8")
        self.f: io.TextIOBase = raw
        self.count = 0

    def __call__(self, rec: dict) -> None:
        self.f.write(json.dumps(rec, separators=(",", ":")) + "\n")
        self.count += 1

    def flush(self) -> None:
        """What is written so far is in the file (a long-running writer: a reader may check it meanwhile)."""
        self.f.flush()

    def close(self) -> None:
        self.f.close()


class ListSink(list):
    """Records kept in memory (tests)."""

    def __call__(self, rec: dict) -> None:
        self.append(rec)
