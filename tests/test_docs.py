"""The committed design-review documents are the ones the table generates."""
from pathlib import Path

from groupspec.checkers.review.docs import flows_md, invariants_md, lifecycle_dot, states_md, table_md, world_md

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_docs_are_up_to_date():
    for name, text in (("table.md", table_md()), ("states.md", states_md()), ("invariants.md", invariants_md()), ("world.md", world_md()), ("flows.md", flows_md()),
                       ("lifecycle.dot", lifecycle_dot())):
        assert (DOCS / name).read_text(encoding="utf-8") == text, f"docs/{name} is stale: run `groupspec docs`"


def test_the_readme_and_the_internals_count_the_rows_there_are():
    import re
    from groupspec.spec.table import ROWS
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    said = re.search(r"transition table of (\d+) rows", readme)
    assert said and int(said.group(1)) == len(ROWS), "README.md's row count is stale"
    internals = (DOCS / "guide" / "internals.md").read_text(encoding="utf-8")
    said = re.search(r"`spec/table.py` \| (\d+) rows", internals)
    assert said and int(said.group(1)) == len(ROWS), "docs/guide/internals.md's row count is stale"


def test_every_move_is_labelled_by_the_events_of_the_rows_that_make_it():
    from groupspec.checkers.review.docs import move_events
    from groupspec.spec.events import event_of
    from groupspec.spec.schema import legal_moves
    from groupspec.spec.table import ROWS
    assert [r.name for r in ROWS if r.moves() and event_of(r) is None] == []
    events = move_events()
    assert set(events) <= legal_moves()
    assert "leader's SyncGroup stored" in events[("CompletingRebalance", "Stable")]
    assert "session expiry" in events[("Stable", "PreparingRebalance")]
    dot = lifecycle_dot()
    assert "To stable" not in dot and "coordinator unload" in dot
