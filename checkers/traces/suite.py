"""Traces of the project's scenario suite: each scenario run on the runtime with tracing on,
then checked (issue 12: "traces the runtime writes for every scenario validate")."""
from __future__ import annotations

from pathlib import Path

from groupspec.checkers.scenarios import runner
from groupspec.impl.trace import ListSink, TraceWriter

from .check import check_group


def scenario_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))


def trace_scenario(sc) -> tuple[object, list[dict]]:
    """Run a scenario on the runtime (in-memory log) writing a trace: (its result, the records)."""
    world = runner.new_world("runtime", sc.config, None)
    sink = ListSink()
    TraceWriter(sink, source="runtime", config=sc.config).attach(world.coord)
    result = runner.run_in(sc, "runtime", world)
    return result, list(sink)


def check_records(records: list[dict]) -> list[dict]:
    groups: dict[str, list] = {}
    for r in records:
        groups.setdefault(r["group"], []).append(r)
    return [check_group(g, recs) for g, recs in groups.items()]
