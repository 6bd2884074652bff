"""`groupspec docs`: the design-review artifacts, and the site."""
from __future__ import annotations

import json
from typing import Optional

import typer

from groupspec.checkers.console import fail_input, out, output_path, write_outputs
from groupspec.checkers.paths import REPO


def docs_cmd(out_dir: str = typer.Option(str(REPO / "docs"), "--out", help="Where to write."),
             site: Optional[str] = typer.Option(None, "--site", help="Build the browsable HTML site into this "
                                                "folder instead (MkDocs; viewable with no network)."),
             since: Optional[str] = typer.Option(None, "--diff", help="With --site: a page of what the working "
                                                 "tree changes in the protocol since this revision (`groupspec "
                                                 "diff REV`'s rows, invariants, proofs and worlds)"),
             as_json: bool = typer.Option(False, "--json", help="Print the files written as JSON.")) -> None:
    """Write the design-review artifacts: state diagram, the table, the invariant catalog, the flows."""
    from groupspec.checkers.review.errors import DocsError
    from groupspec.checkers.review.docs import FILES, dot_program, write_docs
    try:
        dot_program()
        if site is not None:
            from groupspec.checkers.review.site import mermaid_js
            mermaid_js()
    except DocsError as e:
        fail_input(str(e))
    files: list = []
    if since is not None and site is None:
        fail_input("--diff REV adds a page to the site: give --site DIR too")
    if site is not None:
        from groupspec.checkers.review.site import MANIFEST, build_site, foreign_files, listed, site_files
        folder = output_path("--site", site, "dir", ("index.html", MANIFEST))
        try:
            site_files(folder)      # before the build: a folder that holds the user's files and no site
        except DocsError as e:
            fail_input(str(e))
        changes = None
        if since is not None:
            from groupspec.checkers.review.spec_diff import DEFAULT_PRESETS, DiffError, diff, markdown
            try:
                changes = markdown(diff(since, None, DEFAULT_PRESETS))
            except DiffError as e:
                fail_input(f"--diff {since}: {e}")
        try:
            write_outputs("--site", folder, lambda: files.extend(build_site(folder, changes)), after_result=False)
        except DocsError as e:
            fail_input(str(e))
        theirs = foreign_files(folder)
        if as_json:
            print(json.dumps({"site": str(folder), "pages": len(files), "not_ours": theirs}))
        else:
            out.print(f"built the site in {folder} ({len(files)} pages): open {folder / 'index.html'}"
                      + (f"; the files it did not write were left as they were: {listed(theirs)}" if theirs else ""),
                      markup=False, highlight=False)
        return
    folder = output_path("--out", out_dir, "dir", FILES)
    try:
        write_outputs("--out", folder, lambda: files.extend(write_docs(folder)), after_result=False)
    except DocsError as e:
        fail_input(str(e))
    if as_json:
        print(json.dumps({"written": [str(f) for f in files]}))
    else:
        for f in files:
            out.print(f"wrote {f}", markup=False, highlight=False)
