"""Count the public definitions of ``src/headwater`` with and without a docstring.

What counts, read from the source with ``ast`` (nothing is imported):

- every module (each ``.py`` file, ``__init__.py`` included, private ``_name.py`` too:
  each module opens with a docstring stating its idea);
- every public class and function at module level: its name does not start with ``_``;
- every public method (sync or async, properties included) of a public class, and the
  public classes nested in one, recursively. Dunder methods (``__init__``…) start with
  ``_`` and do not count; neither do functions defined inside functions, the
  ``@overload`` stubs of a function, nor the ``@x.setter``/``@x.deleter`` of a property
  (its getter counts once).

A definition is documented when its body opens with a string literal (``ast.get_docstring``
is not None), however short.

Run: ``python scripts/docstring_coverage.py [SRC_PACKAGE_DIR] [--all]``; it prints the
share, then each module with undocumented definitions and their names (``--all``: also
the modules with none missing). ``tests/core/test_docstrings.py`` loads this file and
asserts the share stays at or above its floor.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

DEFAULT_ROOT = Path(__file__).resolve().parent.parent / "src" / "headwater"
Definition = ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef


class Entry(NamedTuple):
    """One counted definition: its module, dotted name inside it, kind and docstring state."""

    module: str
    name: str  # "" for the module itself, "Class.method" for a method
    kind: str  # "module", "class", "function" or "method"
    documented: bool


def module_name(path: Path, root: Path) -> str:
    """The dotted name of the module at ``path`` inside the package directory ``root``."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _decorator_names(node: Definition) -> set[str]:
    """The last dotted part of each decorator (``typing.overload`` -> ``overload``)."""
    names = set()
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        names.add(ast.unparse(target).rsplit(".", 1)[-1])
    return names


def _counted(node: ast.stmt) -> bool:
    """Whether ``node`` is a public class or function this script counts."""
    if not isinstance(node, Definition) or node.name.startswith("_"):
        return False
    if isinstance(node, ast.ClassDef):
        return True
    return not _decorator_names(node) & {"overload", "setter", "deleter"}


def _members(body: list[ast.stmt], module: str, prefix: str, method: bool) -> Iterator[Entry]:
    """The counted definitions among ``body`` (a module's or a class's statements)."""
    for node in body:
        if not _counted(node):
            continue
        assert isinstance(node, Definition)
        name = f"{prefix}{node.name}"
        documented = ast.get_docstring(node) is not None
        if isinstance(node, ast.ClassDef):
            yield Entry(module, name, "class", documented)
            yield from _members(node.body, module, f"{name}.", True)
        else:
            yield Entry(module, name, "method" if method else "function", documented)


def entries(root: Path = DEFAULT_ROOT) -> list[Entry]:
    """Every counted definition of the package at ``root``, in file order."""
    found: list[Entry] = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found.append(Entry(module, "", "module", ast.get_docstring(tree) is not None))
        found.extend(_members(tree.body, module, "", False))
    return found


def share(found: list[Entry]) -> float:
    """The documented fraction of ``found`` (1.0 when it is empty)."""
    return sum(e.documented for e in found) / len(found) if found else 1.0


def report(found: list[Entry], show_all: bool = False) -> list[str]:
    """The lines ``main`` prints: the share, then the undocumented names per module."""
    documented = sum(e.documented for e in found)
    lines = [f"{documented}/{len(found)} public definitions documented ({share(found):.1%})"]
    by_module: dict[str, list[Entry]] = {}
    for entry in found:
        by_module.setdefault(entry.module, []).append(entry)
    for module, members in by_module.items():
        missing = [e for e in members if not e.documented]
        if not missing and not show_all:
            continue
        lines.append(f"{module}: {len(members) - len(missing)}/{len(members)}")
        lines.extend(f"  {e.kind} {e.name or '(module docstring)'}" for e in missing)
    return lines


def main(argv: list[str]) -> int:
    """Print the report for the package directory in ``argv`` (default src/headwater)."""
    show_all = "--all" in argv
    paths = [a for a in argv if a != "--all"]
    root = Path(paths[0]) if paths else DEFAULT_ROOT
    print("\n".join(report(entries(root), show_all)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
