"""``[parse]`` and a source's ``parse``: validated with key paths, merged source over workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.config import load_config
from headwater.errors import ConfigError
from headwater.pipeline.parse import ParseOptions

BASE = '[workspace]\ntenant = "acme"\n'


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "headwater.toml"
    path.write_text(BASE + body, encoding="utf-8")
    return path


def test_source_settings_add_to_and_override_the_workspace(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[parse]\ntext_extensions = [".conf"]\nmedia_types = { ".tpl" = "text/html", ".j2" = "text/html" }\n'
        f'[[source]]\nid = "docs"\ntype = "filesystem"\nroot = "{tmp_path}"\n'
        'parse = { text_extensions = [".INI"], media_types = { ".j2" = "text/markdown" } }\n'
        f'[[source]]\nid = "plain"\ntype = "filesystem"\nroot = "{tmp_path}"\n',
    )
    config = load_config(path).config
    docs, plain = config.source
    assert config.parse.options(docs.parse) == ParseOptions(
        text_extensions=frozenset({".conf", ".ini"}),
        media_types={".tpl": "text/html", ".j2": "text/markdown"},
    )
    assert config.parse.options(plain.parse).text_extensions == frozenset({".conf"})


def test_bad_extensions_and_media_types_are_named_with_their_key_paths(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[parse]\ntext_extensions = ["conf"]\n'
        f'[[source]]\nid = "docs"\ntype = "filesystem"\nroot = "{tmp_path}"\n'
        'parse = { media_types = { ".tpl" = "image/png" } }\n',
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    problems = "\n".join(caught.value.problems)
    assert "parse.text_extensions" in problems and "'conf' is not a file extension" in problems
    assert "source[0].parse.media_types" in problems
    assert "'image/png': not the media type of a supported format" in problems
