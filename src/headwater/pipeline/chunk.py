"""Split a document's normalized text into chunks that fit the embedding model.

Structure first: Markdown ``#``/``##`` headings are hard boundaries; inside a section the
text is cut into blocks (paragraphs, headings, code fences), and only a block over the
budget is cut finer: lines, then sentences, then words, then characters. A section that
fits is one chunk. In a longer section every gap between units is a candidate cut with a
score (gap kind first, then a hash of the text after it), and a gap is cut when its score
beats every other candidate within ``reach`` (half the budget) on both sides; parts still
over budget are cut the same way with a smaller reach. A cut therefore depends on nearby
text, never on where the section starts, so editing one paragraph leaves every cut far
from it in place: in practice the chunks holding the paragraph change, with at most one
neighbour per side (greedy packing from the start would shift every later boundary).

Budgets are measured with the model's own tokenizer, each unit counted once, in batches;
every finished ``embed_text`` (title line + chunk text + metadata line) is counted again
exactly and re-split if a tokenizer proved the per-unit sums too optimistic.
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from headwater.errors import ItemError
from headwater.identity import chunk_id
from headwater.pipeline.embed.base import TokenCounter
from headwater.pipeline.embed.counting import count_tokens_many
from headwater.types import Chunk, MetadataValue

CHUNKER_VERSION = "chunk-2"

# Gap kinds, strongest first: where a cut is preferred when one is needed.
_HARD, _HEADING, _PARAGRAPH, _LINE, _SENTENCE, _WORD, _AFTER_HEADING, _CHAR = (
    9, 7, 6, 5, 4, 3, 2, 1,
)  # fmt: skip
# Unit levels: the finest split already applied to a unit.
_BLOCK, _LINES, _SENTENCES, _WORDS, _CHARS = range(5)
_LEVEL_GAP = {_LINES: _LINE, _SENTENCES: _SENTENCE, _WORDS: _WORD, _CHARS: _CHAR}

_HEADING_LINE = re.compile(r"^(#{1,6})[ \t]+\S")
_FENCE = re.compile(r"^(```|~~~)")
_SENTENCE_END = re.compile(r"[.!?…。！？;:]+[\"')\]»”’]*\s+")
_WORD_SPAN = re.compile(r"\S+")
# Words and character pieces repeat; their key hashes at least this much text from the
# unit's start, so equal words in different places still get different keys.
_KEY_WINDOW = 64
DEFAULT_MAX_DOCUMENT_CHARS = 5_000_000


@dataclass(frozen=True)
class ChunkerSettings:
    """How chunks are cut. ``max_tokens`` bounds each chunk's ``embed_text``;
    a document whose normalized text is longer than ``max_document_chars`` is refused
    (``ItemError("too_large")``), so one huge file never holds up the others."""

    max_tokens: int = 256
    max_document_chars: int = DEFAULT_MAX_DOCUMENT_CHARS

    def __post_init__(self) -> None:
        if self.max_tokens < 16:
            raise ValueError(f"max_tokens was {self.max_tokens}; expected at least 16")
        if self.max_document_chars < 1:
            raise ValueError(
                f"max_document_chars was {self.max_document_chars}; expected at least 1"
            )

    def fitted(self, model_max_tokens: int) -> ChunkerSettings:
        """These settings with the budget lowered to what the model reads, if needed."""
        return replace(self, max_tokens=min(self.max_tokens, model_max_tokens))


@dataclass
class ChunkWork:
    """What chunking did, summed over the calls it is passed to: a seam for tests and
    benchmarks that check the work grows linearly with the text."""

    units: int = 0  # units the text was cut into (after refinement)
    gaps_scanned: int = 0  # gaps looked at while choosing cuts, over every level


@dataclass(frozen=True, slots=True)
class _Unit:
    start: int
    end: int
    gap: int  # kind of the gap before this unit
    level: int
    tokens: int
    key: int  # hash of the unit's text: breaks ties between gaps of one kind


def chunk_document(
    *,
    document_id: str,
    pipeline_version: str,
    text: str,
    title: str,
    metadata: Mapping[str, MetadataValue],
    counter: TokenCounter,
    settings: ChunkerSettings,
    work: ChunkWork | None = None,
) -> list[Chunk]:
    """Cut ``text`` into chunks whose ``embed_text`` fits ``settings.max_tokens``.

    Returns no chunk for blank text. Raises ``ItemError("too_large")`` for a text over
    ``settings.max_document_chars``, and ``ItemError("chunk_error")`` only when a single
    character cannot fit the budget left after the title and metadata. The work done is
    linear in the length of the text; ``work``, when given, is added to.
    """
    if len(text) > settings.max_document_chars:
        raise ItemError(
            "too_large",
            f"the document's normalized text is {len(text):,} characters; the limit "
            f"(chunker max_document_chars) is {settings.max_document_chars:,}. Raise "
            "max_document_chars in the [chunker] section of headwater.toml, or exclude "
            "the file in the source's configuration.",
        )
    if not text.strip():
        return []
    cutter = _Cutter(text, counter, settings.max_tokens, work or ChunkWork())
    cutter.frame(title, _metadata_line(metadata))
    units = cutter.units()
    cutter.work.units += len(units)
    spans: list[tuple[int, int]] = []
    for section in _sections(units):
        spans.extend(cutter.cut_section(units[section[0] : section[1]], section[0]))
    bodies = cutter.verified(units, spans)
    return [
        Chunk(
            chunk_id=chunk_id(document_id, pipeline_version, ordinal),
            document_id=document_id,
            ordinal=ordinal,
            text=body,
            embed_text=cutter.embed_text(body),
        )
        for ordinal, body in enumerate(bodies)
    ]


def _metadata_line(metadata: Mapping[str, MetadataValue]) -> str:
    parts: list[str] = []
    for key in sorted(metadata):
        value = metadata[key]
        shown = value if isinstance(value, str) else ", ".join(value)
        if shown.strip():
            parts.append(f"{key}: {' '.join(shown.split())}")
    return "; ".join(parts)


def _sections(units: Sequence[_Unit]) -> list[tuple[int, int]]:
    starts = [i for i, u in enumerate(units) if i == 0 or u.gap == _HARD]
    return list(zip(starts, [*starts[1:], len(units)], strict=True))


class _Cutter:
    """The per-document state: text, counter, budgets and the framing lines."""

    def __init__(self, text: str, counter: TokenCounter, budget: int, work: ChunkWork) -> None:
        self.text = text
        self.work = work
        self.counter = counter
        self.budget = budget
        self.title_line = ""
        self.meta_line = ""
        self.body_budget = budget

    def frame(self, title: str, meta_line: str) -> None:
        """Fit the title line and metadata line, each to a quarter of the budget."""
        quarter = self.budget // 4
        title = " ".join(title.split())
        title_tokens, meta_tokens = count_tokens_many(self.counter, [title, meta_line])
        if title_tokens > quarter:
            title = self._truncate(title, quarter)
        self.title_line = title
        self.meta_line = meta_line if meta_tokens <= quarter else ""
        probe = "x"
        counts = count_tokens_many(
            self.counter, [self.title_line, self.meta_line, probe, self.embed_text(probe)]
        )
        separators = max(0, counts[3] - counts[0] - counts[1] - counts[2])
        self.body_budget = self.budget - counts[0] - counts[1] - separators

    def _truncate(self, title: str, limit: int) -> str:
        words = title.split()
        low, high = 0, len(words)  # the longest word prefix that fits, by bisection
        while low < high:
            middle = (low + high + 1) // 2
            if self.counter.count_tokens(" ".join(words[:middle])) <= limit:
                low = middle
            else:
                high = middle - 1
        return " ".join(words[:low])

    def embed_text(self, body: str) -> str:
        return "\n\n".join(part for part in (self.title_line, body, self.meta_line) if part)

    # -- units ------------------------------------------------------------------------

    def units(self) -> list[_Unit]:
        """Blocks of the text, each refined until it fits the body budget."""
        spans = _blocks(self.text)
        counts = count_tokens_many(self.counter, [self.text[s:e] for s, e, _ in spans])
        units = [
            self._unit(s, e, gap, _BLOCK, n) for (s, e, gap), n in zip(spans, counts, strict=True)
        ]
        return self.fitting(units, self.body_budget)

    def _unit(self, start: int, end: int, gap: int, level: int, tokens: int) -> _Unit:
        keyed = max(end, start + _KEY_WINDOW) if level >= _WORDS else end
        digest = hashlib.blake2b(self.text[start:keyed].encode(), digest_size=8).digest()
        return _Unit(start, end, gap, level, tokens, int.from_bytes(digest, "big"))

    def fitting(self, units: list[_Unit], budget: int) -> list[_Unit]:
        """Split every unit over ``budget`` at the next finer level until all fit."""
        while any(u.tokens > budget for u in units):
            split = {i: self._finer(u, budget) for i, u in enumerate(units) if u.tokens > budget}
            flat = [piece for pieces in split.values() for piece in pieces]
            counts = iter(count_tokens_many(self.counter, [self.text[p[0] : p[1]] for p in flat]))
            result: list[_Unit] = []
            for i, unit in enumerate(units):
                if i not in split:
                    result.append(unit)
                    continue
                for start, end, gap, level in split[i]:
                    tokens = next(counts)
                    if level == _CHARS and end - start <= 1 and tokens > budget:
                        raise ItemError(
                            "chunk_error",
                            f"one character takes {tokens} tokens; the chunk budget left "
                            f"after title and metadata is {budget}. Raise max_tokens.",
                        )
                    result.append(self._unit(start, end, gap, level, tokens))
            units = result
        return units

    def _finer(self, unit: _Unit, budget: int) -> list[tuple[int, int, int, int]]:
        """The unit cut at the next level that actually splits it."""
        for level in range(unit.level + 1, _CHARS + 1):
            spans = _split_at(self.text, unit.start, unit.end, level, unit.tokens, budget)
            if len(spans) > 1:
                gaps = [unit.gap] + [_LEVEL_GAP[level]] * (len(spans) - 1)
                return [(s, e, g, level) for (s, e), g in zip(spans, gaps, strict=True)]
        return [(unit.start, unit.end, unit.gap, _CHARS)]

    # -- cuts -------------------------------------------------------------------------

    def cut_section(self, units: Sequence[_Unit], offset: int) -> list[tuple[int, int]]:
        """Unit ranges ``[i, j)`` (document positions) for one section."""
        budget = self.body_budget
        ranges = _cut(units, 0, len(units), budget, max(1, budget // 2), self.work)
        return [(offset + s, offset + e) for s, e in ranges]

    def verified(self, units: list[_Unit], spans: list[tuple[int, int]]) -> list[str]:
        """Chunk bodies whose exact ``embed_text`` count fits, re-splitting any that don't."""
        pending = [units[s:e] for s, e in spans]
        done: list[tuple[int, str]] = []
        for _round in range(8):
            bodies = [self._body(group) for group in pending]
            counts = count_tokens_many(self.counter, [self.embed_text(b) for b in bodies])
            retry: list[list[_Unit]] = []
            for group, body, tokens in zip(pending, bodies, counts, strict=True):
                if tokens <= self.budget:
                    done.append((group[0].start, body))
                    continue
                tighter = max(1, sum(u.tokens for u in group) - (tokens - self.budget))
                finer = self.fitting(group, tighter)
                retry.extend(finer[s:e] for s, e in _halve(finer, 0, len(finer), tighter))
            if not retry:
                return [body for _, body in sorted(done)]
            pending = retry
        raise ItemError("chunk_error", "chunks did not fit the token budget after 8 rounds")

    def _body(self, group: Sequence[_Unit]) -> str:
        return self.text[group[0].start : group[-1].end].strip()


