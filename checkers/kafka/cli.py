"""`groupspec kafka`: Kafka's own coordinators beside the spec (setup, brokers, the conformance report)."""
from __future__ import annotations

from typing import List, Optional

import typer

from groupspec.checkers.console import err, fail_input

from . import jars

kafka_app = typer.Typer(no_args_is_help=True,
                        help="Kafka itself as the oracle: its jars, its brokers, and how the spec compares.")


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
