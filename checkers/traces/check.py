"""One group's verdict: `ok`, `violation` (the trace shows something no behaviour of the spec
does) or `invalid` (the records break the trace format).  The same function runs in process
and in every Spark task, so the two give the same verdicts.

A verdict is a flat dict (one Parquet row): group, verdict, seq and source of the first record
no behaviour explains (or the bad record), rule (the row of the table, the timer condition or
the observation it breaks), detail, records, rebalances, mode (`complete` or `partial`) and
`explain` (JSON text: the states still possible just before and the records leading up to it).
A complete trace is replayed up to its first `gap` record (records were left out there, so the
spec's state after it is unknown); its `ok` then says, in `detail`, how many records were not judged.
"""
from __future__ import annotations

import json
from typing import Any

from groupspec.spec.engine import EngineError
from groupspec.spec.lang import LangError

from . import observe as OBS
from .records import BadRecord, order
from .replay import Replay, Violation, steps_of

CONTEXT = 8        # records leading up to a violation, shown in its explanation
VERDICT_FIELDS = ("group", "verdict", "seq", "source", "rule", "detail", "records", "rebalances", "mode", "explain")


def verdict(group: str, kind: str, n: int, mode: str, rule: str = "", detail: str = "", rec: dict | None = None,
            explain: dict | None = None, rebalances: int = 0) -> dict:
    return {"group": group, "verdict": kind, "seq": None if rec is None else rec.get("seq"),
            "source": None if rec is None else rec.get("source"), "rule": rule, "detail": detail,
            "records": n, "rebalances": rebalances, "mode": mode,
            "explain": json.dumps(explain, separators=(",", ":"), default=str) if explain else ""}


def check_group(group: str, records: list[Any], engine=None) -> dict:
    """The verdict for one group's records (in input order; a BadRecord stands for an unreadable one)."""
    n = len(records)
    for r in records:
        if isinstance(r, BadRecord):
            return verdict(group, "invalid", n, "", "bad-record", r.message)
    try:
        history = order(records)
    except BadRecord as e:
        return verdict(group, "invalid", n, "", "bad-record", e.message)
    if all(r["kind"] == "observe" for r in history):
        return OBS.check(group, history, verdict)
    # records were left out at a gap: the spec's state after it is unknown, so the replay stops there
    gap = next((i for i, r in enumerate(history) if r["kind"] == "observe" and r.get("event") == "gap"), None)
    unjudged = "" if gap is None else (f"not judged from the gap at record seq {history[gap]['seq']} (source "
                                       f"{history[gap]['source']}) on: {n - gap} records")
    history = history[:gap]
    config = next((r["config"] for r in history if isinstance(r.get("config"), dict)), None)
    try:
        steps = steps_of(history)
        replay = Replay(group, config, engine)
    except Violation as v:
        return verdict(group, "invalid", n, "complete", v.rule, v.detail)
    done: list[dict] = []
    for i, (lead, effects) in enumerate(steps):
        try:
            replay.step(lead, effects)
        except Violation as v:
            return verdict(group, "violation", n, "complete", v.rule, v.detail, lead,
                           {"states_before": _states_before(group, config, steps[:i], engine), "rows": v.rows,
                            "record": lead, "effects": effects, "leading_up": done[-CONTEXT:]}, replay.rebalances)
        except (EngineError, LangError) as e:
            return verdict(group, "violation", n, "complete", "table-gap",
                           f"no row of the table covers this step: {e}", lead,
                           {"states_before": _states_before(group, config, steps[:i], engine), "record": lead,
                            "leading_up": done[-CONTEXT:]}, replay.rebalances)
        done.append(lead)
        done.extend(effects)
        if len(done) > 4 * CONTEXT:
            del done[:-CONTEXT]
    return verdict(group, "ok", n, "complete", detail=unjudged, rebalances=replay.rebalances)


def _states_before(group: str, config, steps: list, engine) -> list[dict]:
    """The states the spec could be in before a violating step (replayed again: only a violation
    pays for it)."""
    replay = Replay(group, config, engine)
    for lead, effects in steps:
        replay.step(lead, effects)
    return replay.states()
