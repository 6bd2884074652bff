"""Print, as JSON, what the groupspec tree on the import path says of the protocol: every row of the
table in Kafka's words, and every invariant.

Run as a script inside another revision's tree (checkers/review/spec_diff.py puts that tree first on the
path), so it reads that revision's spec with that revision's own renderer; it therefore imports only what
every revision since the table had its Kafka-worded documents provides, and falls back to the plain
rendering of a term where a renderer is missing.
"""
from __future__ import annotations

import json
import sys


def _renderers():
    """(condition in words, effect in words) as this revision renders them for its documents."""
    for module in ("groupspec.checkers.review.docs", "groupspec.checkers.docs"):
        try:
            mod = __import__(module, fromlist=["guard_words", "effect_words"])
            return mod.guard_words, mod.effect_words
        except (ImportError, AttributeError):
            continue
    from groupspec.spec.lang import show
    return (lambda r: show(r.guard)), (lambda r: "; ".join(type(s).__name__ for s in r.steps))


def describe() -> dict:
    from groupspec.spec.invariants import INVARIANTS
    from groupspec.spec.table import ROWS
    guard_words, effect_words = _renderers()
    rows: dict = {}
    for r in ROWS:
        rows[r.name] = {"trigger": r.trigger, "states": list(r.states), "condition": guard_words(r),
                        "effect": effect_words(r).replace("**", ""), "response": getattr(r, "response", ""),
                        "source": r.source, "spec": getattr(r, "at", "")}
    invariants = {i.name: i.meaning for i in INVARIANTS}
    try:
        from groupspec.spec.world import WORLD_INVARIANTS
        invariants.update({i.name: i.meaning for i in WORLD_INVARIANTS})
    except ImportError:
        pass
    return {"rows": rows, "invariants": invariants}


if __name__ == "__main__":
    json.dump(describe(), sys.stdout, ensure_ascii=False)
