"""Comparing what a target answered with what a scenario expects.

Values: `$name` (bound earlier), `{bind: name}`, `{any_of: [...]}`,
`{not: x}`.  Lists of members and partitions compare as sets, except
LeaveGroup's `errors`, which compare in order.  Summaries in `groups`
compare on the keys the scenario names, and the list as a set.

The loader has checked the shapes and bounded the depth of every expected
value (model.MAX_DEPTH), so the recursion here is shallow.
"""
from __future__ import annotations

from typing import Any

from groupspec.spec.kafka import brief

FORM_KEYS = ("bind", "any_of", "not")
MAX_PAIRINGS = 1_000_000   # work pairing a set's elements when bindings forbid the polynomial way (tries, and
                           # the bindings each copies)


class BadUse(Exception):
    """A mistake in the scenario that shows only while it runs (reported as an error, not as a failure)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class Unbound(BadUse):
    """A `$name` used before it was bound."""

    def __init__(self, name: str):
        super().__init__(f"${name} is used before a `{{bind: {name}}}` binds it")
        self.name = name


class Mismatch(Exception):
    def __init__(self, where: str, expected: Any, got: Any):
        super().__init__(where)
        self.where, self.expected, self.got = where, expected, got

    def __str__(self) -> str:
        # made when shown: matching a set raises and drops one per pair tried
        return f"{self.where}: expected {brief(self.expected, 200)}, got {brief(self.got, 200)}"


def is_form(v: Any) -> bool:
    """`{bind: ..}`, `{any_of: ..}` or `{not: ..}`: a value that stands for others."""
    return isinstance(v, dict) and len(v) == 1 and next(iter(v)) in FORM_KEYS


def resolve(v: Any, env: dict) -> Any:
    """Substitute bound variables in a request value (keys of mappings too)."""
    if isinstance(v, str) and v.startswith("$"):
        name = v[1:]
        if name not in env:
            raise Unbound(name)
        return env[name]
    if isinstance(v, list):
        return [resolve(x, env) for x in v]
    if isinstance(v, dict):
        return {k: resolve(x, env) for k, x in keyed(v, env).items()}
    return v


def keyed(d: dict, env: dict) -> dict:
    """`d` with its keys resolved (a variable used as a key must hold what a key can be)."""
    out = {}
    for k, x in d.items():
        key = resolve(k, env)
        try:
            out[key] = x
        except TypeError:
            raise BadUse(f"{brief(k)} is used as a key, but it holds {brief(key)}, which cannot be one") from None
    return out


def _form(expected: dict, got: Any, env: dict, where: str, compare) -> None:
    """`{bind}`, `{any_of}` or `{not}` around what `compare(expected, got, env)` compares."""
    key, x = next(iter(expected.items()))
    if key == "bind":
        env[x] = got
        return
    if key == "any_of":
        for alt in x:
            trial = dict(env)
            try:
                compare(alt, got, trial)
            except Mismatch:
                continue
            env.update(trial)
            return
        raise Mismatch(where, _show(expected, env), got)
    try:
        compare(x, got, dict(env))
    except Mismatch:
        return
    raise Mismatch(where, _show(expected, env), got)


def match(expected: Any, got: Any, env: dict, where: str, ordered: bool = False) -> None:
    """Raise Mismatch unless `got` fits `expected`; bind variables into env."""
    if is_form(expected):
        _form(expected, got, env, where, lambda e, g, trial: match(e, g, trial, where, ordered))
        return
    if isinstance(expected, str) and expected.startswith("$"):
        expected = resolve(expected, env)
        if expected != got:
            raise Mismatch(where, expected, got)
        return
    if isinstance(expected, list):
        if not isinstance(got, list):
            raise Mismatch(where, _show(expected, env), got)
        if ordered:
            if len(expected) != len(got):
                raise Mismatch(where, _show(expected, env), got)
            for i, (e, g) in enumerate(zip(expected, got)):
                match(e, g, env, f"{where}[{i}]", ordered)
            return
        _match_set(expected, got, env, where)
        return
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            raise Mismatch(where, _show(expected, env), got)
        exp = keyed(expected, env)
        if set(exp) != set(got):
            raise Mismatch(where, _show(expected, env), got)
        for k, v in exp.items():
            match(v, got[k], env, f"{where}.{k if isinstance(k, str) else brief(k, 40)}", ordered)
        return
    if expected in (None, "") and got in (None, ""):
        return   # the format does not tell null from an empty string
    if expected != got:
        raise Mismatch(where, expected, got)


def _binds(v: Any) -> bool:
    """Whether matching `v` can bind a variable (then pairings depend on each other)."""
    if is_form(v) and "bind" in v:
        return True
    if isinstance(v, dict):
        return any(_binds(x) for x in v.values())
    if isinstance(v, list):
        return any(_binds(x) for x in v)
    return False


_ANY = object()      # an element's key when it is not a plain value: it may pair with any


def _plain(v: Any, expected: bool) -> Any:
    """The value a plain element can only be equal to (None and "" are one), or _ANY: a form, a
    variable, a list or a mapping."""
    if v is None or v == "":
        return ""
    if isinstance(v, str):
        return _ANY if expected and v.startswith("$") else v
    return v if isinstance(v, (int, float)) else _ANY


def _group_key(v: Any, expected: bool) -> Any:
    """A group summary's key: its group id, when it is plain."""
    if not isinstance(v, dict) or (expected and ("group" not in v or is_form(v))):
        return _ANY
    return _plain(v.get("group"), expected)


