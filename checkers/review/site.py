"""`groupspec docs --site DIR`: the design-review documents as a static site a reviewer browses.

The pages are written as Markdown from the same functions as docs/ (a page
per state, a page per trigger, the invariant catalog, the world, the
canonical flows and the findings drawn by running their scenarios, coverage
of the table by the suite), and MkDocs with the Material theme builds them
into HTML.  Nothing is fetched when the site is viewed: the theme's fonts
are off, search runs offline, and mermaid.js (fetched from the npm registry
by .ci/setup) is copied into the site and draws the diagrams in the page.
The lines of spec/ each row links to are pages of the site too.
"""
from __future__ import annotations

import functools
import hashlib
import html
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

from groupspec.spec.schema import KAFKA_NAMES, STATES, TRIGGERS
from groupspec.spec.table import ROWS

from groupspec.checkers.paths import REPO

from . import docs as D
from .errors import DocsError
from .flows import FLOWS, Flow, sequence
from groupspec.checkers.search.mutate import mutants as mutants_now

MERMAID_INIT = """
// draw every diagram of the page (Material's own Mermaid loader would fetch mermaid.js from a CDN)
document.addEventListener("DOMContentLoaded", function () {
  mermaid.initialize({startOnLoad: false, securityLevel: "loose", sequence: {useMaxWidth: false}});
  mermaid.run({querySelector: ".gs-mermaid"});
});
"""


# The site's own style: at 100% zoom in a 1,400 px window the article takes the width the navigation
# leaves, a table fits its column (a cell wraps, at a space where it can), and a diagram is drawn at its
# own size, its text as large as the body's, scrolling inside itself where it is wider than the page.
SITE_CSS = """
.md-grid { max-width: 100%; }
.md-typeset .md-typeset__table { display: block; }
.md-typeset table:not([class]) { display: table; width: 100%; }
.md-typeset table:not([class]) td, .md-typeset table:not([class]) th { overflow-wrap: anywhere; }
.gs-mermaid, .gs-wide { overflow-x: auto; max-width: 100%; }
.gs-mermaid svg { max-width: none !important; }
.gs-wide img { max-width: none; }
"""
LIFECYCLE = '<div class="gs-wide"><img src="{src}" alt="the group lifecycle"></div>'
# docs/guide/, in the order a newcomer reads them (README.md points to each)
GUIDES = {"verify.md": "Verifying the protocol in CI", "implementations.md": "Testing your implementation",
          "logs.md": "Validating your logs", "review.md": "Reviewing a change", "commands.md": "Every command",
          "internals.md": "Internals", "decisions.md": "Decisions, and why", "glossary.md": "Glossary",
          "kafka-notes.md": "What the spec says that Kafka's comments do not"}


def mermaid_js() -> Path:
    """mermaid.min.js as .ci/setup installs it (or where GROUPSPEC_MERMAID_JS says)."""
    path = Path(os.environ.get("GROUPSPEC_MERMAID_JS") or Path(sys.prefix) / "share" / "groupspec" / "mermaid.min.js")
    if not path.is_file():
        raise DocsError(f"mermaid.js is not at {path}, and the site's diagrams are drawn with it: run "
                          f"`bash .ci/setup` (it fetches mermaid from the npm registry), or set GROUPSPEC_MERMAID_JS "
                          f"to a mermaid.min.js (npm pack mermaid@11; it is in package/dist/)")
    return path


def _mermaid(text: str) -> str:
    return f'<pre class="gs-mermaid">\n{html.escape(text)}</pre>\n'


