"""The tables of ``headwater.toml`` as frozen pydantic models, one per section.

Each model checks its own keys (types, ranges, durations, sizes, identities) and
forbids unknown ones; a source's and an index's plugin options are left as extras, for
``config.load`` to validate against the plugin's ``Options``. ``HeadwaterConfig`` is the
whole file.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from headwater.config.events import EventsSection
from headwater.config.identity import IdentitySection
from headwater.config.parsing import HookSection as HookSection  # re-exported
from headwater.config.parsing import ParseSection as ParseSection  # re-exported
from headwater.config.ratelimit import RateLimitSection
from headwater.config.service import (
    ApiSection,
    ExecutorSection,
    SchedulerSection,
)
from headwater.config.strict import Strict, check_interval, check_retention
from headwater.errors import ConfigError
from headwater.manifest.content_s3 import S3Location
from headwater.pipeline.embed.registry import available_embedder_types
from headwater.ratelimit import Rate, parse_rates
from headwater.sync.rules import RuleSet
from headwater.types import Access, normalize_identity
from headwater.units import parse_size


class WorkspaceSection(Strict):
    """``[workspace]``: the tenant name and where the state directory is."""

    tenant: str = Field(min_length=1)
    state_dir: str = ".headwater"


class ManifestSection(Strict):
    """``[manifest]``: the manifest's database URL (None: a SQLite file in the state directory)."""

    url: str | None = None


class ContentSection(Strict):
    """``[content]``: where normalized text is stored (no ``url``: the folder
    ``state_dir/content``; ``url = "s3://bucket/prefix"``: S3-compatible object storage,
    shared by every host)."""

    url: str | None = None
    endpoint_url: str | None = None
    region: str | None = None
    access_key_id: SecretStr | None = None
    secret_access_key: SecretStr | None = None
    session_token: SecretStr | None = None
    addressing_style: Literal["auto", "path", "virtual"] = "auto"

    @field_validator("url")
    @classmethod
    def _object_storage_url(cls, url: str | None) -> str | None:
        if url is not None:
            try:
                S3Location.parse(url)
            except ConfigError as exc:  # collected with every other problem
                raise ValueError(str(exc)) from None
        return url

    @model_validator(mode="after")
    def _keys_need_a_url(self) -> ContentSection:
        if self.url is None:
            given = [
                key
                for key in ("endpoint_url", "region", "access_key_id", "secret_access_key")
                if getattr(self, key) is not None
            ]
            if given:
                raise ValueError(
                    f"[content] sets {', '.join(given)} but no `url`; expected "
                    'url = "s3://BUCKET/PREFIX" with them; add it, or remove them to keep '
                    "the content store in state_dir/content"
                )
        if (self.access_key_id is None) != (self.secret_access_key is None):
            raise ValueError(
                "[content]: only one of `access_key_id`/`secret_access_key` is set; expected "
                "both or neither (then the AWS credential chain is used); set the other one"
            )
        return self


class AccessSection(Strict):
    """A source's ``access``: the users, groups or public that may read all of its documents."""

    users: list[str] = []
    groups: list[str] = []
    public: bool = False

    @field_validator("users", "groups")
    @classmethod
    def _identities(cls, values: list[str], info: ValidationInfo) -> list[str]:
        kind: Literal["user", "group"] = "user" if info.field_name == "users" else "group"
        for n, value in enumerate(values):
            try:
                normalize_identity(value, kind)
            except ConfigError as exc:
                raise ValueError(f"[{n}]: {exc}") from exc
        return values

    def to_access(self) -> Access:
        """This section as an ``Access``, users normalized and both lists sorted."""
        return Access(
            users=tuple(sorted(normalize_identity(u, "user") for u in self.users)),
            groups=tuple(sorted(self.groups)),
            public=self.public,
        )


WATCHABLE = frozenset({"filesystem", "imap"})  # source types with a watcher (`watch = true`)
SUBSCRIBING = frozenset({"gdrive", "sharepoint"})  # types whose subscriptions Headwater renews


