"""The committed design-review documents are the ones the table generates."""
from pathlib import Path

from groupspec.checkers.docs import invariants_md, lifecycle_dot, states_md, table_md, world_md

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_docs_are_up_to_date():
    for name, text in (("table.md", table_md()), ("states.md", states_md()), ("invariants.md", invariants_md()), ("world.md", world_md()),
                       ("lifecycle.dot", lifecycle_dot())):
        assert (DOCS / name).read_text(encoding="utf-8") == text, f"docs/{name} is stale: run `groupspec docs`"
