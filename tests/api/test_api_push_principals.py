"""A pushed document's ``access`` goes through the one normalization, validated before
case folding: a look-alike or padded user is refused for that document, never folded or
trimmed into someone else."""

from __future__ import annotations

import pytest
from api_support import Server

DOC = "/v1/sources/inbox/documents/"


@pytest.mark.parametrize(
    ("object_id", "user"),
    [
        ("kelvin", "\u212aim@x.com"),  # KELVIN SIGN: lowercases to kim@x.com
        ("padded", " kim@x.com"),
    ],
)
def test_a_lookalike_or_padded_pushed_user_is_refused_not_folded_into_kim(
    server: Server, object_id: str, user: str
) -> None:
    body = {"version": 1, "text": "Salary bands for 2025.", "access": {"users": [user]}}
    with server.client("ingest") as ingest:
        answer = ingest.put(DOC + f"principals/{object_id}", json=body)
    assert answer.status_code == 400, answer.json()  # that document fails, nothing else
    assert repr(user) in answer.json()["error"], answer.json()
    with server.client() as admin:
        found = admin.get(
            "/v1/documents", params={"source": "inbox", "object": f"principals/{object_id}"}
        )
        assert found.status_code == 404, found.json()  # nothing held, so nothing for kim
