"""Writing the exported world out: the TLA+ module and its TLC configuration.

`export(cfg)` asks `export.TlaWorld` for every action of the world (each a
tree of ways through the step) and lays the module out as the tlaplus/Examples
specifications are laid out: constants (the bounds), variables with their
meanings, TypeOK first, Init, the checks after every row, the row operators,
the parts of steps several ways through share (`_Layout`: the eager re-check
after each row, a trigger's rows, a write's completion, each written once and
called where it recurs), the actions, Next, Spec with its fairness, the
invariants, and the symmetry; the .cfg picks the model's values apart from the
module.  Every constant and variable carries its Apalache type (`@type:`).
"""
from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass

from groupspec.spec.invariants import CHECKED_AFTER_ROW, INVARIANTS
from groupspec.spec.kafka import NEW_COORDINATOR, coordinator_name
from groupspec.spec.lang import NONE
from groupspec.spec.schema import PARAM_TYPES
from groupspec.spec.tla import DOMAIN_SETS, HELPERS, TlaEnv, apalache_type, client_name, literal, to_tla, type_set
from groupspec.spec.world import (ACTION_BY_NAME, ALL_VARS, ASSIGN, ENDED, UNFAIR, WEAK, WORLD_COORDINATOR,
                                  fairness)
from groupspec.spec.world_step import disjuncts, takes
from groupspec.spec.handling import SELECTED_ONLY

from .export import FUNCTIONS, MODULE, NOT_BROKEN, ExportError, TlaWorld, Tx, camel, tla_name
from groupspec.checkers.world.state_space import WorldModel, world_invariants
from groupspec.checkers.world.presets import WorldConfig


# the variable only the module has: what the last step broke inside itself
BROKEN = "broken_in_step"
# the module's constants: name, Apalache type, meaning (the bounds of the world)
CONSTANTS = (("Clients", "Set(Int)", "the consumer clients (model values for TLC, so that it may permute them)"),
             ("Members", "Set(Int)", "the member ids the coordinator may issue"),
             ("Instances", "Set(Int)", "group.instance.ids"),
             ("Partitions", "Set(Int)", "the topic partitions"),
             ("Protocols", "Set(Int)", "assignment protocol names"),
             ("ProtoLists", "Set(Int)", "protocol lists a member may send"),
             ("ProtocolTypes", "Set(Int)", "protocol types"),
             ("MaxGeneration", "Int", "the generation bound of the search"))


@dataclass
class Exported:
    module: str          # the .tla text
    config: str          # the .cfg text
    name: str            # the module's name
    invariants: list     # (TLA+ name, our name), in the .cfg's order


# -- laying a tree of ways through a step out as TLA+ ---------------------------------------

def _trie(paths: list) -> dict:
    root: dict = {}
    for q in paths:
        node = root
        for f in q.frames:
            node = node.setdefault(f, {})
    return root


# the names a step binds as it goes (worlds, breakages, parameter records, row results; the
# printer's bound variables of set and map expressions): what differs between two ways through
# that are otherwise the same
_BOUND_NAME = re.compile(r"\b[wbprfkx]\d+\b")
# the action's own parameter (a client, a member), free in any part of it
_ACTION_ARG = re.compile(r"\b[cm]\b")
# a part of an action shared by several ways through becomes an operator if it is at least this long
_SHARED_MIN_LINES = 6


def _frame_line(frame) -> tuple[str, bool]:
    """A frame as a line of TLA+ (without its indent), and whether what follows it is nested."""
    kind = frame[0]
    if kind == "comment":
        return f"\\* {frame[1]}", False
    if kind == "if":
        return f"/\\ {frame[1]}", False
    if kind == "cut":
        return ("/\\ UNCHANGED vars" if frame[2] == NOT_BROKEN else f"/\\ Cut({frame[1]}, {frame[2]})"), False
    if kind == "goto":
        return f"/\\ Goto({frame[1]}, {frame[2]})", False
    if kind == "let":
        # bound as the one element of a set, not with LET: TLC re-evaluates a LET definition
        # each time an action's successors are enumerated, and these chains refer to their
        # predecessor several times each (tiny: 100 ms a state with LET, 5 ms with this)
        return f"/\\ \\E {frame[1]} \\in {{{frame[2]}}} :", True
    if kind == "exists":
        return f"/\\ \\E {frame[1]} \\in {frame[2]} :", True
    raise ValueError(f"no TLA+ for frame {kind}")


