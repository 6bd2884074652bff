"""A mutant shown equivalent by Z3: the mutated row behaves as the table's wherever its trigger reaches it.

The engine fires the first row of a trigger whose states include the group's and whose own condition holds
(spec/engine.py Engine.select), so a mutant of row i changes nothing where an earlier row applies.  Where none
does, it is equivalent if the mutated row is selected exactly where the table's is, and there gives the same
post-state and the same outputs for the same choices (the same choice sets, too).  "The same post-state" is
the same group state and the same value of each variable some later step or snapshot may read in it
(spec/observable.py LIVE_BY_MODE, per group state and armed delayed join: a Dead group's `awaiting_sync` is never
read again, nor `join_delay_ms` unless the initial delay is armed, so a mutant that leaves them is not told apart
by them); the induction there needs the mutated row itself to depend on nothing else
(observable.keeps_alike), and where it may, the whole post-state is compared.  Asked of Z3 over every
well-formed state that keeps the structural invariants and every request the drivers can send (what `groupspec
lint` assumes: checkers/proofs/lint.py PARAM_FACTS), for the sizes of spec/schema.py's Bounds, with the rows'
own symbolic reading (spec/symbolic.py row_relation): unsat is a proof; sat or unknown leaves the mutant to the
checkers.

The pre-state may also be assumed to keep the catalog invariants proved inductive for the table in this run
(checkers/search/assumed.py: I, with the structural ones S).  Why that is sound: every state the table reaches
keeps S ∧ I.  Compared whole, the mutated row acts as the table's on every such state, so by induction on the
length of a run the mutant reaches exactly the table's states, each keeping S ∧ I, and does there what the
table does.  Compared modulo liveness, the mutant's states are only *alike* the table's (equal on what is live
in their mode), so I may not hold of them: a conjunct is assumed only in the modes where, the mode fixed, it
reads nothing but what is live there (`_assumed`: the conjunct with the state and `join_timer` substituted,
simplified, reads only live variables' constants).  Then it holds of a mutant state alike a table state, which
keeps it; S holds of the mutant's states because lint has checked the mutated row keeps it (`lint_breaks`,
asked first); and the record forms of I speak only of the records appended, which alike states append alike
(outputs are compared whole), so the mutant's log is the table's.
"""
from __future__ import annotations

import dataclasses

import z3

from groupspec.spec.lang import TRUE, And, Not
from groupspec.spec.observable import LIVE_BY_MODE, MODES, keeps_alike
from groupspec.spec.schema import STATES
from groupspec.spec.rows import ECHO, Row
from groupspec.spec.symbolic import SymEnv, _eq, default_sizes, in_states, row_relation, to_z3
from groupspec.spec.table import ROWS, enabled

from . import assumed

TIMEOUT_MS = 10_000
_RELATIONS: list = []     # the shared symbolic state and parameters, made once per process


def _relations():
    from groupspec.checkers.proofs.lint import PARAM_FACTS, Relations
    if not _RELATIONS:
        rel = Relations(default_sizes())
        env = SymEnv(rel.sizes, rel.state, rel.params)
        _RELATIONS.append((rel, [*rel.assumed(), *[to_z3(f, env) for f, _ in PARAM_FACTS]]))
    return _RELATIONS[0]


def _assumed(rel, env: SymEnv, whole: bool) -> list:
    """The proved invariants (checkers/search/assumed.py) as facts of the pre-state: all of them when the
    post-states are compared whole; else each only in the modes where what it reads there is live."""
    facts = []
    for _, t in assumed.proved(rel, _relations()[1]):
        f = to_z3(t, env)
        if whole:
            facts.append(f)
            continue
        for (s, j), live in LIVE_BY_MODE.items():
            at = [(rel.state["state"], z3.IntVal(STATES.index(s))), (rel.state["join_timer"], z3.IntVal(j))]
            part = z3.simplify(z3.substitute(f, *at))
            if not z3.is_true(part) and _state_vars(part) <= live:
                facts.append(z3.Implies(z3.And([a == b for a, b in at]), part))
    return facts


