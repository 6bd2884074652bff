"""`groupspec rows`: what Kafka's coordinator does for a request or event in a state, row by row.

The question a reader brings ("what does Kafka do with a JoinGroup from an unknown member in Stable?")
answered from the table itself (spec/table.py and the rows it collects): each matching row's full name,
its condition in Kafka's words (for one state, what it adds there), what it does and answers, the Kafka
source it cites with a link into Kafka 3.9.0, and the line of spec/ that writes it.  The words are the
review site's (checkers/review/docs.py, guards.py): one rendering of a row, wherever it is read.
"""
from __future__ import annotations

import json
from typing import Optional

import typer

from groupspec.checkers.console import fail_input, out, say_error


def rows_cmd(trigger: Optional[str] = typer.Option(None, "--trigger", help="a request or event, as the table "
                                                   "names it (JoinGroup, Heartbeat, HeartbeatExpiry, ...)"),
             state: Optional[str] = typer.Option(None, "--state", help="the group's state (Empty, "
                                                 "PreparingRebalance, CompletingRebalance, Stable, Dead, Absent)"),
             grep: Optional[str] = typer.Option(None, "--grep", help="only rows whose name, condition, effect, "
                                                "response or source mention this text (any case)"),
             as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """What Kafka does for a request or event in a state, row by row.

    Each row's name, condition, effect, response, Kafka source and its line in spec/. Exit 1 if no row
    matches."""
    from groupspec.spec.schema import STATES
    from groupspec.spec.table import ROWS
    triggers = list(dict.fromkeys(r.trigger for r in ROWS))
    trig = _one_of("--trigger", trigger, triggers)
    st = _one_of("--state", state, list(STATES))
    if grep is not None and not grep.strip():
        fail_input("--grep is empty; give the text to look for, or leave --grep out")
    found = [_describe(r, st) for r in ROWS
             if (trig is None or r.trigger == trig) and (st is None or st in r.states)]
    if grep is not None:
        needle = grep.strip().lower()
        found = [d for d in found if any(needle in str(d[k]).lower()
                                         for k in ("name", "condition", "doc", "effect", "response", "source"))]
    if as_json:
        print(json.dumps({"trigger": trig, "state": st, "grep": grep, "rows": found}, ensure_ascii=False))
    else:
        _print(found, st)
    if not found:
        asked = ", ".join(f"{flag} {v}" for flag, v in (("--trigger", trig), ("--state", st), ("--grep", grep)) if v)
        hint = ("leave out --grep to see every row the other options select" if grep is not None else
                f"no row of {trig} applies in {st}; leave out --state to see the states it is handled in")
        say_error(f"groupspec: no row matches {asked}; {hint}")
        raise typer.Exit(1)


def _one_of(flag: str, given: Optional[str], names: list[str]) -> Optional[str]:
    """The table's name for `given` (any case), or one line and exit 2."""
    if given is None:
        return None
    by_lower = {n.lower(): n for n in names}
    got = by_lower.get(given.strip().lower())
    if got is None:
        fail_input(f"{flag} {given!r}: no such name in the table; use one of {', '.join(names)}")
    return got


def _describe(r, state: Optional[str]) -> dict:
    from groupspec.checkers.review.docs import effect_words, kafka_refs
    from groupspec.checkers.review.guards import condition_text
    return {"name": r.name, "trigger": r.trigger, "states": list(r.states),
            "condition": condition_text(r, state), "doc": r.doc,
            "effect": effect_words(r).replace("**", ""), "response": r.response,
            "moves_to": r.target, "source": r.source,
            "kafka": [{"ref": ref, "url": url} for ref, url in kafka_refs(r.source)], "spec": r.at}


def _print(found: list[dict], state: Optional[str]) -> None:
    from rich.table import Table
    for d in found:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column()
        where = state if state else ", ".join(d["states"])
        grid.add_row("handles", f"{d['trigger']} in {where}")
        cond = d["condition"] + (f" — {d['doc']}" if d["doc"] else "")
        grid.add_row("when", cond)
        grid.add_row("does", d["effect"])
        if d["response"]:
            grid.add_row("answers", d["response"])
        grid.add_row("kafka", d["source"])
        grid.add_row("spec", d["spec"])
        out.print(d["name"], style="bold cyan", markup=False, highlight=False)
        out.print(grid, markup=False, highlight=False)
        for k in d["kafka"]:        # a link on a line of its own, never wrapped: it stays one to click or copy
            out.print(f"{'link':<9}{k['url']}", markup=False, highlight=False, soft_wrap=True)
        out.print()