def _cut(
    units: Sequence[_Unit], start: int, end: int, budget: int, reach: int, work: ChunkWork
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
            ranges.extend(_cut(units, c, d, budget, smaller, work))
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


def _halve(units: Sequence[_Unit], start: int, end: int, budget: int) -> list[tuple[int, int]]:
    """Split ``units[start:end]`` at its best gap near the middle until each part fits."""
    total = sum(u.tokens for u in units[start:end])
    if total <= budget or end - start <= 1:
        return [(start, end)]
    best = _middle_gap(units, start, end, total)
    return _halve(units, start, best, budget) + _halve(units, best, end, budget)


def _middle_gap(units: Sequence[_Unit], start: int, end: int, total: int) -> int:
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


def _blocks(text: str) -> list[tuple[int, int, int]]:
    """Paragraphs, heading lines and fenced code blocks as ``(start, end, gap before)``."""
    blocks: list[tuple[int, int, int]] = []
    start: int | None = None
    gap = _HARD
    fenced = last_heading = False
    offset = last_end = 0
    for line in text.splitlines(keepends=True):
        end = offset + len(line.rstrip("\n"))
        heading = None if fenced else _HEADING_LINE.match(line)
        blank = not line.strip() and not fenced
        if _FENCE.match(line):
            fenced = not fenced
        if (blank or heading) and start is not None:
            blocks.append((start, last_end, gap))
            gap = _AFTER_HEADING if last_heading else _PARAGRAPH
            start = None
        if heading:
            level = len(heading.group(1))
            gap = _HARD if level <= 2 or not blocks else _HEADING
            blocks.append((offset, end, gap))
            gap, last_heading = _AFTER_HEADING, True
        elif not blank:
            if start is None:
                start, last_heading = offset, False
            last_end = end
        offset += len(line)
    if start is not None:
        blocks.append((start, last_end, gap))
    return blocks


def _split_at(
    text: str, start: int, end: int, level: int, tokens: int, budget: int
) -> list[tuple[int, int]]:
    """Non-blank spans of ``text[start:end]`` cut at ``level`` boundaries."""
    if level == _LINES:
        cuts = [m.end() for m in re.finditer(r"\n", text[start:end])]
    elif level == _SENTENCES:
        cuts = [m.end() for m in _SENTENCE_END.finditer(text[start:end])]
    elif level == _WORDS:
        cuts = [m.start() for m in _WORD_SPAN.finditer(text[start:end])][1:]
    else:
        size = max(1, int((end - start) * budget / max(tokens, 1) * 0.9))
        size = min(size, max(1, (end - start) // 2))
        cuts = list(range(size, end - start, size))
    spans: list[tuple[int, int]] = []
    for a, b in zip([0, *cuts], [*cuts, end - start], strict=True):
        piece = text[start + a : start + b]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            spans.append((start + a + lead, start + a + len(piece.rstrip())))
    return spans
