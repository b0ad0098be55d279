"""Principals: one normalization on both sides, and no identity passes as another.

``\\u212aim@x.com`` (KELVIN SIGN) lowercases to ``kim@x.com``; it must never see Kim's
documents, whether it comes from ``--as``, from the config or from a connector's ACL.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from headwater import Workspace
from headwater.connectors.base import ReadStream
from headwater.errors import ConfigError
from headwater.types import Access, Checkpoint, KnownVersions, Window, normalize_identity
from memory_connector import SOURCES, Item, MemoryConnector, MemorySource
from workspace_helpers import filesystem_source, write_config

KELVIN = "\u212aim@x.com"


@pytest.mark.parametrize(
    ("value", "kind", "expected"),
    [
        ("Kim@X.com", "user", "kim@x.com"),
        ("stra\u00dfe@x.com", "user", "stra\u00dfe@x.com"),  # not folded into strasse@x.com
        ("Sales Team", "group", "Sales Team"),
        ("Staff", "group", "Staff"),  # group names keep their case
    ],
)
def test_identities_that_normalize(value: str, kind: str, expected: str) -> None:
    assert normalize_identity(value, kind) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (KELVIN, "user"),  # KELVIN SIGN: NFKC reads K
        ("\uff4bim@x.com", "user"),  # fullwidth k
        ("kim\u200b@x.com", "user"),  # zero-width space (format character)
        ("kim @x.com", "user"),
        (" kim@x.com", "user"),
        ("kim@x.com\n", "user"),
        ("\u0130@x.com", "user"),  # lowercases to two characters
        ("", "user"),
        ("", "group"),
        ("staff\t", "group"),
        ("sta\x1bff", "group"),
        ("\ufb01nance", "group"),  # the fi ligature
    ],
)
def test_identities_that_are_rejected(value: str, kind: str) -> None:
    with pytest.raises(ConfigError, match=r"expected|compatibility|another identity"):
        normalize_identity(value, kind)  # type: ignore[arg-type]


def kim_workspace(tmp_path: Path, manifest_url: str | None, corpus: Path) -> Path:
    source = filesystem_source(corpus, access='{ users = ["Kim@x.com"] }')
    return write_config(tmp_path, manifest_url=manifest_url, sources=source)


def test_a_compatibility_character_cannot_pass_as_kim(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with Workspace.open(kim_workspace(tmp_path, manifest_url, corpus)) as ws:
        ws.sync()
        assert ws.search("vacation", user="kim@x.com", mode="keyword")
        assert ws.search("vacation", user="KIM@X.COM", mode="keyword")
        with pytest.raises(ConfigError, match="compatibility characters"):
            ws.search("vacation", user=KELVIN, mode="keyword")
        with pytest.raises(ConfigError, match="U\\+0000"):
            ws.search("vacation", user="kim@x.com\x00", mode="keyword")


def test_cli_as_kelvin_sign_is_a_usage_error(tmp_path: Path, corpus: Path) -> None:
    config = kim_workspace(tmp_path, None, corpus)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "headwater.cli", "-c", str(config)]
    assert subprocess.run([*cmd, "sync"], env=env, capture_output=True).returncode == 0
    found = subprocess.run(
        [*cmd, "search", "vacation", "--as", KELVIN, "--mode", "keyword"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert found.returncode == 2, found.stdout
    assert "compatibility characters" in found.stderr and "Vacation" not in found.stdout


@pytest.mark.parametrize(
    ("access", "where"),
    [
        ('{ groups = [""] }', "source[0].access.groups"),
        ('{ groups = ["staff", " "] }', "source[0].access.groups"),
        (f'{{ users = ["{KELVIN}"] }}', "source[0].access.users"),
    ],
)
def test_empty_or_lookalike_principals_in_the_config_are_errors(
    tmp_path: Path, corpus: Path, access: str, where: str
) -> None:
    config = write_config(
        tmp_path, manifest_url=None, sources=filesystem_source(corpus, access=access)
    )
    with pytest.raises(ConfigError) as caught:
        Workspace.open(config)
    assert where in str(caught.value)


class LookalikeAcl(MemoryConnector):
    """Gives every document an ACL naming the KELVIN SIGN look-alike of kim@x.com."""

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        for item in super().read(window, checkpoint, known):
            if isinstance(item, Checkpoint):
                yield item
            else:
                yield replace(item, access=Access(users=(KELVIN,)))  # type: ignore[arg-type]
        return None


def test_a_connector_acl_with_a_lookalike_is_a_failure_not_a_grant(
    tmp_path: Path, manifest_url: str
) -> None:
    name = uuid.uuid4().hex
    SOURCES[name] = MemorySource(items={"a": Item("a", "vacation days")})
    body = f'[[source]]\nid = "mem"\ntype = "memory"\nname = "{name}"\n'
    config = write_config(tmp_path, manifest_url=manifest_url, sources=body)
    with Workspace.open(config, connector_types={"memory": LookalikeAcl}) as ws:
        run = ws.sync().runs[0]
        assert run.status == "completed_with_errors" and run.counts.failed == 1
        (failure,) = ws.failures("mem")
        assert failure.error_class == "invalid_principal"
        assert ws.search("vacation", user="kim@x.com", mode="keyword") == []


class LateLookalikeAcl(MemoryConnector):
    """Gives every document the look-alike ACL while ``poisoned`` is set."""

    poisoned = False

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        for item in super().read(window, checkpoint, known):
            if isinstance(item, Checkpoint) or not LateLookalikeAcl.poisoned:
                yield item
            else:
                yield replace(item, access=Access(users=(KELVIN,)))  # type: ignore[arg-type]
        return None


def test_a_late_older_version_with_a_lookalike_is_stale_and_withholds_nothing(
    tmp_path: Path, manifest_url: str
) -> None:
    name = uuid.uuid4().hex
    SOURCES[name] = MemorySource(items={"a": Item("a", "vacation days", sequence=5)})
    body = (
        f'[[source]]\nid = "mem"\ntype = "memory"\nname = "{name}"\n'
        'access = { users = ["kim@x.com"] }\n'
    )
    config = write_config(tmp_path, manifest_url=manifest_url, sources=body)
    LateLookalikeAcl.poisoned = False
    with Workspace.open(config, connector_types={"memory": LateLookalikeAcl}) as ws:
        assert ws.sync().runs[0].status == "succeeded"
        assert ws.search("vacation", user="kim@x.com", mode="keyword")
        SOURCES[name].items["a"] = Item("a", "vacation days, old text", sequence=3)
        LateLookalikeAcl.poisoned = True
        try:
            run = ws.sync().runs[0]
        finally:
            LateLookalikeAcl.poisoned = False
        assert (run.counts.stale, run.counts.failed) == (1, 0), run
        assert ws.failures("mem") == []
        assert ws.search("vacation", user="kim@x.com", mode="keyword")  # still Kim's
