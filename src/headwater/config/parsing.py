"""The tables that say how files are read: ``[parse]`` (what a file is, by extension; time
budget, OCR, metadata-only documents on failure), per workspace and laid over per source,
and ``[[hooks]]`` (the ingestion hooks run on a normalized document, docs/hooks.md)."""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from headwater.config.strict import Strict
from headwater.pipeline.parse import SUPPORTED_MEDIA_TYPES, ParseOptions
from headwater.units import MIN_INTERVAL, check_duration


class ParseSection(Strict):
    """``[parse]`` (workspace) or a source's ``parse``: what its files are, by extension.

    ``text_extensions`` are read as plain text; ``media_types`` gives an extension the
    media type of a supported format (``".tpl" = "text/html"``). A source's lists add to
    the workspace's, its mapping overrides the workspace's per extension.
    """

    text_extensions: list[str] = []
    media_types: dict[str, str] = {}
    time_budget: str | None = None  # default 60s; a source's wins
    metadata_only_on_failure: bool | None = None  # default true; a source's wins
    ocr: bool | None = None  # default false; a source's wins
    ocr_language: str | None = Field(default=None, pattern=r"^[A-Za-z_]+(\+[A-Za-z_]+)*$")

    @field_validator("time_budget")
    @classmethod
    def _budget(cls, value: str | None) -> str | None:
        if value is not None:
            check_duration(value, MIN_INTERVAL)  # raises naming the value and the range
        return value

    @field_validator("text_extensions")
    @classmethod
    def _extensions(cls, values: list[str]) -> list[str]:
        return [_extension(value) for value in values]

    @field_validator("media_types")
    @classmethod
    def _media_types(cls, values: dict[str, str]) -> dict[str, str]:
        checked: dict[str, str] = {}
        for key, value in values.items():
            mime = value.split(";")[0].strip().lower()
            if mime not in SUPPORTED_MEDIA_TYPES:
                raise ValueError(
                    f"{key!r} = {value!r}: not the media type of a supported format; "
                    f"expected one of {', '.join(sorted(SUPPORTED_MEDIA_TYPES))}"
                )
            checked[_extension(key)] = value
        return checked

    def options(self, override: ParseSection | None = None) -> ParseOptions:
        """This section's options, with a source's ``override`` laid over them."""
        extensions = set(self.text_extensions)
        media_types = dict(self.media_types)
        if override is not None:
            extensions |= set(override.text_extensions)
            media_types |= override.media_types
        budget = (override.time_budget if override else None) or self.time_budget
        on_failure = override.metadata_only_on_failure if override else None
        if on_failure is None:
            on_failure = self.metadata_only_on_failure
        seconds = check_duration(budget, MIN_INTERVAL) if budget else None
        return ParseOptions(
            text_extensions=frozenset(extensions),
            media_types=media_types,
            time_budget_s=seconds.total_seconds() if seconds else ParseOptions.time_budget_s,
            metadata_only_on_failure=True if on_failure is None else on_failure,
            ocr=bool(_laid(self.ocr, override.ocr if override else None)),
            ocr_language=_laid(self.ocr_language, override.ocr_language if override else None)
            or "eng",
        )


_T = TypeVar("_T")


def _laid(workspace: _T, source: _T | None) -> _T:
    """A source's setting when it sets one, else the workspace's."""
    return workspace if source is None else source


def _extension(value: str) -> str:
    if not re.fullmatch(r"\.[A-Za-z0-9_+-][A-Za-z0-9_.+-]*", value):
        raise ValueError(
            f"{value!r} is not a file extension; expected a dot and letters, e.g. '.conf'"
        )
    return value.lower()


class HookSection(BaseModel):
    """One ``[[hooks]]`` entry: the hook's name (an entry point of ``headwater.hooks``)
    and its options (every other key), run in the order given (docs/hooks.md)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str = Field(min_length=1)

    def options(self) -> dict[str, Any]:
        """The hook's own options: the keys this model does not declare."""
        return dict(self.model_extra or {})
