"""A server with an auth file: 401 without a known token, 403 without the scope."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from conftest import create_index, make_client

import ebb_client
from ebb_client import Event


def test_tokens(kind, auth_server):
    server, tokens = auth_server
    anon, close_anon = make_client(kind, server.url)
    admin, close_admin = make_client(kind, server.url, tokens["admin"])
    scoped, close_scoped = make_client(kind, server.url, tokens["events"])
    reader, close_reader = make_client(kind, server.url, tokens["reader"])
    metrics, close_metrics = make_client(kind, server.url, tokens["metrics"])
    wrong, close_wrong = make_client(kind, server.url, "not-a-token")
    try:
        # Health needs no token.
        assert anon.health().status == "ok" and anon.ready().ready
        with pytest.raises(ebb_client.Unauthenticated) as e:
            anon.list_tables()
        assert e.value.status == 401
        with pytest.raises(ebb_client.Unauthenticated):
            wrong.get_index("events_scoped")

        create_index(admin, "events_scoped")
        admin.create_table("shared", default_ttl=timedelta(hours=1))
        now = datetime.now(timezone.utc)
        admin.put_table_item("shared", "k", timestamp=now)

        # The index's token reaches its index, and nothing else.
        assert scoped.write_events("events_scoped", [Event(index_id=kind, event_id="b", timestamp=now)]) == 1
        assert len(scoped.query_events("events_scoped", kind).events) == 1
        with pytest.raises(ebb_client.PermissionDenied) as e:
            scoped.list_indexes()
        assert e.value.status == 403
        with pytest.raises(ebb_client.PermissionDenied):
            scoped.admin_cluster()
        with pytest.raises(ebb_client.PermissionDenied):
            scoped.get_table("shared")

        # A read-only token reads and is refused a write.
        assert reader.get_table_item("shared", "k").key == "k"
        with pytest.raises(ebb_client.PermissionDenied):
            reader.put_table_item("shared", "k2", timestamp=now)

        # The metrics token reads /metrics only.
        assert "ebb_build_info" in metrics.metrics()
        with pytest.raises(ebb_client.PermissionDenied):
            metrics.get_table("shared")
        with pytest.raises(ebb_client.Unauthenticated):
            anon.metrics()
    finally:
        for close in (close_anon, close_admin, close_scoped, close_reader, close_metrics, close_wrong):
            close()


def test_server_and_token_from_the_environment(auth_server, monkeypatch):
    server, tokens = auth_server
    monkeypatch.setenv("EBB_SERVER", server.url)
    monkeypatch.setenv("EBB_TOKEN", tokens["admin"])
    with ebb_client.Client() as c:
        assert isinstance(c.list_tables(), list)
    # A token given wins over the environment's.
    with ebb_client.Client(token="not-a-token") as c:
        with pytest.raises(ebb_client.Unauthenticated):
            c.list_tables()
