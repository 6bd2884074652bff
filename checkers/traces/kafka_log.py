"""`groupspec traces from-kafka-log`: Kafka brokers' server.log files to partial traces.

What it reads: plain, rotated (`server.log.N`, and Kafka's hourly `server.log.YYYY-MM-DD-HH`) and
gzip'ed files, named one by one or found in folders (a file named twice is read once), in the
shapes log lines take once copied around: docker-compose prefixes (`kafka_1  | `); `grep -r`
output, each line prefixed with the file it came from (`server.log.2023-12-09-08:`, with `-n`
its line number too, context lines with `-`); rows pasted from a terminal UI, framed by
box-drawing characters (`│ … │`; the frame's own rows skipped; at least HEAD_WIDTH wide, so that
a row can start an entry); entries wrapped by a terminal or written with indented continuation
lines.  A line that does not start a log4j entry continues the previous one: after a blank when
it is indented, or when it follows a framed row that ended short of its frame (a terminal fills
a row to the frame unless the text ended there); otherwise where the terminal broke it, mid-word.

What it recognises: the group coordinator's INFO lines of Kafka 0.9 to 4.x (research:
kafka-coordinator-log-templates.md, §1.2), each mapped to what it shows of the group: an
`observe` record with an `event`, the generation the line names, the state it names, the member
and the reason.  What a line *means* for the protocol is the table's business
(checkers/traces/observe.py); this module only reads.

Gaps.  An excerpt may leave lines out and say so: `...` or `…` alone on a line, `[...]`,
`<snip>`, `N lines omitted`, grep's `--` between context groups.  Between the entries around
such a line anything may have happened, to any group (a group may have moved to that broker and
back), so a group with records on both sides of any moment of that stretch gets an `observe`
record with `event: gap` before its record after it, and the checker judges nothing across it.
A coordinator entry cut short (below) is a gap too: what it said is lost.  A marker before a
file's first entry or after its last says only that the excerpt starts or ends there, as any
file does: no gap.

Cost.  One pass, linear in the input.  Every pattern is anchored, or tried only where a fixed
text starts (an unanchored `\\s*` retried at every blank of a long run made a padded line
quadratic, and a regex holds off signals while it runs); an entry is built from a list of
pieces (adding to one string copied it whole for each of a stack trace's lines); of one entry at
most ENTRY_LIMIT characters are kept, and the rest of a longer line is read in pieces of that
size and dropped (counted as cut unless it was blank).  Memory holds one entry and the
observations (a rebalance's reason kept up to REASON_LIMIT characters).

Files of several brokers are merged by time, so a group that moves between coordinators is one
history; each broker is a `source` (`broker-<id>` from the line's `[GroupCoordinator <id>]`
prefix, else the file's folder and name).  Log4j writes local time without a zone: read as UTC
(a time before 1970 is a negative number of ms).  What no broker writes (bytes that are not
UTF-8, NUL bytes, a date that does not exist, a generation beyond Kafka's INT32, an id longer
than a Kafka string) is a TraceInputError naming the file and line.
"""
from __future__ import annotations

import calendar
import codecs
import datetime
import gzip
import os
import re
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from groupspec.spec.kafka import INT16_MAX, INT32_MAX, INT32_MIN

from .records import TraceInputError

ENTRY_LIMIT = 1 << 20          # characters kept of one entry, and read at once of one line
ENTRY_LIMIT_TEXT = "1 MiB"
REASON_LIMIT = 1000            # characters kept of a rebalance's reason (free text no check reads)
SHAPES_LIMIT = 10_000          # distinct shapes of unrecognised coordinator lines counted apart
LOG_FILES = "server.log, server.log.N, server.log.YYYY-MM-DD-HH, *.log.gz"

HEADER = re.compile(r"^\[(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})[,.](\d{3})\] +"
                    r"(TRACE|DEBUG|INFO|WARN|ERROR|FATAL)(?: +(.*))?$")      # an empty message too