def _match_set(expected: list, got: list, env: dict, where: str, one=None, key=_plain) -> None:
    """Lists as sets: each expected element matches a distinct element of got, none left over.

    Without bindings whether an element fits another does not depend on the
    rest, so this is a bipartite matching (augmenting paths, polynomial).  An
    element can only fit the got elements with its key (`key`: a plain value
    must be equal), so only those are tried: thousands of members or groups are
    paired in linear time, not in the square of their number.  With
    bindings every pairing is tried (backtracking), so an `any_of` or a binding
    in one element cannot block a match another pairing would find; the tries
    are bounded (MAX_PAIRINGS).
    """
    one = one or (lambda e, g, trial: match(e, g, trial, where))
    if len(expected) != len(got):
        raise Mismatch(where, _show(expected, env), got)

    def fits(e, g, trial) -> bool:
        try:
            one(e, g, trial)
        except Mismatch:
            return False
        return True

    n = len(expected)
    if not _binds(expected):
        by_key: dict = {}
        wild = []                   # got elements without a key: candidates for every expected one
        for j, g in enumerate(got):
            k = key(g, False)
            (wild if k is _ANY else by_key.setdefault(k, [])).append(j)

        def candidates(e) -> list:
            k = key(e, True)
            return range(n) if k is _ANY else by_key.get(k, []) + wild
        fit = [[j for j in candidates(expected[i]) if fits(expected[i], got[j], dict(env))] for i in range(n)]
        owner = [-1] * n            # got index -> expected index
        for i in range(n):          # first the pairs no other choice disputes, then augmenting paths
            j = next((j for j in fit[i] if owner[j] < 0), None)
            if j is not None:
                owner[j] = i
        paired = set(owner)
        if not all(i in paired or _augment(i, fit, owner) for i in range(n)):
            raise Mismatch(where, _show(expected, env), got)
        return

    # Backtracking without recursion (a list can be longer than Python's stack is deep).  Each try copies
    # the bindings so far: the work (tries and bindings copied) is bounded, and so are time and memory.
    work = 0
    used = [False] * n
    chosen: list[int] = []          # the got element each expected element before the current one took
    frames = [[dict(env), 0]]       # per expected element: the bindings before it, the next got element to try
    while frames:
        i = len(frames) - 1
        if i == n:
            env.update(frames[-1][0])
            return
        before, j = frames[i]
        while j < n:
            if not used[j]:
                work += 1 + len(before)
                if work > MAX_PAIRINGS:
                    raise BadUse(f"{where}: too many ways to pair the elements of this list (it binds "
                                 f"variables); bind fewer of them in one list")
                trial = dict(before)
                if fits(expected[i], got[j], trial):
                    break
            j += 1
        if j < n:
            frames[i][1] = j + 1
            used[j] = True
            chosen.append(j)
            frames.append([trial, 0])
        else:
            frames.pop()
            if chosen:
                used[chosen.pop()] = False
    raise Mismatch(where, _show(expected, env), got)


def _augment(root: int, fit: list, owner: list) -> bool:
    """Pair expected element `root` along an augmenting path (Kuhn's algorithm), without recursion: a path
    can be as long as the list (1,500 groups expected `{state: Empty}` overflowed Python's stack)."""
    seen: set = set()
    stack = [(root, iter(fit[root]))]
    through: list = []              # the got element each frame but the last descends through
    while stack:
        i, candidates = stack[-1]
        for j in candidates:
            if j in seen:
                continue
            seen.add(j)
            if owner[j] < 0:
                owner[j] = i
                for (k, _), jk in zip(stack, through):
                    owner[jk] = k
                return True
            through.append(j)
            stack.append((owner[j], iter(fit[owner[j]])))
            break
        else:
            stack.pop()
            if through:
                through.pop()
    return False


def match_summaries(expected: list, got: list, env: dict, where: str) -> None:
    """ListGroups / DescribeGroups: each summary compared on the keys named; the list as a set."""
    if is_form(expected):
        _form(expected, got, env, where, lambda e, g, trial: match_summaries(e, g, trial, where))
        return
    if not isinstance(expected, list) or not isinstance(got, list):
        raise Mismatch(where, expected, got)

    def one(e: Any, g: Any, trial: dict) -> None:
        if is_form(e):
            _form(e, g, trial, where, one)
        elif not isinstance(e, dict) or not isinstance(g, dict):
            raise Mismatch(where, e, g)
        else:
            for k, v in e.items():
                match(v, g.get(k), trial, f"{where}.{k}")
    _match_set(expected, got, env, where, one, key=_group_key)


def _show(v: Any, env: dict) -> Any:
    try:
        return resolve(v, env)
    except BadUse:
        return v
