"""The governor's rules as pure functions: rates as written, the bucket, vendor answers."""

from __future__ import annotations

import httpx
import pytest

from headwater.config.sections import SourceSection
from headwater.connectors._governed import throttle_wait
from headwater.ratelimit import (
    Rate,
    block,
    credential_key,
    parse_rate,
    parse_rates,
    rates_for,
    reserve,
)


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("10/s", Rate(10, 1)),
        (" 600 / min ", Rate(600, 60)),
        ("5000/h", Rate(5000, 3600)),
        ("10000/day", Rate(10000, 86400)),
        ("0.5/s", Rate(0.5, 1)),
    ],
)
def test_rates_as_written(text: str, rate: Rate) -> None:
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text", ["10", "10/sec", "0/s", "-1/s", "ten/s", "10/s/s", ""])
def test_a_malformed_rate_names_the_value_and_the_form(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected a positive count per period, e\.g\. '10/s'"):
        parse_rate(text)


def test_a_list_of_rates_and_its_errors() -> None:
    assert parse_rates(["10/s", "10000/day"]) == (Rate(10, 1), Rate(10000, 86400))
    with pytest.raises(ValueError, match="one period twice"):
        parse_rates(["10/s", "20/s"])
    with pytest.raises(ValueError, match="empty list"):
        parse_rates([])


def test_rate_limit_is_checked_when_the_config_loads() -> None:
    section = SourceSection.model_validate({"id": "n", "type": "notion", "rate_limit": "3/s"})
    assert section.rates() == (Rate(3, 1),)
    with pytest.raises(ValueError, match="'fast' is not a rate"):
        SourceSection.model_validate({"id": "n", "type": "notion", "rate_limit": "fast"})


def test_a_per_second_rate_spaces_requests_evenly() -> None:
    rate = [Rate(4, 1)]
    tats: dict[int, float] = {}
    starts = []
    for _ in range(6):  # six requests asked for at the same moment
        reservation = reserve(tats, 0.0, rate, now=100.0)
        tats = dict(reservation.tats)
        starts.append(reservation.start)
    assert starts == [100.0, 100.25, 100.5, 100.75, 101.0, 101.25]


def test_a_daily_quota_bursts_up_to_its_count_then_refills() -> None:
    quota = [Rate(3, 86400)]
    tats: dict[int, float] = {}
    starts = []
    for _ in range(4):
        reservation = reserve(tats, 0.0, quota, now=0.0)
        tats = dict(reservation.tats)
        starts.append(reservation.start)
    assert starts == [0.0, 0.0, 0.0, 28800.0]  # the fourth waits for a third of a day


def test_the_slowest_rate_decides_and_a_block_comes_first() -> None:
    rates = [Rate(10, 1), Rate(2, 60)]
    first = reserve({}, 0.0, rates, now=0.0)
    second = reserve(first.tats, 0.0, rates, now=0.0)
    assert (first.start, second.start) == (0.0, 30.0)  # 2/min spaces them 30 s apart
    blocked = reserve({}, 50.0, rates, now=10.0)
    assert blocked.start == 50.0


def test_after_a_block_requests_resume_paced_not_in_a_burst() -> None:
    rates = [Rate(2, 1), Rate(100, 86400)]
    tats = block({}, 20.0, rates)
    starts = []
    for _ in range(3):
        reservation = reserve(tats, 20.0, rates, now=0.0)
        tats = dict(reservation.tats)
        starts.append(reservation.start)
    # the daily bucket is emptied too: it refills at 100/day, one per 864 s
    assert starts == [20.0, 884.0, 1748.0]


def test_vendor_defaults_apply_to_the_hosted_service_only() -> None:
    assert rates_for("notion", "api.notion.com", None) == (Rate(3, 1),)
    assert rates_for("zendesk", "acme.zendesk.com", None) == (Rate(200, 60),)
    assert rates_for("gitlab", "gitlab.example.org", None) == ()  # self-managed
    assert rates_for("notion", "127.0.0.1", (Rate(9, 1),)) == (Rate(9, 1),)
    assert rates_for("dropbox", "api.dropboxapi.com", None) == ()


def test_the_credential_key_is_a_hash_never_the_secret() -> None:
    key = credential_key("xoxb-secret")
    assert len(key) == 64 and "secret" not in key
    assert key == credential_key("xoxb-secret") != credential_key("xoxb-other")


def _answer(status: int, **headers: str) -> httpx.Response:
    return httpx.Response(status, headers={k.replace("_", "-"): v for k, v in headers.items()})


@pytest.mark.parametrize(
    ("response", "wait"),
    [
        (_answer(429, retry_after="7"), 7.0),
        (_answer(429), 1.0),  # no Retry-After: a short default block
        (_answer(503, retry_after="3"), 3.0),
        (_answer(503), None),  # a failing server, not a throttle
        (_answer(403, x_ratelimit_remaining="0", x_ratelimit_reset="1060"), 60.0),
        (_answer(403), None),  # a permission error
        (_answer(200), None),
    ],
)
def test_which_answers_block_the_credential(response: httpx.Response, wait: float | None) -> None:
    assert throttle_wait(response, now=1000.0) == wait
