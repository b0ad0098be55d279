"""``[executor] type = "nats"`` is checked when the config loads: every problem at once,
each naming the key, the value and the fix; the documented defaults hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.config import executor_warnings, load_config
from headwater.errors import ConfigError
from headwater.executor.nats_queue import RunMessage, consumer_config, source_of, subject_of
from workspace_helpers import filesystem_source, write_config

PG = "postgresql+psycopg://u@h/db"


def test_the_documented_defaults(tmp_path: Path) -> None:
    config = write_config(
        tmp_path, manifest_url=PG, sources=filesystem_source(tmp_path),
        extra='[executor]\ntype = "nats"\n',
    )  # fmt: skip
    loaded = load_config(config).config
    executor = loaded.executor
    assert (executor.url, executor.stream, executor.subject_prefix) == (
        None, "HEADWATER_RUNS", "headwater_runs",
    )  # fmt: skip
    assert (executor.max_deliver, executor.ack_wait) == (5, 60.0)
    consumer = consumer_config(executor)
    assert (consumer.ack_wait, consumer.max_deliver) == (60.0, -1)
    assert consumer.filter_subject == "headwater_runs.sync.>"
    (warning,) = executor_warnings(loaded)
    assert "every NATS worker must run on this one host" in warning


def test_bad_nats_keys_are_all_reported_at_once(tmp_path: Path) -> None:
    extra = (
        '[executor]\ntype = "nats"\nurl = "http://127.0.0.1:4222"\nstream = "my.runs"\n'
        'subject_prefix = "runs.*"\n'
    )
    config = write_config(
        tmp_path, manifest_url=None, sources=filesystem_source(tmp_path), extra=extra
    )
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    problems = caught.value.problems
    assert any(p.startswith("executor.url: '") and "nats://host:port" in p for p in problems)
    assert any(p.startswith("executor.stream: 'my.runs'") for p in problems)
    assert any(p.startswith("executor.subject_prefix: 'runs.*'") for p in problems)
    assert any("manifest.url" in p and "NATS workers" in p for p in problems)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [("max_deliver", "0", "greater than or equal to 1"), ("ack_wait", "0.5", "greater than")],
)
def test_limits_of_max_deliver_and_ack_wait(
    tmp_path: Path, key: str, value: str, expected: str
) -> None:
    config = write_config(
        tmp_path, manifest_url=PG, sources=filesystem_source(tmp_path),
        extra=f'[executor]\ntype = "nats"\n{key} = {value}\n',
    )  # fmt: skip
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert any(key in p and expected in p for p in caught.value.problems), caught.value.problems


def test_the_work_queue_may_not_overlap_the_events_stream(tmp_path: Path) -> None:
    extra = (
        '[executor]\ntype = "nats"\nstream = "HEADWATER"\nsubject_prefix = "headwater.runs"\n'
        '[events]\ntype = "nats"\n'
    )
    config = write_config(
        tmp_path, manifest_url=PG, sources=filesystem_source(tmp_path), extra=extra
    )
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    problems = caught.value.problems
    assert any(
        "'headwater.runs' overlaps [events] subject_prefix 'headwater'" in p for p in problems
    )
    assert any("'HEADWATER' is also the [events] stream" in p for p in problems)


def test_messages_and_subjects_round_trip() -> None:
    message = RunMessage("docs.v2", "run-1", "retry", force=True, index=False)
    assert RunMessage.parse(message.body()) == message
    assert message.message_id("acme") == "acme:docs.v2:run-1"
    subject = subject_of("hw", "docs.v2")
    assert subject == "hw.sync.docs~v2" and source_of("hw", subject) == "docs.v2"
    with pytest.raises(ValueError, match="not a run message"):
        RunMessage.parse(b"[1, 2]")
