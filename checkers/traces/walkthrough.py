"""One group's trace as a reviewer reads it (`traces check --group G --out DIR`): each record in Kafka's
words, the group the spec replays from the records so far (or, for a partial trace, the states still
possible), the rows that decided each step, and, for a violation, the record no behaviour of the spec
explains, with what the spec would have done instead.  The steps are review/walkthrough.py's, rendered
there as Markdown and HTML like every other counterexample."""
from __future__ import annotations

import json
from typing import Any

from groupspec.checkers.review import walkthrough as W

from .check import check_group
from .observe import show_states
from .replay import snapshot_of

MAX_STEPS = 200      # a walkthrough of a long trace shows the steps leading up to its end


def record_words(r: dict) -> str:
    """A trace record in Kafka's words: `JoinGroup from member m1 (client c0), generation 3: NONE`."""
    kind = r.get("kind")
    if kind == "request":
        req, resp = r.get("request") or {}, r.get("response")
        who = req.get("member") or "a new member"
        client = f" (client {req['client']})" if req.get("client") else ""
        gen = f", generation {req['generation']}" if req.get("generation") not in (None, -1) else ""
        answer = "parked, answered later" if resp is None else f"answered {resp.get('error', '?')}"
        return f"{r.get('api')} from {who}{client}{gen}: {answer}"
    if kind == "response":
        return f"the parked request {r.get('id')} answered {(r.get('response') or {}).get('error', '?')}"
    if kind == "timer":
        return f"timer {r.get('timer')} fires" + (f" for {r['member']}" if r.get("member") else "")
    if kind == "storage":
        return f"the group's append completes: {r.get('result')}"
    if kind == "coordinator":
        return f"coordinator: {r.get('event')}"
    if kind == "observe":
        seen = ", ".join(f"{k} {r[k]}" for k in ("state", "generation", "member") if r.get(k) is not None)
        return f"the log shows {r.get('event')}" + (f" ({seen})" if seen else "")
    return str(kind)


def _where(r: dict) -> str:
    return f"record seq {r.get('seq')} at {r.get('ts_ms')} ms on {r.get('source')}"


def walkthrough(group: str, records: list[Any], engine=None) -> tuple[dict, str]:
    """The group's verdict (check.py's) and its walkthrough as Markdown."""
    steps: list[dict] = []

    def watch(lead: dict, *rest) -> None:
        at = _where(lead)
        if len(rest) == 2:                       # a complete trace: (effects, replay)
            effects, replay = rest
            c = replay.worlds[0].coord
            notes = [f"and then: {record_words(e)}" for e in effects]
            if len(replay.worlds) > 1:
                notes.append(f"{len(replay.worlds)} behaviours of the spec fit the records so far; the first "
                             f"is shown")
            snap = c.snapshot(group)        # every field a reviewer reads, and the timers and appends
            steps.append({"step": len(steps) + 1, "action": record_words(lead), "at": at,
                          "rows": W.row_links(c.fired), "notes": notes,
                          "group": W.snapshot_view(snap and {**snap, **snapshot_of(c, group)})})
        else:                                    # a partial trace: (states still possible,)
            steps.append({"step": len(steps) + 1, "action": record_words(lead), "at": at, "rows": [],
                          "notes": [], "group": {"states still possible": show_states(rest[0])}})

    v = check_group(group, records, engine, watch)
    shown = steps[-MAX_STEPS:]
    if v["verdict"] == "violation":
        e = json.loads(v["explain"]) if v.get("explain") else {}
        record = e.get("record") or {}
        before = shown[-1]["group"] if shown else {}
        notes = [f"the spec: {v['detail']}"]
        if e.get("states_before") and len(e["states_before"]) > 1:
            notes.append(f"{len(e['states_before'])} behaviours of the spec fit the records before it; none "
                         f"explains this one")
        notes += [f"and then: {record_words(x)}" for x in e.get("effects", [])]
        shown.append({"step": len(steps) + 1, "action": record_words(record), "rows": W.row_links(e.get("rows", ())),
                      "at": _where(record),
                      "notes": notes, "group": before})
    for st in shown:
        st["action"] = st["action"] + (f" ({st.pop('at')})" if "at" in st else "")
    W.mark_changes(shown)
    if v["verdict"] == "violation":
        title, meaning = f"Trace violation: group {group}", f"{v['detail']} (the spec's rule there: {v['rule']})"
        how = (f"The group's records in order, {v['records']} in all, replayed by the spec; the last step is the "
               f"record no behaviour of the spec explains (the group shown as it was before it).")
        breaks = "no behaviour of the spec does this"
    else:
        title, meaning = f"Trace of group {group}: {v['verdict']}", v.get("detail") or v["verdict"]
        how = f"The group's records in order, {v['records']} in all, replayed by the spec."
        breaks = ""
    if len(steps) > MAX_STEPS:
        how += f" The first {len(steps) - MAX_STEPS} steps are left out."
    return v, W.to_markdown(shown, title, meaning, how, breaks)