class _Layout:
    """Lays the trees of ways through the world's actions out as TLA+.  A part of a tree that
    recurs (the same frames up to the names bound before it: the eager re-check after each row,
    an append's completion) is written once, as an operator of the names it reads from before it,
    and called where it recurs: one definition per step of the protocol, not one per way into it."""

    def __init__(self, roots: list):
        self.plain: dict = {}          # a node's key -> its lines at column 0, unshared
        self.canons: dict = {}         # a node's key -> _canon's answer
        self.bound: dict = {}          # a node's key -> the names its frames bind
        self.tokens: dict = {}         # a line -> _tokens(line) (lines recur in many nodes)
        self.counts: Counter = Counter()
        self.banned: set = set()       # canonical forms written inline (an operator called once)
        self.shared: dict = {}         # canonical form -> (operator name, its parameters, definition)
        self.used: Counter = Counter()
        for root in roots:
            self._count(root)

    @staticmethod
    def _key(node: dict) -> tuple:
        return tuple((f, id(c)) for f, c in node.items())

    def _plain(self, node: dict) -> list[str]:
        key = self._key(node)
        got = self.plain.get(key)
        if got is None:
            got = self.plain[key] = self._lines(node, 0, shared=False)
        return got

    def _canon(self, node: dict) -> tuple[tuple, list[str]]:
        """The node's text with the names it binds or reads renamed in order of appearance (two
        nodes alike up to names have one), and the names it reads from before it, in order.  The
        text is kept as its lines with the names cut out and the names' numbers: every suffix of a
        long chain of frames is a node, so renaming whole texts would be quadratic in the chain."""
        key = self._key(node)
        got = self.canons.get(key)
        if got is not None:
            return got
        templates, numbers, order, args = [], [], {}, set()
        for line in self._plain(node):
            tok = self.tokens.get(line)
            if tok is None:
                tok = self.tokens[line] = _tokens(line)
            template, names, line_args = tok
            templates.append(template)
            numbers.extend(order.setdefault(n, len(order)) for n in names)
            args |= line_args
        bound_here = self._bound(node)
        free = [n for n in order if n not in bound_here and not n[0] in "kx"] + sorted(args)
        got = self.canons[key] = ((tuple(templates), tuple(numbers)), free)
        return got

    def _bound(self, node: dict) -> frozenset:
        """The names the node's frames bind (let and exists), at any depth."""
        key = self._key(node)
        got = self.bound.get(key)
        if got is None:
            got = frozenset(f[1] for f in node if f[0] in ("let", "exists"))
            for child in node.values():
                got |= self._bound(child)
            self.bound[key] = got
        return got

    def _count(self, node: dict) -> None:
        if not node:
            return
        if len(node) > 1:
            self.counts[self._canon(node)[0]] += 1
            for frame, child in node.items():
                self._count({frame: child})
            return
        self.counts[self._canon(node)[0]] += 1
        (frame, child), = node.items()
        self._count(child)

    def _lines(self, node: dict, col: int, shared: bool = True, inline: bool = False) -> list[str]:
        """The conjunction a chain of frames is, branching into a disjunction where ways part
        (`inline`: this node itself is written out, as a shared operator's body)."""
        pad = " " * col
        lines: list[str] = []
        while node:
            if shared and not inline:
                call = self._call(node)
                if call:
                    lines.append(f"{pad}/\\ {call}")
                    return lines
            items = list(node.items())
            if len(items) > 1:
                for i, (frame, child) in enumerate(items):
                    sub = self._lines({frame: child}, col + 6, shared)
                    lines.append(pad + ("/\\ \\/ " if i == 0 else "   \\/ ") + sub[0][col + 6:])
                    lines += sub[1:]
                return lines
            (frame, child), = items
            text, nested = _frame_line(frame)
            inline = False
            lines.append(pad + text)
            if nested:
                lines += self._lines(child, col + 6, shared)
                return lines
            node = child
        return lines

    def _call(self, node: dict) -> str | None:
        """A call of the shared operator this node is, or None where it is written inline."""
        canon, free = self._canon(node)
        if self.counts[canon] < 2 or canon in self.banned or len(canon[0]) < _SHARED_MIN_LINES:
            return None
        got = self.shared.get(canon)
        if got is None:
            params, seen = [], set()
            for n in free:
                p = n.rstrip("0123456789") or n
                while p in seen:
                    p += "_"
                seen.add(p)
                params.append(p)
            rename = dict(zip(free, params))
            order: dict = {}

            def local(m):
                n = m.group(0)
                if n in rename:
                    return rename[n]
                return n.rstrip("0123456789") + str(order.setdefault(n, len(order) + 1))
            body = "\n".join(self._lines(node, 4, inline=True))
            body = _BOUND_NAME.sub(local, body)
            name = base = _shared_name(node)
            taken = {n for n, _, _ in self.shared.values()}
            k = 1
            while name in taken:
                k += 1
                name = f"{base}{k}"
            head = f"{name}({', '.join(params)})" if params else name
            got = self.shared[canon] = (name, params, f"{head} ==\n{body}")
        self.used[canon] += 1
        return f"{got[0]}({', '.join(free)})" if free else got[0]

    def lay_out(self, actions: list) -> tuple[list[str], list[str]]:
        """(the shared operators' definitions, each action's text); an operator that would be
        called once is written inline instead."""
        while True:
            self.shared, self.used = {}, Counter()
            texts = []
            for name, args, root, meaning in actions:
                head = f"{name}({args})" if args else name
                texts.append(f"\\* {meaning}\n{head} ==\n" + "\n".join(self._lines(root, 4)))
            once = {c for c in self.shared if self.used[c] < 2}
            if not once:
                return [d for _, _, d in self.shared.values()], texts
            self.banned |= once


