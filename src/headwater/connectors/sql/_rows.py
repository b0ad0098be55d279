"""Turning one SQL row into a SourceDocument: ids, text, access and the version hint.

Everything here is pure: values in, strings out. Object ids join the id columns with
``/`` (``%`` and ``/`` inside a value are percent-escaped), so they are stable and
unambiguous. Templates are plain ``{column}`` strings rendered with ``str.format_map``
over a mapping of column texts; fields are checked up front to be bare column names, so
a template can never reach attributes or indexes.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
import string
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

from headwater.clock import as_utc, iso
from headwater.connectors.names import valid_unicode
from headwater.errors import ConfigError
from headwater.types import PUBLIC_PRINCIPAL, Access, MetadataValue

_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def text_of(value: Any) -> str:
    """A stable text for one column value (NULL is empty). A lone surrogate, which
    decoded JSON may hold (``"\\ud800"``), becomes U+FFFD."""
    return valid_unicode(_text_of(value))


def _text_of(value: Any) -> str:
    if type(value) is str:  # the usual column, asked first
        return value
    if value is None:
        return ""
    if isinstance(value, datetime):
        return iso(value) or ""
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dict | list | tuple):  # JSON or an array: JSON text, not a repr
        return json.dumps(
            value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_text_of
        )
    return str(value)


def cursor_value(value: Any) -> int | str:
    """An id value as it is kept in a checkpoint (JSON)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else text_of(value)


def object_id_of(values: Sequence[Any]) -> str:
    """The object id of a row: its id column values, escaped and joined with ``/``."""
    return "/".join(text_of(v).replace("%", "%25").replace("/", "%2F") for v in values)


def template_fields(template: str) -> list[str]:
    """The column names a template uses; ValueError if a field is more than a bare name."""
    fields: list[str] = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(
            f"template {template!r} is not a valid {{column}} template: {exc}"
        ) from None
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not _FIELD.match(name) or spec or conversion:
            raise ValueError(
                f"template field {{{name}}} in {template!r} must be a bare column name "
                "(no attributes, indexes, conversions or format specs)"
            )
        if name not in fields:
            fields.append(name)
    return fields


class _RowText(dict[str, str]):
    columns: Mapping[str, Any] = {}  # the row's, named when a template asks for another

    def __missing__(self, key: str) -> str:
        raise ConfigError(
            f"sql source: template column {key!r} is not in the row; expected one of "
            f"{sorted(self.columns)}; fix the template or the query"
        )


def render(template: str, row: Mapping[str, Any]) -> str:
    """A template with each ``{column}`` replaced by the column's text (only the columns
    it names are made text)."""
    texts = _RowText({k: text_of(row[k]) for k in _fields(template) if k in row})
    texts.columns = row
    return template.format_map(texts)


@functools.lru_cache(maxsize=64)
def _fields(template: str) -> tuple[str, ...]:
    return tuple(template_fields(template))


def _items(value: Any) -> list[str]:
    """A list of texts from an array, a JSON array text or a comma-separated text.

    An array's elements are kept exactly (a padded one is refused by the gate, never
    trimmed into another identity); only the spaces around a comma-separated text's
    commas are its syntax and dropped.
    """
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [text_of(v) for v in value if v is not None]
    text = text_of(value).strip()
    if text.startswith("["):
        try:
            loaded = json.loads(text)
        except ValueError:
            loaded = None
        if isinstance(loaded, list):
            return [text_of(v) for v in loaded if v is not None]
    if text.startswith("{") and text.endswith("}"):  # a PostgreSQL array literal as text
        text = text[1:-1]
    return [part.strip().strip('"') for part in text.split(",")]


def access_of(value: Any) -> Access:
    """Principals (``user:email``, ``group:name``, ``public``) to an Access.

    A bare entry with ``@`` is a user, any other bare entry a group. NULL or an empty
    list means nobody (default deny). Names are not normalized here: the gate does it
    (``normalize_identity``), so an entry that could pass as another identity fails only
    its row (``invalid_principal``).
    """
    principals: list[str] = []
    for item in _items(value):
        if not item:
            continue
        if item.lower() == PUBLIC_PRINCIPAL:
            principals.append(PUBLIC_PRINCIPAL)
        elif item.startswith(("user:", "group:")):
            principals.append(item)
        else:
            principals.append(f"user:{item}" if "@" in item else f"group:{item}")
    return Access.from_principals(principals)


def decode_json(row: Mapping[str, Any], columns: set[str]) -> Mapping[str, Any]:
    """The row with the JSON text of ``columns`` decoded (text that is not JSON is kept)."""
    decoded = dict(row)
    for column in columns:
        value = decoded.get(column)
        if isinstance(value, bytes | bytearray):
            value = bytes(value).decode("utf-8", errors="replace")
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                decoded[column] = json.loads(value)
    return decoded


def metadata_of(value: Any) -> MetadataValue | None:
    """A metadata value: arrays become lists of texts; NULL is left out."""
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return [text_of(v) for v in value if v is not None]
    return text_of(value)


def version_of(
    *,
    title: str,
    content: str,
    metadata: Mapping[str, MetadataValue],
    access: Access | None,
    updated_at: datetime | None,
) -> str:
    """The version hint: a hash of everything a document carries, after updated_at if any."""
    payload = _compact_json(
        [title, content, dict(sorted(metadata.items())), access and access.key()]
    )
    digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()[:32]
    return f"{iso(as_utc(updated_at))}#{digest}" if updated_at is not None else digest


def _json_dumps_compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _compact_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``, its C encoder
    made once rather than on every call (0.8 µs a row against 2.1): the same text, so
    every version hint stays what it was (tests/connectors/sql/test_sql_rows.py)."""
    if c_make_encoder is None:  # an interpreter without json's C speedups
        return _json_dumps_compact
    encode = c_make_encoder(
        None, json.JSONEncoder().default, encode_basestring, None, ":", ",", False, False, True
    )
    return lambda value: "".join(encode(value, 0))


_compact_json = _compact_encoder()
