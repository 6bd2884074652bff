"""The summary of a run: counts per verdict and rule, the worst groups, and one violating group's
timeline; as JSON, Markdown, and a self-contained HTML page (inline SVG, no scripts)."""
from __future__ import annotations

import html
import json
from collections import Counter

WORST = 10


def summarize(verdicts: list[dict], unowned: tuple[int, list[str]] = (0, []), extra: dict | None = None) -> dict:
    """From every group's verdict (dicts of check.VERDICT_FIELDS)."""
    by_verdict = Counter(v["verdict"] for v in verdicts)
    by_rule = Counter(v["rule"] for v in verdicts if v["verdict"] != "ok")
    reb = Counter(min(int(v["rebalances"] or 0), 20) for v in verdicts)
    bad = sorted((v for v in verdicts if v["verdict"] != "ok"), key=lambda v: (v["verdict"] != "violation", v["group"]))
    worst = [{k: v[k] for k in ("group", "verdict", "seq", "source", "rule", "detail", "records")} for v in bad[:WORST]]
    timeline = None
    for v in bad:
        if v["verdict"] == "violation" and v.get("explain"):
            timeline = {"group": v["group"], "rule": v["rule"], "detail": v["detail"], **json.loads(v["explain"])}
            break
    return {"groups": len(verdicts), "records": sum(int(v["records"] or 0) for v in verdicts),
            "verdicts": {k: by_verdict.get(k, 0) for k in ("ok", "violation", "invalid")},
            "by_rule": dict(by_rule.most_common()),
            "rebalances": {str(k) + ("+" if k == 20 else ""): reb[k] for k in sorted(reb)},
            "worst": worst, "timeline": timeline,
            "unowned_lines": unowned[0], "unowned_examples": unowned[1], **(extra or {})}


def markdown(s: dict) -> str:
    v = s["verdicts"]
    out = ["# Trace check", "",
           f"{s['groups']:,} groups, {s['records']:,} records: **{v['ok']:,} ok**, **{v['violation']:,} violation**, "
           f"**{v['invalid']:,} invalid**.", ""]
    if s.get("skipped_files"):
        out += ["Files skipped (not checked):", ""] + [f"- {x}" for x in s["skipped_files"]] + [""]
    if s.get("unowned_lines"):
        out += [f"{s['unowned_lines']:,} lines name no group and were not checked, e.g.:", ""]
        out += [f"- {e}" for e in s["unowned_examples"]] + [""]
    if s["by_rule"]:
        out += ["| rule (row of the table, timer condition, observation, or format problem) | groups |", "|---|---|"]
        out += [f"| {_md(r)} | {n:,} |" for r, n in s["by_rule"].items()] + [""]
    out += ["| rebalances (joins completed) | groups |", "|---|---|"]
    out += [f"| {k} | {n:,} |" for k, n in s["rebalances"].items()] + [""]
    if s["worst"]:
        out += ["## Groups to look at first", "", "| group | verdict | record | rule | detail |", "|---|---|---|---|---|"]
        out += [f"| {_md(w['group'])} | {w['verdict']} | {w['seq'] if w['seq'] is not None else ''} | {_md(w['rule'])} "
                f"| {_md(w['detail'][:300])} |" for w in s["worst"]] + [""]
    t = s.get("timeline")
    if t:
        out += [f"## Timeline of {t['group']}", "", f"Broken: {t['rule']}: {t['detail']}", ""]
        for r in t.get("leading_up", []) + [t.get("record", {})]:
            out.append(f"- `{_line(r)}`")
        out += ["", "States still possible just before:", ""]
        out += [f"- `{json.dumps(st, default=str)[:300]}`" for st in t.get("states_before", [])[:8]] + [""]
    return "\n".join(out)


def _md(x) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def _line(r: dict) -> str:
    if not r:
        return ""
    kind = r.get("kind")
    what = {"request": lambda: f"{r.get('api')} {json.dumps(r.get('request'))[:140]} -> "
                                f"{json.dumps(r.get('response'))[:160]}",
            "response": lambda: f"answer to {r.get('id')}: {json.dumps(r.get('response'))[:160]}",
            "timer": lambda: f"timer {r.get('timer')} {r.get('member') or ''}",
            "storage": lambda: f"write completed: {r.get('result')}{' (within the step)' if r.get('at_once') else ''}",
            "coordinator": lambda: f"coordinator {r.get('event')}",
            "observe": lambda: "observed " + ", ".join(f"{k}={r[k]}" for k in ("event", "state", "generation", "member")
                                                       if r.get(k) is not None)}.get(kind, lambda: kind)()
    return f"{r.get('ts_ms')} {r.get('source')} #{r.get('seq')} {what}"


# -- HTML ---------------------------------------------------------------------------------------

