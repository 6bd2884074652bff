"""Packed states for the native search: each leaf in the few bits its declared type needs.

The step reads and writes a state as one 64-bit integer per leaf (codegen.py), but most leaves hold a
Boolean, a set of a few elements, an enumeration or a small integer: on the 3-client world with faults a
state is 172 leaves, 1,376 bytes unpacked and 1,031 bits packed.  The search keeps two levels of states
(search.c), and at a few million states a level those were what ran out (docs/benchmarks.md), so the
levels hold states packed and each is unpacked once, when it is expanded.

Each leaf's range comes from bmc_sat.py's reading of the declared types (the one the SAT encoding uses):
a set is a bit-vector of its size, an enumeration or a domain value a bounded integer, a plain integer
[-1, H] with H the largest literal the step can write.  A leaf packed outside its range is not clipped:
`pack` answers the leaf's index and the search stops and says which leaf and value (engine.py).
The C is straight-line code, a statement per leaf, with no leaf straddling two words.
"""
from __future__ import annotations

from dataclasses import dataclass

from groupspec.checkers.world.bmc import StepRelation
from groupspec.checkers.world.bmc_sat import int_ceiling, typed_leaves

WORD = 64


@dataclass(frozen=True)
class Slot:
    name: str           # the leaf, as Z3 names it (for a message)
    lo: int
    width: int
    word: int
    shift: int

    @property
    def hi(self) -> int:
        """The largest value the slot holds (its type's range, and what its bits leave above it)."""
        return self.lo + (1 << self.width) - 1


def layout(rel: StepRelation) -> list[Slot]:
    """A slot for each leaf of the flat state, in order: its range, and where its bits go."""
    slots, word, used = [], 0, 0
    for leaf in typed_leaves(rel.X, rel.world.sizes, int_ceiling(rel)):
        if leaf.width >= WORD:
            raise ValueError(f"{leaf.term}: {leaf.width} bits do not fit a word of the packed state")
        if used + leaf.width > WORD:
            word, used = word + 1, 0
        slots.append(Slot(str(leaf.term), leaf.lo, leaf.width, word, used))
        used += leaf.width
    return slots


def source(slots: list[Slot]) -> str:
    """C defining PW (a packed state's words), `pack` (-1, or the first leaf outside its range) and
    `unpack`, which search.c reads."""
    pack, unpack = [], []
    for j, s in enumerate(slots):
        mask = s.hi - s.lo
        pack.append(f"  v = (uint64_t)(x[{j}] - ({s.lo})); if (v > {mask}ull) return {j}; "
                    f"p[{s.word}] |= v << {s.shift};")
        unpack.append(f"  x[{j}] = (int64_t)((p[{s.word}] >> {s.shift}) & {mask}ull) + ({s.lo});")
    words = slots[-1].word + 1 if slots else 1
    return "\n".join([
        f"#define PW {words}",
        "static inline int pack(const int64_t *x, uint64_t *p) {",
        "  uint64_t v;",
        "  memset(p, 0, PW * 8);",
        *pack,
        "  return -1;",
        "}",
        "static inline void unpack(const uint64_t *p, int64_t *x) {",
        *unpack,
        "}", ""])
