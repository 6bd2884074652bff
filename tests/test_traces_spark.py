"""The Spark pipeline end to end on a small corpus: the one Spark test of the quick suite (one local
session, shared), plus slow ones.  The Spark job and the in-process checker must give identical verdicts."""
from __future__ import annotations

import json
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


@pytest.fixture(scope="module")
def spark():
    sp = S.session("local[2]", partitions=4)
    yield sp
    sp.stop()


def _corpus(tmp: Path, groups: int, seed: int) -> tuple[Path, list]:
    sink = JsonLinesSink(str(tmp / "traces.jsonl.gz"))
    info = simulate(groups, sink, seed=seed, events_per_group=120, bugs=choose_bugs("all"), fraction=0.4)
    sink.close()
    # bad input rides along: a truncated line of one more group, a line that names no group
    with open(tmp / "bad.jsonl", "w") as f:
        f.write('{"v":1,"group":"broken-group","seq":1,"ts_ms":1,"source":"x","kind":"requ\n')
        f.write("garbage\n")
    return tmp, info


def _key(v: dict) -> tuple:
    return tuple(v[k] for k in VERDICT_FIELDS if k != "explain")


def _same_verdicts(spark, tmp_path, engine: str, groups_n: int, seed: int) -> tuple[list, list]:
    folder, info = _corpus(tmp_path, groups_n, seed=seed)
    groups, orphans = read_groups([str(folder)])
    expected = sorted(_key(check_group(g, recs)) for g, recs in groups.items())
    verdicts, orphan = S.check(spark, expand([str(folder)]), engine)
    got = sorted(_key(r.asDict()) for r in verdicts.collect())
    assert got == expected, engine
    assert S.orphan_lines(orphan)[0] == len(orphans) == 1
    flagged = {k[0] for k in expected if k[1] == "violation"}
    assert flagged == {b["group"] for b in info if b["fired"]}
    assert [k for k in expected if k[0] == "broken-group"][0][1] == "invalid"
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
    verdicts, _ = S.check(spark, [tmp_path / "t.parquet"], engine)
    assert sorted(_key(r.asDict()) for r in verdicts.collect()) == expected
    assert any(k[1] == "violation" for k in expected)
