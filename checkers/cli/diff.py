"""`groupspec diff`: what a change does to the protocol (checkers/review/spec_diff.py)."""
from __future__ import annotations

import json
from typing import Optional

import typer

from groupspec.checkers.console import fail_input, out, output_path, write_outputs


def diff_cmd(rev: str = typer.Argument(..., help="the revision before the change (a commit, branch or tag)"),
             rev2: Optional[str] = typer.Argument(None, help="the revision after it (default: the working tree)"),
             presets: str = typer.Option("tiny,twogen,small,settle,static,hung", "--presets",
                                         help="the worlds checked at both revisions, comma-separated (none: '')"),
             out_file: Optional[str] = typer.Option(None, "--out", help="write the Markdown here"),
             as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """What a change does to the protocol, as Markdown for a pull request.

    Rows added, removed and changed (in Kafka's words), invariants and their recorded proofs, and the verdicts
    and state counts of a few worlds."""
    from groupspec.checkers.review.spec_diff import DiffError, diff, markdown
    from groupspec.checkers.world.presets import PRESETS
    names = tuple(p.strip() for p in presets.split(",") if p.strip())
    unknown = [p for p in names if p not in PRESETS]
    if unknown:
        fail_input(f"--presets: no preset {', '.join(unknown)}; use some of {', '.join(PRESETS)}")
    target = output_path("--out", out_file, "file") if out_file is not None else None
    try:
        d = diff(rev, rev2, names)
    except DiffError as e:
        fail_input(str(e))
    text = markdown(d)
    if target is not None:
        write_outputs("--out", target, lambda: target.write_text(text), after_result=False)
    if as_json:
        print(json.dumps(d, ensure_ascii=False))
    elif target is None:
        out.print(text, markup=False, highlight=False, soft_wrap=True)
    else:
        out.print(f"wrote {target}", markup=False, highlight=False)
