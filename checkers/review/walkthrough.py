"""A counterexample as a reviewer reads it, whichever checker found it.

Each step is said in Kafka's words; the group (and each consumer, where the checker models consumers) is
shown as rendered values with what the step changed in bold; the rows of the table that decided the step
link to their line in `spec/` and their Kafka source; the step that breaks is shown with its state and
what it broke.  Three checkers produce such steps:

- the closed world (`check --out`, `prove --bmc --out`, `mutate --show`): counterexample.kafka_view;
- a conformance divergence (`conform --out`): the spec's group beside the implementation's
  (checkers/conform/walkthrough.py);
- a trace's violation (`traces check --group G --out DIR`): the group the spec replays from the records
  (checkers/traces/walkthrough.py).

A step is a dict: `step` (its number), `action` (what happened), `rows` (row_links), `group` (label ->
text), `clients` (a list of label -> text, possibly empty), `beside` (optional: another side's group, as
`{"title": ..., "group": {...}}`, cells that differ from `group` marked), `notes` (lines said under the
step), and `group_changed` / `clients_changed` (filled by mark_changes).  They are rendered here, once,
as Markdown (`to_markdown`) and as one HTML page (`html_page`).
"""
from __future__ import annotations

from html import escape
from typing import Any, Iterable

# What a reviewer reads of a group, in Kafka's terms: the key of a coordinator's snapshot (impl/, an
# adapter's, a trace replay's) and its label.  The closed world's view (counterexample.GROUP_VIEW) uses the
# same labels for the same things.
STATE, GENERATION, LEADER, MEMBERS = "state", "generation", "leader", "members"
PENDING = "pending members (KIP-394)"
STATIC = "static members (group.instance.id)"
ASSIGNMENT, OFFSETS = "assignment", "committed offsets"
SNAPSHOT_VIEW = (("state", STATE), ("generation", GENERATION), ("leader", LEADER), ("protocol", "protocol"),
                 ("members", MEMBERS), ("pending_members", PENDING), ("static_members", STATIC),
                 ("assignment", ASSIGNMENT), ("offsets", OFFSETS), ("timers", "timers armed"),
                 ("appends_in_flight", "appends in flight"), ("coordinator", "coordinator"))


def text(v: Any) -> str:
    """A value as a reviewer reads it: none as —, a set or list in braces (∅ when empty), a map's entries
    that hold something as `key → value`; ITF's encodings (#set, #map) the same as Python's lists and dicts."""
    if v in ("", None):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, dict) and "#set" in v:
        v = v["#set"]
    elif isinstance(v, dict) and "#map" in v:
        v = dict((str(k), x) for k, x in v["#map"])
    if isinstance(v, (list, tuple, set, frozenset)):
        return "{" + ", ".join(text(x) for x in v) + "}" if v else "∅"
    if isinstance(v, dict):
        shown = [f"{k} → {text(x)}" for k, x in v.items() if text(x) not in ("—", "∅", "-1")]
        return "; ".join(shown) or "—"
    return str(v)


def snapshot_view(snap: dict | None) -> dict[str, str]:
    """A coordinator's snapshot of a group (scenario terms) as the reviewer's table; None: not held."""
    if snap is None:
        return {STATE: "not held by this coordinator"}
    return {label: text(snap[key]) for key, label in SNAPSHOT_VIEW if key in snap}


def row_links(names: Iterable[str]) -> list[dict]:
    """The rows fired, each with its line in spec/ and its Kafka sources."""
    from groupspec.checkers.review.docs import kafka_refs
    from groupspec.spec.table import ROWS
    from groupspec.spec.world import CLIENT_ROWS
    by_name = {r.name: r for r in (*ROWS, *CLIENT_ROWS)}
    out = []
    for name in names:
        r = by_name.get(name)
        out.append({"name": name, "spec": getattr(r, "at", ""),
                    "kafka": [{"ref": ref, "url": url} for ref, url in kafka_refs(r.source)] if r else []})
    return out


def mark_changes(view: list[dict]) -> list[dict]:
    """Fill each step's `group_changed` and `clients_changed`: what differs from the step before."""
    before = None
    for st in view:
        st.setdefault("clients", [])
        st["group_changed"] = [k for k in st["group"] if before is not None and before["group"].get(k) != st["group"][k]]
        st["clients_changed"] = [[k for k in cl if before is not None and c < len(before["clients"]) and
                                  before["clients"][c].get(k) != cl[k]] for c, cl in enumerate(st["clients"])]
        before = st
    return view