def _index(links: D.Links) -> str:
    fails = next(r for r in ROWS if r.name == "StoreGroupDone: assignment not stored")
    return f"""# groupspec: Kafka's classic consumer-group coordinator

An executable specification of Kafka 3.9's classic group coordinator, written once as a declarative transition
table; every page here is generated from it. {len(ROWS)} rows over {len(STATES)} states. Where Kafka 4.0's Java
coordinator (`group.coordinator.new.enable=true`) differs, the table carries both behaviours: its rows are named
"(Java coordinator)", and the closed world's pages describe the Scala coordinator.  Both are run beside Kafka's own
coordinators: see [Kafka conformance](kafka.md).

## Questions a reviewer asks

- *What happens when the leader's SyncGroup fails?* The flow
  [The leader's SyncGroup fails to store](flows/leader-sync-fails.md) runs it; the row is
  [{D.row_short(fails)}]({links.row(fails)}).
- *Which rows can move a group out of CompletingRebalance?*
  [CompletingRebalance](states/CompletingRebalance.md), section *Transition*.
- *What does a JoinGroup do in each state?* [JoinGroup](table/JoinGroup.md), one row per branch of Kafka's code.

## The lifecycle

Each edge names the events whose rows make that move (drawn from python-statemachine's lifecycle machine,
which the runtime coordinator follows).

{LIFECYCLE.format(src='lifecycle.svg')}

## Pages

- [States](states/index.md): per state, what moves the group on and how each request is answered
- [The table](table/index.md): a page per trigger
- [Invariants](invariants.md): meaning, formula, source, proof status, the mutants each one kills
- [The closed world](world.md): clients, network, faults, fairness
- [Canonical flows](flows/index.md) and [findings](findings.md): sequence diagrams drawn by running scenarios
- [Coverage](coverage.md): which rows the scenario suite reaches
- [Kafka conformance](kafka.md): the suite and the harness run on Kafka's own coordinators, every difference
  and its resolution
- [Your consumers on the spec](serve.md): `groupspec serve`, faults on cue, and a rebalance listener failing on cue
- [Benchmarks](benchmarks.md): dated measurements, each with the command that made it
- Guides: [verifying the protocol in CI](guide/verify.md), [testing your implementation](guide/implementations.md),
  [validating your logs](guide/logs.md), [reviewing a change](guide/review.md); [every command](guide/commands.md),
  [internals](guide/internals.md), [decisions](guide/decisions.md), [glossary](guide/glossary.md)
"""


def _kafka_conformance(path: Path) -> str:
    """docs/kafka-conformance.md (`groupspec kafka report --out`), or how to make it."""
    if path.is_file():
        return path.read_text(encoding="utf-8")
    return ("# The spec beside Kafka's own coordinators\n\nNo report yet: `groupspec kafka report --out "
            "docs/kafka-conformance.md` runs the scenario suite and the conformance harness on Kafka 3.9's and "
            "4.0's coordinators (their jars fetched by `.ci/setup`) and writes it; this page then shows it.\n")


def _states_index() -> str:
    return "# States\n\n" + "\n".join(f"- [{st}]({st}.md): {D.STATE_ABOUT[st]}" for st in STATES) + \
        "\n\n" + LIFECYCLE.format(src="../lifecycle.svg") + "\n"


def _table_index() -> str:
    lines = ["# The transition table\n", D.TABLE_INTRO + "\n", "| trigger | kind | rows | what it is |",
             "|---|---|---|---|"]
    for t in TRIGGERS:
        n = sum(r.trigger == t.name for r in ROWS)
        if n:
            lines.append(f"| [{t.name}]({t.name}.md) | {t.kind} | {n} | {D._cell(t.meaning)} |")
    lines += ["\n## State variables\n", D.vars_table(D.STATE_VARS)]
    return "\n".join(lines) + "\n"


def _invariants(mutants: dict) -> str:
    text = D.invariants_md().replace(D.HEADER, "")
    if not mutants:
        return text + ("\n\n## Mutants killed\n\nNo mutation report was saved: `groupspec mutate --json > "
                       "docs/mutants.json` writes one, and this page then lists the mutants each invariant kills.\n")
    lines = [text, "\n\n## Mutants killed\n\nFrom `docs/mutants.json` (`groupspec mutate --json`): the planted bugs "
                   "each invariant (or other check) caught.\n"]
    live = {m.index: m for m, _, _ in mutants_now()}
    for by, ms in sorted(mutants.items()):
        lines.append(f"\n### {by}\n\n" + "\n".join(
            f"- {m['operator']} in `{m['row']}`: {D._cell(_detail(m, live))}"
            + (f" — {D._cell(m['killed_by'])}" if m["killed_by"] != by else "") for m in ms))
    return "\n".join(lines) + "\n"


def _detail(saved: dict, live: dict) -> str:
    """What a saved mutant changed, in the words `mutate` uses now (Kafka's names) where the table still has
    that mutant (the same row and operator at its index), else as the report saved it."""
    m = live.get(saved.get("index"))
    if m is not None and (m.row, m.operator) == (saved["row"], saved["operator"]):
        return m.detail
    return re.sub(r"\bp\.(\w+)", lambda p: KAFKA_NAMES.get(p.group(1), p.group(0)), saved["detail"])


def _mutants_by_invariant(path: Path) -> dict:
    """The killed mutants by what killed them: an invariant or property by name; the harness's
    and the table's kills (each with its own message) under one heading each."""
    if not path.is_file():
        return {}
    out: dict = {}
    for r in json.loads(path.read_text(encoding="utf-8")).get("results", []):
        if r.get("outcome") == "killed":
            by = r["killed_by"]
            if r.get("checker") == "harness":
                by = "the conformance harness (a different answer from the spec's)"
            elif by.startswith("the table:"):
                by = "the table (the mutant leaves a case no row covers)"
            out.setdefault(by, []).append(r)
    return out


