"""``[events]``: where change events go out (NATS JetStream or a signed webhook).

Absent, no event is recorded at all. ``type = "nats"`` publishes to a JetStream stream
(``url``, ``stream``, ``subject_prefix``, each with a documented default);
``type = "webhook"`` POSTs each event to ``url``, signed with ``secret`` (HMAC-SHA256).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, SecretStr, field_validator, model_validator

NATS_URL = "nats://127.0.0.1:4222"
SUBJECT_TOKENS = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")
STREAM_NAME = re.compile(r"^[A-Za-z0-9_-]{1,200}$")


class EventsSection(BaseModel):
    """``[events]``: ``type`` (``nats`` or ``webhook``), ``url``; for NATS ``stream`` and
    ``subject_prefix``, for a webhook ``secret``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["nats", "webhook"]
    url: str | None = None
    stream: str = "HEADWATER"
    subject_prefix: str = "headwater"
    secret: SecretStr | None = None

    @field_validator("stream")
    @classmethod
    def _stream(cls, value: str) -> str:
        if not STREAM_NAME.match(value):
            raise ValueError(
                f"stream {value!r} is not a JetStream stream name; expected letters, digits, "
                "'_' or '-' (no dots, spaces or wildcards), e.g. HEADWATER"
            )
        return value

    @field_validator("subject_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if not SUBJECT_TOKENS.match(value):
            raise ValueError(
                f"subject_prefix {value!r} is not a NATS subject prefix; expected tokens of "
                "letters, digits, '_' or '-' joined by dots, e.g. headwater or acme.search"
            )
        return value

    @model_validator(mode="after")
    def _by_type(self) -> EventsSection:
        if self.type == "webhook":
            if not self.url or not self.url.startswith(("http://", "https://")):
                raise ValueError(
                    f"url {self.url!r} is not a webhook address; a webhook needs "
                    'url = "https://host/path" (http:// or https://)'
                )
            if self.secret is None or not self.secret.get_secret_value():
                raise ValueError(
                    "a webhook needs a secret to sign its events with; set "
                    'secret = "${HEADWATER_EVENTS_SECRET}" in [events]'
                )
        elif self.url is not None and not self.url.startswith(("nats://", "tls://")):
            raise ValueError(
                f"url {self.url!r} is not a NATS server address; expected nats://host:port "
                f"(default {NATS_URL})"
            )
        return self

    @property
    def address(self) -> str:
        """The URL events go to (the NATS default when none is set)."""
        return self.url or NATS_URL