def _bars(items: list[tuple[str, int]], color: str, width: int = 640) -> str:
    if not items:
        return "<p>none</p>"
    top = max(n for _, n in items) or 1
    h = 22
    label_w = 330
    rows = []
    for i, (label, n) in enumerate(items):
        w = int((width - label_w - 60) * n / top)
        y = i * h
        rows.append(f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">{html.escape(label[:48])}</text>'
                    f'<rect x="{label_w}" y="{y + 3}" width="{max(w, 1)}" height="{h - 6}" fill="{color}"/>'
                    f'<text x="{label_w + w + 4}" y="{y + 15}">{n:,}</text>')
    return (f'<svg width="{width}" height="{h * len(items) + 4}" font-size="12" font-family="sans-serif">'
            + "".join(rows) + "</svg>")


def _timeline_svg(t: dict) -> str:
    recs = list(t.get("leading_up", [])) + [t.get("record", {})]
    if not recs:
        return ""
    t0 = recs[0].get("ts_ms") or 0
    h = 24
    rows = []
    for i, r in enumerate(recs):
        last = i == len(recs) - 1
        y = i * h
        color = "#c0392b" if last else "#2c7fb8"
        rows.append(f'<circle cx="14" cy="{y + 12}" r="5" fill="{color}"/>'
                    f'<text x="28" y="{y + 16}" fill="{color if last else "#222"}">+{(r.get("ts_ms") or 0) - t0} ms '
                    f'{html.escape(_line(r)[:150])}</text>')
    rows.insert(0, f'<line x1="14" y1="0" x2="14" y2="{h * len(recs)}" stroke="#bbb"/>')
    return f'<svg width="1100" height="{h * len(recs) + 4}" font-size="12" font-family="monospace">{"".join(rows)}</svg>'


def html_page(s: dict) -> str:
    v = s["verdicts"]
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>groupspec trace check</title>",
             "<style>body{font-family:sans-serif;margin:2em;max-width:1150px}td,th{border:1px solid #ccc;"
             "padding:3px 6px;font-size:13px;vertical-align:top}table{border-collapse:collapse}"
             ".ok{color:#1a7f37}.bad{color:#c0392b}</style></head><body>",
             "<h1>Trace check</h1>",
             f"<p>{s['groups']:,} groups, {s['records']:,} records: <b class='ok'>{v['ok']:,} ok</b>, "
             f"<b class='bad'>{v['violation']:,} violation</b>, <b class='bad'>{v['invalid']:,} invalid</b>.</p>"]
    if s.get("unowned_lines"):
        parts.append(f"<p>{s['unowned_lines']:,} lines name no group and were not checked.</p>")
    parts += ["<h2>Verdicts by rule</h2>", _bars(list(s["by_rule"].items())[:20], "#c0392b"),
              "<h2>Groups by number of rebalances</h2>", _bars(list(s["rebalances"].items()), "#2c7fb8")]
    if s["worst"]:
        parts.append("<h2>Groups to look at first</h2><table><tr><th>group</th><th>verdict</th><th>record</th>"
                     "<th>rule</th><th>detail</th></tr>")
        for w in s["worst"]:
            parts.append(f"<tr><td>{html.escape(str(w['group']))}</td><td>{w['verdict']}</td><td>{w['seq'] or ''}</td>"
                         f"<td>{html.escape(str(w['rule']))}</td><td>{html.escape(str(w['detail'])[:400])}</td></tr>")
        parts.append("</table>")
    t = s.get("timeline")
    if t:
        parts += [f"<h2>Timeline of {html.escape(t['group'])}</h2>",
                  f"<p>Broken: <b>{html.escape(t['rule'])}</b>: {html.escape(t['detail'])}</p>", _timeline_svg(t),
                  "<h3>States still possible just before</h3><ul>"]
        parts += [f"<li><code>{html.escape(json.dumps(st, default=str)[:300])}</code></li>"
                  for st in t.get("states_before", [])[:8]]
        parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)


def explain(v: dict) -> str:
    """A readable explanation of one group's verdict (the in-process `--group` view)."""
    if v["verdict"] == "ok":
        return (f"group {v['group']}: ok ({v['records']} records, {v['mode']} trace, {v['rebalances']} rebalances "
                f"completed)" + (f"; {v['detail']}" if v.get("detail") else ""))
    lines = [f"group {v['group']}: {v['verdict'].upper()} at record seq {v['seq']} (source {v['source']})",
             f"  rule:   {v['rule']}", f"  detail: {v['detail']}"]
    if v.get("explain"):
        e = json.loads(v["explain"])
        if e.get("rows"):
            lines.append("  rows the spec fired for that record: " + "; ".join(e["rows"]))
        lines.append("  states still possible just before:")
        lines += [f"    {json.dumps(st, default=str)[:300]}" for st in e.get("states_before", [])[:8]]
        lines.append("  records leading up to it:")
        lines += [f"    {_line(r)}" for r in e.get("leading_up", [])]
        lines.append(f"  the record: {_line(e.get('record', {}))}")
        for r in e.get("effects", []):
            lines.append(f"    and then: {_line(r)}")
    return "\n".join(lines)