def _tokens(line: str) -> tuple[str, tuple, frozenset]:
    """A line with its bound names cut out, those names in order, and the action arguments it reads."""
    return _BOUND_NAME.sub("#", line), tuple(_BOUND_NAME.findall(line)), frozenset(_ACTION_ARG.findall(line))


def _shared_name(node: dict) -> str:
    """A shared part's name, after what it begins with: the handling of a trigger (its parameters,
    then its rows), the rows of a trigger, one row fired and its outputs routed, the eager re-check
    (spec/handling.py settle), what follows a row's outputs (routed: member ids recorded, then the
    re-check), the checks after a row, a route's effect."""
    items = list(node.items())
    frame, child = items[0]
    if len(items) == 1 and frame[0] == "let" and re.fullmatch(r"p\d+", frame[1]):
        (frame2, child2), = list(child.items())[:1] or [((None,), {})]
        if frame2[0] == "let" and frame2[2].startswith("First_"):
            return f"Handle{frame2[2][6:].split('(')[0]}"
    if len(items) == 1 and frame[0] == "let" and frame[2].startswith("First_"):
        return f"Rows{frame[2][6:].split('(')[0]}"
    trigger = _trigger_of(items)
    if trigger:
        return f"Rows{trigger}"
    if len(items) > 1 and any(f[0] == "if" and f[1].endswith('.state = "PreparingRebalance"') for f, _ in items):
        return "EagerCompleteJoin"
    if len(items) == 1 and frame[0] == "comment":
        return "Fire_" + tla_name(frame[1])
    if len(items) == 1 and frame[0] == "let" and frame[1].startswith("w"):
        return "Routed" if ".used_ids = " in frame[2] else "Route"
    if len(items) == 1 and frame[0] == "let" and frame[1].startswith("b"):
        return "Checked"
    return "Continue"


