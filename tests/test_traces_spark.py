"""The Spark pipeline end to end on a small corpus: the one Spark test of the quick suite (one local
session, shared), plus slow ones.  The Spark job and the in-process checker must give identical verdicts."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")
if not shutil.which("java"):
    pytest.skip("no Java runtime (run .ci/setup)", allow_module_level=True)

from groupspec.checkers.traces import spark as S  # noqa: E402
from groupspec.checkers.traces.check import VERDICT_FIELDS, check_group  # noqa: E402
from groupspec.checkers.traces.records import expand, read_groups  # noqa: E402
from groupspec.checkers.traces.simulate import choose_bugs, simulate  # noqa: E402
from groupspec.impl.trace import JsonLinesSink  # noqa: E402

import test_traces_hostile as H  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    sp = S.session("local[2]", partitions=4)
    yield sp
    sp.stop()


def _corpus(tmp: Path, groups: int, seed: int) -> tuple[Path, list]:
    sink = JsonLinesSink(str(tmp / "traces.jsonl.gz"))
    info = simulate(groups, sink, seed=seed, events_per_group=120, bugs=choose_bugs("all"), fraction=0.4)
    sink.close()
    # bad input rides along: a truncated line of one more group, a line that names no group, and each
    # hostile line and record of tests/test_traces_hostile.py, beside a Parquet trace in the same folder
    with open(tmp / "bad.jsonl", "w", encoding="utf-8", errors="surrogatepass") as f:
        f.write('{"v":1,"group":"broken-group","seq":1,"ts_ms":1,"source":"x","kind":"requ\n')
        f.write("garbage\n")
        f.write("".join(line + "\n" for line, _ in H.UNOWNED))
        f.write("".join(H.other(at, change, f"bad-{i}") for i, (at, change, _) in enumerate(H.INVALID)))
    with open(tmp / "bad.jsonl", "ab") as f:
        f.write(b'{"v": 1, "group": "\xff\xfe"}\n\r\n  \n')
    H._trace_parquet(tmp / "more.parquet", rows=H.renamed("in-parquet"))
    return tmp, info


def _key(v: dict) -> tuple:
    return tuple(v[k] for k in VERDICT_FIELDS if k != "explain")


def _spark_verdicts(spark, files, engine: str = "arrow") -> tuple[list, int]:
    """The groups' verdicts of the Spark job, and how many lines no group owns."""
    rows = [r.asDict() for r in S.check(spark, files, engine).collect()]
    assert all(r["verdict"] != S.TOO_LONG for r in rows)
    return ([r for r in rows if r["verdict"] != S.UNROUTED],
            sum(r["records"] for r in rows if r["verdict"] == S.UNROUTED))


def _same_verdicts(spark, tmp_path, engine: str, groups_n: int, seed: int) -> tuple[list, list]:
    folder, info = _corpus(tmp_path, groups_n, seed=seed)
    groups, orphans = read_groups([str(folder)])
    expected = sorted(_key(check_group(g, recs)) for g, recs in groups.items())
    verdicts, unrouted = _spark_verdicts(spark, expand([str(folder)]), engine)
    got = sorted(_key(v) for v in verdicts)
    assert got == expected, engine
    assert unrouted == orphans.count == 2 + len(H.UNOWNED)
    flagged = {k[0] for k in expected if k[1] == "violation"}
    assert flagged == {b["group"] for b in info if b["fired"]}
    by_group = {k[0]: k for k in expected}
    assert by_group["broken-group"][1] == "invalid" and by_group["in-parquet"][1] == "ok"
    for i, (_, _, says) in enumerate(H.INVALID):
        assert by_group[f"bad-{i}"][1] == "invalid" and says in by_group[f"bad-{i}"][5]
    return got, expected


def test_spark_job_gives_the_in_process_verdicts(spark, tmp_path):
    got, expected = _same_verdicts(spark, tmp_path, "arrow", 20, seed=4)
    assert got == expected


@pytest.mark.slow
def test_spark_rdd_job_gives_the_in_process_verdicts(spark, tmp_path):
    got, expected = _same_verdicts(spark, tmp_path, "rdd", 60, seed=5)
    assert got == expected


@pytest.mark.slow
def test_spark_pandas_job_gives_the_in_process_verdicts(spark, tmp_path):
    got, expected = _same_verdicts(spark, tmp_path, "pandas", 60, seed=6)
    assert got == expected


