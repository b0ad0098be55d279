"""Which store the rate-limit governor's budgets live in, chosen once from the config.

The manifest's ``rate_limits`` rows (``manifest.throttles``) unless ``[ratelimit]`` (or a
Celery broker at ``redis://``) names a Redis (``ratelimit_redis``, imported only then).
"""

from __future__ import annotations

from headwater.config import HeadwaterConfig
from headwater.config.ratelimit import redis_url
from headwater.manifest.store import Manifest
from headwater.ratelimit import RateStore


def open_rate_store(config: HeadwaterConfig, manifest: Manifest) -> RateStore:
    """The budgets' store for ``config``: Redis when it names one, else the manifest."""
    url = redis_url(config.ratelimit, config.celery_broker)
    if url is None:
        return manifest.rates
    from headwater.ratelimit_redis import RedisRateLedger

    return RedisRateLedger(url, prefix=config.ratelimit.key_prefix, tenant=config.workspace.tenant)
