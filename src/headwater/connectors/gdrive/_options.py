"""The keys of a ``gdrive`` source (docs/connectors/gdrive.md)."""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field, field_validator

from headwater.connectors._bearer import BearerApiOptions
from headwater.connectors.gdrive._channels import MAX_LIFETIME
from headwater.units import parse_duration


class GdriveOptions(BearerApiOptions):
    """The keys of a ``gdrive`` source."""

    shared_drives: list[str] = Field(default_factory=list)
    base_url: str = Field(default="https://www.googleapis.com", pattern=r"^https?://")
    page_size: int = Field(default=100, ge=1, le=1000)
    max_object_bytes: int = Field(default=50 * 1024 * 1024, gt=0)
    groups_domain: str | None = Field(default=None, pattern=r"^[A-Za-z0-9.-]+\.[A-Za-z]+$")
    directory_url: str = Field(default="https://admin.googleapis.com", pattern=r"^https?://")
    # the lifetime asked for each push channel (with the source's `notification_url`);
    # Drive allows at most a week on the changes resource
    subscription_lifetime: str = "7d"

    @field_validator("subscription_lifetime")
    @classmethod
    def _lifetime(cls, value: str) -> str:
        lifetime = parse_duration(value)
        if lifetime is None or not timedelta(minutes=1) <= lifetime <= MAX_LIFETIME:
            raise ValueError(
                f"subscription_lifetime {value!r} is outside what Drive grants; expected a "
                'duration from "1m" to "7d"; fix `subscription_lifetime`'
            )
        return value

    def lifetime(self) -> timedelta:
        """``subscription_lifetime`` as a duration."""
        return parse_duration(self.subscription_lifetime) or MAX_LIFETIME
