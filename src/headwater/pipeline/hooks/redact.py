"""The ``redact`` hook: personal data out of the text before it is chunked and embedded.

Regular expressions find candidates and validators confirm them, so a number that only
looks like a card or an IBAN stays: e-mail addresses; IBANs (ISO 13616 check digits,
mod 97); payment card numbers (13–19 digits, Luhn check); phone numbers (8–15 digits,
with an optional ``+`` and the usual separators); and custom patterns (``patterns =
{ employee = "EMP-\\d{6}" }``). Each match becomes the placeholder (``[REDACTED:email]``
by default; ``{kind}`` is the kind's name). Kinds run in a fixed order (e-mail, IBAN,
card, phone, then custom patterns in the order given) so a card number is never counted
as a phone number. The title and the metadata values (an e-mail's ``from`` and ``to``) are redacted
too. The counts per document go into the indexed metadata as ``redactions``
(``"card: 1, email: 2"``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from headwater.pipeline.hooks._contract import Drop, HookDocument
from headwater.types import MetadataValue

KINDS = ("email", "iban", "card", "phone")

_PATTERNS: dict[str, re.Pattern[str]] = {
    "email": re.compile(
        r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
    ),
    "iban": re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}\b"),
    "card": re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"),
    "phone": re.compile(r"(?<![\w+])\+?\(?\d[\d ()./-]{6,}\d(?!\w)"),
}


_DATE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}")
"""A date is no phone number (``2024-10-01``, ``01.10.2024``)."""


def luhn_valid(digits: str) -> bool:
    """Whether a digit string passes the Luhn check (payment cards)."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def iban_valid(candidate: str) -> bool:
    """Whether ``candidate`` (spaces allowed) has valid IBAN check digits (mod 97)."""
    compact = candidate.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in moved)
    return int(number) % 97 == 1


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


_VALIDATORS: dict[str, Callable[[str], bool]] = {
    "email": lambda _: True,
    "iban": iban_valid,
    "card": lambda s: 13 <= len(_digits(s)) <= 19 and luhn_valid(_digits(s)),
    "phone": lambda s: 8 <= len(_digits(s)) <= 15 and not _DATE.fullmatch(s.strip()),
}


class Redact:
    """Replaces e-mails, IBANs, card numbers, phone numbers and custom patterns."""

    version = "redact-1"

    def __init__(
        self,
        *,
        kinds: Sequence[str] = KINDS,
        patterns: Mapping[str, str] | None = None,
        placeholder: str = "[REDACTED:{kind}]",
    ) -> None:
        unknown = [k for k in kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"kinds {unknown} unknown; expected some of {list(KINDS)}")
        if "{kind}" not in placeholder and not placeholder:
            raise ValueError("placeholder is empty; expected e.g. '[REDACTED:{kind}]'")
        self.rules: list[tuple[str, re.Pattern[str], Callable[[str], bool]]] = [
            (kind, _PATTERNS[kind], _VALIDATORS[kind]) for kind in KINDS if kind in kinds
        ]
        for name, pattern in (patterns or {}).items():
            if name in KINDS:
                raise ValueError(f"custom pattern {name!r} has a built-in kind's name")
            self.rules.append((name, re.compile(pattern), lambda _: True))
        self.placeholder = placeholder

    def redact(self, text: str, counts: Counter[str]) -> str:
        """``text`` with every confirmed match replaced; ``counts`` counts them by kind."""
        for kind, pattern, valid in self.rules:
            mark = self.placeholder.replace("{kind}", kind)

            def replace(
                match: re.Match[str],
                kind: str = kind,
                mark: str = mark,
                valid: Callable[[str], bool] = valid,
            ) -> str:
                found = match.group(0)
                if not valid(found):
                    return found
                counts[kind] += 1
                return mark

            text = pattern.sub(replace, text)
        return text

    def __call__(self, document: HookDocument) -> HookDocument | Drop:
        counts: Counter[str] = Counter()
        sections = [self.redact(section, counts) for section in document.sections]
        title = self.redact(document.title, counts)
        metadata: dict[str, MetadataValue] = {
            key: self.redact(value, counts)
            if isinstance(value, str)
            else [self.redact(v, counts) for v in value]
            for key, value in document.metadata.items()
        }
        if not counts:
            return document
        metadata["redactions"] = ", ".join(f"{k}: {n}" for k, n in sorted(counts.items()))
        return document.evolve(sections=sections, title=title, metadata=metadata)
