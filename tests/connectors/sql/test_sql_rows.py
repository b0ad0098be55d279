"""Unit tests of the pure row helpers: ids, templates, principals, version hints."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from headwater.connectors.sql import _rows
from headwater.errors import ConfigError
from headwater.types import Access


def test_object_ids_join_and_escape_stably() -> None:
    assert _rows.object_id_of([42]) == "42"
    assert _rows.object_id_of(["a/b", "50%"]) == "a%2Fb/50%25"
    assert _rows.object_id_of([Decimal("1.50"), datetime(2024, 1, 1, tzinfo=UTC)]) == (
        "1.50/2024-01-01T00:00:00+00:00"
    )


@pytest.mark.parametrize(
    "value",
    [
        ["user:Ann@X.com", "group:eng", "public"],
        '["user:ann@x.com", "group:eng", "public"]',
        "user:ann@x.com, group:eng ,public",
        "{user:ann@x.com,group:eng,public}",
        "ann@x.com,eng,PUBLIC",
    ],
)
def test_access_accepts_arrays_json_and_comma_lists(value: object) -> None:
    access = _rows.access_of(value)
    assert access.principals() == ["group:eng", "public", "user:ann@x.com"]


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        (["user:\u212aim@x.com"], "\u212aim@x.com"),  # KELVIN SIGN: not folded into kim
        (["user: kim@x.com"], " kim@x.com"),  # padded: not trimmed into kim
        ('["kim@x.com\\t"]', "kim@x.com\t"),
    ],
)
def test_access_keeps_lookalike_and_padded_names_for_the_gate_to_refuse(
    value: object, kept: str
) -> None:
    access = _rows.access_of(value)
    assert access.users == (kept,)
    with pytest.raises(ConfigError):
        access.principals()
    # The version hint of such a row is computed, not raised: only the gate refuses it.
    assert version(access=access) != version(access=Access(users=("kim@x.com",)))


def test_empty_access_is_nobody() -> None:
    assert _rows.access_of(None).is_empty() and _rows.access_of("").is_empty()
    assert _rows.access_of([]).is_empty()


def test_templates_render_columns_and_refuse_attribute_access() -> None:
    assert _rows.render("# {title}\n{n} {{x}}", {"title": "T", "n": None}) == "# T\n {x}"
    assert _rows.template_fields("{a} {b} {a}") == ["a", "b"]
    for bad in ("{a.__class__}", "{a[0]}", "{a!r}", "{a:>5}", "{"):
        with pytest.raises(ValueError):
            _rows.template_fields(bad)
    with pytest.raises(ConfigError, match="'missing'"):
        _rows.render("{missing}", {"a": 1})


def version(
    content: str = "c", access: Access | None = None, updated_at: datetime | None = None
) -> str:
    return _rows.version_of(
        title="t", content=content, metadata={"k": "v"}, access=access, updated_at=updated_at
    )


def test_version_changes_with_what_a_document_shows() -> None:
    assert version() == version()
    assert version() != version(content="d")
    assert version() != version(access=Access(public=True))
    stamped = version(updated_at=datetime(2024, 1, 1))
    assert stamped == f"2024-01-01T00:00:00+00:00#{version()}"


@pytest.mark.parametrize(
    "value",
    [
        ["t", "c", {}, None],
        ['q"uote \\ back', "tab\there\nnew\x00nul", {"b": ["x", "é"], "a": "日本"}, ["public"]],
        ["emoji 😀", "\u2028\u2029 separators", {"k": []}, ["user:a@b.c", "group:g"]],
        [1, 2.5, True, False, None, {"nested": {"deep": [1, "2"]}}],
    ],
)
def test_the_compact_json_is_json_dumps_own_text(value: object) -> None:
    # version hints are hashes of this text: a byte of difference re-reads every row
    assert _rows._compact_json(value) == json.dumps(
        value, ensure_ascii=False, separators=(",", ":")
    )


def test_a_version_hint_is_the_one_earlier_releases_gave() -> None:
    payload = '["t","body é",{"a":"1","b":["x"]},["group:eng","public"]]'
    expected = hashlib.sha256(payload.encode()).hexdigest()[:32]
    access = Access(groups=("eng",), public=True)
    assert access.key() == ["group:eng", "public"]
    got = _rows.version_of(
        title="t", content="body é", metadata={"b": ["x"], "a": "1"}, access=access, updated_at=None
    )
    assert got == expected
