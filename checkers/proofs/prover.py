"""The prover: each invariant of the catalog by induction over every row, strengthened by Houdini,
then by Spacer (chc.py) where Houdini finds no proof."""
from __future__ import annotations

import time
from typing import Callable


from groupspec.spec.concrete import compile_term
from groupspec.spec.engine import make_params
from groupspec.spec.invariants import Invariant, _layouts
from groupspec.spec.rows import Out
from groupspec.spec.schema import MEMBER, Bounds
from groupspec.spec.table import ROWS

from .chc import refuted, spacer
from .paths import spacer_path
from .describe import describe_cti
from .houdini import System
from .joint import jointly, part_lemmas, whole
from .obligations import (as_lemma, assumed_for, catalog_lemmas, CLOSED_WORLD, ENVIRONMENT, Lemma, QUERY_WORK,
                          QUICK_WORK, record_lemmas, templates, vars_of, vocabulary, Work, WORK_PER_SECOND)
from .reached import reachable, refuted_by, world_config
from .readings import Reading, RowCtx, kind_goal
from .results import CTI, Proof, model_value
from .settled import prove_settled

class Prover:
    """Proves the catalog's invariants; the strengthening found is kept for every invariant."""

    def __init__(self, rows=None, query_work: int = QUERY_WORK, strengthen: bool = True,
                 bound: int = 2, progress: Callable[[str], None] | None = None, budget_s: float = 60.0,
                 presets: tuple[str, ...] = ("tiny", "small"), search: str = "vocabulary", engine: str = "both",
                 spacer_budget_s: float = 60.0, spacer_seed: int = 0):
        self.rows = list(ROWS if rows is None else rows)
        self.query_work, self.strengthen, self.bound = query_work, strengthen, bound
        self.budget_s, self.search, self.engine = budget_s, search, engine
        self.spacer_budget_s, self.spacer_seed = spacer_budget_s, spacer_seed
        self.presets = tuple(presets)
        self.rows_arg = rows
        self.progress = progress or (lambda s: None)
        self._systems: dict = {}
        self._lemmas: dict = {}
        self._candidates: dict = {}
        self._joint: dict = {}
        self.houdini_seconds = 0.0
        self.dropped: dict = {}

    def system(self, scope: str, sizes: dict | None = None) -> System:
        key = (scope, None if sizes is None else tuple(sorted(sizes.items())))
        if key not in self._systems:
            extra = tuple(a for name, asm in CLOSED_WORLD.items() if scope == "closed-world" for a in asm)
            small = self.system(scope, fixed_sizes(self.bound)) if sizes is None else None
            self._systems[key] = System(Reading(sizes), self.rows, extra, self.query_work, falsifier=small)
        return self._systems[key]

    def pool(self, scope: str) -> list[Lemma]:
        """The candidate lemmas: the catalog's state invariants, the schema's templates, and the
        forms of both about the logged record."""
        base = catalog_lemmas(scope) + templates()
        return base + record_lemmas(base)

    def named(self, scope: str) -> dict[str, Lemma]:
        """Every lemma a proof may name: the pool's, and the catalog's conjuncts of the joint search."""
        return {lm.name: lm for lm in self.pool(scope) + part_lemmas(catalog_lemmas(scope))}

    def joint(self, scope: str) -> tuple[list[Lemma] | None, dict]:
        """The catalog's invariants (their conjuncts) proved together with the record's candidates and
        those that rule out what broke them (`joint.jointly`), in the unbounded reading; with the
        unsat cores of that search's steps."""
        if scope not in self._joint:
            t0 = time.perf_counter()
            self.progress("the catalog's invariants together (unbounded)")
            system = self.system(scope)
            start = self.sifted(scope, part_lemmas(catalog_lemmas(scope)))
            names = {lm.name for lm in start}
            start += [lm for lm in self.candidates(scope) if lm.record and lm.name not in names]
            extra = [lm for lm in self.candidates(scope) if not lm.record and lm.origin != "catalog"]
            alive, _ = jointly(system, start, extra, Work(self.budget_s))
            self._joint[scope] = (alive, dict(system.cores))
            self.houdini_seconds += time.perf_counter() - t0
        return self._joint[scope]

    def lemmas(self, scope: str, sizes: dict | None = None) -> list[Lemma] | None:
        """The largest inductive subset of the candidates (catalog, templates, their record forms,
        less those a state of the sample worlds breaks: no invariant is among them); None when
        the budget was spent first."""
        key = (scope, None if sizes is None else tuple(sorted(sizes.items())))
        if key not in self._lemmas:
            t0 = time.perf_counter()
            self.progress(f"strengthening search ({'unbounded' if sizes is None else 'N=' + str(sizes[MEMBER])})")
            alive, dropped = self.system(scope, sizes).houdini(self.candidates(scope), budget=Work(self.budget_s))
            self._lemmas[key] = alive
            self.dropped[key] = dropped
            self.houdini_seconds += time.perf_counter() - t0
        return self._lemmas[key]

    def prove(self, inv: Invariant) -> Proof:
        t0 = time.perf_counter()
        self.progress(inv.name)
        p = self._prove(inv)
        p.seconds = time.perf_counter() - t0
        if self.presets and p.status not in ("proved", "violated") and inv.scope == "coordinator":
            self._confirm(inv, p)
        if self.presets and p.lemmas:
            pool = self.named(inv.scope)
            bad = refuted_by([pool[n] for n in p.lemmas if n in pool], self.presets, self.rows_arg)
            if bad:     # a lemma some reachable state breaks: the prover is wrong, say so loudly
                p.status, p.reason = "unknown", (
                    "PROVER BUG: lemmas the search found are false in reachable states: "
                    + ", ".join(f"{n} (world {w})" for n, w in bad.items()) + "; " + p.reason)
        return p

    def _confirm(self, inv: Invariant, p: Proof) -> None:
        """An invariant not proved is looked for in the reachable states of the check worlds:
        broken there, it is violated."""
        for preset in self.presets:
            groups, _, broken = reachable(preset, self.rows_arg)
            if inv.name in broken:
                p.status, p.reason = "violated", f"a step of world {preset} breaks it: {broken[inv.name]}; " + p.reason
                return
            if inv.kind == "state" and not inv.settled:
                f = compile_term(inv.formula, _layouts()[0])
                config = make_params(world_config(preset, self.rows_arg))
                if not all(f(g, config, ()) for g in groups):
                    p.status, p.reason = "violated", f"a reachable state of world {preset} breaks it; " + p.reason
                    return

    def _prove(self, inv: Invariant) -> Proof:
        asm = [a.name for a in ENVIRONMENT + assumed_for(inv)]
        if inv.settled:     # it holds between requests, after the eager CompleteJoin, not after every row
            p = prove_settled(inv, self.rows, list(ENVIRONMENT + assumed_for(inv)), self.query_work)
            p.assumptions = asm
            return p
        if inv.scope == "closed-world" and inv.name not in CLOSED_WORLD:
            return Proof(inv.name, "unknown", "none", reason="a closed-world invariant without a declared "
                         "assumption about the clients (CLOSED_WORLD)", assumptions=asm)
        if self.engine == "spacer":
            p = self._spacer(inv)
            p.assumptions = asm
            return p
        p = self._houdini(inv, asm)
        if self.engine == "both" and p.status == "unknown":
            sp = self._spacer(inv)
            if sp.status in ("proved up to N", "violated"):
                sp.assumptions, sp.reason = asm, f"Houdini: {p.reason}; {sp.reason}"
                return sp
            p.reason += f"; Spacer (N={self.bound}): {sp.reason}"
        return p

    def _spacer(self, inv: Invariant) -> Proof:
        """The second engine: Spacer on the table's Horn clauses, for fixed sizes (`chc.py`).
        Its lemmas are checked against the reachable states that fit those sizes."""
        sizes = fixed_sizes(self.bound)
        system = self.system(inv.scope, sizes)
        r = spacer(system, inv, budget_s=self.spacer_budget_s, seed=self.spacer_seed)
        method = f"Spacer, constrained Horn clauses (fixed sizes, N={self.bound}; Inv over {len(r.keep)} variables)"
        if r.status == "counterexample":
            return self._spacer_path(inv, r, method)
        if r.status != "proved":
            return Proof(inv.name, "unknown", method, reason=r.reason, engine="spacer")
        p = Proof(inv.name, "proved up to N", method, [f"spacer N={self.bound}: {t}" for t in r.lemmas],
                  bound=self.bound, engine="spacer",
                  reason=f"Spacer found an inductive relation for {_sizes_words(sizes)} (Horn clauses need a "
                         f"decidable theory: member sets as bit-vectors of N, so the sizes are fixed)")
        if self.presets:
            bad, checked = refuted(r, system, self.presets, self.rows_arg)
            if bad:     # a lemma some reachable state breaks: the prover is wrong, say so loudly
                p.status, p.reason = "unknown", ("PROVER BUG: Spacer's lemmas are false in reachable states: "
                                                 + ", ".join(f"{n} (world {w})" for n, w in bad.items()))
            else:
                p.reason += f"; its {len(r.lemmas)} lemmas hold in the {checked:,} reachable states with at " \
                            f"most {self.bound} member ids"
        return p

    def _spacer_path(self, inv: Invariant, r, method: str) -> Proof:
        """Spacer's derivation of false as a path of rows, replayed concretely (`paths.py`): violated
        when the replay breaks the invariant, otherwise unknown with what the replay found."""
        path = spacer_path(r.horn, self.rows, r.left / WORK_PER_SECOND, self.spacer_seed)
        if path.replayed and path.broken == inv.name:
            return Proof(inv.name, "violated", method, engine="spacer", bound=self.bound, path=path,
                         reason=f"Spacer's path to it replayed concretely: {path.detail}")
        return Proof(inv.name, "unknown", method, engine="spacer", path=path if path.steps else None,
                     reason=f"{r.reason}; its path: {path.detail}")

    def _houdini(self, inv: Invariant, asm: list[str]) -> Proof:
        """The first engine: induction, then Houdini's strengthening, for every size; where
        that fails, for fixed sizes."""
        attempt = self._attempt(inv, None)
        if attempt.status in ("proved", "violated"):
            attempt.assumptions = asm
            return attempt
        # the same question for fixed sizes, where counting and the vote are exact
        fixed = self._attempt(inv, fixed_sizes(self.bound))
        fixed.assumptions = asm
        cti = attempt.cti
        why = (f"not shown inductive for every size: counterexample to induction at row {cti.row!r}" if cti
               else attempt.reason)
        if cti and cti.approximated:
            why += (" (that counterexample reads " + ", ".join(cti.approximated) + " over-approximated: they have "
                    "no decidable meaning for every size, so it may not be a real one)")
        if fixed.status == "proved" and fixed.lemmas:
            general = self._generalize(inv, fixed.lemmas)
            if general is not None:
                general.assumptions = asm
                return general
        if fixed.status == "proved":
            fixed.status, fixed.bound = "proved up to N", self.bound
            fixed.method = fixed.method.replace("(N=", "(fixed sizes, N=")
            fixed.reason = why + f"; proved for {_sizes_words(fixed_sizes(self.bound))}"
            fixed.cti = cti
            return fixed
        fixed.status = "unknown"
        fixed.reason = why + f"; for N={self.bound}: " + (f"row {fixed.cti.row!r} breaks it too" if fixed.cti
                                                          else fixed.reason)
        fixed.cti = fixed.cti or cti
        return fixed

    def _generalize(self, inv: Invariant, names: list[str]) -> Proof | None:
        """The lemmas found for fixed sizes, asked again for every size: Houdini over just them
        in the unbounded reading; the invariant proved if it (or its goal) survives."""
        pool = {lm.name: lm for lm in self.pool(inv.scope)}
        own = [as_lemma(inv)] if inv.kind == "state" else []
        system = self.system(inv.scope)
        alive, _ = system.houdini(own + [pool[n] for n in names if n in pool],
                                  budget=Work(self.budget_s))
        if alive is None:
            return None
        if own and inv.name not in {lm.name for lm in alive}:
            return None
        if not own:
            fails, unknown, _ = system.check_goal(lambda c: kind_goal(inv, c), alive, self._reads(inv, system))
            if fails or unknown:
                return None
        return Proof(inv.name, "proved", f"induction with lemmas found for N={self.bound}, kept for every size "
                     "(unbounded)", sorted(lm.name for lm in alive if lm.name != inv.name))

    def _attempt(self, inv: Invariant, sizes: dict | None) -> Proof:
        """Induction for `inv` in one reading: plain, then with the strengthening found."""
        where = "unbounded" if sizes is None else f"N={sizes[MEMBER]}"
        system = self.system(inv.scope, sizes)
        goal = lambda c: kind_goal(inv, c)     # noqa: E731
        own = [as_lemma(inv)] if inv.kind == "state" else []
        if own and not system.initially(own[0]):
            return Proof(inv.name, "unknown", "induction", reason="not true of a group the coordinator does not hold")
        reads = self._reads(inv, system)
        # plain induction, briefly when a strengthening search follows (an unknown leads to it)
        # (a search follows any failure: the first one is enough to know it is needed, and a
        # counterexample for an undecided row is looked for only if the search finds none)
        fails, unknown, _ = system.check_goal(goal, own, reads, QUICK_WORK if self.strengthen else None,
                                              first=self.strengthen, small=not self.strengthen)
        if not fails and not unknown:
            return Proof(inv.name, "proved", f"induction ({where})")
        plain = fails[0] if fails else (None, None)
        plain_unknown = list(unknown)
        if plain[0] is not None and self.presets and inv.scope == "coordinator":
            probe = Proof(inv.name, "unknown", "induction")
            self._confirm(inv, probe)
            if probe.status == "violated":     # a real violation: no strengthening can help
                c, model = plain
                probe.cti = self.cti(inv, c, model, where)
                probe.reason += f"the counterexample to induction: row {c.name!r}"
                return probe
        if self.strengthen and sizes is None:
            together = self._together(inv, system, goal, reads)
            if together is not None:
                return together
        if not self.strengthen:
            c, model = plain
        elif self.search == "full":
            found = self._over_all(inv, system, own, goal, reads, where, sizes)
            if isinstance(found, Proof):
                return found
            c, model = found or plain
        else:
            found = self._widening(inv, system, own, goal, reads, where)
            if isinstance(found, Proof):
                return found
            (c, model), unknown = found
            if sizes is not None:
                # for fixed sizes Houdini over every candidate is cheap (the queries are
                # decidable), and does not hang on the path the widening took
                over_all = self._over_all(inv, system, own, goal, reads, where, sizes)
                if isinstance(over_all, Proof):
                    return over_all
            c, model = (c, model) if c is not None else plain
        if c is None and plain_unknown and system.falsifier is not None:
            rows = {r.name: r.i for r in system.ctx_built()}
            for name in plain_unknown:
                cex = system.falsifier.counterexample(rows[name], own, goal)
                if cex is not None:
                    c, model = cex
                    break
        if c is not None:
            return Proof(inv.name, "unknown", "induction", cti=self.cti(inv, c, model, where),
                         reason=f"row {c.name!r} breaks it")
        return Proof(inv.name, "unknown", "induction", reason=f"Z3 gave up (its limit of work) on {', '.join(unknown[:3])}")

    def _together(self, inv: Invariant, system: System, goal, reads) -> Proof | None:
        """`inv` proved with the catalog's other invariants as one inductive set (`joint`): every
        conjunct of it is left by that search, or, a step or output invariant, its goal follows from
        what is left.  None when it is not."""
        alive, cores = self.joint(inv.scope)
        if alive is None:
            return None
        how = ""
        left = {lm.name for lm in alive}
        mine = {lm.name for lm in part_lemmas([as_lemma(inv)]) if not lm.record} if inv.kind == "state" else set()
        if mine:
            if not mine <= left:
                return None
            used = mine
        else:
            fails, unknown, used = system.check_goal(goal, alive, reads)
            if fails and not unknown:
                widened = self._for_goal(inv, system, goal, reads, alive)
                if widened is not None:
                    (alive, cores, used), fails, how = widened, [], " and the invariant's vocabulary"
            if fails or unknown:
                return None
        names = [n for n in system.closure_by_cores(used, alive, cores) if n not in mine]
        # a catalog invariant by its name when all of it is left, else the conjunct used
        named = self.named(inv.scope)
        parts_left = {n: {p.name for p in part_lemmas([lm]) if not p.record} <= left
                      for n, lm in named.items() if lm.origin == "catalog" and n == whole(n)}
        with_ = sorted({whole(n) if parts_left.get(whole(n)) else n for n in names
                        if named[n].origin == "catalog"} - {inv.name})
        return Proof(inv.name, "proved", "induction, jointly with the catalog's other invariants (Houdini over "
                     f"the catalog{how}, unbounded)", names, together=with_,
                     reason=("proved together with " + ", ".join(with_)) if with_ else "")

    def _for_goal(self, inv: Invariant, system: System, goal, reads, alive: list[Lemma]):
        """A step or output invariant's goal that the joint set does not give: Houdini over the joint
        set and the candidates that speak only of the invariant's vocabulary, together (for
        max-size-after-join, the bounds on |members ∩ awaiting_join| its count needs).  Returns the
        set left, its steps' unsat cores and the lemmas the goal's proof used; None when the goal
        does not follow (or the budget was spent first)."""
        vocab = _vocabulary_of(inv)
        names = {lm.name for lm in alive}
        mine = [lm for lm in self.candidates(inv.scope) if not lm.record and lm.origin != "catalog"
                and lm.name not in names and vocabulary(lm) <= vocab]
        if not mine:
            return None
        left, _ = system.houdini(alive + mine, budget=Work(self.budget_s))
        if left is None:
            return None
        fails, unknown, used = system.check_goal(goal, left, reads)
        return None if fails or unknown else (left, dict(system.cores), used)

    def _over_all(self, inv: Invariant, system: System, own: list[Lemma], goal, reads, where: str, sizes):
        """Houdini over every candidate: the largest inductive subset, then the unsat cores.
        Returns the proof, the first counterexample (ctx, model), or None."""
        lemmas = self.lemmas(inv.scope, sizes)
        if lemmas is None:
            return None
        ctx = own + [lm for lm in lemmas if lm.name != inv.name]
        fails, unknown, used = system.check_goal(goal, ctx, reads)
        if not fails and not unknown:
            names = system.closure(used - {inv.name}, lemmas)
            return Proof(inv.name, "proved", f"induction with Houdini strengthening over every candidate ({where})",
                         [n for n in names if n != inv.name])
        return fails[0] if fails else None

    def _widening(self, inv: Invariant, system: System, own: list[Lemma], goal, reads, where: str):
        """Houdini over the candidates that speak only of the invariant's vocabulary (its
        variables, and the record's fields of them), widened while it fails: by the variables
        of the candidates that a counterexample to induction breaks, which would rule it out.
        The candidates are those no state of the sample worlds breaks (`candidates`): Houdini
        then spends its queries on lemmas that may well be invariants.  Returns the proof, or
        (the last counterexample (ctx, model) or (None, None), rows Z3 gave up on)."""
        cands = self.candidates(inv.scope)
        vocab = _vocabulary_of(inv)
        budget = Work(self.budget_s)
        cex, unknown = (None, None), []
        while True:
            chosen = [lm for lm in cands if vocabulary(lm) <= vocab and lm.name != inv.name]
            alive, _ = system.houdini(own + chosen, budget=budget)
            if alive is None:
                return cex, [f"the strengthening search (its {self.budget_s:g} s budget spent)"]
            kept = [lm for lm in alive if lm.name != inv.name]
            if own and len(kept) < len(alive):
                # the invariant survived: Houdini's own queries proved it, from their cores
                names = system.closure_by_cores({inv.name}, alive)
                return Proof(inv.name, "proved", f"induction with Houdini strengthening over the "
                             f"invariant's vocabulary ({where})", [n for n in names if n != inv.name])
            if not own:
                fails, unknown, used = system.check_goal(goal, alive, reads)
                if not fails and not unknown:
                    names = system.closure(used - {inv.name}, kept)
                    return Proof(inv.name, "proved", f"induction with Houdini strengthening over the "
                                 f"invariant's vocabulary ({where})", [n for n in names if n != inv.name])
            else:   # the invariant itself was dropped: the row that breaks it from a state where it
                # and what was kept hold (from `kept` alone the pre-state may already break it, and
                # such a model says nothing about which candidates would rule the step out)
                fails, unknown, _ = system.check_goal(goal, own + kept, reads)
            if not fails:
                return cex, unknown
            c, m = cex = fails[0]
            wider = vocab | set().union(*[vocabulary(lm) for lm in cands
                                          if model_value(m, c.pre(lm.formula)) is False])
            if wider == vocab:
                return cex, unknown
            vocab = wider

    def explore_samples(self, scope: str) -> None:
        """Explore the sample worlds (and the lemma-checking ones) and sift the candidates by
        them: done once per process, before any proof's clock starts."""
        for world in dict.fromkeys(SAMPLE_WORLDS + self.presets):
            reachable(world, self.rows_arg)
        self.candidates(scope)

    def candidates(self, scope: str) -> list[Lemma]:
        """The candidate lemmas no reachable state of the sample worlds breaks."""
        if scope not in self._candidates:
            self._candidates[scope] = self.sifted(scope, self.pool(scope))
        return self._candidates[scope]

    def sifted(self, scope: str, lemmas: list[Lemma]) -> list[Lemma]:
        """`lemmas` less those a reachable state of the sample worlds breaks."""
        bad = refuted_by(lemmas, SAMPLE_WORLDS, self.rows_arg) if SAMPLE_WORLDS else {}
        return [lm for lm in lemmas if lm.name not in bad]

    @staticmethod
    def _reads(inv: Invariant, system: System):
        """Which rows can matter to `inv` (None: all)."""
        if inv.kind == "state":
            return vars_of(inv.formula)
        if inv.kind == "step":
            post = {v for v in vars_of(inv.formula) if not v.startswith("prev:")}
            return post if system.stutter_invariant(inv) else None
        if inv.kind == "output":
            return lambda r: any(isinstance(o, Out) and o.kind in ("reply", "answer") and o.api == "SyncGroup"
                                 for o in r.steps)
        return None

    # -- counterexamples to induction --------------------------------------------------
    def cti(self, inv: Invariant, c: RowCtx, model, reading: str) -> CTI:
        return describe_cti(inv, c, model, reading)


# the worlds whose reachable states sift the candidate lemmas before any is given to Z3 (static:
# for the group.instance.id lemmas)
SAMPLE_WORLDS = ("tiny", "small", "static")


def _vocabulary_of(inv: Invariant) -> set[str]:
    """The state variables an invariant speaks of (before or after a step), and the record's."""
    return {v.removeprefix("prev:") for v in vars_of(inv.formula)} | {"record"}


def _sizes_words(sizes: dict) -> str:
    return ", ".join(f"{n} {d}" for d, n in sizes.items())


def fixed_sizes(n: int) -> dict:
    sizes = dict(Bounds().sizes)
    sizes[MEMBER] = n
    return sizes
