"""`groupspec`: the command line, a module per verb, registered here in the order `--help` lists them.

Exit codes (DESIGN.md §4): 0 everything holds, 1 a property or scenario fails, 2 bad input (with a one-line
message saying what and where).
"""
from __future__ import annotations

from groupspec.checkers.conform.cli import conform_cmd
from groupspec.checkers.console import err
from groupspec.checkers.kafka.cli import kafka_app
from groupspec.checkers.serve.cli import serve_app
from groupspec.checkers.traces.commands import register as register_traces

from . import check, diff, prove, review, rows, scenario
from .app import app, main
from .scenario import scenario_app

__all__ = ["app", "main", "err"]      # err: what the command line prints errors with (tests wrap it)

app.add_typer(scenario_app, name="scenario")
scenario_app.command("run")(scenario.scenario_run)
app.add_typer(kafka_app, name="kafka")
app.add_typer(serve_app, name="serve")
app.command("rows")(rows.rows_cmd)
app.command("lint")(prove.lint_cmd)
app.command("docs")(review.docs_cmd)
app.command("diff")(diff.diff_cmd)
app.command("prove")(prove.prove_cmd)
app.command("check")(check.check_cmd)
app.add_typer(check.export_app, name="export")
check.export_app.command("tla")(check.export_tla_cmd)
app.command("replay")(check.replay_cmd)
app.command("mutate")(check.mutate_cmd)
app.command("conform")(conform_cmd)
# trace validation: `simulate`, `traces from-kafka-log`, `traces check` (checkers/traces/commands.py)
register_traces(app)
