"""The keys of a ``gitlab`` source: the projects, what to read of them, and patience."""

from __future__ import annotations

from pydantic import Field, field_validator

from headwater.connectors._bearer import BearerApiOptions
from headwater.errors import ConfigError
from headwater.units import parse_duration


class GitlabOptions(BearerApiOptions):
    """The keys of a ``gitlab`` source."""

    projects: list[str] = Field(min_length=1)
    base_url: str = Field(default="https://gitlab.com", pattern=r"^https?://")
    identity_kind: str = Field(default="gitlab", pattern=r"^[a-z][a-z0-9-]*$")
    branch: str | None = None  # None: each project's default branch
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    include_files: bool = True
    include_issues: bool = True
    include_merge_requests: bool = True
    include_wiki: bool = False
    include_comments: bool = True
    internal_as_public: bool = False
    window_overlap: str = "1m"
    page_size: int = Field(default=100, ge=1, le=100)

    @field_validator("projects")
    @classmethod
    def _paths(cls, value: list[str]) -> list[str]:
        bad = [p for p in value if "/" not in p or not all(p.split("/")) or "/-/" in p]
        if bad:
            raise ValueError(
                f"projects {bad} are not full project paths; expected e.g. 'group/sub/app'"
            )
        return value

    @field_validator("window_overlap")
    @classmethod
    def _duration(cls, value: str) -> str:
        try:
            parse_duration(value)
        except (ValueError, ConfigError) as exc:
            raise ValueError(f'window_overlap {value!r} is not a duration, e.g. "1m"') from exc
        return value
