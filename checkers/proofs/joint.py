"""The catalog's invariants proved together: classic Houdini over the catalog itself.

Two invariants may each need the other to be inductive (static-ids-unique and metadata-of-members-only
do: a static member's rejoin keeps one only where the other holds), and a conjunction is inductive where
neither conjunct alone is.  So the catalog's state invariants, cut into their conjuncts (a conjunct an
induction step breaks does not take the rest of its invariant with it), with their forms about the logged
record and those of the sifted candidates, are given to Houdini as one set: it drops whatever a step
breaks given the rest, to a fixpoint, and what is left is inductive as a whole, so each of it is proved,
for any number of members when the reading is the unbounded one.  An invariant all of whose conjuncts
are left is proved "together with" the catalog invariants its steps' unsat cores used.  When a conjunct
of the catalog is dropped, the candidates the counterexample that dropped it breaks are added (they
would rule it out) and Houdini runs again, while that adds any."""
from __future__ import annotations

import z3

from groupspec.spec.lang import Term

from .houdini import System
from .obligations import Lemma, Work, record_lemmas
from .results import model_value


def conjuncts(t: Term) -> list[Term]:
    return [c for a in t.args for c in conjuncts(a)] if t.op == "and" else [t]


def parts(lemmas: list[Lemma]) -> list[Lemma]:
    """Each catalog lemma cut into its conjuncts, named `name [k/n]` (kept whole when it is one)."""
    out = []
    for lm in lemmas:
        cs = conjuncts(lm.formula)
        out += [lm] if len(cs) == 1 else [Lemma(f"{lm.name} [{k}/{len(cs)}]", lm.meaning, c, "catalog")
                                          for k, c in enumerate(cs, 1)]
    return out


def whole(name: str) -> str:
    """The catalog invariant a part's name is of."""
    return name.rsplit(" [", 1)[0] if name.endswith("]") and " [" in name else name


def part_lemmas(catalog: list[Lemma]) -> list[Lemma]:
    """The catalog's conjuncts and their forms about the logged record (what the joint search starts
    from, before the sample worlds sift the record forms)."""
    ps = parts(catalog)
    return ps + record_lemmas(ps)


def jointly(system: System, start: list[Lemma], extra: list[Lemma], budget: Work) -> tuple[list[Lemma] | None, dict]:
    """The largest inductive subset of `start`, widened by the lemmas of `extra` that rule out the
    counterexamples to induction which dropped a catalog conjunct.  Returns (what is left, or None
    when the budget was spent first; for each dropped lemma, the step that broke it)."""
    chosen = list(start)
    while True:
        alive, dropped = system.houdini(chosen, budget=budget)
        if alive is None:
            return None, dropped
        names = {lm.name for lm in chosen}
        ctis = [cti for lm in chosen if lm.origin == "catalog" and lm.name in dropped
                for cti in _ctis(system, lm, dropped[lm.name], alive)]
        wider = [lm for lm in extra if lm.name not in names
                 and any(model_value(m, c.pre(lm.formula)) is False for c, m in ctis)]
        if not wider:
            return alive, dropped
        chosen += wider


def _ctis(system: System, lm: Lemma, step: str, alive: list[Lemma]) -> list:
    """(step, model) of the step named `step` breaking `lm` from a state where `alive` holds: in this
    reading, or for the falsifier's small sizes where this one does not decide."""
    for sys_ in (system, system.falsifier):
        for c in (_named(sys_, step) if sys_ is not None else []):
            o = c.obligation(lm)
            if o is not None:
                res, solver, _ = c.ask(alive, z3.Not(o))
                if res == z3.sat:
                    return [(c, solver.model())]
    return []


def _named(system: System, step: str) -> list:
    return [system.row(i) for i, sp in enumerate(system.specs)
            if (sp[0].name if len(sp) == 1 else f"{sp[0].name} → {sp[2].name}") == step]
