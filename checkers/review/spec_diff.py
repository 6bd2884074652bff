"""`groupspec diff REV [REV2]`: what a change does to the protocol, for the reviewer of a pull request.

The spec at two revisions (REV2 left out: the working tree) is read by each revision's own code, in a
process of its own with that revision's tree first on the import path: its rows and invariants in Kafka's
words (describe_spec.py), the proof statuses it recorded (docs/proofs.json), and the verdicts and state
counts of a few fast worlds (`groupspec check --preset P --json`).  What differs is written as Markdown
fit for a pull-request comment, or as JSON:

- rows added and removed, and rows whose condition, effect or response changed (before and after);
- invariants added, removed or reworded, and those whose recorded proof status changed;
- worlds whose verdict or state count changed, with each new counterexample's invariant and length.

Each revision is taken from git as it was committed (`git archive`), so a diff never depends on what a
checkout has lying around; the working tree is read as it is.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

from groupspec.checkers.paths import REPO

DEFAULT_PRESETS = ("tiny", "twogen", "small", "settle", "static", "hung")
TOPS = ("spec", "impl", "checkers")
DESCRIBER = Path(__file__).with_name("describe_spec.py")


class DiffError(ValueError):
    """A revision cannot be read (the message says which and what to do)."""


@dataclass
class Side:
    label: str            # a short commit id, or "the working tree"
    rows: dict
    invariants: dict
    proofs: dict          # invariant -> its recorded status (empty: none recorded)
    worlds: dict          # preset -> {result, states, violation, depth}


def resolve(rev: str) -> str:
    """The commit `rev` names, or DiffError."""
    got = _git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if got.returncode != 0 or not got.stdout.strip():
        raise DiffError(f"{rev!r} is not a commit of {REPO}; give a commit, branch or tag (git log --oneline)")
    return got.stdout.strip()


def snapshot(rev: str | None, presets: tuple, work: Path) -> Side:
    """What revision `rev` (None: the working tree) says of the protocol."""
    side = Path(tempfile.mkdtemp(dir=work))      # each side its own (the same revision may be both)
    if rev is None:
        root, label = REPO, "the working tree"
        proofs_text = _read(REPO / "docs" / "proofs.json")
    else:
        root, label = side / "tree", rev[:9]
        _extract(rev, root)
        shown = _git("show", f"{rev}:docs/proofs.json", check=False)
        proofs_text = shown.stdout if shown.returncode == 0 else None
    env = _environment(root, side / "path")
    described = _run([sys.executable, str(DESCRIBER)], env, label, "reading its rows and invariants")
    try:
        d = json.loads(described)
    except json.JSONDecodeError as e:
        raise DiffError(f"{label}: its spec did not describe itself ({e})") from None
    worlds = {}
    for p in presets:
        text = _run([sys.executable, "-m", "groupspec.checkers.cli", "check", "--preset", p, "--json"], env, label,
                    f"checking the {p} world", ok=(0, 1))
        j = json.loads(text)
        worlds[p] = {"result": j.get("result"), "states": j.get("distinct_states"),
                     "violation": j.get("violation") if isinstance(j.get("violation"), str) else
                     (j.get("violation") or {}).get("invariant"), "depth": j.get("depth")}
    return Side(label, d["rows"], d["invariants"], _statuses(proofs_text), worlds)


def compare(a: Side, b: Side) -> dict:
    """What differs from `a` to `b`, as one JSON-ready object."""
    changed_rows = []
    for name in a.rows.keys() & b.rows.keys():
        fields = {f: {"before": a.rows[name][f], "after": b.rows[name][f]}
                  for f in ("condition", "effect", "response", "states") if a.rows[name][f] != b.rows[name][f]}
        if fields:
            changed_rows.append({"name": name, "spec": b.rows[name].get("spec", ""), "changed": fields})
    return {
        "before": a.label, "after": b.label,
        "rows_added": [{"name": n, **b.rows[n]} for n in b.rows if n not in a.rows],
        "rows_removed": [{"name": n, **a.rows[n]} for n in a.rows if n not in b.rows],
        "rows_changed": sorted(changed_rows, key=lambda r: list(b.rows).index(r["name"])),
        "invariants_added": [{"name": n, "meaning": b.invariants[n]} for n in b.invariants if n not in a.invariants],
        "invariants_removed": [{"name": n, "meaning": a.invariants[n]} for n in a.invariants
                               if n not in b.invariants],
        "invariants_reworded": [{"name": n, "before": a.invariants[n], "after": b.invariants[n]}
                                for n in a.invariants.keys() & b.invariants.keys()
                                if a.invariants[n] != b.invariants[n]],
        "proofs_changed": [{"name": n, "before": a.proofs.get(n), "after": b.proofs.get(n)}
                           for n in sorted(a.proofs.keys() | b.proofs.keys()) if a.proofs.get(n) != b.proofs.get(n)],
        "worlds": [{"preset": p, "before": a.worlds.get(p), "after": b.worlds.get(p)}
                   for p in b.worlds if a.worlds.get(p) != b.worlds.get(p)],
        "worlds_same": [p for p in b.worlds if a.worlds.get(p) == b.worlds.get(p)],
    }


def markdown(d: dict) -> str:
    """The comparison as a pull-request comment."""
    out = [f"## What this change does to the protocol ({d['before']} → {d['after']})", ""]
    nothing = not any(d[k] for k in ("rows_added", "rows_removed", "rows_changed", "invariants_added",
                                      "invariants_removed", "invariants_reworded", "proofs_changed", "worlds"))
    if nothing:
        out.append("Nothing: the same rows, invariants, recorded proofs and world verdicts.")
    for key, title in (("rows_added", "Rows added"), ("rows_removed", "Rows removed")):
        if d[key]:
            out += [f"### {title}", ""]
            for r in d[key]:
                out.append(f"- **{r['name']}** (in {', '.join(r['states'])}) — when {r['condition']}; "
                           f"does {r['effect']}; answers {r['response'] or '—'} · {r['source']}")
            out.append("")
    if d["rows_changed"]:
        out += ["### Rows changed", ""]
        for r in d["rows_changed"]:
            out.append(f"**{r['name']}**" + (f" (`{r['spec']}`)" if r["spec"] else ""))
            out += ["", "| | before | after |", "|---|---|---|"]
            for field, ba in r["changed"].items():
                before, after = (", ".join(x) if isinstance(x, list) else x for x in (ba["before"], ba["after"]))
                out.append(f"| {field} | {_cell(before)} | {_cell(after)} |")
            out.append("")
    inv = [(k, t) for k, t in (("invariants_added", "added"), ("invariants_removed", "removed")) if d[k]]
    if inv or d["invariants_reworded"] or d["proofs_changed"]:
        out += ["### Invariants", ""]
        for key, word in inv:
            out += [f"- {word}: **{i['name']}** — {i['meaning']}" for i in d[key]]
        out += [f"- reworded: **{i['name']}** — was “{i['before']}”, now “{i['after']}”" for i in d["invariants_reworded"]]
        out += [f"- proof: **{p['name']}** {p['before'] or 'not recorded'} → {p['after'] or 'not recorded'}"
                for p in d["proofs_changed"]]
        out.append("")
    if d["worlds"]:
        out += ["### Worlds (`groupspec check --preset P`)", "", "| world | before | after |", "|---|---|---|"]
        out += [f"| {w['preset']} | {_world(w['before'])} | {_world(w['after'])} |" for w in d["worlds"]]
        out.append("")
    if d["worlds_same"]:
        out.append(f"Unchanged worlds: {', '.join(d['worlds_same'])}.")
    return "\n".join(out).rstrip() + "\n"


def _world(w: dict | None) -> str:
    if not w:
        return "—"
    if w["result"] == "ok":
        return f"ok, {w['states']:,} states"
    return f"{w['result']}: **{w['violation']}** in {w['depth']} steps ({w['states']:,} states)"


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _statuses(text: str | None) -> dict:
    if not text:
        return {}
    try:
        return {i["name"]: i["status"] for i in json.loads(text).get("invariants", [])}
    except (json.JSONDecodeError, AttributeError, KeyError, TypeError):
        return {}


def _extract(rev: str, into: Path) -> None:
    """The revision's spec/, impl/ and checkers/ as committed, into `into`."""
    got = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev, *TOPS], capture_output=True)
    if got.returncode != 0:
        raise DiffError(f"{rev[:9]}: git archive failed: {got.stderr.decode(errors='replace').strip()}")
    into.mkdir(parents=True)
    with tarfile.open(fileobj=BytesIO(got.stdout)) as tar:
        tar.extractall(into, filter="data")


def _environment(root: Path, path_dir: Path) -> dict:
    """An environment whose `groupspec` is the tree at `root` (its three parts under one name, as the
    package's own layout maps them), ahead of the installed one."""
    pkg = path_dir / "groupspec"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for top in TOPS:
        (pkg / top).symlink_to(root / top, target_is_directory=True)
    return {**os.environ, "PYTHONPATH": str(path_dir), "PYTHONDONTWRITEBYTECODE": "1"}


def _run(cmd: list, env: dict, label: str, doing: str, ok: tuple = (0,)) -> str:
    got = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=env["PYTHONPATH"])
    if got.returncode not in ok:
        last = (got.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise DiffError(f"{label}: {doing} failed (exit {got.returncode}): {last}")
    return got.stdout


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _git(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=check)


def diff(rev: str, rev2: str | None, presets: tuple) -> dict:
    """Compare revision `rev` with `rev2` (None: the working tree)."""
    a_rev = resolve(rev)
    b_rev = resolve(rev2) if rev2 is not None else None
    with tempfile.TemporaryDirectory(prefix="groupspec-diff-") as tmp:
        work = Path(tmp)
        return compare(snapshot(a_rev, presets, work), snapshot(b_rev, presets, work))
