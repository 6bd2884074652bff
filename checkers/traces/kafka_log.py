"""`groupspec traces from-kafka-log`: Kafka brokers' server.log files to partial traces.

Reads plain, rotated (`server.log.N`) and gzip'ed files, lines prefixed by docker-compose
(`kafka_1  | `), and entries wrapped by a terminal or pasted with indented continuation lines
(a line that does not start a log4j entry continues the previous one).  Recognises the group
coordinator's INFO lines of Kafka 0.9 to 4.x (research: kafka-coordinator-log-templates.md,
§1.2) and maps each to what it shows of the group: an `observe` record with an `event`, the
generation the line names, the state it names, the member and the reason.  What a line *means*
for the protocol is the table's business (checkers/traces/observe.py); this module only reads.

Files of several brokers are merged by time, so a group that moves between coordinators is one
history; each broker is a `source` (`broker-<id>` from the line's `[GroupCoordinator <id>]`
prefix, else the file's folder and name).  Log4j writes local time without a zone: read as UTC.
"""
from __future__ import annotations

import calendar
import gzip
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .records import TraceInputError

HEADER = re.compile(r"^\[(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})[,.](\d{3})\] +"
                    r"(TRACE|DEBUG|INFO|WARN|ERROR|FATAL) +(.*)$")
DOCKER = re.compile(r"^[\w.\-]+(?:[_-]\d+)?\s+\|\s?")
LOOKS_LIKE_HEADER = re.compile(r"^\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}")
LOGGER = re.compile(r"\s*\((?:kafka\.coordinator|org\.apache\.kafka\.coordinator)[\w.$]*\)\s*$")
IDENT = re.compile(r"^\[(?:GroupCoordinator|GroupMetadataManager)(?: id=| brokerId=| )(\d+)[^\]]*\]:?\s*")
COORD_LOGGER = re.compile(r"\((?:kafka\.coordinator|org\.apache\.kafka\.coordinator)[\w.$]*\)\s*$")

MEMBER_IN_TOSTRING = re.compile(r"(?:memberId=|member\.id )([^,\]\s)]+)")
ROTATED = re.compile(r"(\.\d+)?(\.gz)?$")
G = r"(?P<g>\S+?)"
GEN = r"(?P<gen>-?\d+)"
PART = r"(?: \(__consumer_offsets-\d+\))?"

