"""A row's guard as a reviewer reads it: what the row adds to the rows before it.

A row's guard in the table is its chain's whole conjunction: the chain's base,
the negation of every earlier condition, then its own.  In a document the
earlier rows are "otherwise", so `condition(row)` drops every conjunct that
only negates a condition of an earlier row of the trigger (or a check that
routes without a row of its own), then simplifies what is left: no `True ∧`,
no double negation, no conjunct twice, and `state = S` decided where the row
applies only in known states.  `tests/test_guards.py` has Z3 prove, for
every row, that the row applies exactly when this condition holds and no
other row of its trigger does.
"""
from __future__ import annotations

from groupspec.spec.lang import BOOL, Const, Term, show
from groupspec.spec.rows import Row
from groupspec.spec.schema import STATES
from groupspec.spec.table import ROWS
from groupspec.spec.vocabulary import kafka_text


def _key(t: Term) -> str:
    """Structural identity for deduplication (terms compare with `is`, never `==`)."""
    return show(t)


def _const(t: Term):
    return t.data if t.op == "const" and t.type == BOOL else None


def simplify(t: Term, states: tuple[str, ...] = STATES) -> Term:
    """The same condition, shorter, for a row that applies only in `states`."""
    op = t.op
    if op == "not":
        a = simplify(t.args[0], states)
        if a.op == "not":
            return a.args[0]
        c = _const(a)
        return Const(not c, BOOL) if c is not None else Term("not", (a,), BOOL)
    if op in ("and", "or"):
        unit, zero = (True, False) if op == "and" else (False, True)
        parts: list[Term] = []
        seen: set[str] = set()
        for a in t.args:
            a = simplify(a, states)
            for x in (a.args if a.op == op else (a,)):
                c = _const(x)
                if c is zero:
                    return Const(zero, BOOL)
                if c is unit or _key(x) in seen:
                    continue
                seen.add(_key(x))
                parts.append(x)
        if not parts:
            return Const(unit, BOOL)
        return parts[0] if len(parts) == 1 else Term(op, tuple(parts), BOOL)
    if op == "eq" and t.args[0].op == "var" and t.args[0].data == "state" and t.args[1].op == "const":
        named = STATES[t.args[1].data]
        if named not in states:
            return Const(False, BOOL)
        if states == (named,):
            return Const(True, BOOL)
    return t


def _conjuncts(t: Term) -> list[Term]:
    return [x for a in t.args for x in _conjuncts(a)] if t.op == "and" else [t]


def _earlier_conditions(r: Row) -> set[int]:
    """The conditions tested before row `r` in its chain, by identity: its own chain's earlier checks, and
    what the rows above it in the table were tested on (an enclosing chain's conditions)."""
    out = {id(c) for c in r.otherwise}
    for q in ROWS[:_INDEX[id(r)]]:
        if q.trigger == r.trigger and q.own is not None:
            out.update(id(c) for c in q.otherwise)
            out.add(id(q.own.args[-1] if q.own.op == "and" else q.own))
    return out


_INDEX = {id(r): i for i, r in enumerate(ROWS)}


def condition(r: Row, state: str | None = None) -> Term:
    """What row `r` adds to the rows before it (in `state`, or in any of its states)."""
    earlier = _earlier_conditions(r)
    own = [c for c in _conjuncts(r.guard) if not (c.op == "not" and id(c.args[0]) in earlier)]
    return simplify(Term("and", tuple(own), BOOL) if len(own) > 1 else own[0] if own else Const(True, BOOL),
                    (state,) if state else r.states)


def condition_text(r: Row, state: str | None = None) -> str:
    """The condition as text, in Kafka's names; "otherwise" when the row adds nothing."""
    c = condition(r, state)
    if _const(c) is True:
        return "otherwise"
    return kafka_show(c)


def kafka_show(t: Term, names: dict | None = None) -> str:
    """Any term in Kafka's names (effects, enabling conditions; `names`: those and more, for the closed
    world's own parameters), without parentheses around the whole."""
    text = kafka_text(t) if names is None else show(t, params=names)
    return text[1:-1] if _wrapped(text) else text


def _wrapped(text: str) -> bool:
    """`text` is one parenthesised group: its first "(" closes at its last character."""
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return i == len(text) - 1
    return False
