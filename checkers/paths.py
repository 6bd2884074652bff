"""Where the project's own files are: the repository and its conformance suite.

A module of its own because the command line (`cli/`), mutation testing
(`search/mutate.py`, which runs the suite against a mutant) and the review artifacts
need them, and the command line imports them: kept in the command line they made them import
each other.
"""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def default_scenario_paths() -> list[Path]:
    """The project's own suite, and the shared examples beside the repository when present."""
    paths = [REPO / "tests" / "scenarios"]
    shared = REPO.parent / "shared" / "scenarios"
    if shared.is_dir():
        paths.append(shared)
    return [p for p in paths if p.exists()]


GENERATED = REPO / "tests" / "scenarios" / "generated"    # the suite `groupspec scenario generate` writes


def is_generated(path) -> bool:
    return GENERATED in Path(path).resolve().parents


def generated_first(files) -> list:
    """The suite's files with the generated ones first (shortest scenarios per row: they run first)."""
    return sorted(files, key=lambda f: (not is_generated(f), str(f)))
