"""List the longest modules and functions of ``src/headwater``, for the size bounds.

A module counts its lines; a function (or method) counts from its ``def`` (decorators
excluded) to its last line, docstring included, as ``ast`` gives them. Prints every
function over ``--limit`` lines (60 by default) and the ``--top`` longest modules, longest
first, as ``lines path[:line name]``.

Run: ``python scripts/long_code.py [--limit 60] [--top 10]``.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "headwater"


def long_functions(root: Path, limit: int) -> list[tuple[int, str]]:
    """``(lines, "path:line name")`` of each function in ``root`` over ``limit`` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    where = f"{path.relative_to(root.parent.parent)}:{node.lineno} {node.name}"
                    found.append((lines, where))
    return sorted(found, reverse=True)


def long_modules(root: Path, top: int) -> list[tuple[int, str]]:
    """``(lines, path)`` of the ``top`` longest modules in ``root``."""
    sizes = [
        (len(p.read_text(encoding="utf-8").splitlines()), str(p.relative_to(root.parent.parent)))
        for p in root.rglob("*.py")
    ]
    return sorted(sizes, reverse=True)[:top]


def main(argv: list[str] | None = None) -> int:
    """Print the long functions and the longest modules."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=60)
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args(argv)
    functions = long_functions(ROOT, args.limit)
    print(f"functions over {args.limit} lines: {len(functions)}")
    for lines, where in functions:
        print(f"  {lines:4} {where}")
    print(f"longest {args.top} modules:")
    for lines, where in long_modules(ROOT, args.top):
        print(f"  {lines:4} {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
