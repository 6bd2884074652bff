"""The states the explicit checker reaches in small worlds: what sifts candidate lemmas before Z3
sees them, and refutes a lemma found."""
from __future__ import annotations



from groupspec.spec.concrete import compile_term
from groupspec.spec.engine import PARAM_INDEX, make_params
from groupspec.spec.invariants import InvariantViolation, _layouts
from groupspec.spec.schema import STATE_VARS

from .obligations import Lemma
from groupspec.checkers.world.state_space import LOG, LOG_HAS, WorldModel
from groupspec.checkers.world.presets import PRESETS

_REACHED: dict = {}


def reachable(preset: str, rows=None) -> tuple[set, set, dict]:
    """The group states (the spec's variables) and the group records in the log of every state
    the closed world `preset` reaches (its whole graph, breadth-first, without symmetry), and
    the coordinator invariants a step broke on the way ({name: row}: the world model checks
    every one after every row)."""
    key = (preset, None if rows is None else id(rows))
    if key not in _REACHED:
        model = WorldModel(PRESETS[preset], rows)
        n = len(STATE_VARS)
        seen = set(model.init_states())
        level = list(seen)
        broken: dict[str, str] = {}
        while level:
            nxt = []
            for s in level:
                try:
                    succ, _ = model.successors(s)
                except InvariantViolation as e:
                    broken.setdefault(e.invariant.name, str(e))
                    continue
                for _, t in succ:
                    if t not in seen:
                        seen.add(t)
                        nxt.append(t)
            level = nxt
        groups = {model.flat(s)[:n] for s in seen}
        records = {s[0][LOG] for s in seen if s[0][LOG_HAS]}
        _REACHED[key] = (groups, records, broken)
        _CONFIG[key] = {k: v for k, v in model.base.items() if k.startswith("cfg_")}
        _PAIRS[key] = (model.sizes, {(model.flat(s)[:n], s[0][LOG] if s[0][LOG_HAS] else None) for s in seen})
    return _REACHED[key]


_PAIRS: dict = {}
_CONFIG: dict = {}      # the world's configuration (group.max.size, ...): what a lemma's P.cfg_* reads


def world_config(preset: str, rows=None) -> dict:
    reachable(preset, rows)
    return _CONFIG[(preset, None if rows is None else id(rows))]


def reached_with_record(preset: str, rows=None) -> tuple[dict, set]:
    """The world's domain sizes, and each reachable (group state, the log's last group record
    or None) together: what a lemma over both must hold of."""
    reachable(preset, rows)
    return _PAIRS[(preset, None if rows is None else id(rows))]


def refuted_by(lemmas: list[Lemma], presets: tuple[str, ...], rows=None) -> dict[str, str]:
    """Each lemma some reachable state (or logged record) breaks, with the world that shows it."""
    one = _layouts()[0]
    out: dict[str, str] = {}
    for preset in presets:
        groups, records, _ = reachable(preset, rows)
        for lm in lemmas:
            if lm.name in out:
                continue
            # a lemma's name says what it is: its verdict in a world is kept, as the world's states are
            key = (lm.name, preset, None if rows is None else id(rows))
            if key not in _BROKEN:
                f = compile_term(lm.formula, one)
                config = make_params(world_config(preset, rows))
                if lm.record:
                    ps = [list(config) for _ in records]
                    for p, rec in zip(ps, records):
                        p[PARAM_INDEX["record"]] = rec
                    _BROKEN[key] = not all(f((), p, ()) for p in ps)
                else:
                    _BROKEN[key] = not all(f(g, config, ()) for g in groups)
            if _BROKEN[key]:
                out[lm.name] = preset
    return out


_BROKEN: dict = {}
