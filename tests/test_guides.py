"""The guides name code that exists, and the internals page covers every command.

docs/guide/internals.md (and decisions.md and glossary.md) name files, functions and commands in backticks:

- `path/to/file.py` (or a folder, or `file.py:123`): it exists (the file has that line);
- `path/to/file.py:name` or `path/to/file.py:Class.member`: the file defines it (read with ast: a function,
  class or assignment at the top level; a method, class attribute or `self.member = ...` of the class);
- `module.name` or `Class.member`, where `module` is the stem of a module of spec/, impl/ or checkers/ (or
  `Class` a class defined at the top level of one): some such module (or class) defines it;
- `groupspec COMMAND ...`: COMMAND (and its subcommands) is a command of the CLI.

And the section "Each command, through the code" of internals.md has an entry (a `### `groupspec ...`` heading)
for every command of the CLI, none for a command it does not have, and each entry names the function the command
enters (its file and name), as the CLI registers it.
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from groupspec.checkers.cli import app

ROOT = Path(__file__).resolve().parent.parent
GUIDES = ROOT / "docs" / "guide"
CHECKED = ("internals.md", "decisions.md", "glossary.md")
TOPS = ("spec", "impl", "checkers", "tests", "benchmarks", "docs")
SECTION = "## Each command, through the code"

CODE = re.compile(r"`([^`\n]+)`")
PATH_REF = re.compile(r"((?:%s)/[\w./-]*)(?::(\d+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?))?" % "|".join(TOPS))
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
# `counterexample.itf.json` names a file, not a member of the module counterexample
FILE_SUFFIXES = (".py", ".md", ".json", ".jsonl", ".gz", ".html", ".mmd", ".js", ".tla", ".cfg", ".svg", ".dot",
                 ".parquet", ".yaml", ".yml", ".toml", ".txt", ".log", ".xml", ".css")


def _text(name: str) -> str:
    return (GUIDES / name).read_text(encoding="utf-8")


def _names(body: list) -> set[str]:
    """The names a list of statements binds: functions, classes, assignments (also inside if/try/with)."""
    out: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for part in ("body", "orelse", "finalbody", "handlers"):
                for sub in getattr(node, part, []) or []:
                    out |= _names(sub.body if isinstance(sub, ast.ExceptHandler) else [sub])
    return out


@functools.lru_cache(maxsize=None)
def _module(path: Path) -> tuple[frozenset, dict]:
    """(the names `path` defines at its top level, {class name: the names its class defines})."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    classes: dict[str, set] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = _names(node.body)
            for fn in node.body:
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for n in ast.walk(fn):
                        targets = n.targets if isinstance(n, ast.Assign) else \
                            [n.target] if isinstance(n, (ast.AnnAssign, ast.AugAssign)) else []
                        members.update(t.attr for t in targets if isinstance(t, ast.Attribute)
                                       and isinstance(t.value, ast.Name) and t.value.id == "self")
            classes[node.name] = members
    return frozenset(_names(tree.body)), classes


def _defines(path: Path, name: str) -> bool:
    top, classes = _module(path)
    head, _, member = name.partition(".")
    if not member:
        return head in top
    return member in classes.get(head, ())


@functools.lru_cache(maxsize=None)
def _modules() -> tuple[Path, ...]:
    return tuple(p for top in ("spec", "impl", "checkers") for p in sorted((ROOT / top).rglob("*.py")))


def _problem(token: str) -> str | None:
    """What is wrong with a backticked reference, or None (also for what names no code)."""
    m = PATH_REF.fullmatch(token)
    if m:
        rel, name = m.group(1), m.group(2)
        path = ROOT / rel
        if not path.exists():
            return f"{rel} does not exist"
        if name is None:
            return None
        if not path.is_file():
            return f"{rel} is no file, so it has no {name}"
        if name.isdigit():
            lines = path.read_text(encoding="utf-8").count("\n") + 1
            return None if int(name) <= lines else f"{rel} has {lines} lines, not {name}"
        if path.suffix != ".py":
            return f"{rel} is not Python, so it defines no {name}"
        return None if _defines(path, name) else f"{rel} defines no {name}"
    if DOTTED.fullmatch(token) and not token.endswith(FILE_SUFFIXES):
        head, rest = token.split(".", 1)
        modules = [p for p in _modules() if p.stem == head]
        if modules:
            if any(_defines(p, rest) for p in modules):
                return None
            return f"no module {head} ({', '.join(str(p.relative_to(ROOT)) for p in modules)}) defines {rest}"
        holders = [p for p in _modules() if head in _module(p)[1]]
        if holders and "." not in rest:
            if any(_defines(p, token) for p in holders):
                return None
            return f"the class {head} ({', '.join(str(p.relative_to(ROOT)) for p in holders)}) has no {rest}"
    return None


def _root():
    return typer.main.get_command(app)