def _flow_page(flow: Flow) -> str:
    return "\n".join([f"# {flow.title}\n", flow.about[0].upper() + flow.about[1:] + ".\n",
                      f"Scenario `{flow.scenario}` in `{flow.file.replace('shared:', '../shared/scenarios/')}`, run on "
                      "the runtime coordinator; its expectations hold.\n", _mermaid(sequence(flow))])


def _findings() -> str:
    """The findings page: each finding's text, its scenario and its diagram."""
    path = REPO / "tests" / "scenarios" / "findings.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    lines = ["# Findings\n", "Kafka behaviours worth knowing in a design review, each pinned by a scenario of "
             "`tests/scenarios/findings.yaml` (replay one with `groupspec scenario run tests/scenarios/findings.yaml`) "
             "and drawn by running it.\n"]
    for item in doc["scenarios"]:
        flow = Flow(item["scenario"], item["scenario"], item.get("about", ""), "findings.yaml", item["scenario"])
        body = yaml.safe_dump(item, sort_keys=False, allow_unicode=True, width=100)
        lines.append(f"\n## {item['scenario']}\n\n{D._cell(item.get('about', '').strip())}\n\n"
                     f"{_mermaid(sequence(flow))}\n<details><summary>the scenario</summary>\n\n```yaml\n{body}```\n\n"
                     f"</details>\n")
    return "\n".join(lines)


def _coverage() -> str:
    files = sorted((REPO / "tests" / "scenarios").rglob("*.yaml")) + sorted((REPO.parent / "shared" / "scenarios")
                                                                            .glob("*.yaml"))
    fired = _fired(tuple((f, hashlib.sha256(f.read_bytes()).hexdigest()) for f in files))
    lines = ["# Coverage\n", f"Rows of the table the scenario suite reaches on the runtime coordinator "
             f"({len(files)} files under `tests/scenarios/` and `../shared/scenarios/`): "
             f"{sum(r.name in fired for r in ROWS)} of {len(ROWS)}.\n", "| trigger | reached | not reached |",
             "|---|---|---|"]
    for t in TRIGGERS:
        rows = [r for r in ROWS if r.trigger == t.name]
        if rows:
            missed = [f"[{D.row_short(r)}](table/{t.name}.md#{D.row_anchor(r)})" for r in rows if r.name not in fired]
            lines.append(f"| [{t.name}](table/{t.name}.md) | {len(rows) - len(missed)} of {len(rows)} | "
                         f"{', '.join(missed) or '—'} |")
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=4)
def _fired(files: tuple) -> frozenset:
    """The rows the scenario files (path, content hash) fire on the runtime: the same files give the same rows
    in one process (whose runtime does not change), and a site built twice runs them once (8 s)."""
    from groupspec.checkers.scenarios.model import load_file
    from groupspec.checkers.scenarios.runner import run_scenario
    fired: set = set()
    for f, _ in files:
        for sc in load_file(f):
            fired |= run_scenario(sc, "runtime").fired
    return frozenset(fired)


def _source_page(rel: str) -> str:
    """A file of spec/ as an HTML page with a target per line (#L123), which rows link to."""
    text = (REPO / rel).read_text(encoding="utf-8").splitlines()
    body = "\n".join(f'<span id="L{i}"><a class="n" href="#L{i}">{i:>5}</a>  {html.escape(line)}</span>'
                     for i, line in enumerate(text, 1))
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{rel}</title><style>"
            "body{margin:0;font:13px/1.45 monospace} pre{margin:0;padding:1em} a.n{color:#999;text-decoration:none}"
            " span:target{background:#ffef9e;display:inline-block;width:100%}</style></head>"
            f"<body><pre>{body}</pre></body></html>\n")


