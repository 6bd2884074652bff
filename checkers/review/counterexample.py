"""Counterexamples three ways: ITF JSON, a readable step table, a Mermaid sequence diagram.

ITF is the Informal Trace Format of Apalache and Quint
(https://apalache-mc.org/docs/adr/015adr-trace.html): `vars`, and `states`,
each a mapping of variable to value, with sets as {"#set": [...]}, maps as
{"#map": [[k, v], ...]}, tuples as {"#tup": [...]} and records as objects.
"""
from __future__ import annotations

import json

from groupspec.spec.kafka import ERRORS
from groupspec.spec.concrete import iter_bits
from groupspec.spec.lang import NONE
from groupspec.spec.world import ALL_VARS

from groupspec.checkers.world.state_space import WorldModel


def _name(dom: str, i: int, model: WorldModel):
    if i == NONE:
        return None
    if dom == "Member":
        return f"m{i}"
    if dom == "Client":
        return f"c{i}"
    if dom == "Partition":
        per = model.cfg.partitions
        return f"t{i // per}-{i % per}"
    return f"{dom.lower()}{i}"


def itf_value(t, v, model: WorldModel):
    k = t.kind
    if k == "bool":
        return bool(v)
    if k == "int":
        return v if abs(v) < 2 ** 53 else {"#bigint": str(v)}
    if k == "enum":
        return ERRORS[v] if t.name == "Error" else t.values[v]
    if k == "dom":
        return _name(t.name, v, model) or ""
    if k == "set":
        return {"#set": [_name(t.key, i, model) for i in iter_bits(v)]}
    if k == "map":
        return {"#map": [[_name(t.key, i, model), itf_value(t.value, x, model)] for i, x in enumerate(v)]}
    if k == "record":
        return {f: itf_value(ft, x, model) for f, ft, x in zip(t.values, t.args, v)}
    return repr(v)


def to_itf(path: list, model: WorldModel, violation: str, source: str = "groupspec check") -> dict:
    names = [v.name for v in ALL_VARS if not v.name.startswith("scratch_")]
    states = []
    for i, (step, s) in enumerate(path):
        st = {"#meta": {"index": i, "action": step.action if step else "init",
                        "rows": list(step.rows) if step else []}}
        for v, val in zip(ALL_VARS, s):
            if v.name in names:
                st[v.name] = itf_value(v.type, val, model)
        states.append(st)
    return {"#meta": {"format": "ITF", "source": source, "violation": violation,
                      "description": "a shortest path from the initial state to the violation"},
            "vars": names, "states": states}


def step_table(path: list, model: WorldModel) -> list[dict]:
    """Each step: what happened, the rows that decided it, and the variables it changed."""
    out = []
    prev = None
    for i, (step, s) in enumerate(path):
        changes = {}
        if prev is not None:
            for v, a, b in zip(ALL_VARS, prev, s):
                if a != b and not v.name.startswith("scratch_"):
                    changes[v.name] = json.dumps(itf_value(v.type, b, model), separators=(",", ":"))
        out.append({"step": i, "action": step.action if step else "initial state",
                    "rows": list(step.rows) if step else [], "changes": changes})
        prev = s
    return out


def mermaid(path: list, model: WorldModel, violation: str, loop_start: int = -1) -> str:
    lines = ["sequenceDiagram"]
    for c in range(model.cfg.clients):
        lines.append(f"    participant c{c} as client c{c}")
    lines.append("    participant coordinator as coordinator")
    for k, (step, s) in enumerate(path):
        if k == loop_start + 1 and loop_start >= 0:
            lines.append("    Note over coordinator: the loop starts here and repeats forever")
        if step is None:
            continue
        if step.messages:
            for src, dst, label in step.messages:
                lines.append(f"    {src}->>{dst}: {label}")
        else:
            who = step.action.split(":", 1)[0] if step.action.startswith("c") and ":" in step.action else \
                "coordinator"
            what = step.action.split(": ", 1)[-1]
            lines.append(f"    Note over {who}: {what}")
    lines.append(f"    Note over coordinator: violates {violation}")
    return "\n".join(lines) + "\n"


def html_page(steps: list[dict], sequence: str, violation: str, meaning: str) -> str:
    """A counterexample as one page a reviewer can attach: what it violates and what that means, the step
    table with the variables each step changed highlighted, and the sequence diagram (drawn by
    mermaid.min.js beside the page; without it the diagram's text is shown)."""
    from html import escape
    rows = []
    for st in steps:
        changed = "".join(f"<div><mark>{escape(k)}</mark> = <code>{escape(v)}</code></div>"
                          for k, v in st["changes"].items())
        rows.append(f"<tr><td>{st['step']}</td><td>{escape(st['action'])}</td>"
                    f"<td>{'<br>'.join(escape(r) for r in st['rows'])}</td><td>{changed}</td></tr>")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>counterexample: {escape(violation)}</title>
<style>
body {{ font: 14px/1.45 sans-serif; margin: 2em; max-width: 1400px }}
table {{ border-collapse: collapse }} td, th {{ border: 1px solid #ccc; padding: 4px 8px; vertical-align: top }}
mark {{ background: #ffe27a }} code {{ font-size: 12px; word-break: break-all }}
</style>
<script src="mermaid.min.js"></script></head>
<body>
<h1>Counterexample: {escape(violation)}</h1>
<p><b>What it violates:</b> {escape(meaning)}</p>
<p>A shortest path from the initial state ({len(steps) - 1} steps), found by <code>groupspec check</code>;
the same path is in counterexample.itf.json (ITF) and counterexample.md.</p>
<h2>Sequence</h2>
<pre class="mermaid">
{escape(sequence)}</pre>
<h2>Steps</h2>
<table><tr><th>step</th><th>what happened</th><th>rows of the table</th><th>variables it changed</th></tr>
{chr(10).join(rows)}
</table>
<script>if (window.mermaid) {{ mermaid.initialize({{startOnLoad: true, sequence: {{useMaxWidth: false}}}}); }}</script>
</body></html>
"""


def violation_meaning(violation: str) -> str:
    """What a violated property means, from the invariant catalogs (or what the checker's own verdicts mean)."""
    from groupspec.spec.invariants import INVARIANTS
    from groupspec.spec.world import WORLD_INVARIANTS
    for inv in (*INVARIANTS, *WORLD_INVARIANTS):
        if inv.name == violation:
            return inv.meaning
    return {"deadlock": "a state where nothing can happen while some client has not stopped"}.get(
        violation.split(":", 1)[0], violation)
