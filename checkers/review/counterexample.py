"""Counterexamples three ways: ITF JSON, a readable step table, a Mermaid sequence diagram; and, for a
reviewer, every step in Kafka's terms (`kafka_view`): the group's state, generation, leader, members and
assignment, and each consumer's phase, member id, partitions and request in flight, as rendered values
with what the step changed marked, the rows that decided it with their Kafka source, and the state at
the step that breaks the invariant.

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


def html_page(view_md: str, sequence: str, violation: str) -> str:
    """A counterexample as one page a reviewer can attach: the sequence diagram (drawn by mermaid.min.js
    beside the page; without it the diagram's text is shown), then every step in Kafka's terms
    (`kafka_view_md`, rendered), what each step changed marked."""
    from html import escape
    import markdown
    title, _, body = view_md.partition("\n")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>counterexample: {escape(violation)}</title>
<style>
body {{ font: 15px/1.5 sans-serif; margin: 2em auto; max-width: 1100px; padding: 0 1em }}
table {{ border-collapse: collapse; margin: .5em 0 }} td, th {{ border: 1px solid #ccc; padding: 3px 8px;
vertical-align: top; text-align: left }}
td strong {{ background: #ffe27a; font-weight: normal }} code {{ font-size: 13px }}
</style>
<script src="mermaid.min.js"></script></head>
<body>
<h1>{escape(title.lstrip("# "))}</h1>
<h2>Sequence</h2>
<pre class="mermaid">
{escape(sequence)}</pre>
{markdown.markdown(body, extensions=["tables"])}
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


# -- the counterexample in Kafka's terms -------------------------------------------------------------
# What a reviewer reads of the group at each step (the group's variable, its name in Kafka's terms) and of
# each consumer (a client variable, or several read together, and what it is called).
GROUP_VIEW = (("state", "state"), ("generation", "generation"), ("leader", "leader"), ("members", "members"),
              ("pending", "pending members (KIP-394)"), ("awaiting_join", "awaiting JoinGroup"),
              ("pending_sync", "awaiting SyncGroup"), ("static", "static members (group.instance.id)"),
              ("assignment", "assignment"), ("offsets", "committed offsets"))
CLIENT_VIEW = (("c_phase", "phase"), ("c_member", "member id"), ("c_gen", "generation"), ("c_owned", "owns"),
               (("rq", "rq_member", "rq_gen"), "request in flight"), (("rs", "rs_error"), "response in flight"),
               (("rq_late", "rq_late_member", "rq_late_gen"), "late request"))


def _text(v) -> str:
    """An ITF value as a reviewer reads it: none as —, sets in braces, a map's non-empty entries."""
    if v in ("", None):
        return "—"
    if isinstance(v, dict) and "#set" in v:
        return "{" + ", ".join(v["#set"]) + "}" if v["#set"] else "∅"
    if isinstance(v, dict) and "#map" in v:
        shown = [f"{k} → {_text(x)}" for k, x in v["#map"] if _text(x) not in ("—", "∅", "-1")]
        return "; ".join(shown) or "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def _slot_text(values: list) -> str:
    """A message in flight, by its API: a request with the member id and generation it carries, a response
    with its error."""
    from groupspec.spec.world import MESSAGES
    kind = values[0]
    if kind in ("none", ""):
        return "—"
    api = MESSAGES[kind].api
    if len(values) == 2:                    # a response: its kind and error
        return f"{api} answered {values[1]}"
    member, gen = (_text(x) for x in values[1:])
    return api + (f" from {member}" if member != "—" else "") + (f", generation {gen}" if gen != "-1" else "")


def kafka_view(path: list, model: WorldModel) -> list[dict]:
    """Each step in Kafka's terms: what happened, the rows that decided it (with their Kafka sources), the
    group and each client as rendered values, each marked if the step changed it."""
    from groupspec.checkers.review.docs import kafka_refs
    from groupspec.spec.table import ROWS
    from groupspec.spec.world import CLIENT_ROWS
    by_name = {r.name: r for r in (*ROWS, *CLIENT_ROWS)}
    index = {v.name: i for i, v in enumerate(ALL_VARS)}
    types = {v.name: v.type for v in ALL_VARS}
    view, before = [], None
    for i, (step, s) in enumerate(path):
        def value(name, client=None):
            v = itf_value(types[name], s[index[name]], model)
            return v["#map"][client][1] if client is not None else v
        group = {label: _text(value(name)) for name, label in GROUP_VIEW}
        clients = []
        for c in range(model.cfg.clients):
            clients.append({label: (_slot_text([value(n, c) for n in name]) if isinstance(name, tuple)
                                    else _text(value(name, c)).replace("-1", "—")) for name, label in CLIENT_VIEW})
        rows = []
        for name in (step.rows if step else ()):
            r = by_name.get(name)
            rows.append({"name": name, "spec": getattr(r, "at", ""),
                         "kafka": [{"ref": ref, "url": url} for ref, url in kafka_refs(r.source)] if r else []})
        view.append({"step": i, "action": step.action if step else "initial state", "rows": rows,
                     "group": group, "clients": clients,
                     "group_changed": [k for k in group if before and before["group"][k] != group[k]],
                     "clients_changed": [[k for k in cl if before and before["clients"][c][k] != cl[k]]
                                         for c, cl in enumerate(clients)]})
        before = view[-1]
    return view


def kafka_view_md(view: list[dict], violation: str, meaning: str, loop_start: int = -1) -> str:
    """The counterexample as a reviewer's Markdown: each step's group and clients, what changed in bold (a
    lasso's loop, from `loop_start` on, said where it starts)."""
    how = (f"A path from the initial state into a loop that repeats forever (from step {loop_start + 1})"
           if loop_start >= 0 else f"A shortest path from the initial state, {len(view) - 1} steps; the last one "
           "breaks it")
    lines = [f"# Counterexample: {violation}", "", f"**What it violates:** {meaning}", "",
             f"{how}. What a step changed is in bold.", ""]
    for k, st in enumerate(view):
        last = k == len(view) - 1 and loop_start < 0
        loop = " — the loop starts here" if loop_start >= 0 and k == loop_start + 1 else ""
        lines += [f"## Step {st['step']}: {st['action']}" + (f" — breaks {violation}" if last else loop), ""]
        for r in st["rows"]:
            refs = ", ".join(f"[{x['ref']}]({x['url']})" for x in r["kafka"])
            lines.append(f"- row **{r['name']}**" + (f" (`{r['spec']}`)" if r["spec"] else "") +
                         (f" — Kafka: {refs}" if refs else ""))
        if st["rows"]:
            lines.append("")
        lines += ["| the group | |", "|---|---|"]
        for key, text in st["group"].items():
            shown = f"**{text}**" if key in st["group_changed"] else text
            lines.append(f"| {key} | {_md_cell(shown)} |")
        labels = [label for _, label in CLIENT_VIEW]
        lines += ["", "| client | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
        for c, cl in enumerate(st["clients"]):
            cells = [f"**{cl[x]}**" if x in st["clients_changed"][c] else cl[x] for x in labels]
            lines.append(f"| c{c} | " + " | ".join(_md_cell(x) for x in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")
