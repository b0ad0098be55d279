"""One mutation pin: a named text patch that breaks one guard, and the tests that kill it.

``old`` → ``new`` in ``file`` (which must match exactly once); ``killers`` are the pytest
node ids that fail because of it, cheapest first (``scripts/mutants.py`` stops at the
first failure). The pins are listed in ``mutant_list`` and ``mutant_list_access``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str
    old: str
    new: str
    killers: tuple[str, ...]
