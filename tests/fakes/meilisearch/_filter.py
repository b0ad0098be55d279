"""Meilisearch's filter expressions, parsed and evaluated the way its reference states.

https://www.meilisearch.com/docs/learn/filtering_and_sorting/filter_expression_reference:
conditions ``attr = v``, ``!=``, ``>``, ``>=``, ``<``, ``<=``, ``attr IN [v, …]``,
``attr NOT IN [...]``, ``attr EXISTS`` / ``NOT EXISTS``, ``attr IS NULL`` / ``IS NOT NULL``,
joined by ``AND`` / ``OR`` (AND binds tighter), negated by ``NOT``, grouped by
parentheses. Values are bare words or single/double-quoted strings in which a backslash
escapes the quote. An array attribute matches when one of its elements does; booleans
compare as ``true``/``false``; strings compare case-insensitively (normalized as
milli's ``normalize_facet`` does); ``!=`` also matches documents without the attribute.
Filtering on an attribute not in ``filterableAttributes`` is an error
(https://www.meilisearch.com/docs/reference/errors/error_codes#invalid_search_filter):
``attributes(expr)`` lists what a filter names so the caller can refuse it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

Doc = dict[str, Any]
Predicate = Callable[[Doc], bool]

_TOKEN = re.compile(
    r"""\s*(?:(?P<q>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')|(?P<p>[()\[\],])|(?P<op>!=|>=|<=|=|>|<)|(?P<w>[^\s()\[\],=!<>]+))"""
)
_KEYWORDS = {"AND", "OR", "NOT", "IN", "EXISTS", "IS", "NULL"}


class FilterError(ValueError):
    """The filter is malformed or names an attribute that is not filterable."""


def _tokens(text: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise FilterError(f"Was expecting a value but instead got `{text[pos:]}`.")
        pos = match.end()
        if match.group("q"):
            raw = match.group("q")[1:-1]
            found.append(("value", re.sub(r"\\(.)", r"\1", raw)))
        elif match.group("p"):
            found.append(("punct", match.group("p")))
        elif match.group("op"):
            found.append(("op", match.group("op")))
        else:
            word = match.group("w")
            kind = "kw" if word.upper() in _KEYWORDS else "value"
            found.append((kind, word.upper() if kind == "kw" else word))
    return found


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0
        self.attributes: list[str] = []

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, kind: str, value: str | None = None) -> str:
        token = self.peek()
        if token is None or token[0] != kind or (value is not None and token[1] != value):
            raise FilterError(f"Was expecting {value or kind} at token {self.pos}, got {token}.")
        self.pos += 1
        return token[1]

    def at(self, kind: str, value: str) -> bool:
        return self.peek() == (kind, value)

    def expression(self) -> Predicate:
        left = self.conjunction()
        while self.at("kw", "OR"):
            self.take("kw", "OR")
            right = self.conjunction()
            left = (lambda a, b: lambda d: a(d) or b(d))(left, right)
        return left

    def conjunction(self) -> Predicate:
        left = self.negation()
        while self.at("kw", "AND"):
            self.take("kw", "AND")
            right = self.negation()
            left = (lambda a, b: lambda d: a(d) and b(d))(left, right)
        return left

    def negation(self) -> Predicate:
        if self.at("kw", "NOT"):
            self.take("kw", "NOT")
            inner = self.negation()
            return lambda d: not inner(d)
        if self.at("punct", "("):
            self.take("punct", "(")
            inner = self.expression()
            self.take("punct", ")")
            return inner
        return self.condition()

    def condition(self) -> Predicate:
        attribute = self.take("value")
        self.attributes.append(attribute)
        token = self.peek()
        if token is not None and token[0] == "op":
            op = self.take("op")
            value = self.take("value")
            return _compare(attribute, op, value)
        negated = False
        if self.at("kw", "NOT"):
            self.take("kw", "NOT")
            negated = True
        if self.at("kw", "IN"):
            self.take("kw", "IN")
            values = self.values()
            hit: Predicate = lambda d: any(_equal(d.get(attribute), v) for v in values)  # noqa: E731
        elif self.at("kw", "EXISTS"):
            self.take("kw", "EXISTS")
            hit = lambda d: attribute in d  # noqa: E731
        elif self.at("kw", "IS"):
            self.take("kw", "IS")
            if self.at("kw", "NOT"):
                self.take("kw", "NOT")
                negated = not negated
            self.take("kw", "NULL")
            hit = lambda d: attribute in d and d[attribute] is None  # noqa: E731
        else:
            raise FilterError(f"Was expecting an operation after `{attribute}`.")
        return (lambda d: not hit(d)) if negated else hit

    def values(self) -> list[str]:
        self.take("punct", "[")
        values: list[str] = []
        while not self.at("punct", "]"):
            values.append(self.take("value"))
            if not self.at("punct", "]"):
                self.take("punct", ",")
        self.take("punct", "]")
        return values


def _scalar(value: Any) -> str:
    """A value as Meilisearch compares it in a filter: strings normalized (trimmed,
    Unicode compatibility decomposition, lowercase; milli's ``normalize_facet``), so
    ``genre = ACTION`` matches ``"Action"``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return unicodedata.normalize("NFKD", str(value).strip()).lower()


def _equal(held: Any, wanted: str) -> bool:
    items = held if isinstance(held, list) else [held]
    return any(item is not None and _scalar(item) == _scalar(wanted) for item in items)


def _compare(attribute: str, op: str, value: str) -> Predicate:
    if op == "=":
        return lambda d: _equal(d.get(attribute), value)
    if op == "!=":
        return lambda d: not _equal(d.get(attribute), value)
    number = float(value)
    tests = {
        ">": lambda x: x > number,
        ">=": lambda x: x >= number,
        "<": lambda x: x < number,
        "<=": lambda x: x <= number,
    }[op]

    def check(doc: Doc) -> bool:
        held = doc.get(attribute)
        items = held if isinstance(held, list) else [held]
        return any(
            isinstance(i, int | float) and not isinstance(i, bool) and tests(i) for i in items
        )

    return check


def compile_filter(text: str | None, filterable: list[str]) -> Predicate:
    """A predicate for ``text`` (None: everything); ``FilterError`` when it is malformed or
    names an attribute outside ``filterable``."""
    if text is None or not text.strip():
        return lambda d: True
    parser = _Parser(text)
    predicate = parser.expression()
    if parser.peek() is not None:
        raise FilterError(f"Found unexpected characters at the end of the filter: {parser.peek()}.")
    for attribute in parser.attributes:
        if attribute not in filterable:
            available = ", ".join(f"`{a}`" for a in sorted(filterable))
            raise FilterError(
                f"Attribute `{attribute}` is not filterable. Available filterable "
                f"attributes are: {available}."
            )
    return predicate
