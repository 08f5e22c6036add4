"""Errors from answers no live server gives on demand: load shedding, proxies, new codes."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import httpx
import pytest

import ebb_client
from ebb_client import errors


def _client(handler) -> ebb_client.Client:
    http = httpx.Client(base_url="http://ebb.test", transport=httpx.MockTransport(handler))
    return ebb_client.Client(http_client=http)


def _error(status: int, code: str, headers=None) -> httpx.Response:
    return httpx.Response(
        status, json={"error": {"code": code, "message": "m"}}, headers=headers or {}
    )


def test_unavailable_retry_after():
    c = _client(lambda req: _error(503, "unavailable", {"Retry-After": "3"}))
    with pytest.raises(ebb_client.Unavailable) as e:
        c.get_table("t")
    assert e.value.retry_after == 3.0
    assert e.value.status == 503 and e.value.code == "unavailable" and e.value.message == "m"
    assert str(e.value) == "unavailable (503): m"


def test_retry_after_http_date():
    at = datetime.now(timezone.utc) + timedelta(seconds=30)
    c = _client(lambda req: _error(503, "unavailable", {"Retry-After": format_datetime(at, usegmt=True)}))
    with pytest.raises(ebb_client.Unavailable) as e:
        c.health()
    assert 25 <= e.value.retry_after <= 31


def test_async_unavailable():
    async def run():
        http = httpx.AsyncClient(
            base_url="http://ebb.test",
            transport=httpx.MockTransport(lambda req: _error(503, "unavailable", {"Retry-After": "1"})),
        )
        async with ebb_client.AsyncClient(http_client=http) as c:
            with pytest.raises(ebb_client.Unavailable) as e:
                await c.put_table_item("t", "k", timestamp=datetime.now(timezone.utc))
            assert e.value.retry_after == 1.0
        await http.aclose()

    asyncio.run(run())


@pytest.mark.parametrize("code", sorted(errors.ERRORS))
def test_every_code_has_its_class(code):
    c = _client(lambda req: _error(400, code))
    with pytest.raises(errors.ERRORS[code]) as e:
        c.get_table("t")
    assert e.value.code == code and type(e.value).__name__ == _CLASS_NAMES[code]


_CLASS_NAMES = {
    "invalid_argument": "InvalidArgument",
    "unauthenticated": "Unauthenticated",
    "permission_denied": "PermissionDenied",
    "not_found": "NotFound",
    "method_not_allowed": "MethodNotAllowed",
    "conflict": "Conflict",
    "failed_precondition": "FailedPrecondition",
    "too_large": "TooLarge",
    "expired": "Expired",
    "no_shard": "NoShard",
    "internal": "Internal",
    "unavailable": "Unavailable",
    "insufficient_storage": "InsufficientStorage",
    "bad_gateway": "BadGateway",
}


def test_unknown_code_and_foreign_body():
    c = _client(lambda req: _error(418, "brand_new"))
    with pytest.raises(ebb_client.EbbError) as e:
        c.get_table("t")
    assert type(e.value) is ebb_client.EbbError and e.value.code == "brand_new"
    # A proxy's page still raises the class of its status.
    c = _client(lambda req: httpx.Response(503, text="<html>busy</html>", headers={"Retry-After": "7"}))
    with pytest.raises(ebb_client.Unavailable) as e:
        c.get_table("t")
    assert e.value.retry_after == 7.0 and "busy" in e.value.message


def test_unknown_fields_are_kept():
    body = {"name": "t", "default_ttl": "1h", "created_at": "2026-11-22T10:00:00Z", "expiry": "sweep"}
    c = _client(lambda req: httpx.Response(200, json=body))
    t = c.get_table("t")
    assert t.default_ttl == timedelta(hours=1) and t.extra == {"expiry": "sweep"}


def test_extra_request_fields_are_sent():
    seen = {}

    def handler(req: httpx.Request) -> httpx.Response:
        seen["body"] = req.content
        return httpx.Response(
            201,
            json={
                "entity_type": "u", "feature": "f", "version": "", "ttl": "1h",
                "created_at": "2026-11-22T10:00:00Z", "table": "list_x", "expiry": "sweep",
            },
        )

    f = _client(handler).create_list_feature("u", "f", ttl=timedelta(hours=1), extra={"expiry": "sweep"})
    assert seen["body"] == b'{"ttl":"1h","expiry":"sweep"}'
    assert f.extra == {"expiry": "sweep"}


def test_msgpack_required_when_asked(monkeypatch):
    from ebb_client import _core

    monkeypatch.setattr(_core, "_msgpack", None)
    with pytest.raises(ImportError):
        ebb_client.Client(msgpack=True)
    # Left to itself the client falls back to JSON.
    assert ebb_client.Client()._msgpack is False


def test_given_http_client_gets_token_and_headers():
    seen = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append((req.headers.get("Authorization"), req.headers.get("X-Trace"), req.headers.get("Accept")))
        return httpx.Response(200, json={"items": []})

    http = httpx.Client(base_url="http://ebb.test", transport=httpx.MockTransport(handler))
    c = ebb_client.Client(http_client=http, token="t0k", headers={"X-Trace": "1"}, msgpack=False)
    c.get_list_items("u", "f", "e")
    assert seen == [("Bearer t0k", "1", "application/json")]
    c.close()
    # Closing the ebb client leaves a given httpx client open.
    assert not http.is_closed
    http.close()


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_retries_after_unavailable(kind):
    answers = [
        lambda: _error(503, "unavailable", {"Retry-After": "0"}),
        lambda: _error(503, "unavailable"),
        lambda: httpx.Response(200, json={"name": "t", "default_ttl": "0s", "created_at": "2026-11-22T10:00:00Z"}),
    ]
    sent = []

    def handler(req: httpx.Request) -> httpx.Response:
        sent.append(req.content)
        return answers[len(sent) - 1]()

    transport = httpx.MockTransport(handler)
    if kind == "sync":
        c = ebb_client.Client(http_client=httpx.Client(base_url="http://ebb.test", transport=transport), retries=2)
        t = c.create_table("t")
    else:

        async def run():
            http = httpx.AsyncClient(base_url="http://ebb.test", transport=transport)
            c = ebb_client.AsyncClient(http_client=http, retries=2)
            return await c.create_table("t")

        t = asyncio.run(run())
    assert t.name == "t"
    # The same body each time.
    assert sent == [b"{}"] * 3
    # One retry fewer than needed raises.
    sent.clear()
    c = ebb_client.Client(http_client=httpx.Client(base_url="http://ebb.test", transport=transport), retries=1)
    with pytest.raises(ebb_client.Unavailable):
        c.create_table("t")
    assert len(sent) == 2