def _trigger_of(items: list) -> str | None:
    """The trigger whose rows the branches are (each a row's comment, or the branch where none fires)."""
    names = {f[1].split(":")[0] for f, _ in items if f[0] == "comment"}
    rest = [f for f, _ in items if f[0] != "comment"]
    if len(items) > 1 and len(names) == 1 and all(f[0] == "if" and f[1].endswith('= "none"') for f in rest):
        return names.pop()
    return None


def _action(name: str, args: str, paths: list, meaning: str) -> tuple:
    """An action to lay out: its name, argument, tree of ways through, meaning."""
    return (name, args, _trie(paths), meaning)


# -- tables of the world's functions --------------------------------------------------------

def _values(t, sizes) -> list:
    if t.kind == "dom":
        return [NONE] + list(range(sizes[t.name]))
    if t.kind == "set":
        return list(range(1 << sizes[t.key]))
    raise ExportError(f"cannot tabulate over {t!r}")


def _table(fn, t, sizes) -> str:
    keys = list(itertools.product(*[_values(a, sizes) for a in t.args]))
    entries = []
    for key in keys:
        k = literal(key[0], t.args[0]) if len(key) == 1 else \
            "<<" + ", ".join(literal(v, a) for v, a in zip(key, t.args)) + ">>"
        v = fn(*key)
        if t.value.kind == "map":
            v = tuple(v)
        entries.append(f"{k} :> {literal(v, t.value)}")
    return "(" + "\n     @@ ".join(entries) + ")"


# -- the module -------------------------------------------------------------------------------

def export(cfg: WorldConfig, model: WorldModel | None = None, symmetry: bool = True, liveness: bool = False,
           name: str = MODULE) -> Exported:
    world = TlaWorld(cfg, model)
    sizes = world.sizes
    world.instance()          # every client alike, or the export says why not
    # the world's Next (spec/world_step.py), one TLA+ action per disjunct, over its client or member
    actions: list[tuple[str, str, str, str]] = []    # (action, its TLA+ name, args, text)
    for d in disjuncts(cfg):
        if d.over == "client" and not takes(d, cfg, 0):
            continue
        args = {"client": "c", "member": "m"}.get(d.over, "")
        meaning = d.action.meaning if d.kind is None else f"{d.action.meaning} ({d.kind})"
        paths = world.run(d, Tx(args) if args else None)
        actions.append((d.action.name, d.name, args, _action(d.name, args, paths, meaning)))

    invs = [(camel(i.name), i) for i in INVARIANTS if i.kind == "state"] + \
        [(camel(i.name), i) for i in world_invariants(cfg)]
    # one invariant of broken_in_step per check after a row: TLC names the check that failed
    invs += [(camel(i.name) + "AfterEveryRow", i) for i in CHECKED_AFTER_ROW]
    shared, texts = _Layout([a[3][2] for a in actions]).lay_out([a[3] for a in actions])
    actions = [(act, tname, args, text) for (act, tname, args, _), text in zip(actions, texts)]
    world.shared = shared
    return Exported(_module(name, cfg, world, actions, invs, symmetry, liveness),
                    _config(name, cfg, sizes, invs, symmetry, liveness), name, [(n, i.name) for n, i in invs])


