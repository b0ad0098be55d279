"""Byte sizes as users write them: ``"500MB"``, ``"2GB"``, ``"1GiB"``, ``"64kB"`` or bytes.

A neutral module (like ``durations``), so the config and lower layers parse sizes the
same way. Decimal units are powers of 1000, binary ones (``KiB``, ``MiB``…) of 1024.
"""

from __future__ import annotations

import re

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
