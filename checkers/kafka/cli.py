"""`groupspec kafka`: Kafka's own coordinators beside the spec (setup, brokers, the conformance report)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from groupspec.checkers.console import err, fail_input, out, output_path, write_outputs

from . import jars
from .broker import BROKER_TIME_SCALE
from .broker_cli import broker_app

kafka_app = typer.Typer(no_args_is_help=True,
                        help="Kafka itself as the oracle: its jars, its brokers, and how the spec compares.")
kafka_app.add_typer(broker_app, name="broker")


@kafka_app.command("setup")
def setup_cmd(
    version: Optional[List[str]] = typer.Option(None, "--version", "-v",
                                                help=f"a Kafka line ({', '.join(jars.LINES)}; repeat it; default: all)"),
) -> None:
    """Fetch Kafka's jars with Maven (once; offline afterwards) and build the in-process driver."""
    names = version or list(jars.LINES)
    try:
        lines = [jars.line(n) for n in names]
        for ln in lines:
            if not jars.setup(ln, log=lambda m: err.print(m, markup=False, highlight=False)):
                err.print(f"groupspec setup: Kafka {ln.release} ready ({jars.home() / ln.release})", markup=False,
                          highlight=False)
    except jars.KafkaSetupError as e:
        fail_input(str(e))


@kafka_app.command("report")
def report_cmd(
    target: Optional[List[str]] = typer.Option(None, "--target", "-t",
                                               help="kafka-3.9, kafka-4.0 (in process), broker:VERSION[:scala|java] "
                                                    "(brokers started as the scenarios' configs need, e.g. broker:4.0) "
                                                    "or kafka://host:port (repeat it; default: both in-process "
                                                    "coordinators)"),
    examples: int = typer.Option(300, "--examples", help="harness examples per target (0: the scenarios only)"),
    broker_examples: int = typer.Option(30, "--broker-examples",
                                        help="harness examples per broker target (they run on the wall clock)"),
    steps: int = typer.Option(40, "--steps", help="at most this many steps per harness example"),
    seed: int = typer.Option(0, "--seed", help="the harness's seed (the same seed, the same run)"),
    time_scale: int = typer.Option(BROKER_TIME_SCALE, "--time-scale",
                                   help="broker:... targets: real milliseconds per scenario millisecond"),
    out_file: Optional[str] = typer.Option(None, "--out", help="write the report as Markdown (e.g. "
                                                               "docs/kafka-conformance.md)"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """The scenario suite and the harness on each of Kafka's coordinators, and every difference from the spec
    with its resolution; exit 1 if any difference is unexplained."""
    # imported here: the report brings the harness and Hypothesis, a second of every other command's start-up
    from groupspec.checkers.conform.adapter import AdapterError

    from . import report
    targets = target or list(report.DEFAULT_TARGETS)
    if not 0 <= examples <= 1_000_000:
        fail_input(f"--examples must be from 0 to 1,000,000, got {examples}")
    if not 0 <= broker_examples <= 1_000_000:
        fail_input(f"--broker-examples must be from 0 to 1,000,000, got {broker_examples}")
    if not 1 <= steps <= 10_000:
        fail_input(f"--steps must be from 1 to 10,000, got {steps}")
    if not 0 <= seed < 2**32:
        fail_input(f"--seed must be from 0 to {2**32 - 1}, got {seed}")
    if not 1 <= time_scale <= 10_000:
        fail_input(f"--time-scale must be from 1 to 10,000, got {time_scale}")
    path = output_path("--out", out_file, "file") if out_file is not None else None
    say = None if as_json else (lambda m: err.print(m, markup=False, highlight=False))
    try:
        reports = report.run_report(targets, examples, steps, seed, progress=say, time_scale=time_scale,
                                    broker_examples=broker_examples)
    except (AdapterError, jars.KafkaSetupError) as e:
        fail_input(str(e))
    command = "groupspec kafka report " + " ".join(
        [*(f"--target {t}" for t in targets), f"--examples {examples}", f"--steps {steps}", f"--seed {seed}",
         *([f"--broker-examples {broker_examples}", f"--time-scale {time_scale}"]
           if any(report.on_wall_clock(t) for t in targets) else [])])
    if path is not None:
        write_outputs("--out", path, lambda: Path(path).write_text(report.markdown(reports, command), encoding="utf-8"))
    if as_json:
        print(json.dumps(report.as_json(reports), indent=2, default=str))
    else:
        for r in reports:
            s, h = r.scenarios, r.harness
            harness = f"; harness {h['examples']:,} examples, {h['steps']:,} steps: {h['result']}" if h else ""
            out.print(f"{r.target} (Kafka {r.kafka}): scenarios {s['passed']} passed, {s['failed'] + s['errors']} "
                      f"failed, {s['skipped']} skipped{harness}; unexplained differences: {len(r.unexplained)}",
                      markup=False, highlight=False)
    if report.unexplained(reports):
        raise typer.Exit(1)
