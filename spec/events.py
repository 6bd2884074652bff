"""What moves the group, in a reviewer's words: the event each state-changing row stands for.

The lifecycle diagram labels each edge with the events whose rows make that
move, so a reader sees "session expiry" on Stable → PreparingRebalance
rather than the target's name.  Rows are grouped by their trigger and, where
one trigger stands for several events (a JoinGroup from a new member, from a
static member's new process, from a known member), by the first phrase of
the row's name that says which.  `tests/test_docs.py` checks that every row
that changes the state has an event.
"""
from __future__ import annotations

from .rows import Row

# trigger -> [(a phrase of the row's name, the event)], first match wins; "" matches any row
EVENTS: dict[str, list[tuple[str, str]]] = {
    "JoinGroup": [("static member rejoins", "JoinGroup from a static member's new process"),
                  ("pending member", "JoinGroup from a pending member (KIP-394)"),
                  ("new member", "JoinGroup from a new member"),
                  ("new dynamic member", "JoinGroup from a new member"),
                  ("", "JoinGroup from a known member (the leader, or new metadata)")],
    "CompleteJoin": [("", "the delayed join completes (every member rejoined)")],
    "JoinTimer": [("", "the delayed join completes (its timer)")],
    "StoreGroupDone": [("assignment stored", "leader's SyncGroup stored"),
                       ("assignment not stored", "leader's SyncGroup fails to store"),
                       ("new group not stored", "a new group's record fails to store (Java coordinator)")],
    "StoreOffsetsDone": [("the group the commit created is undone",
                          "a commit's new group fails to store (Java coordinator)")],
    "HeartbeatExpiry": [("", "session expiry")],
    "SyncTimer": [("", "members never sent SyncGroup (DelayedSync)")],
    "LeaveMember": [("", "LeaveGroup")],
    "OffsetCommit": [("", "OffsetCommit without group management")],
    "DeleteGroup": [("", "DeleteGroups")],
    "Unload": [("", "coordinator unload")],
    "Load": [("", "coordinator load")],
    "MarkDead": [("", "the group is marked Dead")],
    "ExpireOffsets": [("", "offset expiry")],
}


def event_of(row: Row) -> str | None:
    """The event row `row` stands for, or None when none is declared for it."""
    for phrase, event in EVENTS.get(row.trigger, ()):
        if phrase in row.name.split(": ", 1)[-1]:
            return event
    return None
