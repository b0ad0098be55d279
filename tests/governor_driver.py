"""A real process spending a shared rate-limit budget, for the governor tests.

``python tests/governor_driver.py STORE_URL BASE_URL TOKEN SOURCE_ID RATE COUNT DIR``
opens the budgets' store (a manifest URL, or ``redis://…#PREFIX``: the Redis budgets
under that key prefix), builds the source's ``SharedGovernor`` (``RATE`` is its
``rate_limit``, "-" for none) and a ``BearerClient`` sending through the governed
transport, writes ``DIR/SOURCE_ID.ready``, waits until ``DIR/SOURCE_ID.go`` exists, then
sends ``COUNT`` GETs of ``/v1/users/me`` (one try each) and writes what each got, with
when it was sent, to ``DIR/SOURCE_ID.json``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from headwater.connectors._bearer import BearerClient
from headwater.connectors._governed import GovernedTransport
from headwater.errors import TransientError
from headwater.manifest.store import Manifest
from headwater.ratelimit import RateStore, SharedGovernor, parse_rates
from headwater.ratelimit_redis import RedisRateLedger
from headwater.retry import RetryPolicy


def main(argv: list[str]) -> int:
    url, base_url, token, source_id, rate, count, where = argv
    folder = Path(where)
    manifest: Manifest | None = None
    store: RateStore
    if url.startswith("redis://"):
        address, _, prefix = url.partition("#")
        store = RedisRateLedger(address, prefix=prefix)
    else:
        manifest = Manifest.open(url)
        store = manifest.rates
    override = None if rate == "-" else parse_rates(rate)
    governor = SharedGovernor(store, source_id, override)
    transport = GovernedTransport(governor.bind("notion", token))
    client = BearerClient(
        "Notion", base_url, token, timeout=10.0, user_agent="governor-test",
        policy=RetryPolicy(attempts=1), transport=transport,
    )  # fmt: skip
    (folder / f"{source_id}.ready").touch()
    go = folder / f"{source_id}.go"
    while not go.exists():
        time.sleep(0.01)
    results: list[dict[str, object]] = []
    for _ in range(int(count)):
        try:
            status = client.get("/v1/users/me").status_code
        except TransientError:
            status = 429
        results.append({"status": status, "done_at": time.time()})
    (folder / f"{source_id}.json").write_text(json.dumps(results))
    client.close()
    if manifest is not None:
        manifest.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
