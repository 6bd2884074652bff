"""What several commands share: the options that name a closed world, worker and preset lists, a
counterexample's files."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from groupspec.checkers.console import fail_input, out, write_folder


# The options that say which closed world: `groupspec check` and `groupspec export tla` take the same.
WORLD_OPTIONS = dict(
    preset=typer.Option("small", "--preset", help="tiny, twogen, small, faults, static, settle, settle3, "
                                                  "hung (seconds), ci (under two minutes), deep (nightly)"),
    clients=typer.Option(None, "--clients", help="number of consumer clients"),
    topics=typer.Option(None, "--topics"),
    partitions=typer.Option(None, "--partitions", help="partitions per topic"),
    max_generation=typer.Option(None, "--max-generation"),
    member_ids=typer.Option(None, "--member-ids", help="member ids the coordinator may issue"),
    crash=typer.Option(None, "--crash/--no-crash", help="clients may crash"),
    expiry=typer.Option(None, "--expiry/--no-expiry", help="session timers may fire"),
    failover=typer.Option(None, "--failover/--no-failover", help="coordinator unload/load"),
    append_failure=typer.Option(None, "--append-failure/--no-append-failure"),
    loss=typer.Option(None, "--loss/--no-loss", help="the network may lose messages"),
    duplication=typer.Option(None, "--duplication/--no-duplication", help="the network may deliver a request twice"),
    reordering=typer.Option(None, "--reordering/--no-reordering",
                            help="a request may be overtaken by its client's later ones"),
    late_duplication=typer.Option(None, "--late-duplication/--no-late-duplication",
                                  help="a request's copy may arrive again after its client's later ones"),
    hung_poll=typer.Option(None, "--hung-poll/--no-hung-poll",
                           help="a client's poll loop may hang after its JoinGroup response: it never syncs while "
                                "its heartbeat thread keeps heartbeating"),
    leaves_rebalancing=typer.Option(None, "--leaves-rebalancing/--no-leaves-rebalancing",
                                    help="a dynamic member may close and leave while the group rebalances"),
    timely=typer.Option(None, "--timely/--no-timely",
                        help="clients answer within their timeouts: the DelayedJoin never expires and the sync "
                             "timeout never fires"),
    rebalance_budget=typer.Option(None, "--rebalance-budget/--no-rebalance-budget",
                                  help="the generation bound is a property (timely clients without faults only)"),
)


_WORLD_TYPES = {"preset": str, **{n: Optional[int] for n in ("clients", "topics", "partitions", "max_generation",
                                                            "member_ids")}}


def world_options(fn=None, **defaults):
    """The command takes the world options (WORLD_OPTIONS) besides its own, and gets them as one dict,
    `world`, for `world_of(**world)`: every command that names a closed world names it alike.
    `@world_options(preset="tiny")` gives an option another default for one command."""
    import copy
    import functools
    import inspect
    import typing
    if fn is None:
        return functools.partial(world_options, **defaults)
    opts = dict(WORLD_OPTIONS)
    for name, value in defaults.items():
        opts[name] = copy.copy(WORLD_OPTIONS[name])
        opts[name].default = value
    # the command's own annotations resolved where it was written (typer reads the wrapper's, in this module)
    hints = typing.get_type_hints(fn)
    own = [p.replace(annotation=hints.get(n, p.annotation)) for n, p in inspect.signature(fn).parameters.items()
           if n != "world"]
    extra = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=opt,
                               annotation=_WORLD_TYPES.get(n, Optional[bool])) for n, opt in opts.items()]

    @functools.wraps(fn)
    def command(*args, **kwargs):
        return fn(*args, world={n: kwargs.pop(n) for n in WORLD_OPTIONS}, **kwargs)
    command.__signature__ = inspect.Signature(own + extra)
    command.__annotations__ = {p.name: p.annotation for p in own + extra}
    del command.__wrapped__
    return command


def world_of(preset: str, **overrides):
    """The world the options name (a preset with flags over it), or one line and exit 2."""
    import dataclasses
    from groupspec.checkers.world.presets import PRESETS, world_problem
    if preset not in PRESETS:
        fail_input(f"--preset {preset!r}: unknown preset; use {', '.join(PRESETS)}")
    try:
        cfg = dataclasses.replace(PRESETS[preset], **{k: v for k, v in overrides.items() if v is not None})
    except ValueError as e:      # a world that contradicts itself (WorldConfig says which flags)
        fail_input(str(e))
    problem = world_problem(cfg)
    if problem:
        fail_input(problem)
    return cfg


def bounded_workers(option: str, n: int) -> int:
    from groupspec.checkers.search.explicit import worker_limit
    if n < 1:
        fail_input(f"{option} must be at least 1, got {n}")
    if n > worker_limit():
        fail_input(f"{option} {n:,}: at most {worker_limit()} here (twice the {worker_limit() // 2} CPUs this "
                   f"process may use: each worker keeps one CPU busy, more only share them and add memory)")
    return n


def preset_list(option: str, given: str) -> list[str]:
    """A comma-separated list of presets, each known and named once."""
    from groupspec.checkers.world.presets import PRESETS
    names = [n.strip() for n in given.split(",") if n.strip()]
    for name in names:
        if name not in PRESETS:
            fail_input(f"{option}: unknown preset {name!r}; use {', '.join(PRESETS)}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        fail_input(f"{option} names {', '.join(twice)} more than once; name each world once")
    return names


class no_status:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def row_names() -> set[str]:
    from groupspec.spec.table import ROWS
    return {r.name for r in ROWS}


CE_FILES = ("counterexample.itf.json", "counterexample.mmd", "counterexample.md", "counterexample.html",
            "mermaid.min.js")


def mermaid_js_or_none():
    from groupspec.checkers.review.errors import DocsError
    from groupspec.checkers.review.site import mermaid_js
    try:
        return mermaid_js()
    except DocsError:
        return None


def write_counterexample(out_path: Path, ce: dict, path: list, model, violation: str, as_json: bool,
                         loop_start: int = -1) -> None:
    """Write a counterexample (`ce`: its step table and ITF, as the JSON output holds them) into
    the folder `out_path` in the three formats (CE_FILES)."""
    from groupspec.checkers.review.counterexample import kafka_view, kafka_view_md, mermaid, violation_meaning
    from groupspec.checkers.review.walkthrough import html_page
    sequence = mermaid(path, model, violation, loop_start)
    view = kafka_view_md(kafka_view(path, model), violation, violation_meaning(violation), loop_start)
    texts = {"counterexample.itf.json": json.dumps(ce["itf"], indent=1),
             "counterexample.mmd": sequence,
             "counterexample.md": view,
             "counterexample.html": html_page(view, f"counterexample: {violation}", sequence)}

    js = mermaid_js_or_none()      # the page draws its diagram with it; without it, it shows the diagram's text
    write_folder("--out", out_path, texts, {"mermaid.min.js": js} if js is not None else None)
    if not as_json:
        out.print(f"counterexample written to {out_path}", markup=False)
