"""The ``headwater`` process collects its youngest generation every ``COLLECT_EVERY``
allocations: a sync's batches of listed items are not walked by the collector every 700."""

from __future__ import annotations

import gc

import pytest

import headwater.cli.app as cli_app


class Stop(Exception):
    """Raised by the stand-in for the commands: main() got that far."""


def test_main_raises_the_first_generation_threshold_before_any_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[int, int, int]] = []

    def register() -> None:
        seen.append(gc.get_threshold())
        raise Stop

    before = gc.get_threshold()
    monkeypatch.setattr(cli_app, "register_commands", register)
    try:
        gc.set_threshold(700, before[1], before[2])
        with pytest.raises(Stop):
            cli_app.main()
        assert seen == [(cli_app.COLLECT_EVERY, before[1], before[2])]
    finally:
        gc.set_threshold(*before)


def test_a_higher_threshold_set_before_is_kept() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(cli_app.COLLECT_EVERY * 2, before[1], before[2])
        cli_app.tune_collector()
        assert gc.get_threshold()[0] == cli_app.COLLECT_EVERY * 2
    finally:
        gc.set_threshold(*before)