LOOKS_LIKE_HEADER = re.compile(r"^\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}")
HEAD_WIDTH = 20                # what LOOKS_LIKE_HEADER reads: a frame narrower splits it, and is not read
DOCKER = re.compile(r"^[\w.\-]+(?:[_-]\d+)?\s+\|\s?")
# grep's prefix: the file, with -n its line number, then `:` (a matching line) or `-` (context);
# the shortest file name before a log4j header, looked for only in the first GREP_SPAN characters
GREP = re.compile(r"(?P<f>\S+?)(?P<s>[:-])(?:(?P<ln>\d+)(?P=s))?(?=\[\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})")
GREP_SPAN = 4096 + 64          # a Linux path is at most 4096 bytes
GREP_AFTER = {False: re.compile(r"[:-]"), True: re.compile(r"[:-]\d+[:-]")}
# the logger at an entry's end (matched whole from its last `(`) and the prefix the coordinator's
# classes put before their messages: either makes an entry the coordinator's
COORD_LOGGER = re.compile(r"\((?:kafka\.coordinator|org\.apache\.kafka\.coordinator)[\w.$]*\)")
IDENT = re.compile(r"^\[(?:GroupCoordinator|GroupMetadataManager)(?: id=| brokerId=| )(\d+)[^\]]*\]:?\s*")

MEMBER_IN_TOSTRING = re.compile(r"(?:memberId=|member\.id )([^,\]\s)]+)")
ROTATION = re.compile(r"\.(?:\d+|\d{4}-\d{2}-\d{2}(?:-\d{2})?)$")
LOG_NAME = re.compile(r"\.log(?:\.\d+|\.\d{4}-\d{2}-\d{2}(?:-\d{2})?)?(?:\.gz)?$")
G = r"(?P<g>\S+?)"
GEN = r"(?P<gen>-?\d+)"
PART = r"(?: \(__consumer_offsets-\d+\))?"

# (name, pattern, the event the line shows, or None for a line that shows a state or nothing)
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
    ("left-2x", rf"^Member ?(?P<m>.+?) in group {G} has left, removing it from the group\.?\s*$", "member-left"),
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


# the vertical bars a terminal UI frames a row with, and every box-drawing character (its borders)
BARS = "│┃║┆┇┊┋╎╏"
NOT_BOX = {c: None for c in range(0x2500, 0x2580)}
_BORDER = object()             # what _unframe says of a row of the frame itself
# what says that lines were left out, besides dots: `N lines omitted`, `... 12 lines ...`, `<snip>`
GAP_WORDS = re.compile(r"(?:(?:\.{3}|…)\s*)?(?:\d[\d,]*\s+)?(?:more\s+)?(?:log\s+)?(?:lines?|entries|messages)\s+"
                       r"(?:omitted|elided|skipped|snipped|removed|truncated|hidden|left\s+out)(?:\s*(?:\.{3}|…))?"
                       r"|(?:\.{3}|…)\s*\d[\d,]*\s+(?:more\s+)?(?:lines?|entries|messages)(?:\s*(?:\.{3}|…))?", re.I)


@dataclass
class Reading:
    observations: list = field(default_factory=list)     # (ts_ms, file index, line, source, group, fields)
    gaps: list = field(default_factory=list)      # (from, to, where and what): from and to as the keys
                                                  # (ts_ms, file index, line) of the entries around it
    recognised: Counter = field(default_factory=Counter)
    unrecognised: Counter = field(default_factory=Counter)   # coordinator lines no template matches, by shape
    examples: dict = field(default_factory=dict)
    other_lines: int = 0
    lines: int = 0
    files: int = 0
    cut: int = 0                 # entries longer than ENTRY_LIMIT
    cut_coordinator: int = 0     # ... of them the coordinator's (each a gap)


# -- which files ---------------------------------------------------------------------------