def _state_vars(e) -> set:
    """The state variables a Z3 term reads (its constants named `s.<variable>...`, as symbolic.fresh_state
    names them)."""
    seen, todo, out = set(), [e], set()
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_app(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED and t.decl().name().startswith("s."):
            out.add(t.decl().name()[2:].split("[")[0].split(".")[0])
        todo += t.children()
    return out


def _selected(row: Row, state: dict, env: SymEnv):
    """Where first-match dispatch tests the row: its states and its own condition."""
    return z3.And(in_states(row, state), to_z3(row.own if row.own is not None else row.guard, env))


def _effect(row: Row, rel):
    """(the choices' constraints, post-state, outputs) of a row, its guard left to `_selected`."""
    choices, post, outs = row_relation(dataclasses.replace(row, guard=TRUE()), rel.state, rel.params, rel.sizes)
    return choices, post, outs


def _same_field(a, b):
    if a is ECHO or b is ECHO:
        return z3.BoolVal(a is b)
    if isinstance(a, z3.ExprRef) or isinstance(b, z3.ExprRef):
        return _eq(a, b)
    return z3.BoolVal(a == b)


def _same_outputs(xs: list, ys: list):
    if len(xs) != len(ys) or any((x.kind, x.api, x.timer, sorted(x.fields)) != (y.kind, y.api, y.timer, sorted(y.fields))
                                 for x, y in zip(xs, ys)):
        return z3.BoolVal(False)
    same = []
    for x, y in zip(xs, ys):
        member = z3.BoolVal(True) if x.member is None and y.member is None else \
            (_eq(x.member, y.member) if x.member is not None and y.member is not None else z3.BoolVal(False))
        same.append(z3.And(x.cond == y.cond, z3.Implies(x.cond, z3.And(member, *[_same_field(x.fields[k], y.fields[k])
                                                                               for k in x.fields]))))
    return z3.And(same)


def _same_post(post: dict, post2: dict, whole: bool):
    """The two post-states alike: the same state and `join_timer` and, unless `whole`, each other variable
    only in the modes (spec/observable.py) that read it again."""
    same = [_eq(post["state"], post2["state"]), _eq(post["join_timer"], post2["join_timer"])]
    for k in post:
        if k in ("state", "join_timer"):
            continue
        live_in = [(STATES.index(s), j) for s, j in MODES if k in LIVE_BY_MODE[(s, j)]]
        if whole or len(live_in) == len(MODES):
            same.append(_eq(post[k], post2[k]))
        elif live_in:
            same.append(z3.Implies(z3.Or([z3.And(post["state"] == i, post["join_timer"] == j) for i, j in live_in]),
                                   _eq(post[k], post2[k])))
    return z3.And(same)


def shown_equivalent(index: int, mutant: Row, timeout_ms: int = TIMEOUT_MS) -> str:
    """Why the table with row `index` replaced by `mutant` behaves as the table on every step, or '' if Z3
    does not show it (it finds a difference, or gives up)."""
    rel, assumed_ = _relations()
    env = SymEnv(rel.sizes, rel.state, rel.params)
    original = ROWS[index]
    earlier = [_selected(r, rel.state, env) for r in ROWS[:index] if r.trigger == original.trigger]
    sel, sel2 = _selected(original, rel.state, env), _selected(mutant, rel.state, env)
    (c, post, outs), (c2, post2, outs2) = _effect(original, rel), _effect(mutant, rel)
    whole = bool(keeps_alike(mutant))
    same_post = _same_post(post, post2, whole)
    same = z3.And(sel == sel2, z3.Implies(sel, z3.And(c == c2, z3.Implies(c, z3.And(same_post,
                                                                                     _same_outputs(outs, outs2))))))
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(*assumed_, *_assumed(rel, env, whole), to_z3(enabled(original.trigger), env), z3.Not(z3.Or(earlier)) if earlier else True)
    solver.add(z3.Not(same))
    if solver.check() != z3.unsat:
        return ""
    return (f"Z3: wherever no earlier row of {original.trigger} applies, the mutated row is selected exactly where "
            f"the table's is and gives the same outputs and the same state, as far as any later step or snapshot reads it (every state keeping the structural invariants and request the drivers send, sizes "
            f"{', '.join(f'{k} {v}' for k, v in sorted(rel.sizes.items()))})")


def lint_breaks(index: int, mutant: Row, timeout_ms: int = TIMEOUT_MS) -> str:
    """What `groupspec lint` says of the table with row `index` replaced by `mutant`, where it says something
    of the mutated row it does not say of the table's: a structural invariant it no longer keeps, or a timer
    it leaves armed where the timer's condition fails (checkers/proofs/lint.py check_preserved,
    check_timers), asked where first-match dispatch selects it.  '' if neither."""
    from groupspec.checkers.proofs.lint import check_preserved, check_timers
    from groupspec.spec.vocabulary import in_states
    rel, _ = _relations()
    original = ROWS[index]
    earlier = [r for r in ROWS[:index] if r.trigger == original.trigger]
    selected = And(mutant.own if mutant.own is not None else mutant.guard,
                   *[Not(And(in_states(*r.states), r.own if r.own is not None else r.guard)) for r in earlier])
    row = [dataclasses.replace(mutant, guard=selected)]
    for check, what in ((check_preserved, "a structural invariant"), (check_timers, "the timers' conditions")):
        _, problems = check(rel.sizes, timeout_ms, relations=rel, table=row)
        found = [p.detail for p in problems if "Z3 gave up" not in p.detail]
        if found:
            return f"lint: the mutated row {found[0]} ({what})"
    return ""