# (name, pattern, event, what the state named in the line is: "after", "before" or None)
TEMPLATES: list[tuple[str, re.Pattern, str | None]] = [(n, re.compile(p), e) for n, p, e in [
    ("rebalance-start", rf"^Preparing to (?:rebalance|restabilize) group {G}(?: in state (?P<st>\w+))? with old "
                        rf"generation {GEN}{PART}(?: \(reason: (?P<reason>.*)\))?\.?\s*$", "rebalance-start"),
    ("join-complete", rf"^Stabilized group {G} generation {GEN}{PART}(?: with (?P<n>\d+) members)?\.?\s*$",
     "join-complete"),
    ("empty", rf"^Group {G} with generation {GEN} is now empty{PART}\.?\s*$", "empty"),
    ("dead-0.9", rf"^Group {G} generation {GEN} is dead and removed\.?\s*$", "dead"),
    ("leader-sync", rf"^Assignment received from leader (?:(?P<m>\S+) )?for group {G} for generation {GEN}\b.*$",
     "leader-sync"),
    ("member-failed", rf"^Member (?P<m>\S+) in group {G} has failed\b.*$", "member-removed"),
    ("pending-expired", rf"^Pending member (?P<m>\S+) in group {G} has been removed after session timeout "
                        rf"expiration\.?\s*$", "member-removed"),
    ("sync-expired", rf"^Group {G} removed members who haven't sent their sync requests?: (?P<ms>.*)$",
     "member-removed"),
    ("left-3x", rf"^Member (?P<m>.+?) has left group {G} through explicit `LeaveGroup`.*$", "member-left"),
    ("left-java", rf"^\[Group {G}\] (?:Pending member|Member) (?P<m>\S+) has left group through explicit "
                  rf"`LeaveGroup`.*$", "member-left"),
    ("left-2x", rf"^Member\s*(?P<m>.+?) in group {G} has left, removing it from the group\.?\s*$", "member-left"),
    ("pending-left", rf"^Pending member (?:with memberId=)?(?P<m>\S+) (?:is leaving|has left) group {G}"
                     rf"(?: through explicit `LeaveGroup` request)?\.?\s*$", "member-left"),
    ("pending-joins", rf"^Pending dynamic member with id (?P<m>\S+) joins group {G} in (?P<st>\w+) state\. "
                      rf"Adding to the group now\.?\s*$", "member-added"),
    ("dynamic-added", rf"^Dynamic [Mm]ember with unknown member id (?:joins|rejoins) group {G} in "
                      rf"(?:state )?(?P<st>\w+)(?: state)?\. Created a new member id (?P<m>\S+?) "
                      rf"(?:for this member and add|and added)\b.*$", "member-added"),
    ("dynamic-must-rejoin", rf"^Dynamic [Mm]ember with unknown member id (?:joins|rejoins) group {G} in "
                            rf"(?:state )?(?P<st>\w+)(?: state)?\. Created a new member id (?P<m>\S+?) and "
                            rf"request(?:ing)? the member to rejoin\b.*$", None),
    ("static-joins", rf"^Static member with groupInstanceId=(?P<i>\S+) and unknown member id joins group {G} "
                     rf"in (?P<st>\w+) state\. (?:Replacing previously mapped member (?P<old>\S+)|Created a new "
                     rf"member id (?P<m>\S+))\b.*$", "member-added"),
    ("loading", rf"^Loading group metadata for {G} with generation {GEN}\.?\s*$", "loaded"),
    ("loaded-java", rf"^Loaded (?:generic|classic) group {G} with (?P<n>\d+) members\.?\s*$", "loaded"),
    ("unloading", rf"^Unloading group metadata for {G} with generation {GEN}\.?\s*$", "unloaded"),
    ("dead", rf"^Group {G} transitioned to Dead in generation {GEN}\.?\s*$", "dead"),
    ("deleted", r"^The following groups were deleted: (?P<gs>.*?)\. A total of \d+ offsets were removed\.?\s*$",
     "dead"),
    ("dead-skip", rf"^Group {G} is dead, skipping rebalance stage\.?\s*$", None),
    ("no-rejoin", rf"^Group {G} could not complete rebalance because no members rejoined\.?\s*$", None),
    ("removed-not-joined", rf"^Group {G} removed dynamic members who haven't joined: (?P<ms>.*)$", None),
    ("simple-group", rf"^Creating simple consumer group {G} via manual offset commit\.?\s*$", None),
    # about an offsets partition, not a group: recognised, no observation
    ("partition-elected", r"^Elected as the group coordinator for partition \d+.*$", None),
    ("partition-resigned", r"^Resigned as the group coordinator for partition \d+.*$", None),
    ("partition-loading", r"^(?:Scheduling (?:un)?loading|Finished (?:un)?loading|Offset load from) .*$", None),
]]
# the state a line shows the group in when it maps to no event
SNAPSHOT_STATE = {"dead-skip": "Dead", "no-rejoin": "PreparingRebalance", "removed-not-joined": "PreparingRebalance",
                  "simple-group": "Empty"}
STATE_ALIASES = {"AwaitingSync": "CompletingRebalance", "PREPARING_REBALANCE": "PreparingRebalance",
                 "COMPLETING_REBALANCE": "CompletingRebalance", "STABLE": "Stable", "EMPTY": "Empty", "DEAD": "Dead"}


@dataclass
class Reading:
    observations: list = field(default_factory=list)     # (ts_ms, file index, line, source, group, fields)
    recognised: Counter = field(default_factory=Counter)
    unrecognised: Counter = field(default_factory=Counter)   # coordinator lines no template matches, by shape
    examples: dict = field(default_factory=dict)
    other_lines: int = 0
    lines: int = 0
    files: int = 0


def _rotation(path: Path) -> tuple:
    """Older files first: server.log.3, server.log.2, server.log.1, server.log."""
    m = re.search(r"\.log\.(\d+)(?:\.gz)?$", path.name)
    return (str(path.parent), re.sub(r"\.\d+(\.gz)?$", "", path.name), -int(m.group(1)) if m else 0)


def _ms(m: re.Match) -> int:
    y, mo, d, h, mi, s, ms = (int(x) for x in m.groups()[:7])
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 61):
        raise ValueError("a timestamp that is no date")
    return calendar.timegm((y, mo, d, h, mi, s)) * 1000 + ms