def input_files(paths: list[str]) -> list[Path]:
    """The log files the arguments name, oldest rotation first, each once (a file given twice, or
    also found in a folder given, would repeat every event it holds); TraceInputError for an
    argument that names nothing, or something that is neither a file nor a folder."""
    files: list[Path] = []
    seen: set = set()
    for p in paths:
        if not p.strip():
            raise TraceInputError("an input path is empty; give broker log files or folders of them")
        path = Path(p)
        st = _stat(path)
        if stat.S_ISDIR(st.st_mode):
            found = _folder(path)
            if not found:
                raise TraceInputError(f"{path}: a folder with no log files in it ({LOG_FILES})")
        elif stat.S_ISREG(st.st_mode):
            found = [(path, st)]
        else:
            raise TraceInputError(f"{path}: {_not_a_file(st)}")
        for q, qs in found:
            if (qs.st_dev, qs.st_ino) not in seen:
                seen.add((qs.st_dev, qs.st_ino))
                files.append(q)
    return sorted(files, key=_rotation)


def _stat(path: Path) -> os.stat_result:
    try:
        return path.stat()
    except FileNotFoundError:
        if path.is_symlink():
            raise TraceInputError(f"{path}: a symbolic link to {os.readlink(path)}, which does not exist") from None
        raise TraceInputError(f"{path}: no such file or folder") from None
    except OSError as e:
        raise TraceInputError(f"{path}: cannot be read ({e.strerror or e})") from None