def _module(name, cfg, world, actions, invs, symmetry, liveness) -> str:
    sizes = world.sizes
    model = world.model
    out = [f"---- MODULE {name} ----",
           "(* Kafka's classic consumer-group coordinator in a bounded closed world: the coordinator, "
           f"{cfg.clients} consumer",
           "   clients and the network between them.  Generated by `groupspec export tla` from the spec's",
           "   declarations (spec/table.py, spec/handling.py, spec/world.py, spec/invariants.py); do not edit.",
           f"   The coordinator: {coordinator_name({NEW_COORDINATOR: WORLD_COORDINATOR})}.",
           f"   World: {_describe(cfg)} *)",
           "EXTENDS Integers, FiniteSets, TLC", "",
           "\\* Types (the @type annotations) are Apalache's: its type checker reads them, TLC ignores them.",
           "CONSTANTS"]
    for i, (cname, ctype, meaning) in enumerate(CONSTANTS):
        out += [f"    \\* @type: {ctype};", f"    {cname}{',' if i < len(CONSTANTS) - 1 else ''}  \\* {meaning}"]
    out.append("")
    out.append("ASSUME \\* the world's functions below are tabulated for these bounds")
    out.append("    /\\ " + "\n    /\\ ".join(
        f"{DOMAIN_SETS[d]} = 0..{sizes[d] - 1}" for d in ("Member", "Instance", "Partition", "Protocol",
                                                          "ProtoList", "ProtocolType")))
    out.append(f"    /\\ Cardinality(Clients) = {cfg.clients}")
    out.append("")
    out.append("\\* Apalache: the constants as this world fixes them (apalache-mc check --cinit=ConstInit), clients as")
    out.append("\\* integers where TLC's configuration gives model values (for its symmetry)")
    out.append("ConstInit ==\n    " + "\n    ".join(
        [f"/\\ Clients = 0..{cfg.clients - 1}"]
        + [f"/\\ {DOMAIN_SETS[d]} = 0..{sizes[d] - 1}" for d in ("Member", "Instance", "Partition", "Protocol",
                                                                "ProtoList", "ProtocolType")]
        + [f"/\\ MaxGeneration = {cfg.max_generation}"]))
    out += ["", HELPERS, ""]
    out.append("\\* The functions this world supplies, tabulated from the explicit checker's (world/state_space.py)")
    base = {**model.base, "selected_only": model.selected_only}
    fun_t = {**{k: t for k, t in PARAM_TYPES.items() if t.kind == "fun"}, "assign": ASSIGN.type,
             "selected_only": SELECTED_ONLY.type}
    for k, tname in FUNCTIONS.items():
        out.append(f"{tname} ==\n    {_table(base[k], fun_t[k], sizes)}")
    out.append("")
    out.append("VARIABLES")
    decls = [x for v in ALL_VARS for x in (f"    \\* @type: {apalache_type(v.type)};", f"    {v.name},  \\* {v.meaning}")]
    decls += ["    \\* @type: Str;",
              f"    {BROKEN}  \\* the first check after a row (spec/invariants.py CHECKED_AFTER_ROW) that the last "
              "step broke, or \"none\""]
    out += decls
    out.append("")
    out.append("vars == <<" + ", ".join([v.name for v in ALL_VARS] + [BROKEN]) + ">>")
    out.append("")
    checks = "{" + ", ".join([NOT_BROKEN] + [f'"{i.name}"' for i in CHECKED_AFTER_ROW]) + "}"
    out.append("TypeOK ==\n    " + "\n    ".join([f"/\\ {v.name} \\in {type_set(v.type)}" for v in ALL_VARS]
                                                 + [f"/\\ {BROKEN} \\in {checks}"]))
    out.append("")
    init = model.flat(model.init_states()[0])
    out.append("Init ==\n    " + "\n    ".join([f"/\\ {v.name} = {literal(x, v.type)}" for v, x in zip(ALL_VARS, init)]
                                               + [f"/\\ {BROKEN} = {NOT_BROKEN}"]))
    out.append("")
    out.append("\\* The whole world as one record: rows and routes read and rewrite it (w.<variable>).")
    out.append("World == [" + ", ".join(f"{v.name} |-> {v.name}" for v in ALL_VARS) + "]")
    out.append("\\* The step ends in world w, having broken the check b (\"none\": every check held).")
    out.append("Goto(w, b) ==\n    " + "\n    ".join([f"/\\ {v.name}' = w.{v.name}" for v in ALL_VARS]
                                                    + [f"/\\ {BROKEN}' = b"]))
    out.append("\\* A step a bound of the search cuts (the generation bound, the member-id budget: spec/world.py) ends in")
    out.append("\\* world w, having broken the check b: it stutters instead (a bound, not a behaviour: the state is no")
    out.append("\\* deadlock), unless it broke a check (the explicit checker reports a broken check before it cuts).")
    out.append(f"Cut(w, b) == IF b # {NOT_BROKEN} THEN Goto(w, b) ELSE UNCHANGED vars")
    out.append("")
    out += _checks(world)
    out.append("")
    out.append("\\* ---- The rows: each row's effect (<Row>: the world after its steps, and its outputs o<step>),")
    out.append("\\* printed from its terms; then, per trigger, which row fires (First_<trigger>) ----")
    for r, op in world.used_rows:
        out.append(op.text)
        out.append("")
    for text in world.dispatch.values():
        out.append(text)
        out.append("")
    if world.shared:
        out.append("\\* ---- Parts of steps that several ways through share (the eager re-check after a row, a")
        out.append("\\* write's completion, ...): each the rest of a step from the world and breakage it is given ----")
        for text in world.shared:
            out.append(text)
            out.append("")
    out.append("\\* ---- The closed world's actions (spec/world.py ACTIONS) ----")
    for _, _, _, text in actions:
        out.append(text)
        out.append("")
    out.append("\\* The world has ended (spec/world.py ENDED): nothing is owed to anyone, so it may stop here;")
    out.append("\\* anywhere else a state without a successor is a deadlock.")
    out.append(f"Ended == {to_tla(ENDED, TlaEnv(var=lambda v: v, param=lambda n: n, names=world.names))}")
    out.append("Stop == Ended /\\ UNCHANGED vars")
    out.append("")
    out.append("Next ==")
    for _, tname, args, _ in actions:
        if args == "c":
            out.append(f"    \\/ \\E c \\in Clients : {tname}(c)")
        elif args == "m":
            out.append(f"    \\/ \\E m \\in Members : {tname}(m)")
        else:
            out.append(f"    \\/ {tname}")
    out.append("    \\/ Stop")
    out.append("")
    out.append("\\* Fairness, as spec/world.py ACTIONS declares it (per client, message, member or the group)")
    out.append("Fairness ==\n    " + "\n    ".join(_fairness(cfg, actions)))
    out.append("")
    out.append("Spec == Init /\\ [][Next]_vars /\\ Fairness")
    out.append("")
    out.append("\\* ---- Invariants (spec/invariants.py and the closed world's, spec/world.py) ----")
    env = TlaEnv(var=lambda v: v, param=lambda n: "MaxGeneration", names=world.names)
    after_row = {i.name for i in CHECKED_AFTER_ROW}
    for tname, inv in invs:
        if tname.endswith("AfterEveryRow"):
            out.append(f"{tname} == {BROKEN} # \"{inv.name}\"")
        elif inv.name in after_row:       # the state invariant of the catalog, over this state
            out.append(f"{tname} == {tname}In(World)")
        else:
            out.append(f"\\* {inv.name}: {inv.meaning}")
            out.append(f"{tname} == {to_tla(inv.formula, env)}")
    out.append("")
    out.append("\\* ---- Liveness (checked with the fair Spec and without symmetry) ----")
    out.append('InRebalance == state \\in {"PreparingRebalance", "CompletingRebalance"}')
    out.append("LeavesRebalance == []<>~InRebalance")
    out.append("")
    out.append("Symmetry == Permutations(Clients)")
    out.append("====")
    return "\n".join(out) + "\n"


