"""Fixtures for the slack connector: a fake Slack Web API (tests/fakes/slack)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes.slack import FakeSlack


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        fake.user("U1", "ann@acme.com")
        fake.user("U2", "bob@acme.com")
        fake.user("U3", "cy@acme.com")
        fake.user("UB", "bot@acme.com", bot=True)
        fake.channel("C1", "general", ["U1", "U2", "U3"])
        fake.channel("C2", "secret", ["U1", "U2"], private=True)
        fake.post("C1", "U1", "Good morning, general.")
        fake.post("C1", "U2", "Morning! The deploy is at noon.")
        root = fake.post("C1", "U1", "Who owns the billing service?")
        fake.reply("C1", root, "U2", "Team Payments does.")
        fake.reply("C1", root, "U3", "Ask Dana on Payments.")
        fake.post("C1", "U3", "Tomorrow's standup is moved.", day=1)
        fake.post("C2", "U1", "The merger closes Friday.")
        secret = fake.post("C2", "U2", "Draft of the announcement?")
        fake.reply("C2", secret, "U1", "Attached in the drive.")
        yield fake
