"""The harness as a checker of table mutants (`groupspec mutate`): the runtime coordinator driven by the
mutant's rows is the implementation, the unmutated spec the reference.  Concrete time and full answers:
it sees what the closed world's abstract time and recovering clients cannot (durations, error codes)."""
from __future__ import annotations

from groupspec.spec import engine as E

from .adapter import runtime
from .harness import run

BUDGET = {"examples": 100, "steps": 30, "seed": 0}     # per mutant; `groupspec mutate --harness-examples`


def harness_kills(rows: list) -> tuple[str, int] | None:
    """(the divergence, its scenario's length) if the harness tells the mutant table from the spec."""
    if BUDGET["examples"] <= 0:
        return None
    engine = E.Engine(rows)
    try:
        r = run(lambda cfg: runtime(cfg, engine=engine), "mutant", examples=BUDGET["examples"], steps=BUDGET["steps"],
                seed=BUDGET["seed"], shrink_seconds=0)
    except E.EngineError as e:      # the mutant leaves a case no row covers, outside any step the harness watches
        return f"the table: {e}", 0
    if r.result == "ok":
        return None
    return r.message, len(r.scenario["steps"]) if r.scenario else 0