def write_pages(src: Path, changes: str | None = None) -> None:
    """Every page of the site, as Markdown (and the spec/ sources as HTML) under `src`; `changes`: what a
    change does to the protocol (`groupspec diff`'s Markdown), the page `changes.md`."""
    pages: dict[str, str] = {"index.md": _index(D.Links(site=True)), "states/index.md": _states_index(),
                             "table/index.md": _table_index(), "world.md": D.world_md().replace(D.HEADER, ""),
                             "coverage.md": _coverage()}
    for st in STATES:
        pages[f"states/{st}.md"] = D.state_md(st, D.Links(site=True, depth=1), "#").lstrip("\n")
    for t in TRIGGERS:
        if any(r.trigger == t.name for r in ROWS):
            pages[f"table/{t.name}.md"] = D.trigger_md(t, D.Links(site=True, depth=1), "#").lstrip("\n")
    pages["invariants.md"] = _invariants(_mutants_by_invariant(REPO / "docs" / "mutants.json"))
    pages["flows/index.md"] = "# Canonical flows\n\n" + "\n".join(f"- [{f.title}]({f.slug}.md): {f.about}"
                                                                 for f in FLOWS) + "\n"
    for f in FLOWS:
        pages[f"flows/{f.slug}.md"] = _flow_page(f)
    pages["findings.md"] = _findings()
    pages["kafka.md"] = _kafka_conformance(REPO / "docs" / "kafka-conformance.md")
    pages["benchmarks.md"] = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    pages["serve.md"] = (REPO / "docs" / "serve.md").read_text(encoding="utf-8")
    for guide in GUIDES:      # the guides the README points to (its report's page is kafka.md here)
        pages[f"guide/{guide}"] = (REPO / "docs" / "guide" / guide).read_text(encoding="utf-8").replace(
            "](../kafka-conformance.md)", "](../kafka.md)")
    if changes is not None:
        pages["changes.md"] = "# What this change does to the protocol\n\n" + changes.split("\n", 1)[1].lstrip()
    for name, text in pages.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text, encoding="utf-8")
    for rel in sorted({r.at.rsplit(":", 1)[0] for r in ROWS}):
        (src / "source" / f"{rel}.html").parent.mkdir(parents=True, exist_ok=True)
        (src / "source" / f"{rel}.html").write_text(_source_page(rel), encoding="utf-8")
    (src / "js").mkdir(exist_ok=True)
    shutil.copyfile(mermaid_js(), src / "js" / "mermaid.min.js")
    (src / "js" / "init.js").write_text(MERMAID_INIT, encoding="utf-8")
    (src / "css").mkdir(exist_ok=True)
    (src / "css" / "site.css").write_text(SITE_CSS, encoding="utf-8")


def _config(src: Path, out: Path) -> dict:
    nav = [{"Home": "index.md"}, *([{"What this change does": "changes.md"}] if (src / "changes.md").exists() else []),
           {"States": ["states/index.md"] + [{st: f"states/{st}.md"} for st in STATES]},
           {"Table": ["table/index.md"] + [{t.name: f"table/{t.name}.md"} for t in TRIGGERS
                                            if any(r.trigger == t.name for r in ROWS)]},
           {"Invariants": "invariants.md"}, {"World": "world.md"},
           {"Flows": ["flows/index.md"] + [{f.title: f"flows/{f.slug}.md"} for f in FLOWS]},
           {"Guides": [{title: f"guide/{name}"} for name, title in GUIDES.items()]},
           {"Findings": "findings.md"}, {"Coverage": "coverage.md"}, {"Kafka conformance": "kafka.md"},
           {"Your consumers on the spec": "serve.md"}, {"Benchmarks": "benchmarks.md"}]
    return {"site_name": "groupspec", "docs_dir": str(src), "site_dir": str(out), "use_directory_urls": False,
            "theme": {"name": "material", "font": False, "features": ["navigation.sections", "search.highlight"]},
            "plugins": ["search", "offline"], "nav": nav, "strict": False,
            "markdown_extensions": ["tables", "attr_list", "md_in_html", "admonition",
                                    {"pymdownx.highlight": {"use_pygments": True}}, "pymdownx.superfences",
                                    {"toc": {"permalink": True}}],
            "extra_javascript": ["js/mermaid.min.js", "js/init.js"], "extra_css": ["css/site.css"],
            "validation": {"links": {"not_found": "warn", "anchors": "warn"}}}


