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

# `groupspec --help` lists the commands by what a user comes to do
CHECK, READ, TEST, LOGS = ("Verify the protocol", "Read the protocol", "Test an implementation",
                           "Validate logs")
app.command("check", rich_help_panel=CHECK)(check.check_cmd)
app.command("prove", rich_help_panel=CHECK)(prove.prove_cmd)
app.command("lint", rich_help_panel=CHECK)(prove.lint_cmd)
app.command("mutate", rich_help_panel=CHECK)(check.mutate_cmd)
app.add_typer(check.export_app, name="export", rich_help_panel=CHECK)
check.export_app.command("tla")(check.export_tla_cmd)
app.command("replay", rich_help_panel=CHECK)(check.replay_cmd)
app.command("rows", rich_help_panel=READ)(rows.rows_cmd)
app.command("docs", rich_help_panel=READ)(review.docs_cmd)
app.command("diff", rich_help_panel=READ)(diff.diff_cmd)
app.add_typer(scenario_app, name="scenario", rich_help_panel=TEST)
scenario_app.command("run")(scenario.scenario_run)
scenario_app.command("generate")(scenario.scenario_generate)
app.command("conform", rich_help_panel=TEST)(conform_cmd)
app.add_typer(kafka_app, name="kafka", rich_help_panel=TEST)
app.add_typer(serve_app, name="serve", rich_help_panel=TEST)
# trace validation: `simulate`, `traces from-kafka-log`, `traces check` (checkers/traces/commands.py)
register_traces(app, LOGS)
