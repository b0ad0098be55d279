"""The base of every config table: frozen, unknown keys refused; and the duration checks
the tables share."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from headwater.units import MIN_INTERVAL, check_duration


class Strict(BaseModel):
    """A frozen config model that refuses unknown keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def check_retention(value: str) -> str:
    """A retention (``keep_runs_for``, ``keep_previous_for``): 0s to ten years."""
    check_duration(value)
    return value


def check_interval(value: str) -> str:
    """An interval between runs or retries: 1s to ten years ("0s" would spin)."""
    check_duration(value, MIN_INTERVAL)
    return value