@pytest.mark.slow
def test_cli_on_spark_writes_the_report(tmp_path):
    import subprocess
    import sys
    folder, info = _corpus(tmp_path, 30, seed=8)
    r = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "traces", "check", str(folder), "--out",
                        str(tmp_path / "out"), "--master", "local[2]", "--json"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 1, r.stderr
    s = json.loads(r.stdout)
    assert s["verdicts"]["violation"] == sum(b["fired"] for b in info)
    assert (tmp_path / "out" / "report.html").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["arrow", "rdd"])
def test_spark_reads_parquet_traces_as_the_in_process_checker_does(spark, tmp_path, engine):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "simulate", "--groups", "12",
                        "--events-per-group", "80", "--seed", "11", "--inject-bug", "all", "--fraction", "0.5",
                        "--out", str(tmp_path / "t.parquet")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    groups, _ = read_groups([str(tmp_path / "t.parquet")])
    expected = sorted(_key(check_group(g, recs)) for g, recs in groups.items())
    verdicts, _ = _spark_verdicts(spark, [tmp_path / "t.parquet"], engine)
    assert sorted(_key(v) for v in verdicts) == expected
    assert any(k[1] == "violation" for k in expected)


def _cli(*args, **kw):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "traces", "check", *map(str, args)],
                          capture_output=True, text=True, timeout=600, **kw)


@pytest.mark.slow
def test_spark_refuses_in_one_line_what_it_cannot_read(tmp_path):
    import gzip
    good = tmp_path / "good.jsonl"
    good.write_text(H.lines(H.GOOD))
    (tmp_path / "cut.jsonl.gz").write_bytes(gzip.compress(good.read_bytes())[:-30])
    (tmp_path / "plain.jsonl.gz").write_bytes(good.read_bytes())
    (tmp_path / "zipped.jsonl").write_bytes(gzip.compress(good.read_bytes()))
    for path, master, says in [
            (good, "bogus", "--master bogus: Spark did not start (Master must either be"),
            (tmp_path / "cut.jsonl.gz", "local[1]", "cut.jsonl.gz: a gzip file cut short or corrupt"),
            (tmp_path / "plain.jsonl.gz", "local[1]", "plain.jsonl.gz: named .gz but not gzip'ed"),
            (tmp_path / "zipped.jsonl", "local[1]", "zipped.jsonl: gzip'ed, but its name does not end in .gz")]:
        r = _cli(path, "--out", tmp_path / "o", "--master", master)
        assert r.returncode == 2 and "Traceback" not in r.stderr and "\tat " not in r.stderr, r.stderr
        assert r.stderr.strip().splitlines()[-1].startswith("groupspec: ") and says in r.stderr, r.stderr


def _descendants(pid: int) -> dict[int, str]:
    """The processes under `pid` (children, theirs, ...), with their command lines."""
    import subprocess
    rows = [x.split(None, 2) for x in subprocess.run(["ps", "-eo", "pid,ppid,args"], capture_output=True,
                                                       text=True).stdout.splitlines()[1:]]
    found, todo = {}, [pid]
    while todo:
        parent = todo.pop()
        for child, ppid, *args in rows:
            if int(ppid) == parent and int(child) not in found:
                found[int(child)] = args[0] if args else ""
                todo.append(int(child))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.parametrize("sig,code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_during_the_spark_job_stops_it_quietly(tmp_path, sig, code):
    import signal
    import subprocess
    import sys
    import time
    r = subprocess.run([sys.executable, "-m", "groupspec.checkers.cli", "simulate", "--groups", "300",
                        "--events-per-group", "200", "--out", str(tmp_path / "t.jsonl")], capture_output=True)
    assert r.returncode == 0
    p = subprocess.Popen([sys.executable, "-m", "groupspec.checkers.cli", "traces", "check", str(tmp_path / "t.jsonl"),
                          "--out", str(tmp_path / "o"), "--master", "local[2]"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    started: dict = {}
    try:
        deadline = time.monotonic() + 120       # until the Python workers run: the job is under way
        while not any("pyspark" in a for a in started.values()) and time.monotonic() < deadline:
            time.sleep(0.5)
            started.update(_descendants(p.pid))
        time.sleep(3)
        started.update(_descendants(p.pid))
        p.send_signal(getattr(signal, sig))
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    time.sleep(2)
    left = [pid for pid in started if _alive(pid)]
    for pid in left:                            # ours: never left behind, even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert any("java" in a for a in started.values()), started
    assert p.returncode == code, err
    assert "Traceback" not in err and "\tat " not in err and "Exception" not in err, err
    assert not left, {pid: started[pid] for pid in left}