def _not_a_file(st: os.stat_result) -> str:
    what = ("a named pipe (FIFO)" if stat.S_ISFIFO(st.st_mode) else
            "a character device (like /dev/null)" if stat.S_ISCHR(st.st_mode) else
            "a block device" if stat.S_ISBLK(st.st_mode) else
            "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
    return (f"{what}, not a log file: the reader reads files (save what it gives to a file first), "
            f"or folders of them")


def _folder(path: Path) -> list[tuple[Path, os.stat_result]]:
    """The log files under a folder, by name; one named so that cannot be read, or is no file (a
    pipe, a link to nothing), is refused as it would be if given by itself, not skipped unsaid."""
    def refuse(e: OSError):
        raise TraceInputError(f"{e.filename}: a folder that cannot be read ({e.strerror}); fix its permissions "
                              f"or leave it out")
    found = []
    for root, dirs, names in os.walk(path, onerror=refuse):
        dirs.sort()
        for name in names:
            if LOG_NAME.search(name):
                q = Path(root, name)
                qs = _stat(q)
                if not stat.S_ISREG(qs.st_mode):
                    raise TraceInputError(f"{q}: {_not_a_file(qs)}")
                found.append((q, qs))
    return found


def _base(name: str) -> tuple[str, tuple]:
    """A log file's name without its rotation and compression, and its place among its rotations
    (oldest first: server.log.2023-12-09-08 before ...-09; server.log.3, .2, .1; server.log)."""
    name = name[:-3] if name.endswith(".gz") else name
    m = ROTATION.search(name)
    if not m:
        return name, (2, 0)
    suffix = m.group()[1:]
    return name[:m.start()], ((1, -int(suffix)) if suffix.isdigit() else (0, suffix))


def _rotation(path: Path) -> tuple:
    base, order = _base(path.name)
    return str(path.parent), base, order


def _source(path: Path, named: str | None) -> str:
    """A broker's name when its lines do not give its id: the folder and the log's name without
    its rotation (of the file grep named, when the line came through grep)."""
    p = PurePath(named) if named else path
    return f"{p.parent.name or path.parent.name}/{_base(p.name)[0]}"


# -- lines and entries ---------------------------------------------------------------------

def _text(path: Path, n: int, b: bytes, at: int = 0, dec=None, final: bool = True) -> str:
    if b"\x00" in b:
        raise TraceInputError(f"{path}:{n}: binary data (NUL bytes) in a log file; is it a broker's server.log?")
    try:
        t = dec.decode(b, final) if dec is not None else b.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TraceInputError(f"{path}:{n}: not UTF-8 text (byte {at + e.start} of the line); is it a broker's "
                              f"server.log?") from None
    return t.rstrip("\r\n")


def _lines(path: Path, f):
    """(line number, text, cut) of each line of the binary file `f`: at most ENTRY_LIMIT characters
    of the line; the rest is read in pieces of that size (checked as the kept part is) and dropped,
    and `cut` says whether any of it was not blank."""
    n = 0
    while True:
        b = f.readline(ENTRY_LIMIT)
        if not b:
            return
        n += 1
        if len(b) < ENTRY_LIMIT or b.endswith(b"\n"):
            yield n, _text(path, n, b), False
            continue
        dec = codecs.getincrementaldecoder("utf-8")()       # the limit may fall inside a character
        text = _text(path, n, b, 0, dec, final=False)
        cut, at = False, len(b)
        while True:
            b = f.readline(ENTRY_LIMIT)
            end = not b or b.endswith(b"\n")
            cut = bool(_text(path, n, b, at, dec, final=end).strip()) or cut
            at += len(b)
            if end:
                break
        yield n, text, cut


class _Entry:
    """A log entry being read: its pieces, at most ENTRY_LIMIT characters in all."""

    def __init__(self, n: int, text: str, cut: bool, named: str | None, open_end: bool):
        self.n, self.parts, self.size, self.cut, self.named = n, [], 0, cut, named
        self.open_end = open_end         # a framed row that ended short of its frame: a word ended there
        self._put(text)

    def _put(self, text: str) -> None:
        room = ENTRY_LIMIT - self.size
        if len(text) > room:
            self.cut = self.cut or bool(text[room:].strip())
            text = text[:room]
        if text:
            self.parts.append(text)
            self.size += len(text)

    def add(self, text: str, cut: bool, framed: bool, open_end: bool) -> None:
        """A continuation line: after a blank when indented (or after a framed row that ended short of
        its frame), else joined where a terminal broke it."""
        indented = text[:1].isspace()
        brk = indented or (framed and self.open_end)
        self._put((" " if brk else "") + (text.strip() if brk or framed else text))
        self.cut = self.cut or cut
        self.open_end = open_end

    def item(self) -> tuple:
        return "entry", self.n, "".join(self.parts), self.cut, self.named


def _ungrep(line: str, grep: tuple | None) -> tuple[str, str | None, tuple | None]:
    """The line without the prefix `grep -r` puts before it: (line, the file grep named or None,
    (that file, with line numbers?) to look for on the next lines, an entry's continuation)."""
    if grep is not None and line.startswith(grep[0]):
        m = GREP_AFTER[grep[1]].match(line, len(grep[0]))
        if m:
            return line[m.end():], grep[0], grep
    if line.startswith("["):
        return line, None, grep
    m = GREP.match(line[:GREP_SPAN])
    if m:
        return line[m.end():], m["f"], (m["f"], m["ln"] is not None)
    return line, None, grep


def _unframe(line: str):
    """A row framed by box-drawing bars: (the text inside the frame, whether it ends in a blank, so
    short of the frame or broken at a blank); _BORDER for a row of the frame itself; None for a line
    with no frame.  The frame is a bar each side, with a blank inside it on the right when there is
    one on the left; other blanks are the row's text."""
    s = line.lstrip()
    if not s or not "\u2500" <= s[0] <= "\u257f":
        return None
    if s[0] not in BARS or not s.translate(NOT_BOX).strip():
        return _BORDER
    margin = s[1:2] == " "
    inner = s[2:] if margin else s[1:]
    t = inner.rstrip()
    j = len(t)
    while j and t[j - 1] in BARS:
        j -= 1
    if j < len(t):
        inner = t[:j - 1] if margin and t[j - 1] == " " else t[:j]
    return inner, inner[-1:].isspace()


def _gap(text: str) -> str | None:
    """What a line that says lines were left out says (None for any other line).  Java's `... 12
    more` in a stack trace is no such line: it leaves out frames of an exception, not entries."""
    s = text.strip()
    if not s or len(s) > 80:
        return None
    if s == "--":
        return "lines left out (grep's separator between context groups)"
    bare = s[1:-1].strip() if len(s) > 1 and s[0] + s[-1] in ("[]", "()", "<>") else s
    if (bare and not bare.strip(". …⋮") and (bare.count(".") >= 3 or "…" in bare or "⋮" in bare)) \
            or bare.strip("-✂8<> ").lower() == "snip" or GAP_WORDS.fullmatch(bare):
        return f"lines left out ({s!r})"
    return None


def _items(path: Path, progress=None):
    """The file's content in order: ("entry", n, text, cut, file grep named) for each log4j entry
    with its continuation lines joined and for each line outside any entry, ("gap", n, what) for
    a line that says lines were left out.  `progress(bytes)`: how far into the file (compressed) it is."""
    try:
        raw = open(path, "rb")
        gz = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
    except OSError as e:
        raise TraceInputError(f"{path}: cannot be read ({e.strerror or e})") from None
    entry: _Entry | None = None
    grep: tuple | None = None
    try:
        with raw, (gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw) as f:
            for n, line, cut in _lines(path, f):
                if progress is not None and (cut or not n & 0x3FFF):
                    progress(raw.tell())
                if n == 1 and line.startswith("\ufeff"):       # a byte-order mark some editors write
                    line = line[1:]
                line, named, grep = _ungrep(line, grep)
                if not line.startswith("["):
                    line = DOCKER.sub("", line, count=1)
                framed = _unframe(line)
                if framed is _BORDER:
                    continue
                text, open_end = framed or (line, False)
                what = _gap(text)
                if what is not None:
                    if entry is not None:
                        yield entry.item()
                        entry = None
                    yield "gap", n, what
                    continue
                head = text.lstrip() if framed else text
                if LOOKS_LIKE_HEADER.match(head):
                    if entry is not None:
                        yield entry.item()
                    entry = _Entry(n, head.rstrip() if framed else head, cut, named, open_end)
                elif not text.strip():
                    continue
                elif entry is not None:
                    entry.add(text, cut, framed is not None, open_end)
                else:
                    yield "entry", n, text, cut, named
            if entry is not None:
                yield entry.item()
    except (EOFError, gzip.BadGzipFile, OSError) as e:
        raise TraceInputError(f"{path}: a broken gzip file ({e}); recompress it or give it uncompressed") from None


def _ms(m: re.Match) -> int:
    """The header's time in ms since 1970 (negative before), read as UTC; ValueError for a time that
    is no time (a 31st of February too)."""
    y, mo, d, h, mi, s, ms = (int(x) for x in m.groups()[:7])
    datetime.date(y, mo, d)
    if not (h < 24 and mi < 60 and s < 61):
        raise ValueError("a timestamp that is no date")
    return calendar.timegm((y, mo, d, h, mi, s)) * 1000 + ms


def read_files(files: list[Path], progress=None) -> Reading:
    """Read the files (as input_files gives them); `progress(bytes)` is told how far it is."""
    out = Reading(files=len(files))
    done = 0
    for fi, path in enumerate(files):
        last = None                 # the key of the file's last entry
        gap = None                  # (its start, where and what) when lines were left out after it
        at = None if progress is None else (lambda pos, before=done: progress(before + pos))
        for item in _items(path, at):
            if item[0] == "gap":
                if last is not None and gap is None:
                    gap = (last, f"{path}:{item[1]}: {item[2]}")
                continue
            _, n, text, cut, named = item
            out.lines += 1
            out.cut += cut
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
            last = (ts, fi, n)
            if gap is not None:
                out.gaps.append((gap[0], last, gap[1]))
                gap = None
            msg = (m.group(9) or "").rstrip()
            tail = msg.rfind("(")
            logged = tail >= 0 and COORD_LOGGER.fullmatch(msg, tail) is not None
            im = IDENT.match(msg)
            if not logged and im is None:
                out.other_lines += 1
                continue
            if logged:
                msg = msg[:tail].rstrip()
            src = _source(path, named)
            if im is not None:
                src = f"broker-{im.group(1)}"
                msg = msg[im.end():]
            if cut:
                out.cut_coordinator += 1
                out.gaps.append((last, last, f"{path}:{n}: a coordinator entry longer than {ENTRY_LIMIT_TEXT}, "
                                             f"cut there (what it said is lost)"))
                continue
            _match(out, msg, ts, fi, n, src, f"{path}:{n}")
        done += path.stat().st_size
    return out


def _number(text: str, what: str, where: str) -> int:
    """A generation: Kafka's INT32 (a longer number is no broker's, and beyond Python's int parsing)."""
    if len(text.lstrip("-")) > 10 or not INT32_MIN <= int(text) <= INT32_MAX:
        raise TraceInputError(f"{where}: {what} {text[:24]}{'...' if len(text) > 24 else ''} is beyond Kafka's "
                              f"INT32, so no broker wrote this line; fix or remove it")
    return int(text)


def _kafka_string(text: str, what: str, where: str) -> str:
    """A group or member id: a Kafka STRING, at most 32,767 bytes."""
    if len(text) > INT16_MAX // 4 and len(text.encode()) > INT16_MAX:
        raise TraceInputError(f"{where}: a {what} of {len(text.encode()):,} bytes (Kafka's are at most "
                              f"{INT16_MAX:,}), so no broker wrote this line; fix or remove it")
    return text


def _match(out: Reading, msg: str, ts: int, fi: int, n: int, src: str, where: str) -> None:
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
            gid = _kafka_string(gid, "group id", where)
            fields: dict = {}
            if d.get("gen") is not None:
                fields["generation"] = _number(d["gen"], "generation", where)
            if d.get("m"):
                mm = MEMBER_IN_TOSTRING.search(d["m"])
                fields["member"] = _kafka_string(mm.group(1) if mm else d["m"], "member id", where)
            if d.get("reason"):
                r = d["reason"]
                fields["reason"] = r if len(r) <= REASON_LIMIT else r[:REASON_LIMIT] + "..."
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
    head = msg[:2000]
    shape = re.sub(r"\b[0-9a-f]{8}-[0-9a-f-]{27,}\b", "<uuid>", head)
    shape = re.sub(r"\d+", "N", shape)[:120]
    if shape not in out.unrecognised and len(out.unrecognised) >= SHAPES_LIMIT:
        shape = "(lines of further shapes)"
    out.unrecognised[shape] += 1
    out.examples.setdefault(shape, head[:200])


def to_records(reading: Reading) -> list[dict]:
    """The observations as trace records, merged by time (stable: file order, then line order),
    with a gap record before a group's record when a stretch of lines left out overlaps the time
    since its record before (under the same source and time: within a source, records are in order
    by seq, whatever the times of other sources)."""
    gaps = sorted(reading.gaps)
    seq: dict = {}
    last: dict = {}                 # group -> the key of its last record
    opened, reach, widest = 0, None, None     # gaps started so far; the latest end among them, its gap
    recs = []

    def add(src, gid, ts, fields):
        k = (src, gid)
        seq[k] = seq.get(k, 0) + 1
        recs.append({"v": 1, "group": gid, "seq": seq[k], "ts_ms": ts, "source": src, "kind": "observe", **fields})

    for ts, fi, n, src, gid, fields in sorted(reading.observations, key=lambda o: o[:3]):
        key = (ts, fi, n)
        while opened < len(gaps) and gaps[opened][0] < key:
            if reach is None or gaps[opened][1] > reach:
                reach, widest = gaps[opened][1], gaps[opened]
            opened += 1
        # a gap that started before this record and ended after the group's last one lies between them
        if gid in last and reach is not None and reach > last[gid]:
            add(src, gid, ts, {"event": "gap", "reason": widest[2]})
        last[gid] = key
        add(src, gid, ts, fields)
    return recs


def summary(reading: Reading, records: int) -> dict:
    return {"files": reading.files, "entries": reading.lines, "records": records,
            "recognised": dict(reading.recognised.most_common()),
            "unrecognised_coordinator_lines": sum(reading.unrecognised.values()),
            "unrecognised_top": [{"shape": s, "count": c, "example": reading.examples[s]}
                                 for s, c in reading.unrecognised.most_common(10)],
            "other_lines": reading.other_lines,
            "gaps": len(reading.gaps), "entries_cut": reading.cut,
            "coordinator_entries_cut": reading.cut_coordinator, "entry_limit_chars": ENTRY_LIMIT}
