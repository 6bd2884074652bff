"""Running TLC on an exported world, and reading back what it says.

TLC is not a Python package: a jar (`tla2tools.jar`) found at
`GROUPSPEC_TLC_JAR`, or at `../shared/tools/tla2tools.jar` beside the
checkout, run with Java 17.  `run_tlc` writes nothing but what TLC writes
(its states directory goes to a temporary folder) and returns the verdict,
the number of distinct states, the depth, the wall time and, for a
counterexample, its states as TLC's `-dumpTrace json` wrote them.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from groupspec.checkers.paths import REPO

JAR_ENV = "GROUPSPEC_TLC_JAR"


def find_jar() -> tuple[Path | None, str]:
    """(the jar, "") or (None, why there is none)."""
    given = os.environ.get(JAR_ENV)
    if given:
        p = Path(given)
        return (p, "") if p.is_file() else (None, f"{JAR_ENV}={given} is not a file; point it at a tla2tools.jar")
    p = REPO.parent / "shared" / "tools" / "tla2tools.jar"
    if p.is_file():
        return p, ""
    return None, f"no TLC jar: set {JAR_ENV} to a tla2tools.jar, or put one at {p}"


def java() -> str | None:
    return shutil.which("java")


@dataclass
class TlcResult:
    result: str                    # ok | violation | deadlock | error
    violation: str = ""            # the TLA+ invariant broken
    distinct_states: int = 0
    generated: int = 0
    depth: int = 0                 # TLC's: the number of states on the longest path (steps + 1)
    seconds: float = 0.0
    peak_rss_kb: int = 0
    trace: list = field(default_factory=list)     # TLC's JSON trace: one mapping of variables per state
    output: str = ""


# A short run's JVM: TLC on a world of a few thousand states spends most of its CPU compiling itself with
# C2 (tiny: 10 CPU s with it, 4.7 s with C1 alone, the same states); a long run needs C2's code, so
# TLC as an anchor for timing (benchmarks, `check --run-tlc`) keeps the JVM's default.
SHORT_RUN_JVM = ("-XX:TieredStopAtLevel=1",)


def run_tlc(folder: Path, module: str, workers: int = 2, jar: Path | None = None, deadlock: bool = True,
            timeout: float | None = None, short: bool = False) -> TlcResult:
    """TLC on `folder/module.tla` with `folder/module.cfg`, deadlock checked unless `deadlock` is
    false: in the exported world a step cut by a bound of the search stutters and an ended world
    (spec/world.py ENDED) may stop, so a state without a successor is a deadlock, as our checker
    reports one.  `short`: a world of seconds, whose JVM need not compile TLC's hot code well."""
    jar = jar or find_jar()[0]
    if jar is None:
        raise FileNotFoundError(find_jar()[1])
    with tempfile.TemporaryDirectory(prefix="groupspec-tlc-") as tmp:
        trace_file = Path(tmp) / "trace.json"
        cmd = [java() or "java", "-XX:+UseParallelGC", *(SHORT_RUN_JVM if short else ()), "-cp", str(jar), "tlc2.TLC", "-workers", str(workers),
               "-metadir", str(Path(tmp) / "states"), "-dumpTrace", "json", str(trace_file),
               "-config", f"{module}.cfg", f"{module}.tla"]
        if not deadlock:
            cmd.insert(cmd.index("-config"), "-deadlock")
        timed = ["/usr/bin/time", "-f", "%M"] if Path("/usr/bin/time").exists() else []
        start = time.perf_counter()
        proc = _run_as_group(timed + cmd, folder, timeout)
        secs = time.perf_counter() - start
        res = parse_output(proc.stdout)
        res.seconds = secs
        if timed:
            last = proc.stderr.strip().splitlines()[-1:] or ["0"]
            res.peak_rss_kb = int(last[0]) if last[0].isdigit() else 0
        if trace_file.exists() and res.result in ("violation", "deadlock"):
            res.trace = read_trace(trace_file)
        if res.result == "error":
            res.output = proc.stdout[-4000:] + proc.stderr[-2000:]
        return res


def _run_as_group(cmd: list[str], cwd: Path, timeout: float | None) -> subprocess.CompletedProcess:
    """Run `cmd` in a process group of its own, and end the whole group if this process is stopped (a
    SIGTERM, Ctrl-C, the timeout): `subprocess.run` kills only its child, /usr/bin/time here, and TLC's JVM
    below it ran on."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def parse_output(text: str) -> TlcResult:
    res = TlcResult("ok")
    m = re.findall(r"([\d,]+) states generated, ([\d,]+) distinct states found", text)
    if m:
        res.generated, res.distinct_states = (int(x.replace(",", "")) for x in m[-1])
    m = re.search(r"The depth of the complete state graph search is (\d+)", text)
    if m:
        res.depth = int(m.group(1))
    m = re.search(r"Error: Invariant (\w+) is violated", text)
    if m:
        res.result, res.violation = "violation", m.group(1)
    elif "Error: Deadlock reached" in text:
        res.result = "deadlock"
    elif "Model checking completed. No error has been found." not in text:
        res.result = "error"
    return res


def read_trace(path: Path) -> list[dict]:
    """TLC's `-dumpTrace json` file: the states of the counterexample, each a mapping of variables."""
    return [s for _, s in json.loads(path.read_text())["counterexample"]["state"]]
