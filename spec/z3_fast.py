"""Z3 terms built many at a time, without z3py's per-argument checks.

z3py's `And`, `If`, `==` and `substitute` look up and compare every argument's sort in Python
on each call (a dozen API calls an argument): building the closed world's step relation
(hundreds of thousands of terms) spent most of its time there.  The builders here pass the
arguments to Z3's C API as they are; they are for terms whose sorts are right by construction
(Booleans to `conj`, `disj`; two terms of one sort to `eq`, `ite`).  Z3 still checks the sorts
itself and raises on a mismatch.  The unbounded reading of the terms (`unbounded.py`) builds
its arrays, lambdas and quantifiers through these too.
"""
from __future__ import annotations

import z3
from z3.z3 import _to_expr_ref

_TRUE, _FALSE = z3.BoolVal(True), z3.BoolVal(False)


def _array(terms) -> tuple:
    n = len(terms)
    arr = (z3.Ast * n)()
    for i, t in enumerate(terms):
        arr[i] = t.as_ast()
    return arr, n


def conj(terms) -> z3.BoolRef:
    """And(terms), True for none."""
    return _nary(z3.Z3_mk_and, terms, _TRUE)


def disj(terms) -> z3.BoolRef:
    """Or(terms), False for none."""
    return _nary(z3.Z3_mk_or, terms, _FALSE)


def _nary(mk, terms, empty) -> z3.BoolRef:
    if not terms:
        return empty
    if len(terms) == 1:
        return terms[0]
    arr, n = _array(terms)
    ctx = terms[0].ctx
    return z3.BoolRef(mk(ctx.ref(), n, arr), ctx)


def eq(a, b) -> z3.BoolRef:
    ctx = a.ctx
    return z3.BoolRef(z3.Z3_mk_eq(ctx.ref(), a.as_ast(), b.as_ast()), ctx)


def ite(c, a, b):
    ctx = a.ctx
    return _to_expr_ref(z3.Z3_mk_ite(ctx.ref(), c.as_ast(), a.as_ast(), b.as_ast()), ctx)


def neg(a) -> z3.BoolRef:
    ctx = a.ctx
    return z3.BoolRef(z3.Z3_mk_not(ctx.ref(), a.as_ast()), ctx)


def implies(a, b) -> z3.BoolRef:
    ctx = a.ctx
    return z3.BoolRef(z3.Z3_mk_implies(ctx.ref(), a.as_ast(), b.as_ast()), ctx)


def select(a, i):
    """a[i] of an array of one index."""
    ctx = a.ctx
    return _to_expr_ref(z3.Z3_mk_select(ctx.ref(), a.as_ast(), i.as_ast()), ctx)


def store(a, i, v):
    ctx = a.ctx
    return _to_expr_ref(z3.Z3_mk_store(ctx.ref(), a.as_ast(), i.as_ast(), v.as_ast()), ctx)


def _bind(mk, x, body):
    ctx = body.ctx
    arr = (z3.Ast * 1)()
    arr[0] = x.as_ast()
    return mk(ctx, arr, body)


def lam(x, body):
    """Lambda over one bound constant."""
    return _bind(lambda ctx, arr, b: z3.QuantifierRef(z3.Z3_mk_lambda_const(ctx.ref(), 1, arr, b.as_ast()), ctx),
                 x, body)


def forall(x, body) -> z3.QuantifierRef:
    return _bind(lambda ctx, arr, b: z3.QuantifierRef(
        z3.Z3_mk_forall_const(ctx.ref(), 1, 1, arr, 0, None, b.as_ast()), ctx), x, body)


def exists(x, body) -> z3.QuantifierRef:
    return _bind(lambda ctx, arr, b: z3.QuantifierRef(
        z3.Z3_mk_exists_const(ctx.ref(), 1, 1, arr, 0, None, b.as_ast()), ctx), x, body)


class Sub:
    """A substitution built once into Z3's arrays and applied to many terms (z3.substitute
    checks every pair's sorts in Python on each call)."""
    __slots__ = ("pairs", "n", "frm", "to")

    def __init__(self, pairs: list):
        self.pairs = pairs               # keeps the terms (and so their ASTs) alive
        self.n = n = len(pairs)
        self.frm, self.to = (z3.Ast * n)(), (z3.Ast * n)()
        for i, (a, b) in enumerate(pairs):
            self.frm[i], self.to[i] = a.as_ast(), b.as_ast()

    def __call__(self, e):
        return _to_expr_ref(z3.Z3_substitute(e.ctx.ref(), e.as_ast(), self.n, self.frm, self.to), e.ctx)

    def many(self, terms: list) -> list:
        """Each term substituted, in one call of Z3: the terms are packed as the arguments of one
        application (of a function symbol made for their sorts), so subterms they share are
        substituted once (Z3 caches within a call, not across calls)."""
        if len(terms) < 2:
            return [self(t) for t in terms]
        ctx = terms[0].ctx
        c = ctx.ref()
        n = len(terms)
        args, _ = _array(terms)
        domain = (z3.Sort * n)()
        for i in range(n):
            domain[i] = z3.Z3_get_sort(c, args[i])
        f = z3.FuncDeclRef(z3.Z3_mk_func_decl(c, _PACK, n, domain, z3.BoolSort(ctx).ast), ctx)
        app = z3.ExprRef(z3.Z3_mk_app(c, f.ast, n, args), ctx)
        done = z3.Z3_substitute(c, app.as_ast(), self.n, self.frm, self.to)
        held = z3.ExprRef(done, ctx)       # holds the result while its arguments are taken out
        return [_to_expr_ref(z3.Z3_get_app_arg(c, held.as_ast(), i), ctx) for i in range(n)]

    def tree(self, v):
        """`v` (Z3 terms nested in lists, tuples and dicts; anything else kept as it is) with
        every term substituted, in one call (`many`)."""
        terms: list = []
        _collect(v, terms)
        return _rebuild(v, iter(self.many(terms)))


_PACK = z3.to_symbol("pack")     # the name of the function symbols `Sub.many` packs terms under


def _collect(v, out: list) -> None:
    if isinstance(v, z3.ExprRef):
        out.append(v)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _collect(x, out)
    elif isinstance(v, dict):
        for x in v.values():
            _collect(x, out)


def _rebuild(v, done):
    if isinstance(v, z3.ExprRef):
        return next(done)
    if isinstance(v, (list, tuple)):
        return type(v)(_rebuild(x, done) for x in v)
    if isinstance(v, dict):
        return {k: _rebuild(x, done) for k, x in v.items()}
    return v
