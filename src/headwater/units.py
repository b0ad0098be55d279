"""Units as users write them: durations (``"30m"``, ``"6h"``, ``"1d"``, ``"2w"`` or seconds)
and byte sizes (``"500MB"``, ``"2GB"``, ``"1GiB"``, ``"64kB"`` or bytes).

A neutral core module, so connectors, the scheduler and the config all parse units the
same way without the lower layers importing ``headwater.config``. Every duration lies
between zero and ``MAX_DURATION`` (ten years): past it, date arithmetic such as
"next run = last run + refresh_every" overflows, and nothing is meant by it. A setting
that is an interval between runs also has a floor (``check_duration``): ``"0s"`` would
make the scheduler spin. Decimal size units are powers of 1000, binary ones (``KiB``,
``MiB``…) of 1024.
"""

from __future__ import annotations

import re
from datetime import timedelta

DURATION = re.compile(r"^\s*(\d{1,15})\s*([smhdw])\s*$")
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
MAX_DURATION = timedelta(days=3650)
"""The longest duration any setting accepts (ten years)."""
MIN_INTERVAL = timedelta(seconds=1)
"""The shortest interval between two runs (``refresh_every``, ``prune_every``, backoffs)."""


def parse_duration(value: str | int | None) -> timedelta | None:
    """``"30m"``, ``"6h"``, ``"1d"`` or seconds as an int, from 0 to ``MAX_DURATION``.

    Raises ``ValueError`` naming the value and the expected form or range.
    """
    if value is None:
        return None
    if isinstance(value, int):
        seconds = value
    else:
        match = DURATION.match(value)
        if not match:
            raise ValueError(f"{value!r} is not a duration; expected e.g. '30m', '6h' or '1d'")
        seconds = int(match.group(1)) * DURATION_UNITS[match.group(2)]
    if not 0 <= seconds <= MAX_DURATION.total_seconds():
        raise ValueError(
            f"{value!r} is out of range; expected a duration from 0s to {show(MAX_DURATION)} "
            "(ten years)"
        )
    return timedelta(seconds=seconds)


def check_duration(value: str, minimum: timedelta = timedelta(0)) -> timedelta:
    """``value`` parsed, or ``ValueError`` naming it and the allowed range.

    ``minimum`` is the setting's floor: ``MIN_INTERVAL`` for an interval between runs.
    """
    parsed = parse_duration(value)
    assert parsed is not None
    if not minimum <= parsed <= MAX_DURATION:
        raise ValueError(
            f"{value!r} is out of range; expected a duration from {show(minimum)} to "
            f"{show(MAX_DURATION)} (ten years)"
        )
    return parsed


def show(duration: timedelta) -> str:
    """A duration in the largest unit that writes it exactly: ``3650d``, ``90m``, ``1s``."""
    seconds = int(duration.total_seconds())
    for unit in ("d", "h", "m"):
        size = DURATION_UNITS[unit]
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKMGT]i?B|B)?\s*$")
SIZE_UNITS = {
    "B": 1,
    "kB": 1000,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "TB": 1000**4,
    "KiB": 1024,
    "kiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
    "TiB": 1024**4,
}


def parse_size(value: str | int | None) -> int | None:
    """``"500MB"``, ``"2GiB"`` or a number of bytes; None stays None."""
    if value is None:
        return None
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{value!r} is a negative size; expected bytes >= 0")
        return value
    match = SIZE.match(value)
    if not match or (match.group(2) or "B") not in SIZE_UNITS:
        raise ValueError(f"{value!r} is not a size; expected e.g. '500MB', '2GB' or '1GiB'")
    return int(float(match.group(1)) * SIZE_UNITS[match.group(2) or "B"])
