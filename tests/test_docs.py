"""The committed design-review documents are the ones the table generates."""
from pathlib import Path

from groupspec.checkers.docs import invariants_md, lifecycle_dot, states_md, table_md, world_md

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_docs_are_up_to_date():
    for name, text in (("table.md", table_md()), ("states.md", states_md()), ("invariants.md", invariants_md()), ("world.md", world_md()),
                       ("lifecycle.dot", lifecycle_dot())):
        assert (DOCS / name).read_text(encoding="utf-8") == text, f"docs/{name} is stale: run `groupspec docs`"


def test_the_readme_counts_the_rows_there_are():
    import re
    from groupspec.spec.table import ROWS
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    said = re.search(r"`spec/table.py` \| (\d+) rows", readme)
    assert said and int(said.group(1)) == len(ROWS), "README.md's table row count is stale"