def _checks(world) -> list[str]:
    """The catalog's invariants that are checked after every row, as operators over the world
    before the row (prev), after it (w) and the trigger's parameters (q); and AfterRow, which
    names the first that fails in CHECKED_AFTER_ROW's order, as the explicit checker does."""
    out = ["\\* ---- The checks after every row (spec/invariants.py CHECKED_AFTER_ROW), in their order ----"]
    calls = []
    for inv in CHECKED_AFTER_ROW:
        env = TlaEnv(var=lambda v: f"prev.{v[5:]}" if v.startswith("prev:") else f"w.{v}",
                     param=lambda n: f"q.{n}", names=world.names)
        name = camel(inv.name)
        out.append(f"\\* {inv.name}: {inv.meaning}")
        if inv.kind == "step":
            out.append(f"{name}Step(prev, w, q) == {to_tla(inv.formula, env)}")
            calls.append((f"~{name}Step(prev, w, q)", inv.name))
        elif inv.kind == "output":
            out.append(f"{name}In(w) == {to_tla(inv.formula, env)}")
            calls.append((f"handed /\\ ~{name}In(w)", inv.name))
        else:
            out.append(f"{name}In(w) == {to_tla(inv.formula, env)}")
            calls.append((f"~{name}In(w)", inv.name))
    out.append("\\* The first check that fails after a row (the world before it prev, after it w, the trigger's")
    out.append("\\* parameters q; handed: the row hands out an assignment), or \"none\"")
    body = "".join(f"IF {cond} THEN \"{n}\"\n    ELSE " for cond, n in calls)
    out.append(f"AfterRow(prev, w, q, handed) ==\n    {body}{NOT_BROKEN}")
    out.append("\\* b, unless it names a broken check: then the first one broken stays")
    out.append(f"Then(b, c) == IF b = {NOT_BROKEN} THEN c ELSE b")
    return out