def to_markdown(view: list[dict], title: str, meaning: str, how: str, last: str = "",
                loop_start: int = -1) -> str:
    """The steps as a reviewer's Markdown: `title`, what is broken (`meaning`), how the path is (`how`), each
    step's rows, notes, group and clients, what the step changed in bold.  The last step's heading ends
    with `last` ("breaks leader-is-member"; a lasso's loop, from `loop_start` on, is said where it starts
    instead); without either, the steps break nothing and `meaning` is their verdict."""
    label = "What it violates" if last or loop_start >= 0 else "Verdict"
    lines = [f"# {title}", "", f"**{label}:** {meaning}", "", f"{how} What a step changed is in bold.", ""]
    for k, st in enumerate(view):
        # the closed world's breaking step may say so itself ("row X breaks I")
        ends = k == len(view) - 1 and loop_start < 0 and last and last not in st["action"]
        loop = " — the loop starts here" if loop_start >= 0 and k == loop_start + 1 else ""
        lines += [f"## Step {st['step']}: {st['action']}" + (f" — {last}" if ends else loop), ""]
        for r in st["rows"]:
            refs = ", ".join(f"[{x['ref']}]({x['url']})" for x in r["kafka"])
            lines.append(f"- row **{r['name']}**" + (f" (`{r['spec']}`)" if r["spec"] else "") +
                         (f" — Kafka: {refs}" if refs else ""))
        lines += [f"- {note}" for note in st.get("notes", ())]
        if st["rows"] or st.get("notes"):
            lines.append("")
        lines += _group_table(st)
        labels = list(st["clients"][0]) if st["clients"] else []
        if labels:
            lines += ["", "| client | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
            for c, cl in enumerate(st["clients"]):
                cells = [f"**{cl[x]}**" if x in st["clients_changed"][c] else cl[x] for x in labels]
                lines.append(f"| c{c} | " + " | ".join(_cell(x) for x in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _group_table(st: dict) -> list[str]:
    """The group at a step; beside another side's, the cells where the two differ marked ≠."""
    group, beside = st["group"], st.get("beside")
    bold = lambda key, v: f"**{v}**" if key in st["group_changed"] else v       # noqa: E731
    if beside is None:
        return ["| the group | |", "|---|---|"] + [f"| {k} | {_cell(bold(k, v))} |" for k, v in group.items()]
    other = beside["group"]
    out = [f"| the group | {beside.get('ours', 'the spec')} | {beside['title']} |", "|---|---|---|"]
    for k in dict.fromkeys([*group, *other]):
        mine, theirs = group.get(k, "—"), other.get(k, "—")
        differs = " ≠" if mine != theirs else ""
        out.append(f"| {k}{differs} | {_cell(bold(k, mine))} | {_cell(theirs)} |")
    return out


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def html_page(view_md: str, title: str, sequence: str = "") -> str:
    """A counterexample as one page a reviewer can attach: the sequence diagram if there is one (drawn by
    mermaid.min.js beside the page; without it the diagram's text is shown), then the Markdown, rendered."""
    import markdown
    heading, _, body = view_md.partition("\n")
    diagram = f'<h2>Sequence</h2>\n<pre class="mermaid">\n{escape(sequence)}</pre>' if sequence else ""
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{escape(title)}</title>
<style>
body {{ font: 15px/1.5 sans-serif; margin: 2em auto; max-width: 1100px; padding: 0 1em }}
table {{ border-collapse: collapse; margin: .5em 0 }} td, th {{ border: 1px solid #ccc; padding: 3px 8px;
vertical-align: top; text-align: left }}
td strong {{ background: #ffe27a; font-weight: normal }} code {{ font-size: 13px }}
</style>
{'<script src="mermaid.min.js"></script>' if sequence else ''}</head>
<body>
<h1>{escape(heading.lstrip("# "))}</h1>
{diagram}
{markdown.markdown(body, extensions=["tables"])}
{'<script>if (window.mermaid) { mermaid.initialize({startOnLoad: true, sequence: {useMaxWidth: false}}); }</script>'
 if sequence else ''}
</body></html>
"""
