"""``[ratelimit]``: where the rate-limit governor keeps its shared budgets.

``store = "auto"`` (the default) keeps them in Redis when there is one to share, the
``url`` given here or else a Celery broker at ``redis://``/``rediss://`` (workers on many
hosts then take requests from Redis, not from the manifest), and in the manifest
otherwise; ``"manifest"`` and ``"redis"`` choose explicitly. ``redis_url`` resolves the
choice; a ``redis`` store without a Redis URL is a config error.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


class RateLimitSection(BaseModel):
    """``[ratelimit]``: ``store`` (auto, manifest or redis), its Redis ``url`` and the
    ``key_prefix`` of the budgets' keys there."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    store: Literal["auto", "manifest", "redis"] = "auto"
    url: SecretStr | None = None
    key_prefix: str = Field(default="headwater:ratelimit:", min_length=1, max_length=200)

    @field_validator("url")
    @classmethod
    def _redis(cls, url: SecretStr | None) -> SecretStr | None:
        if url is not None and not url.get_secret_value().startswith(REDIS_SCHEMES):
            raise ValueError(
                "[ratelimit] url is not a Redis URL (not shown: it may hold a secret); "
                "expected redis://HOST:6379/0, rediss://… or unix://…; fix it"
            )
        return url


def redis_url(section: RateLimitSection, broker_url: str | None) -> str | None:
    """The Redis URL the budgets live at (None: the manifest), from ``section`` and the
    Celery broker URL when ``[executor] type = "celery"`` (else None)."""
    if section.store == "manifest":
        return None
    if section.url is not None:
        return section.url.get_secret_value()
    if broker_url is not None and broker_url.startswith(REDIS_SCHEMES):
        return broker_url
    return None


def ratelimit_problems(section: RateLimitSection, broker_url: str | None) -> list[str]:
    """A ``redis`` store with no Redis to use."""
    if section.store == "redis" and redis_url(section, broker_url) is None:
        return [
            '[ratelimit] store = "redis" but no Redis URL: expected `url` in [ratelimit] or '
            'an [executor] type = "celery" with a redis:// broker_url; add `url`'
        ]
    return []
