"""The guards the documents show are the table's guards, only shorter."""
import z3

from groupspec.checkers.review.guards import condition, condition_text, simplify
from groupspec.spec.lang import TRUE, And, Not, Or
from groupspec.spec.schema import P, STATES
from groupspec.checkers.proofs.lint import Relations
from groupspec.spec.symbolic import SymEnv, default_sizes, in_states as z3_states, to_z3
from groupspec.spec.table import ROWS


def test_each_row_applies_exactly_when_its_shown_condition_holds_and_no_earlier_row_of_its_trigger_does():
    """Lint's assumptions (well-formed values, the structural invariants); "earlier" is the table's order, which the
    documents keep: a check that routes without a row
    (a known static member of an Empty group) is "otherwise" because the invariants rule it out."""
    sym = Relations(default_sizes())
    env = SymEnv(sym.sizes, sym.state, sym.params)
    solver = z3.Solver()
    solver.set(timeout=20_000)
    solver.add(*sym.assumed())
    applies = {id(r): z3.And(z3_states(r, sym.state), to_z3(r.guard, env)) for r in ROWS}
    checked = 0
    for r in ROWS:
        earlier = ROWS[:ROWS.index(r)]
        other = z3.Or([applies[id(q)] for q in earlier if q.trigger == r.trigger] + [z3.BoolVal(False)])
        for st in r.states:
            here = sym.state["state"] == STATES.index(st)
            shown = z3.And(here, to_z3(condition(r, st), env), z3.Not(other))
            solver.push()
            solver.add(z3.Not(z3.And(here, applies[id(r)]) == shown))
            assert solver.check() == z3.unsat, f"{r.name} in {st}: the shown condition {condition_text(r, st)!r} " \
                                               f"is not the row's guard given the other rows"
            solver.pop()
            checked += 1
    assert checked > len(ROWS)


def test_simplify_drops_what_adds_nothing():
    a, b = P.member_empty, P.require_known
    assert condition_text.__module__  # the module under test is the docs' one
    s = simplify(And(TRUE(), Not(Not(a)), a, Or(b, b)))
    assert s.op == "and" and [x.data for x in s.args] == ["member_empty", "require_known"]


def test_guards_are_in_kafkas_names_and_say_nothing_of_earlier_rows():
    texts = {r.name: condition_text(r) for r in ROWS}
    full = texts["JoinGroup: group is full (Stable)"]
    assert "group.max.size" in full and "request.member_id" in full and not full.startswith("p.") and " p." not in full
    assert texts["JoinGroup: known member id but no such group"] == 'request.member_id ≠ ""'
    assert all("True" not in t and "¬¬" not in t for t in texts.values())
