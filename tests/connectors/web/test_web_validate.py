"""validate() and option errors: one line a user can act on, per cause."""

from __future__ import annotations

import pytest
from httpserver import LocalHttpServer, Reply, refused_port
from pydantic import ValidationError
from web_site import MakeWeb

from headwater.connectors.web import WebOptions
from headwater.errors import ConfigError, CredentialError, TransientError


def message_of(make_web: MakeWeb, **options: object) -> tuple[type[BaseException], str]:
    with pytest.raises((ConfigError, TransientError)) as caught:
        make_web(**options).validate()
    text = str(caught.value)
    assert "\n" not in text and "Traceback" not in text
    return type(caught.value), text


@pytest.mark.parametrize("option", ["sitemaps", "start_urls"])
def test_status_errors_are_named(site: LocalHttpServer, make_web: MakeWeb, option: str) -> None:
    site.route("/login", Reply(b"who?", status=401))
    site.route("/forbidden", Reply(b"no", status=403))
    kind, text = message_of(make_web, **{option: [site.url("/login")]})
    assert kind is CredentialError and "401 Unauthorized" in text and f"`{option}`" in text
    kind, text = message_of(make_web, **{option: [site.url("/forbidden")]})
    assert kind is CredentialError and "403 Forbidden" in text and "user_agent" in text
    assert "HeadwaterTest/1.0" in text
    kind, text = message_of(make_web, **{option: [site.url("/nothing-here")]})
    assert kind is ConfigError and "404 Not Found" in text and "fix the URL" in text


def test_connection_refused_is_named(make_web: MakeWeb) -> None:
    port = refused_port()
    kind, text = message_of(make_web, start_urls=[f"http://127.0.0.1:{port}/"])
    assert kind is TransientError
    assert f"connection to 127.0.0.1:{port} refused" in text and "server is running" in text


def test_server_error_says_try_later(site: LocalHttpServer, make_web: MakeWeb) -> None:
    site.route("/busy", Reply(b"x", status=503))
    kind, text = message_of(make_web, sitemaps=[site.url("/busy")])
    assert kind is TransientError and "503" in text and "try again later" in text


def test_a_page_that_is_not_a_sitemap(site: LocalHttpServer, make_web: MakeWeb) -> None:
    kind, text = message_of(make_web, sitemaps=[site.url("/about")])
    assert kind is ConfigError and "not a usable sitemap" in text


def test_a_start_url_disallowed_by_robots(site: LocalHttpServer, make_web: MakeWeb) -> None:
    kind, text = message_of(make_web, start_urls=[site.url("/private/secret")])
    assert kind is ConfigError and "robots.txt" in text


def test_validate_passes_on_a_good_site(site: LocalHttpServer, make_web: MakeWeb) -> None:
    make_web(sitemaps=[site.url("/sitemap.xml")], start_urls=[site.url("/")]).validate()


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({}, "set `sitemaps` or `start_urls`"),
        ({"start_urls": ["ftp://example.com/"]}, "not an http(s) URL"),
        ({"start_urls": ["https://e.com/"], "deny_patterns": ["("]}, "not a valid regular"),
        ({"start_urls": ["https://e.com/"], "concurrency": 0}, "greater than or equal to 1"),
        ({"start_urls": ["https://e.com/"], "depth": 3}, "Extra inputs are not permitted"),
    ],
)
def test_option_errors(options: dict[str, object], fragment: str) -> None:
    with pytest.raises(ValidationError) as caught:
        WebOptions(**options)  # type: ignore[arg-type]
    assert fragment in str(caught.value)
