"""Client symmetry for the native search: each state replaced by the least of its images under the renamings
of clients configured alike (`WorldConfig.symmetry_classes`), so one state stands for its whole orbit.

The Python search reduces the same symmetry (`WorldModel.representative`); both count orbits, so the two
searches agree state for state and level by level, whichever representative each picks.  Renaming client k
to π(k) moves every entry of a map keyed by client (a client's phase, its request in flight, ...) and
renames every value that names a client (the client whose JoinGroup or SyncGroup is parked): both read off
the world's declared types (spec/world.py), leaf by leaf in the order of the flat state (bmc.py `_flat`),
so nothing here knows what a variable means.  The C is tables, not code: one source index per leaf and
renaming, and the leaves that hold a client.
"""
from __future__ import annotations

import itertools

from groupspec.spec.lang import NONE
from groupspec.spec.world import ALL_VARS, CLIENT


class Unsymmetric(Exception):
    """A type the renaming of clients cannot go through (a set of clients): the world has no native symmetry."""


def _layout(t, sizes: dict, path: tuple, out: list) -> None:
    """The leaves of a value of type `t`, in `_leaves` order: (the client keys on the way, holds a client)."""
    if t.kind == "record":
        for ft in t.args:
            _layout(ft, sizes, path, out)
    elif t.kind == "map":
        for i in range(sizes[t.key]):
            _layout(t.value, sizes, path + ((i,) if t.key == CLIENT else ()), out)
    elif t.kind == "set" and t.key == CLIENT:
        raise Unsymmetric("a set of clients")
    else:
        out.append((path, t.kind == "dom" and t.name == CLIENT))


def renamings(classes: list[list[int]], n: int) -> list[tuple[int, ...]]:
    """Every renaming within the classes, as `order` (new client k is old client order[k]); the identity first."""
    out = []
    for parts in itertools.product(*[itertools.permutations(c) for c in classes]):
        order = list(range(n))
        for cls, perm in zip(classes, parts):
            for pos, old in zip(cls, perm):
                order[pos] = old
        out.append(tuple(order))
    out.sort(key=lambda o: o != tuple(range(n)))
    return out


def source(cfg, leaves: int) -> str:
    """C defining SYM_P (the renamings, the identity first), SYM_SRC[p][j] (the leaf renaming p copies into
    leaf j), SYM_NEW[p][c] (client c's new name), SYM_CLIENT[j] (leaf j names a client) and SYM_MOVED (the leaves
    some renaming changes), which search.c's `canon` and `orbit` read."""
    sizes = cfg.sizes()
    layout: list = []
    for v in ALL_VARS:
        _layout(v.type, sizes, (), layout)
    if len(layout) != leaves:
        raise AssertionError(f"the declared types give {len(layout)} leaves, the step {leaves}")
    n = sizes[CLIENT]
    orders = renamings(cfg.symmetry_classes(), n)
    at: dict = {}                     # the leaves under each path of client keys, in order
    place = []                        # leaf j is the place[j]-th under its path
    for j, (path, _) in enumerate(layout):
        place.append(len(at.setdefault(path, [])))
        at[path].append(j)
    src = [[at[tuple(order[c] for c in path)][place[j]] for j, (path, _) in enumerate(layout)] for order in orders]
    new = [[order.index(c) for c in range(n)] for order in orders]
    # the leaves some renaming moves or renames: the others are alike in every image, so comparing images
    # leaf by leaf in this order is comparing them whole
    moved = [j for j, (path, client) in enumerate(layout) if client or any(r[j] != j for r in src)]
    # canon copies only these before it makes the images: each must read only these
    if not {r[j] for r in src for j in moved} <= set(moved):
        raise AssertionError("a renaming copies a leaf no renaming moves into one it moves")
    rows = ",\n".join("  {" + ",".join(map(str, r)) + "}" for r in src)
    return "\n".join([
        f"#define SYM_P {len(orders)}", f"#define SYM_NC {n}", f"#define SYM_NONE {NONE}",
        f"static const int SYM_SRC[SYM_P][{leaves}] = {{\n{rows}\n}};",
        "static const int SYM_NEW[SYM_P][SYM_NC] = {" + ",".join("{" + ",".join(map(str, r)) + "}" for r in new) + "};",
        f"static const unsigned char SYM_CLIENT[{leaves}] = {{" + ",".join(str(int(c)) for _, c in layout) + "};",
        f"#define SYM_NM {max(1, len(moved))}",
        "static const int SYM_MOVED[SYM_NM] = {" + ",".join(map(str, moved or [0])) + "};", ""])