class SourceSection(BaseModel):
    """The keys every source has; the rest are the connector's own options."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    type: str
    access: AccessSection | None = None
    refresh_every: str | None = None
    prune_every: str | None = None
    permissions_every: str | None = None  # `headwater sync --permissions` interval
    prune_max_fraction: float = Field(default=0.2, ge=0.0, le=1.0)
    batch_size: int = Field(default=64, ge=1, le=10_000)
    parse: ParseSection | None = None  # laid over the workspace's [parse]
    # [[source.hooks]]: this source's ingestion hooks, run after the workspace's
    # [[hooks]], or instead of them with workspace_hooks = false (docs/hooks.md)
    hooks: list[HookSection] = []
    workspace_hooks: bool = True
    # [[source.rules]]: ordered include/exclude rules, first match wins (sync.rules)
    rules: list[dict[str, Any]] = []

    @field_validator("rules")
    @classmethod
    def _rules(cls, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
        try:
            RuleSet.from_tables(rules)
        except ConfigError as exc:  # collected with every other problem
            raise ValueError(str(exc)) from None
        return rules

    def rule_set(self) -> RuleSet:
        """The source's sync rules, compiled."""
        return RuleSet.from_tables(self.rules)

    # Hints in (docs/live.md): a file watcher on the filesystem root (IMAP IDLE on an imap
    # source's mailboxes) while `headwater run` or `serve --with-scheduler` runs, and the
    # secret that authenticates the vendor's webhooks at POST /v1/hooks/{id} (a source
    # without one refuses every webhook).
    watch: bool = False
    webhook_secret: SecretStr | None = None
    # The public address of POST /v1/hooks/{id} for vendors whose subscriptions expire
    # (sharepoint: Graph subscriptions, gdrive: Drive push channels): the scheduler
    # creates them there and renews them before they expire (hints.subscriptions).
    notification_url: str | None = None
    # The rate-limit governor (docs/configuration.md): one rate ("10/s") or a list of
    # them (["10/s", "10000/day"]) in place of the vendor's documented default.
    rate_limit: str | list[str] | None = None

    @field_validator("rate_limit")
    @classmethod
    def _rate_limit(cls, value: str | list[str] | None) -> str | list[str] | None:
        if value is not None:
            parse_rates(value)  # its ValueError names the value and the form expected
        return value

    def rates(self) -> tuple[Rate, ...] | None:
        """The source's ``rate_limit`` as rates; None: the vendor's default."""
        return None if self.rate_limit is None else parse_rates(self.rate_limit)

    @field_validator("watch")
    @classmethod
    def _watchable(cls, value: bool, info: ValidationInfo) -> bool:
        kind = info.data.get("type")
        if value and kind not in WATCHABLE:
            raise ValueError(
                f"`watch = true` is for sources of type {sorted(WATCHABLE)}, not {kind!r}; "
                "remove `watch`, or use a webhook (`webhook_secret`) for this source"
            )
        return value

    @field_validator("notification_url")
    @classmethod
    def _notified(cls, value: str | None, info: ValidationInfo) -> str | None:
        kind = info.data.get("type")
        if value is None:
            return value
        if kind not in SUBSCRIBING:
            raise ValueError(
                f"`notification_url` is for sources of type {sorted(SUBSCRIBING)}, not "
                f"{kind!r}; remove it (other vendors' webhooks are set up at the vendor)"
            )
        if not value.startswith("https://"):
            raise ValueError(
                f"`notification_url` {value!r} is not an https:// URL; expected the public "
                "HTTPS address of POST /v1/hooks/<source id> (Graph and Drive deliver only "
                "over HTTPS); fix `notification_url`"
            )
        if info.data.get("webhook_secret") is None:
            raise ValueError(
                "`notification_url` needs `webhook_secret` (the subscription's clientState "
                'or channel token); add webhook_secret = "${ENV_VAR}"'
            )
        return value

    @field_validator("refresh_every", "prune_every", "permissions_every")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        return None if value is None else check_interval(value)

    def options(self) -> dict[str, Any]:
        """The connector's own options: the keys this model does not declare."""
        return dict(self.model_extra or {})


