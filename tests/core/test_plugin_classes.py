"""Plugin loading is typed: what ``load_connector_class`` and ``load_sink_class`` return
has what their Protocols (``ConnectorClass``, ``SinkClass``) promise, for every
installed entry point, and an unknown type is a ConfigError naming the installed ones."""

from __future__ import annotations

import pytest

from headwater.connectors import (
    ConnectorOptions,
    available_connector_types,
    load_connector_class,
)
from headwater.errors import ConfigError
from headwater.sinks import SinkOptions, available_sink_types, load_sink_class


@pytest.mark.parametrize("type_name", available_connector_types())
def test_every_installed_connector_is_a_connector_class(type_name: str) -> None:
    cls = load_connector_class(type_name)
    assert isinstance(cls, type) and callable(cls)
    assert issubclass(cls.Options, ConnectorOptions)
    assert getattr(cls, "type_name", type_name) == type_name


@pytest.mark.parametrize("type_name", available_sink_types())
def test_every_installed_sink_is_a_sink_class(type_name: str) -> None:
    cls = load_sink_class(type_name)
    assert isinstance(cls, type) and callable(cls)
    assert issubclass(cls.Options, SinkOptions)
    assert isinstance(cls.schema_version, str) and cls.schema_version


def test_unknown_types_name_the_installed_ones() -> None:
    with pytest.raises(ConfigError, match=r"expected one of: .*filesystem"):
        load_connector_class("nope")
    with pytest.raises(ConfigError, match=r"expected one of: .*sqlite"):
        load_sink_class("nope")