def build_site(out: Path, changes: str | None = None) -> list[Path]:
    """Build the site into `out`: its pages (with `changes`, write_pages's), the lifecycle picture,
    mermaid.js.  The files a previous build wrote there are replaced, every other file is left as it is
    (see `install`)."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    previous = site_files(out)
    dot = D.dot_program()
    mermaid_js()
    out.mkdir(parents=True, exist_ok=True)
    built = Path(tempfile.mkdtemp(prefix=f"{BUILDING}{os.getpid()}-", dir=out))
    try:
        with tempfile.TemporaryDirectory(prefix="groupspec-site-") as tmp:
            src = Path(tmp) / "pages"
            src.mkdir()
            write_pages(src, changes)
            D.write_lifecycle_svg(dot, src)
            cfg_file = Path(tmp) / "mkdocs.yml"
            cfg_file.write_text(yaml.safe_dump(_config(src, built)), encoding="utf-8")
            cfg = load_config(str(cfg_file))
            build(cfg)          # MkDocs empties the folder it builds into: never the user's
        install(built, out, previous)
    finally:
        shutil.rmtree(built, ignore_errors=True)
    return sorted(out / f for f in site_files(out) if f.endswith(".html"))


# In a site's folder: the files `docs --site` wrote there, so that a rebuild replaces those and no others.
MANIFEST = ".groupspec-site.json"
BUILDING = ".groupspec-site-building-"      # a build in progress, in the folder (a folder of its own)


def site_files(folder: Path) -> set[str]:
    """The files (relative paths) a previous `docs --site` wrote in `folder`, as its manifest lists them;
    none for a folder that is missing or empty.  DocsError when the folder holds files and no manifest
    (it is no site, or one built before sites had one), or a manifest that is not one."""
    entries = _entries(folder)
    if not entries:
        return set()
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise DocsError(f"--site {folder}: the folder holds files `groupspec docs --site` did not write "
                        f"({listed(entries)}; there is no {MANIFEST}, which lists what it wrote): give a new or "
                        f"empty folder, or move those files away")
    try:
        doc = json.loads(manifest.read_text(encoding="utf-8"))
        files = doc["files"]
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise ValueError("its files are not a list of names")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DocsError(f"--site {manifest}: not a list of the files `docs --site` wrote ({e}); give a new or "
                        f"empty folder, or remove the old site yourself") from None
    root = os.path.realpath(folder)
    for name in files:      # a file outside the folder is never removed, whatever the manifest says
        where = os.path.realpath(folder / name)
        if Path(name).is_absolute() or ".." in Path(name).parts or os.path.commonpath([root, where]) != root:
            raise DocsError(f"--site {manifest}: names {name!r}, which is outside the site's folder; give a new "
                            f"or empty folder, or remove the old site yourself")
    return set(files)


def foreign_files(folder: Path) -> list[str]:
    """The files in the site's folder that `docs --site` did not write (left as they are)."""
    ours = site_files(folder) | {MANIFEST}
    return [f for f in _entries(folder) if f not in ours]


def install(built: Path, out: Path, previous: set[str]) -> None:
    """Move the site built in `built` into `out`, where `previous` are the files the last build wrote: those
    are replaced or removed, no other file is touched.  A file of the user's that has the name of one of the
    new site's is refused (DocsError), before anything is changed.  The manifest lists, at every moment,
    every file of ours in the folder (so that a run stopped halfway is cleaned up by the next one)."""
    from groupspec.checkers.console import whole_or_nothing
    new = {p.relative_to(built).as_posix() for p in built.rglob("*") if not p.is_dir()}
    theirs = sorted(rel for rel in new if rel not in previous and _taken(out, rel, previous))
    if theirs:
        raise DocsError(f"--site {out}: the new site writes {listed(theirs)}, which `docs --site` did not write "
                        f"there (not in {MANIFEST}); nothing was changed: move them away or give another folder")

    def manifest(files: set[str]) -> None:
        with whole_or_nothing(out / MANIFEST) as partial:
            partial.write_text(json.dumps({"written_by": "groupspec docs --site", "files": sorted(files)},
                                          indent=1) + "\n", encoding="utf-8")
    manifest(previous | new)
    stale = previous - new
    for rel in sorted(stale):
        if (out / rel).is_file() or (out / rel).is_symlink():
            (out / rel).unlink()
    for rel in sorted(new):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(built / rel, out / rel)
    manifest(new)
    for folder in sorted({p for rel in stale for p in Path(rel).parents if p.parts}, key=lambda p: -len(p.parts)):
        try:
            (out / folder).rmdir()          # a folder that only our old files were in
        except OSError:
            pass
    for left in out.glob(f"{BUILDING}*"):   # a build stopped by SIGKILL: its process is gone
        pid = left.name[len(BUILDING):].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(left, ignore_errors=True)


def _taken(out: Path, rel: str, ours: set[str]) -> bool:
    """Is the place of the new file `rel` taken by something not ours: the file, or a file where one of its
    folders must be?"""
    path = out / rel
    if path.is_dir() or (path.exists() or path.is_symlink()) and rel not in ours:
        return True
    return any((out / p).exists() and not (out / p).is_dir() and p.as_posix() not in ours
               for p in Path(rel).parents if p.parts)


def _entries(folder: Path) -> list[str]:
    """The files in `folder` (relative paths; a build in progress is not one)."""
    if not folder.is_dir():
        return []
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if not p.is_dir() and not p.relative_to(folder).parts[0].startswith(BUILDING))


def listed(names: list[str]) -> str:
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
