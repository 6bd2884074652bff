"""Comparing what a target answered with what a scenario expects.

Values: `$name` (bound earlier), `{bind: name}`, `{any_of: [...]}`,
`{not: x}`.  Lists of members and partitions compare as sets, except
LeaveGroup's `errors`, which compare in order.  Summaries in `groups`
compare on the keys the scenario names, and the list as a set.
"""
from __future__ import annotations

from typing import Any


class Unbound(KeyError):
    """A `$name` used before it was bound: a mistake in the scenario."""


class Mismatch(Exception):
    def __init__(self, where: str, expected: Any, got: Any):
        self.where, self.expected, self.got = where, expected, got
        super().__init__(f"{where}: expected {expected!r}, got {got!r}")


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
        return {resolve(k, env): resolve(x, env) for k, x in v.items()}
    return v


def match(expected: Any, got: Any, env: dict, where: str, ordered: bool = False) -> None:
    """Raise Mismatch unless `got` fits `expected`; bind variables into env."""
    if isinstance(expected, dict) and set(expected) == {"bind"}:
        env[expected["bind"]] = got
        return
    if isinstance(expected, dict) and set(expected) == {"any_of"}:
        for alt in expected["any_of"]:
            trial = dict(env)
            try:
                match(alt, got, trial, where, ordered)
            except Mismatch:
                continue
            env.update(trial)
            return
        raise Mismatch(where, _show(expected, env), got)
    if isinstance(expected, dict) and set(expected) == {"not"}:
        try:
            match(expected["not"], got, dict(env), where, ordered)
        except Mismatch:
            return
        raise Mismatch(where, _show(expected, env), got)
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
        exp = {resolve(k, env): v for k, v in expected.items()}
        if set(exp) != set(got):
            raise Mismatch(where, _show(expected, env), got)
        for k, v in exp.items():
            match(v, got[k], env, f"{where}.{k}", ordered)
        return
    if expected in (None, "") and got in (None, ""):
        return   # the format does not tell null from an empty string
    if expected != got:
        raise Mismatch(where, expected, got)


def _match_set(expected: list, got: list, env: dict, where: str, one=None) -> None:
    """Lists as sets: each expected element matches a distinct element of got, none left over.

    Tries every pairing (backtracking), so an `any_of` or a binding in one
    element cannot block a match another pairing would find.
    """
    one = one or (lambda e, g, trial: match(e, g, trial, where))
    if len(expected) != len(got):
        raise Mismatch(where, _show(expected, env), got)

    def pair(i: int, left: list, trial: dict):
        if i == len(expected):
            return trial
        for j, g in enumerate(left):
            t = dict(trial)
            try:
                one(expected[i], g, t)
            except Mismatch:
                continue
            done = pair(i + 1, left[:j] + left[j + 1:], t)
            if done is not None:
                return done
        return None
    found = pair(0, list(got), dict(env))
    if found is None:
        raise Mismatch(where, _show(expected, env), got)
    env.update(found)


def match_summaries(expected: list, got: list, env: dict, where: str) -> None:
    """ListGroups / DescribeGroups: each summary compared on the keys named; the list as a set."""
    if not isinstance(expected, list) or not isinstance(got, list):
        raise Mismatch(where, expected, got)

    def one(e: dict, g: dict, trial: dict) -> None:
        for k, v in e.items():
            match(v, g.get(k), trial, f"{where}.{k}")
    _match_set(expected, got, env, where, one)


def _show(v: Any, env: dict) -> Any:
    try:
        return resolve(v, env)
    except Unbound:
        return v
