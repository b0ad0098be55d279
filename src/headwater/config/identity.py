"""``[identity]``: one person's names across sources, from a table, a file and a query.

The section's keys are checked here; the file named by ``aliases_file`` is read once at
load (``identity_problems``), relative to the config's folder, so a bad row is a config
error naming the file and line before anything runs. At search time the alias source
(``search.alias_source``) re-reads the file when it changes.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from headwater.errors import ConfigError
from headwater.search.alias_file import read_alias_file
from headwater.search.alias_source import check_url
from headwater.search.aliases import AliasEntry, IdentityAliases
from headwater.units import check_duration


class IdentitySection(BaseModel):
    """``[identity]``: ``aliases = { ALIAS = USER }``, ``aliases_file`` (CSV rows of
    ``alias,user``) and ``query`` (with ``url``) reading more rows at search time."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    aliases: dict[str, str] = {}
    aliases_file: str | None = Field(default=None, min_length=1)
    query: str | None = Field(default=None, min_length=1)
    url: SecretStr | None = None
    cache_ttl: str = "1m"

    @field_validator("url")
    @classmethod
    def _url(cls, url: SecretStr | None) -> SecretStr | None:
        if url is not None:
            check_url(url.get_secret_value())
        return url

    @field_validator("cache_ttl")
    @classmethod
    def _ttl(cls, value: str) -> str:
        check_duration(value)
        return value

    @model_validator(mode="after")
    def _both(self) -> IdentitySection:
        if (self.query is None) != (self.url is None):
            given, missing = ("query", "url") if self.url is None else ("url", "query")
            raise ValueError(
                f"[identity] has `{given}` without `{missing}`; expected both (the SQL "
                "that answers rows of (alias, user), and the database URL it runs on) or "
                f"neither; add `{missing}`"
            )
        return self

    @field_validator("aliases")
    @classmethod
    def _checked(cls, aliases: dict[str, str]) -> dict[str, str]:
        try:
            IdentityAliases.from_table(aliases)
        except ConfigError as exc:  # collected with every other problem
            raise ValueError(str(exc)) from None
        return aliases

    def file_path(self, root: Path) -> Path | None:
        """``aliases_file`` resolved against the config's folder ``root`` (None: unset)."""
        if self.aliases_file is None:
            return None
        path = Path(self.aliases_file).expanduser()
        return path if path.is_absolute() else (root / path).resolve()


def identity_problems(section: IdentitySection, root: Path) -> list[str]:
    """What is wrong with ``aliases_file`` (read now) and with it beside the table: each
    problem names the file and line."""
    path = section.file_path(root)
    if path is None:
        return []
    try:
        entries = read_alias_file(path)
        table = [AliasEntry(a, u) for a, u in section.aliases.items()]
        IdentityAliases.from_entries([*table, *entries])
    except ConfigError as exc:
        return str(exc).splitlines()
    return []
