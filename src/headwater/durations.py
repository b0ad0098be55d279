"""Durations as users write them: ``"30m"``, ``"6h"``, ``"1d"``, ``"2w"`` or seconds.

A neutral module so connectors, the scheduler and the config all parse durations the
same way without the lower layers importing ``headwater.config``.
"""

from __future__ import annotations

import re
from datetime import timedelta

DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: str | int | None) -> timedelta | None:
    """``"30m"``, ``"6h"``, ``"1d"`` or seconds as an int."""
    if value is None:
        return None
    if isinstance(value, int):
        return timedelta(seconds=value)
    match = DURATION.match(value)
    if not match:
        raise ValueError(f"{value!r} is not a duration; expected e.g. '30m', '6h' or '1d'")
    return timedelta(seconds=int(match.group(1)) * DURATION_UNITS[match.group(2)])
