"""What a proof attempt ends with: a proof (its status, method and lemmas) or a counterexample to
induction, and a Z3 model's values read back."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import z3


@dataclass
class CTI:
    """A counterexample to induction: a state where the lemmas hold, a row, and the state after it."""
    row: str
    reading: str
    pre: dict
    params: dict
    post: dict
    words: str
    scenario: str
    approximated: list = field(default_factory=list)

    def as_json(self) -> dict:
        return {"row": self.row, "reading": self.reading, "pre": self.pre, "params": self.params,
                "post": self.post, "words": self.words, "scenario_fragment": self.scenario,
                "approximated": self.approximated}


@dataclass
class Proof:
    name: str
    status: str
    method: str
    lemmas: list[str] = field(default_factory=list)
    seconds: float = 0.0
    reason: str = ""
    assumptions: list[str] = field(default_factory=list)
    cti: CTI | None = None
    bound: int | None = None
    approximated: list = field(default_factory=list)
    engine: str = "houdini"     # houdini: lemmas are the candidates' names; spacer: Spacer's conjuncts
    together: list = field(default_factory=list)     # the catalog invariants it was proved together with
    path: object = None     # Spacer's counterexample as a path of rows, and its concrete replay (paths.SpacerPath)

    def as_json(self) -> dict:
        d = {"name": self.name, "status": self.status, "method": self.method, "lemmas": self.lemmas,
             "seconds": round(self.seconds, 3), "reason": self.reason, "assumptions": self.assumptions,
             "engine": self.engine}
        if self.bound is not None:
            d["bound"] = self.bound
        if self.cti is not None:
            d["cti"] = self.cti.as_json()
        if self.approximated:
            d["approximated"] = self.approximated
        if self.together:
            d["together_with"] = self.together
        if self.path is not None:
            d["path"] = self.path.as_json()
        return d


def model_value(m: z3.ModelRef, e) -> bool | None:
    """The truth of formula e in model m (None: undecided).  Z3's own evaluation leaves a
    quantifier over an uninterpreted sort unevaluated; here it is expanded over the model's
    finite universe of that sort first, so a quantified lemma can be seen false in a
    counterexample."""
    memo: dict = {}

    def ground(x):
        key = x.get_id()
        if key in memo:
            return memo[key]
        if z3.is_quantifier(x) and not x.is_lambda():
            vs = [z3.Const(x.var_name(i), x.var_sort(i)) for i in range(x.num_vars())]
            unis = []
            for v in vs:
                u = m.get_universe(v.sort()) if v.sort().kind() == z3.Z3_UNINTERPRETED_SORT else None
                if u is None:
                    raise _Undecided
                unis.append(list(u))
            # de Bruijn index 0 is the last variable bound
            body = x.body()
            cases = [ground(z3.substitute_vars(body, *reversed(combo))) for combo in itertools.product(*unis)]
            got = z3.And(cases) if x.is_forall() else z3.Or(cases)
        elif z3.is_app(x) and x.decl().kind() in _CONNECTIVES:
            kids = [ground(a) for a in x.children()]
            got = x.decl()(*kids) if x.decl().kind() != z3.Z3_OP_AND and x.decl().kind() != z3.Z3_OP_OR else \
                (z3.And if x.decl().kind() == z3.Z3_OP_AND else z3.Or)(kids)
        else:
            got = x
        memo[key] = got
        return got

    try:
        v = m.eval(ground(e), model_completion=True)
    except _Undecided:
        return None
    return True if z3.is_true(v) else False if z3.is_false(v) else None


_CONNECTIVES = {z3.Z3_OP_AND, z3.Z3_OP_OR, z3.Z3_OP_NOT, z3.Z3_OP_IMPLIES, z3.Z3_OP_IFF, z3.Z3_OP_XOR}


class _Undecided(Exception):
    pass