def _entries(path: Path):
    """(line number, text) of each log entry, continuation lines joined."""
    try:
        with open(path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        raw = gzip.open(path, "rb") if gz else open(path, "rb")
    except OSError as e:
        raise TraceInputError(f"{path}: cannot be read ({e.strerror or e})") from None
    cur, start = None, 0
    try:
        with raw as f:
            for n, b in enumerate(f, 1):
                try:
                    line = b.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as e:
                    raise TraceInputError(f"{path}:{n}: not UTF-8 text (byte {e.start} of the line); is it a "
                                          f"broker's server.log?") from None
                if "\x00" in line:
                    raise TraceInputError(f"{path}:{n}: binary data (NUL bytes) in a log file; is it a "
                                          f"broker's server.log?")
                line = DOCKER.sub("", line, count=1) if not line.startswith("[") else line
                if LOOKS_LIKE_HEADER.match(line):
                    if cur is not None:
                        yield start, cur
                    cur, start = line, n
                elif cur is not None and line.strip():
                    cur = cur + " " + line.strip() if line[:1].isspace() else cur + line
                elif line.strip():
                    yield n, line
            if cur is not None:
                yield start, cur
    except (EOFError, gzip.BadGzipFile, OSError) as e:
        raise TraceInputError(f"{path}: a broken gzip file ({e}); recompress it or give it uncompressed") from None


def read_files(paths: list[str]) -> Reading:
    files: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            files += sorted(q for q in path.rglob("*") if q.is_file() and re.search(r"\.log(\.\d+)?(\.gz)?$", q.name))
        elif path.is_file():
            files.append(path)
        else:
            raise TraceInputError(f"{path}: no such file or folder")
    if not files:
        raise TraceInputError(f"{', '.join(paths)}: no log files found (server.log, server.log.N, *.log.gz)")
    files.sort(key=_rotation)
    out = Reading(files=len(files))
    for fi, path in enumerate(files):
        fallback = path.parent.name + "/" + ROTATED.sub("", path.name)
        for n, text in _entries(path):
            out.lines += 1
            m = HEADER.match(text)
            if not m:
                if LOOKS_LIKE_HEADER.match(text):
                    raise TraceInputError(f"{path}:{n}: a log4j line whose header cannot be read: {text[:80]!r}")
                out.other_lines += 1
                continue
            try:
                ts = _ms(m)
            except ValueError:
                raise TraceInputError(f"{path}:{n}: a timestamp that is no date: {text[:30]!r}") from None
            msg = m.group(9)
            if not COORD_LOGGER.search(msg) and "GroupCoordinator" not in msg and "GroupMetadataManager" not in msg:
                out.other_lines += 1
                continue
            msg = LOGGER.sub("", msg)
            src = fallback
            im = IDENT.match(msg)
            if im:
                src = f"broker-{im.group(1)}"
                msg = msg[im.end():]
            _match(out, msg, ts, fi, n, src)
    return out


def _match(out: Reading, msg: str, ts: int, fi: int, n: int, src: str) -> None:
    for name, pat, event in TEMPLATES:
        m = pat.match(msg)
        if not m:
            continue
        out.recognised[name] += 1
        d = m.groupdict()
        groups = [g.strip() for g in d["gs"].split(",")] if d.get("gs") else [d.get("g")]
        for gid in groups:
            if not gid:
                continue
            fields: dict = {}
            if d.get("gen") is not None:
                fields["generation"] = int(d["gen"])
            if d.get("m"):
                mm = MEMBER_IN_TOSTRING.search(d["m"])
                fields["member"] = mm.group(1) if mm else d["m"]
            if d.get("reason"):
                fields["reason"] = d["reason"]
            st = d.get("st")
            st = STATE_ALIASES.get(st, st)
            if event is None:
                snap = SNAPSHOT_STATE.get(name, st)
                if snap:
                    out.observations.append((ts, fi, n, src, gid, {"state": snap}))
                continue
            if st and event == "member-added":
                # the state named is the one the member joins in: the group is in it now
                out.observations.append((ts, fi, n, src, gid, {"state": st}))
            fields["event"] = event
            out.observations.append((ts, fi, n, src, gid, fields))
        return
    shape = re.sub(r"\b[0-9a-f]{8}-[0-9a-f-]{27,}\b", "<uuid>", msg)
    shape = re.sub(r"\d+", "N", shape)[:120]
    out.unrecognised[shape] += 1
    out.examples.setdefault(shape, msg[:200])


def to_records(reading: Reading) -> list[dict]:
    """The observations as trace records, merged by time (stable: file order, then line order)."""
    seq: dict = {}
    recs = []
    for ts, fi, n, src, gid, fields in sorted(reading.observations, key=lambda o: (o[0], o[1], o[2])):
        k = (src, gid)
        seq[k] = seq.get(k, 0) + 1
        recs.append({"v": 1, "group": gid, "seq": seq[k], "ts_ms": ts, "source": src, "kind": "observe", **fields})
    return recs


def summary(reading: Reading, records: int) -> dict:
    return {"files": reading.files, "entries": reading.lines, "records": records,
            "recognised": dict(reading.recognised.most_common()),
            "unrecognised_coordinator_lines": sum(reading.unrecognised.values()),
            "unrecognised_top": [{"shape": s, "count": c, "example": reading.examples[s]}
                                 for s, c in reading.unrecognised.most_common(10)],
            "other_lines": reading.other_lines}