def _fairness(cfg, actions) -> list[str]:
    groups: dict = {}
    for act, tname, args, _ in actions:
        a = ACTION_BY_NAME[act]
        kind = fairness(a, cfg.timely)
        if kind == UNFAIR:
            continue
        key = (a.process or tname, args, kind)
        groups.setdefault(key, []).append(tname)
    res = []
    for (_, args, kind), names in groups.items():
        f = "WF_vars" if kind == WEAK else "SF_vars"
        body = " \\/ ".join(f"{n}({args})" if args else n for n in names)
        cond = f"{f}({body})"
        if args == "c":
            cond = f"\\A c \\in Clients : {cond}"
        elif args == "m":
            cond = f"\\A m \\in Members : {cond}"
        res.append(f"/\\ {cond}")
    return res or ["TRUE"]


def _describe(cfg) -> str:
    on = [f for f in cfg.FAULTS if getattr(cfg, f)]
    return (f"{cfg.clients} clients, {cfg.topics} topic(s) x {cfg.partitions} partitions, generations up to "
            f"{cfg.max_generation}, {cfg.member_ids} member ids; faults: {', '.join(on) or 'none'}"
            + ("; timely clients" if cfg.timely else "") + ("; rebalance budget" if cfg.rebalance_budget else ""))


def _config(name, cfg, sizes, invs, symmetry, liveness) -> str:
    def dom(d):
        return "{" + ", ".join(str(i) for i in range(sizes[d])) + "}"
    lines = ["\\* Generated by `groupspec export tla`: the model's values, apart from the module.",
             "CONSTANTS",
             "    Clients = {" + ", ".join(client_name(i) for i in range(cfg.clients)) + "}",
             f"    Members = {dom('Member')}", f"    Instances = {dom('Instance')}",
             f"    Partitions = {dom('Partition')}", f"    Protocols = {dom('Protocol')}",
             f"    ProtoLists = {dom('ProtoList')}", f"    ProtocolTypes = {dom('ProtocolType')}",
             f"    MaxGeneration = {cfg.max_generation}", "",
             "SPECIFICATION Spec", "", "INVARIANTS", "    TypeOK"]
    lines += [f"    {n}" for n, _ in invs]
    if liveness:
        lines += ["", "PROPERTIES", "    LeavesRebalance"]
    if symmetry:
        lines += ["", "SYMMETRY Symmetry"]
    return "\n".join(lines) + "\n"
