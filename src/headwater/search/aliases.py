"""One identity across sources: ``[identity] aliases`` map each alias to one canonical user.

Sources name one person differently (``ann@corp.onmicrosoft.com`` in SharePoint,
``ann@corp.com`` in Confluence, ``github:ann`` where only a login is known). The aliases
table says which names are the same person; a search by any of them runs as all of them
(every name's user principal, every name's synced groups). Aliases are read at search
time, like group memberships, so changing them never re-reads a source. Every name is
normalized as ACLs are (``normalize_identity``: validated, then lowercased). Each alias
remembers where it was given (the table, a line of ``aliases_file``, the query), so
``whois`` can say why a name is someone's and an error names the place to fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from headwater.errors import ConfigError
from headwater.types import normalize_identity

TABLE = "[identity] aliases"
"""Where an alias of the config's table was given."""


@dataclass(frozen=True)
class AliasEntry:
    """One ``alias = user`` pair as given, and where (``origin``: shown and named in errors)."""

    alias: str
    user: str
    origin: str = TABLE


@dataclass(frozen=True)
class IdentityAliases:
    """Alias → canonical user, normalized; a canonical user is never itself an alias.

    ``origin_of`` says where each alias was given; ``error`` says why aliases that should
    be here are not (a failed ``[identity] query`` or an unreadable ``aliases_file``: see
    ``alias_source``)."""

    canonical_of: Mapping[str, str] = field(default_factory=dict)
    error: str | None = None
    origin_of: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_table(cls, table: Mapping[str, str]) -> IdentityAliases:
        """The ``[identity] aliases`` table, checked: every problem in one ``ConfigError``."""
        return cls.from_entries(AliasEntry(a, u) for a, u in table.items())

    @classmethod
    def from_entries(cls, entries: Iterable[AliasEntry]) -> IdentityAliases:
        """Aliases from any origins, checked together (one canonical user per alias, no
        alias of an alias): every problem, named by its origin, in one ``ConfigError``."""
        found: dict[str, str] = {}
        origin: dict[str, str] = {}
        problems: list[str] = []
        for entry in entries:
            try:
                name, canonical = (
                    normalize_identity(entry.alias, "user"),
                    normalize_identity(entry.user, "user"),
                )
            except ConfigError as exc:
                problems.append(f"{entry.origin}: {exc}")
                continue
            if name == canonical:
                continue  # a name is always itself
            if found.get(name, canonical) != canonical:
                problems.append(
                    f"{entry.origin}: {entry.alias!r} is given for both {found[name]!r} "
                    f"({origin[name]}) and {entry.user!r}; expected one canonical user per "
                    "alias; keep one"
                )
                continue
            found[name] = canonical
            origin.setdefault(name, entry.origin)
        for name, canonical in sorted(found.items()):
            if canonical in found:
                problems.append(
                    f"{origin[name]}: {name!r} maps to {canonical!r}, which is itself an "
                    f"alias of {found[canonical]!r} ({origin[canonical]}); expected aliases "
                    f"to name the canonical user directly; map {name!r} to "
                    f"{found[canonical]!r}"
                )
        if problems:
            raise ConfigError("\n".join(problems))
        return cls(found, origin_of=origin)

    def identities_of(self, user: str) -> tuple[str, tuple[str, ...]]:
        """The canonical name of a normalized ``user`` and its other names, sorted."""
        canonical = self.canonical_of.get(user, user)
        others = {a for a, c in self.canonical_of.items() if c == canonical} - {canonical}
        return canonical, tuple(sorted(others))
