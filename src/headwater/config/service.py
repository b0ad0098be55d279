"""The tables of the long-running processes: ``[scheduler]`` (``headwater run``),
``[api]`` (``headwater serve``) and ``[executor]`` (where runs execute: this process,
Celery or NATS workers). The checks that span tables live in ``config.rules``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, field_validator

from headwater.config.strict import Strict, check_interval, check_retention
from headwater.units import parse_size


class SchedulerSection(Strict):
    """``[scheduler]``: ``headwater run``'s concurrency, backoff and retention."""

    max_concurrent: int = Field(default=2, ge=1, le=64)
    failure_backoff: str = "1m"
    backoff_max: str = "1h"
    keep_runs_for: str = "30d"
    refresh_every: str = "1h"

    @field_validator("failure_backoff", "backoff_max", "refresh_every")
    @classmethod
    def _interval(cls, value: str) -> str:
        return check_interval(value)

    @field_validator("keep_runs_for")
    @classmethod
    def _duration(cls, value: str) -> str:
        return check_retention(value)


class ApiPrincipals(Strict):
    """The users and groups an API key searches as."""

    users: list[str] = []
    groups: list[str] = []


class ApiKeySection(Strict):
    """``[[api.keys]]``: one bearer key of ``headwater serve`` (see docs/api.md)."""

    name: str = Field(min_length=1)
    secret: SecretStr
    role: Literal["search", "ingest", "admin"]
    principals: ApiPrincipals | None = None
    assert_principals: bool = False
    sources: list[str] = []  # the push sources an ingest key may write to (none by default)

    @field_validator("secret")
    @classmethod
    def _long_enough(cls, value: SecretStr) -> SecretStr:
        if len(value.get_secret_value()) < 16:
            raise ValueError("an API key secret needs at least 16 characters; use a random one")
        return value


class ApiSection(Strict):
    """``[api]``: the HTTP service's keys, the largest push request body it reads, push
    sessions' timeout, how often the admin charts are sampled and how many searches a
    worker runs at once."""

    keys: list[ApiKeySection] = []
    max_push_bytes: int = Field(default=64 * 1024 * 1024, ge=1024, le=2**31)
    # Searches one worker runs at once; the rest wait in arrival order (api/search_pool.py):
    # 0 runs them on the event loop's thread; "auto" picks 0 or 2 from what a search waits on.
    search_threads: int | Literal["auto"] = Field(default="auto", ge=0, le=256)
    # A full-replace push session nothing touched for this long expires (deletes nothing).
    push_session_timeout: str = "1h"
    chart_sample_every: str = "30s"  # the admin charts' indexing, backlog and search samples

    @field_validator("push_session_timeout", "chart_sample_every")
    @classmethod
    def _timeout(cls, value: str) -> str:
        return check_interval(value)

    @field_validator("max_push_bytes", mode="before")
    @classmethod
    def _size(cls, value: object) -> object:
        return parse_size(value) if isinstance(value, str) else value


class ExecutorQueues(Strict):
    """The Celery queue names for source runs and for index batches."""

    sync: str = Field(default="headwater.sync", min_length=1)
    index: str = Field(default="headwater.index", min_length=1)


class ExecutorSection(Strict):
    """``[executor]``: where runs execute: ``local`` (this process), ``celery`` workers, or
    ``nats`` workers on a JetStream work-queue stream (``url``, ``stream``,
    ``subject_prefix``, ``max_deliver``, ``ack_wait``; checked in ``rules``)."""

    type: Literal["local", "celery", "nats"] = "local"
    broker_url: str | None = None
    result_backend: str | None = None
    queues: ExecutorQueues = ExecutorQueues()
    visibility_timeout: int = Field(default=3600, ge=1, le=7 * 86_400)
    claim_seconds: int = Field(default=300, ge=1, le=86_400)
    max_retries: int = Field(default=3, ge=0, le=100)
    index_tasks: int = Field(default=4, ge=1, le=1024)
    url: str | None = None  # nats: the server (default nats://127.0.0.1:4222)
    stream: str = "HEADWATER_RUNS"
    subject_prefix: str = "headwater_runs"
    max_deliver: int = Field(default=5, ge=1, le=1000)
    ack_wait: float = Field(default=60.0, ge=1.0, le=86_400.0)
