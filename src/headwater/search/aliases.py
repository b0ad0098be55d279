"""One identity across sources: ``[identity] aliases`` map each alias to one canonical user.

Sources name one person differently (``ann@corp.onmicrosoft.com`` in SharePoint,
``ann@corp.com`` in Confluence, ``github:ann`` where only a login is known). The aliases
table says which names are the same person; a search by any of them runs as all of them
(every name's user principal, every name's synced groups). Aliases are read at search
time, like group memberships, so changing them never re-reads a source. Every name is
normalized as ACLs are (``normalize_identity``: validated, then lowercased).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from headwater.errors import ConfigError
from headwater.types import normalize_identity


@dataclass(frozen=True)
class IdentityAliases:
    """Alias → canonical user, normalized; a canonical user is never itself an alias.

    ``error`` says why aliases that should be here are not (a failed ``[identity] query``:
    these are the table's only, see ``alias_source``)."""

    canonical_of: Mapping[str, str] = field(default_factory=dict)
    error: str | None = None

    @classmethod
    def from_table(cls, table: Mapping[str, str]) -> IdentityAliases:
        """The ``[identity] aliases`` table, checked: every problem in one ``ConfigError``."""
        found: dict[str, str] = {}
        problems: list[str] = []
        for alias, user in table.items():
            try:
                name, canonical = (
                    normalize_identity(alias, "user"),
                    normalize_identity(user, "user"),
                )
            except ConfigError as exc:
                problems.append(f"[identity] aliases: {exc}")
                continue
            if name == canonical:
                continue  # a name is always itself
            if found.get(name, canonical) != canonical:
                problems.append(
                    f"[identity] aliases: {alias!r} is given for both {found[name]!r} and "
                    f"{user!r}; expected one canonical user per alias; keep one"
                )
                continue
            found[name] = canonical
        for name, canonical in sorted(found.items()):
            if canonical in found:
                problems.append(
                    f"[identity] aliases: {name!r} maps to {canonical!r}, which is itself an "
                    f"alias of {found[canonical]!r}; expected aliases to name the canonical "
                    f"user directly; map {name!r} to {found[canonical]!r}"
                )
        if problems:
            raise ConfigError("\n".join(problems))
        return cls(found)

    def identities_of(self, user: str) -> tuple[str, tuple[str, ...]]:
        """The canonical name of a normalized ``user`` and its other names, sorted."""
        canonical = self.canonical_of.get(user, user)
        others = {a for a, c in self.canonical_of.items() if c == canonical} - {canonical}
        return canonical, tuple(sorted(others))
