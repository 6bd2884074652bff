"""Running a set of scenario files and reporting: lines, JSON, JUnit XML, row coverage."""
from __future__ import annotations

import json
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree as ET

from groupspec.spec.kafka import brief, clip
from groupspec.spec.table import ROWS

from .model import Scenario, ScenarioError, load_file
from .runner import SHOW, Result, run_scenario
from .targets import BUILTIN_TARGETS, run_on_adapter


@dataclass
class Run:
    target: str
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> int:
        return sum(r.result == "pass" for r in self.results)

    @property
    def failed(self) -> int:
        return sum(r.result == "fail" for r in self.results)

    @property
    def errors(self) -> int:
        return sum(r.result == "error" for r in self.results)

    @property
    def skipped(self) -> int:
        return sum(r.result == "skip" for r in self.results)

    def fired(self) -> set[str]:
        out: set[str] = set()
        for r in self.results:
            out |= r.fired
        return out

    def as_json(self) -> dict:
        return {"target": self.target, "passed": self.passed, "failed": self.failed, "errors": self.errors,
                "skipped": self.skipped, "scenarios": [r.as_json() for r in self.results]}


def scenario_files(paths: list[Path]) -> list[Path]:
    """Every .yaml/.yml/.json file under the paths, in a stable order.

    An entry with such a name that is not a folder is taken even when it is no regular file (a symlink that
    loops or dangles, a pipe, a device): reading it says so, where skipping it would say nothing."""
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files += sorted(x for x in p.rglob("*") if x.suffix in (".yaml", ".yml", ".json") and not x.is_dir())
        else:
            files.append(p)
    return files


def given_scenario_files(where: str, given: list[str]) -> list[Path]:
    """The scenario files under the paths a user gave (`where`: the option that names them, with its space,
    or ""), or one line and exit 2: a path that is empty, names nothing, a device or a pipe, or paths
    under which there is no scenario file (a run of nothing is no pass)."""
    from groupspec.checkers.console import fail_input, kind_of
    what = "give a scenario file (.yaml, .yml, .json) or a folder of them"
    if any(not p.strip() for p in given):
        fail_input(f"{where or 'a scenario path '}is empty (\"\"); {what}")
    paths = [Path(p) for p in given]
    for p in paths:
        try:
            st = p.stat()
        except OSError:
            fail_input(f"{where}{p}: no such file or folder; {what}")
        if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            fail_input(f"{where}{p}: is {kind_of(st)}, not a regular file; {what}")
    files = scenario_files(paths)
    if not files:
        fail_input(f"{where}{', '.join(map(str, paths))}: no scenario files (.yaml, .yml, .json) there; {what}")
    return files


def run_files(files: list[Path], target: str, on_result=None, factory=None) -> Run:
    """Run every scenario of every file on `target` (spec, runtime, or an adapter's name, whose `factory` may be
    given); a file that cannot be read is one `error` and the others still run."""
    run = Run(target)
    run_one = (lambda sc: run_scenario(sc, target)) if target in BUILTIN_TARGETS else \
        (lambda sc: run_on_adapter(sc, target, factory))
    start = time.perf_counter()

    def report(r: Result) -> None:
        run.results.append(r)
        if on_result:
            on_result(r)
    for f in files:
        try:
            scenarios: list[Scenario] = load_file(f)
        except ScenarioError as e:
            report(Result(str(f), e.scenario or "(file)", "error", e.step, message=e.message))
            continue
        except Exception as e:        # a bug of ours: said in one line, and the other files still run
            report(Result(str(f), "(file)", "error", message=_internal(e, "reading the file")))
            continue
        for sc in scenarios:
            try:
                report(run_one(sc))
            except Exception as e:    # as above
                report(Result(sc.file, sc.name, "error", message=_internal(e, "running the scenario")))
    run.seconds = time.perf_counter() - start
    return run


def _internal(e: Exception, doing: str) -> str:
    return f"internal error while {doing} ({type(e).__name__}: {clip(str(e), 200)}); please report it with the file"


def line(r: Result) -> str:
    """One line for a result, whatever the names and values hold (control characters are escaped)."""
    where = f"{clip(r.file, 1000)}: {clip(r.scenario)}"
    if r.result == "pass":
        return f"pass   {where}" + (f" ({clip(r.message)})" if r.message else "")
    if r.result in ("error", "skip"):
        at = f", step {r.step}" if r.step else ""
        return f"{r.result:<6} {where}{at}: {clip(r.message, 1000)}"
    at = f"step {r.step}" if r.step else "a step"
    what = f" ({clip(r.message)})" if r.message else ""
    return f"FAIL   {where}: {at}{what}: expected {_shown(r.expected)}, got {_shown(r.got)}"


def _shown(v) -> str:
    return clip(brief(v, SHOW), SHOW + 50)


def uncovered(fired: set[str]) -> list[str]:
    return [r.name for r in ROWS if r.name not in fired]


def write_junit(runs: list[Run], path: Path) -> None:
    suites = ET.Element("testsuites")
    for run in runs:
        suite = ET.SubElement(suites, "testsuite", name=f"groupspec scenarios ({run.target})",
                              tests=str(len(run.results)), failures=str(run.failed), errors=str(run.errors),
                              skipped=str(run.skipped), time=f"{run.seconds:.3f}")
        for r in run.results:
            case = ET.SubElement(suite, "testcase", classname=_xml(r.file), name=_xml(f"{r.scenario} [{run.target}]"))
            if r.result == "fail":
                el = ET.SubElement(case, "failure", message=_xml(f"step {r.step}: expected {_shown(r.expected)}, "
                                                                 f"got {_shown(r.got)}"))
                el.text = _xml(line(r))
            elif r.result == "error":
                el = ET.SubElement(case, "error", message=_xml(clip(r.message, 1000)))
                el.text = _xml(line(r))
            elif r.result == "skip":
                ET.SubElement(case, "skipped", message=_xml(clip(r.message, 1000)))
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)


# What XML 1.0 forbids (most control characters, lone surrogates, U+FFFE/U+FFFF); ElementTree writes them as is.
_NOT_XML = re.compile("[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\U00010000-\U0010FFFF]")


def _xml(text: str) -> str:
    return _NOT_XML.sub(lambda m: repr(m.group())[1:-1], text)


def to_json(runs: list[Run]) -> str:
    if len(runs) == 1:
        return json.dumps(runs[0].as_json(), indent=2)
    return json.dumps({"runs": [r.as_json() for r in runs]}, indent=2)