class IndexSection(BaseModel):
    """``[[index]]``: a named index of a sink type; the rest are the sink's own options."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
    type: str
    # How long a switched-away generation is kept for rollback before it is retired.
    keep_previous_for: str = "7d"

    @field_validator("keep_previous_for")
    @classmethod
    def _duration(cls, value: str) -> str:
        return check_retention(value)

    def options(self) -> dict[str, Any]:
        """The sink's own options: the keys this model does not declare."""
        return dict(self.model_extra or {})


class EmbedderSection(BaseModel):
    """``[embedder]``: its type, runtime and cache cap; the rest are the embedder's options."""

    model_config = ConfigDict(extra="allow", frozen=True)

    # An embedder type of the registry (headwater.pipeline.embed.registry).
    type: str = "local"
    # How the local model runs; part of its model id, so a change means re-indexing.
    runtime: Literal["onnx-int8", "onnx", "torch"] = "onnx-int8"
    # Cap of the embedding cache (bytes, or "2GB"); housekeeping evicts the least
    # recently used vectors above it. None: no cap. Not an embedder option.
    cache_max_bytes: int | None = Field(default=None, ge=0)

    @field_validator("cache_max_bytes", mode="before")
    @classmethod
    def _size(cls, value: object) -> object:
        return parse_size(value) if isinstance(value, str) else value

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        known = available_embedder_types()
        if value not in known:
            raise ValueError(f"embedder type {value!r} is not installed; expected one of {known}")
        return value

    def options(self) -> dict[str, Any]:
        """The embedder's own options: the keys this model does not declare."""
        return dict(self.model_extra or {})


class ChunkerSection(Strict):
    """``[chunker]``: the chunk size in tokens and the longest document text chunked."""

    max_tokens: int | None = Field(default=None, ge=16, le=8192)
    max_document_chars: int = Field(default=5_000_000, ge=1)


class SyncSection(Strict):
    """``[sync]``: retries, tombstone retention, index batch size and lease length."""

    attempts: int = Field(default=3, ge=1, le=20)
    run_attempts: int = Field(default=3, ge=1, le=20)
    tombstone_retention_days: int = Field(default=30, ge=0)
    index_batch_size: int = Field(default=32, ge=1, le=4096)
    lease_seconds: int = Field(default=60, ge=1, le=86_400)


class HeadwaterConfig(Strict):
    """The whole ``headwater.toml``, every table validated."""

    workspace: WorkspaceSection
    manifest: ManifestSection = ManifestSection()
    content: ContentSection = ContentSection()
    identity: IdentitySection = IdentitySection()
    embedder: EmbedderSection = EmbedderSection()
    chunker: ChunkerSection = ChunkerSection()
    parse: ParseSection = ParseSection()
    sync: SyncSection = SyncSection()
    scheduler: SchedulerSection = SchedulerSection()
    api: ApiSection = ApiSection()
    executor: ExecutorSection = ExecutorSection()
    ratelimit: RateLimitSection = RateLimitSection()
    events: EventsSection | None = None
    index: list[IndexSection] = []
    source: list[SourceSection] = []
    hooks: list[HookSection] = []

    @property
    def celery_broker(self) -> str | None:
        """The Celery broker URL when runs execute on Celery (else None)."""
        return self.executor.broker_url if self.executor.type == "celery" else None

    def source_by_id(self, source_id: str) -> SourceSection:
        """The source section with id ``source_id``, or ConfigError naming the configured ones."""
        for section in self.source:
            if section.id == source_id:
                return section
        known = ", ".join(s.id for s in self.source) or "none"
        raise ConfigError(
            f"source {source_id!r} is not configured; expected one of: {known}. "
            "Check the id or add a [[source]] table; to delete the documents of a source "
            "removed from the config, run `headwater source remove ID`."
        )
