"""Split a document's normalized text into chunks that fit the embedding model.

Structure first: Markdown ``#``/``##`` headings are hard boundaries, except that a section
of headings alone (a ``# Title`` followed at once by a ``##`` heading) opens the next
section rather than standing as a chunk of its own; inside a section the text is cut into
blocks (paragraphs, headings, code fences), and only a block over the
budget is cut finer: lines, then sentences, then words, then characters. A section that
fits is one chunk. In a longer section every gap between units is a candidate cut with a
score (gap kind first, then a hash of the text after it), and a gap is cut when its score
beats every other candidate within ``reach`` (half the budget) on both sides; parts still
over budget are cut the same way with a smaller reach. A cut therefore depends on nearby
text, never on where the section starts, so editing one paragraph leaves every cut far
from it in place: in practice the chunks holding the paragraph change, with at most one
neighbour per side (greedy packing from the start would shift every later boundary).
Choosing the cuts lives in ``_cuts``; it is linear in the number of units on any text.

Budgets are measured with the model's own tokenizer, each unit counted once, in batches;
every finished ``embed_text`` (title line + chunk text + metadata line) is counted again
exactly and re-split if a tokenizer proved the per-unit sums too optimistic. That exact
count's token ids are handed on (``token_ids``) when the counter gives them, so the
embedder does not tokenize the chunk again (``pipeline.embed.tokens``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from headwater.errors import ItemError
from headwater.identity import chunk_id
from headwater.pipeline._cuts import ChunkWork, Unit, cut, halve
from headwater.pipeline.embed.base import TokenCounter
from headwater.pipeline.embed.counting import count_tokens_many
from headwater.pipeline.embed.tokens import token_ids_of
from headwater.types import Chunk, MetadataValue

__all__ = ["CHUNKER_VERSION", "ChunkWork", "ChunkerSettings", "chunk_document"]

CHUNKER_VERSION = "chunk-3"

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
    token_ids: dict[str, list[int]] | None = None,
) -> list[Chunk]:
    """Cut ``text`` into chunks whose ``embed_text`` fits ``settings.max_tokens``.

    Returns no chunk for blank text. Raises ``ItemError("too_large")`` for a text over
    ``settings.max_document_chars``, and ``ItemError("chunk_error")`` only when a single
    character cannot fit the budget left after the title and metadata. The work done is
    linear in the length of the text; ``work``, when given, is added to. ``token_ids``,
    when given and the counter gives ids (``TokenIdCounter``), receives the plain token
    ids of each chunk's ``embed_text``, keyed by that text.
    """
    if len(text) > settings.max_document_chars:
        raise ItemError(
            "too_large",
            f"the document's normalized text is {len(text):,} characters; the limit "
            f"(chunker max_document_chars) is {settings.max_document_chars:,}. Raise "
            "max_document_chars in the [chunker] section of headwater.toml and run "
            "`headwater dlq redrive --stage chunk`, or exclude the file in the source's "
            "configuration.",
        )
    if not text.strip():
        return []
    cutter = _Cutter(text, counter, settings.max_tokens, work or ChunkWork(), token_ids)
    cutter.frame(title, _metadata_line(metadata))
    units = _join_bare_headings(cutter.units(), text)
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


def _join_bare_headings(units: list[Unit], text: str) -> list[Unit]:
    """``units`` with every section made of headings alone joined to the section after it.

    A title heading followed at once by a ``##`` heading would otherwise be a chunk of a
    few tokens: the hard gap after such a section becomes an after-heading gap, the
    weakest cut there is. The rule looks at structure only, never at sizes, so an edit
    changes it only by giving the bare section text of its own.
    """
    joined = list(units)
    bare = True  # the section so far holds headings only
    for i, unit in enumerate(units):
        if i and unit.gap == _HARD:
            if bare:
                joined[i] = replace(unit, gap=_AFTER_HEADING)
            bare = True
        if bare:  # only a section still made of headings needs its units looked at
            heading = _HEADING_LINE.match(text[unit.start : unit.end])
            bare = unit.level == _BLOCK and heading is not None
    return joined


def _sections(units: Sequence[Unit]) -> list[tuple[int, int]]:
    starts = [i for i, u in enumerate(units) if i == 0 or u.gap == _HARD]
    return list(zip(starts, [*starts[1:], len(units)], strict=True))


class _Cutter:
    """The per-document state: text, counter, budgets and the framing lines."""

    def __init__(
        self,
        text: str,
        counter: TokenCounter,
        budget: int,
        work: ChunkWork,
        token_ids: dict[str, list[int]] | None = None,
    ) -> None:
        self.text = text
        self.token_ids = token_ids
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

    def units(self) -> list[Unit]:
        """Blocks of the text, each refined until it fits the body budget."""
        spans = _blocks(self.text)
        counts = count_tokens_many(self.counter, [self.text[s:e] for s, e, _ in spans])
        units = [
            self._unit(s, e, gap, _BLOCK, n) for (s, e, gap), n in zip(spans, counts, strict=True)
        ]
        return self.fitting(units, self.body_budget)

    def _unit(self, start: int, end: int, gap: int, level: int, tokens: int) -> Unit:
        keyed = max(end, start + _KEY_WINDOW) if level >= _WORDS else end
        digest = hashlib.blake2b(self.text[start:keyed].encode(), digest_size=8).digest()
        return Unit(start, end, gap, level, tokens, int.from_bytes(digest, "big"))

    def fitting(self, units: list[Unit], budget: int) -> list[Unit]:
        """Split every unit over ``budget`` at the next finer level until all fit."""
        while any(u.tokens > budget for u in units):
            split = {i: self._finer(u, budget) for i, u in enumerate(units) if u.tokens > budget}
            flat = [piece for pieces in split.values() for piece in pieces]
            counts = iter(count_tokens_many(self.counter, [self.text[p[0] : p[1]] for p in flat]))
            result: list[Unit] = []
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

    def _finer(self, unit: Unit, budget: int) -> list[tuple[int, int, int, int]]:
        """The unit cut at the next level that actually splits it."""
        for level in range(unit.level + 1, _CHARS + 1):
            spans = _split_at(self.text, unit.start, unit.end, level, unit.tokens, budget)
            if len(spans) > 1:
                gaps = [unit.gap] + [_LEVEL_GAP[level]] * (len(spans) - 1)
                return [(s, e, g, level) for (s, e), g in zip(spans, gaps, strict=True)]
        return [(unit.start, unit.end, unit.gap, _CHARS)]

    # -- cuts -------------------------------------------------------------------------

    def cut_section(self, units: Sequence[Unit], offset: int) -> list[tuple[int, int]]:
        """Unit ranges ``[i, j)`` (document positions) for one section."""
        budget = self.body_budget
        ranges = cut(units, 0, len(units), budget, max(1, budget // 2), self.work)
        return [(offset + s, offset + e) for s, e in ranges]

    def verified(self, units: list[Unit], spans: list[tuple[int, int]]) -> list[str]:
        """Chunk bodies whose exact ``embed_text`` count fits, re-splitting any that don't."""
        pending = [units[s:e] for s, e in spans]
        done: list[tuple[int, str]] = []
        for _round in range(8):
            bodies = [self._body(group) for group in pending]
            texts = [self.embed_text(b) for b in bodies]
            ids = None if self.token_ids is None else token_ids_of(self.counter, texts)
            counts = count_tokens_many(self.counter, texts) if ids is None else map(len, ids)
            retry: list[list[Unit]] = []
            for at, (group, body, tokens) in enumerate(zip(pending, bodies, counts, strict=True)):
                if tokens <= self.budget:
                    done.append((group[0].start, body))
                    if ids is not None and self.token_ids is not None:
                        self.token_ids[texts[at]] = ids[at]
                    continue
                tighter = max(1, sum(u.tokens for u in group) - (tokens - self.budget))
                finer = self.fitting(group, tighter)
                retry.extend(finer[s:e] for s, e in halve(finer, 0, len(finer), tighter))
            if not retry:
                return [body for _, body in sorted(done)]
            pending = retry
        raise ItemError("chunk_error", "chunks did not fit the token budget after 8 rounds")

    def _body(self, group: Sequence[Unit]) -> str:
        return self.text[group[0].start : group[-1].end].strip()


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
