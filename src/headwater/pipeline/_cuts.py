"""Choosing where to cut a run of units: content-defined local maxima, in linear work.

Every gap between units has a score (gap kind, hash of the text after it). A gap is cut
when no gap within ``reach`` tokens outscores it, so whether a gap is cut depends only on
nearby text, never on where the section starts: an edit moves only nearby cuts. The
local maxima come from one sliding-window-maximum pass, and ties and steadily rising
scores are handled so that the work stays linear (at worst O(n log n)) on any text.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise


@dataclass
class ChunkWork:
    """What chunking did, summed over the calls it is passed to: a seam for tests and
    benchmarks that check the work grows linearly with the text."""

    units: int = 0  # units the text was cut into (after refinement)
    gaps_scanned: int = 0  # gaps looked at while choosing cuts, over every level


@dataclass(frozen=True, slots=True)
class Unit:
    """One unit of text (a sentence, line or item) between two candidate cuts."""

    start: int
    end: int
    gap: int  # kind of the gap before this unit
    level: int
    tokens: int
    key: int  # hash of the unit's text: breaks ties between gaps of one kind


def cut(
    units: Sequence[Unit], start: int, end: int, budget: int, reach: int, work: ChunkWork
) -> list[tuple[int, int]]:
    """Ranges of ``units[start:end]`` that fit ``budget``, cut at local maxima.

    A gap is cut when no eligible gap within ``reach`` tokens outscores it; eligible gaps
    are at least ``reach`` from both ends, so no part is tiny. Of equal gaps within
    ``reach`` of each other only the first is cut. Parts still over budget are cut the
    same way with half the reach, so a cut depends only on text within
    ``reach + reach/2 + … < 2 × reach`` of it. Only when no gap is eligible is the range
    split at its best gap near the middle; and when the cuts leave one part with most of
    a long range (scores that rise steadily, which real text does not do), that part is
    halved first, so the work stays O(n log n) whatever the text.
    """
    total = sum(u.tokens for u in units[start:end])
    if total <= budget or end - start <= 1:
        return [(start, end)]
    work.gaps_scanned += end - start
    eligible: list[int] = []
    positions: list[int] = []
    position = 0
    for i in range(start + 1, end):
        position += units[i - 1].tokens
        if reach <= position <= total - reach:
            eligible.append(i)
            positions.append(position)
    scores = [(units[i].gap, units[i].key) for i in eligible]
    cuts: list[int] = []
    last = -reach - 1
    for k, is_max in enumerate(_local_maxima(scores, positions, reach)):
        if is_max and positions[k] - last > reach:
            cuts.append(eligible[k])
            last = positions[k]
    if not cuts:
        cuts = [_middle_gap(units, start, end, total)]
    ranges: list[tuple[int, int]] = []
    for a, b in pairwise([start, *cuts, end]):
        part = sum(u.tokens for u in units[a:b])
        if part > budget and total > 4 * budget and 4 * part > 3 * total:
            middle = _middle_gap(units, a, b, part)
            pieces = [(a, middle), (middle, b)]
        else:
            pieces = [(a, b)]
        for c, d in pieces:
            size = sum(u.tokens for u in units[c:d])
            smaller = max(1, reach // 2, min(size // 3, budget // 2))
            ranges.extend(cut(units, c, d, budget, smaller, work))
    return ranges


def _local_maxima(
    scores: Sequence[tuple[int, int]], positions: Sequence[int], reach: int
) -> list[bool]:
    """For each gap: whether no gap within ``reach`` tokens scores higher.

    A sliding-window maximum (a deque of indices with decreasing scores): every gap
    enters and leaves the window once, so this is linear in the number of gaps.
    """
    window: deque[int] = deque()
    result: list[bool] = []
    ahead = 0
    for k, score in enumerate(scores):
        while ahead < len(scores) and positions[ahead] <= positions[k] + reach:
            while window and scores[window[-1]] <= scores[ahead]:
                window.pop()
            window.append(ahead)
            ahead += 1
        while positions[window[0]] < positions[k] - reach:
            window.popleft()
        result.append(scores[window[0]] <= score)
    return result


def halve(units: Sequence[Unit], start: int, end: int, budget: int) -> list[tuple[int, int]]:
    """Split ``units[start:end]`` at its best gap near the middle until each part fits."""
    total = sum(u.tokens for u in units[start:end])
    if total <= budget or end - start <= 1:
        return [(start, end)]
    best = _middle_gap(units, start, end, total)
    return halve(units, start, best, budget) + halve(units, best, end, budget)


def _middle_gap(units: Sequence[Unit], start: int, end: int, total: int) -> int:
    """The strongest gap in the middle half of the range, else the one nearest the middle."""
    best, best_rank = start + 1, (-1, -1, 0)
    position = units[start].tokens
    for i in range(start + 1, end):
        middle = total <= 4 * position <= 3 * total
        rank = (1, units[i].gap, units[i].key) if middle else (0, 0, -abs(total - 2 * position))
        if rank > best_rank:
            best, best_rank = i, rank
        position += units[i].tokens
    return best