def _command_problem(token: str) -> str | None:
    """`groupspec WORDS...`: each word before the first option or argument names a (sub)command."""
    words = token.split()
    cmd, path = _root(), ["groupspec"]
    for w in words[1:]:
        subs = getattr(cmd, "commands", None)
        if w.startswith("-") or not subs:
            break
        if w not in subs:
            if getattr(cmd, "invoke_without_command", False) and path != ["groupspec"]:
                break       # `groupspec serve` takes no positional words, but say so only if it matters
            return f"`{' '.join(path)}` has no command {w!r} (it has {', '.join(subs)})"
        cmd = subs[w]
        path.append(w)
    return None


@pytest.mark.parametrize("guide", CHECKED)
def test_every_file_function_and_command_a_guide_names_exists(guide):
    problems = []
    for token in CODE.findall(_text(guide)):
        token = token.strip()
        problem = _command_problem(token) if token.startswith("groupspec ") else _problem(token)
        if problem:
            problems.append(f"`{token}`: {problem}")
    assert not problems, f"docs/guide/{guide} names what does not exist:\n" + "\n".join(problems)


def test_the_reference_check_has_teeth():
    assert _problem("checkers/cli/check.py:check_cmd") is None
    assert _problem("impl/coordinator.py:GroupCoordinator.choose") is None      # an attribute set in __init__
    assert _problem("handling.handle") is None
    assert _problem("checkers/cli/check.py:no_such_function")
    assert _problem("checkers/cli/nothing.py")
    assert _problem("prove.WORK_PER_SECOND")              # it lives in checkers/proofs/obligations.py
    assert _problem("WorldModel.no_such_method")
    assert _command_problem("groupspec traces check x.jsonl --out d") is None
    assert _command_problem("groupspec traces lint")
    assert _command_problem("groupspec verify")


def _leaves() -> dict[str, object]:
    """Every command a user can run, by its words: {"kafka broker start": its callback, ...}.  A group that runs
    without a subcommand (`serve`) is one too."""
    out: dict[str, object] = {}

    def walk(cmd, path: list[str]) -> None:
        subs = getattr(cmd, "commands", None)
        if path and (subs is None or getattr(cmd, "invoke_without_command", False)):
            out[" ".join(path)] = cmd.callback
        for name, sub in (subs or {}).items():
            walk(sub, path + [name])
    walk(_root(), [])
    return out


def _entries() -> dict[str, str]:
    """The section's entries: {command words: the entry's text}.  A heading `groupspec a b c` · `d` · `e` is
    the commands a b c, a b d and a b e."""
    text = _text("internals.md")
    assert SECTION in text, f"docs/guide/internals.md has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    entries: dict[str, str] = {}
    for block in section.split("\n### ")[1:]:
        heading, _, body = block.partition("\n")
        names = CODE.findall(heading)
        if not names or not names[0].startswith("groupspec "):
            continue        # Idiosyncrasies
        first = names[0].split()[1:]
        for words in [first] + [first[:-1] + [n] for n in names[1:]]:
            key = " ".join(words)
            assert key not in entries, f"the command {key!r} has two entries"
            entries[key] = body
    return entries


def test_the_internals_section_has_an_entry_for_every_command_and_only_for_commands():
    leaves, entries = _leaves(), _entries()
    assert not sorted(set(entries) - set(leaves)), f"entries for what is no command: {sorted(set(entries) - set(leaves))}"
    assert not sorted(set(leaves) - set(entries)), f"commands without an entry: {sorted(set(leaves) - set(entries))}"


def test_each_entry_names_the_function_its_command_enters():
    wrong, leaves = [], _leaves()
    for words, body in _entries().items():
        fn = leaves.get(words)
        if fn is None:
            continue        # no such command: the test above says so
        rel = fn.__module__.removeprefix("groupspec.").replace(".", "/") + ".py"
        enters = next((item for item in re.split(r"\n(?=- )", body) if "**enters**" in item), "")   # the bullet
        named = f"`{rel}:{fn.__name__}`" in enters or (f"`{rel}:" in enters and f"`{fn.__name__}`" in enters)
        if not named:
            wrong.append(f"groupspec {words}: enters {rel}:{fn.__name__}, and its entry's **enters** line says "
                         f"{' '.join(enters.split()) or 'nothing'}")
    assert not wrong, "\n".join(wrong)


def test_help_lists_every_command_the_section_covers():
    runner = CliRunner()
    groups = {tuple(words.split()[:-1]) for words in _leaves()} | {()}
    for group in sorted(groups):
        got = runner.invoke(app, [*group, "--help"], env={"COLUMNS": "200"})
        assert got.exit_code == 0, got.output
        children = [w.split()[len(group)] for w in _leaves() if tuple(w.split()[:len(group)]) == group
                    and len(w.split()) > len(group)]
        missing = [c for c in set(children) if not re.search(rf"(?m)^\W*{re.escape(c)}\b", got.output)]
        assert not missing, f"`groupspec {' '.join(group)} --help` does not list {missing}"
