"""Time for the coordinator: an injected clock and the timers that run on it.

Timers follow the scenario contract: `advance(ms)` fires every timer due at
or before now + ms, earliest deadline first, with the clock set to that
deadline; timers due at the same instant fire in the order they were armed;
a timer armed while firing fires in the same advance if it falls due
within it.  A timer armed with a deadline of `now` waits for the next
advance (advance(0) fires it).
"""
from __future__ import annotations

import copy
import heapq
import itertools
import time
from typing import Callable, Hashable


# far more timers than a group holds at one deadline (one per member and timer kind)
SAME_INSTANT_LIMIT = 10_000


class TimerLivelock(RuntimeError):
    """Timers keep firing at one instant: the clock can never move on."""


class ManualClock:
    """A clock that moves only when told to (tests, scenarios)."""

    def __init__(self, start_ms: int = 0):
        self.now_ms = start_ms

    def now(self) -> int:
        return self.now_ms


class SystemClock:
    """Wall-clock milliseconds (a served coordinator)."""

    def now(self) -> int:
        return int(time.time() * 1000)


class Timers:
    """Keyed timers over a clock.  Re-arming a key replaces its deadline."""

    def __init__(self, clock: ManualClock):
        self.clock = clock
        self._heap: list[tuple[int, int, Hashable]] = []
        self._live: dict[Hashable, tuple[int, int]] = {}
        self._seq = itertools.count()

    def arm(self, key: Hashable, delay_ms: int) -> None:
        entry = (self.clock.now() + max(0, int(delay_ms)), next(self._seq))
        self._live[key] = entry
        heapq.heappush(self._heap, (*entry, key))

    def cancel(self, key: Hashable) -> None:
        self._live.pop(key, None)

    def cancel_where(self, pred: Callable[[Hashable], bool]) -> None:
        for key in [k for k in self._live if pred(k)]:
            del self._live[key]

    def armed(self, key: Hashable) -> bool:
        return key in self._live

    def deadline(self, key: Hashable) -> int | None:
        e = self._live.get(key)
        return None if e is None else e[0]

    def keys(self):
        return list(self._live)

    def schedule(self) -> list[tuple[Hashable, int, int]]:
        """Every armed timer as (key, deadline, arming order): all that decides which fires when
        (timers due at the same moment fire in the order they were armed)."""
        return [(key, deadline, seq) for key, (deadline, seq) in self._live.items()]

    def next_order(self) -> int:
        """The arming order the next timer armed gets: timers armed between two readings of it were armed by
        what ran between them."""
        return next(copy.copy(self._seq))

    def _next_due(self, until: int):
        while self._heap:
            deadline, seq, key = self._heap[0]
            if self._live.get(key) != (deadline, seq):
                heapq.heappop(self._heap)   # cancelled or re-armed
                continue
            if deadline > until:
                return None
            heapq.heappop(self._heap)
            del self._live[key]
            return deadline, key
        return None

    def advance(self, ms: int, fire: Callable[[Hashable], None]) -> None:
        """Move the clock forward `ms`, firing due timers in order.  Timers that keep re-arming
        themselves to fire at once would never let the clock reach `until`: after
        SAME_INSTANT_LIMIT firings at one instant that is a livelock, raised, not a hang."""
        until = self.clock.now() + ms
        at, fired = None, 0
        while True:
            due = self._next_due(until)
            if due is None:
                break
            deadline, key = due
            fired = fired + 1 if deadline == at else 1
            at = deadline
            if fired > SAME_INSTANT_LIMIT:
                raise TimerLivelock(f"timers fired {SAME_INSTANT_LIMIT:,} times at {deadline} ms without the "
                                    f"clock moving (the last: {key!r}): a timer re-armed to fire at once, for ever")
            self.clock.now_ms = deadline
            fire(key)
        self.clock.now_ms = until
