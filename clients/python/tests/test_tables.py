"""Shared tables: lifecycle, items with TTLs and escaped keys, paged scans."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import ebb_client


def test_table_lifecycle(client, name):
    t = client.create_table(name, default_ttl=timedelta(minutes=90))
    assert t.name == name and t.default_ttl == timedelta(minutes=90)
    assert t.created_at.tzinfo is not None
    assert client.create_table(name, default_ttl=timedelta(minutes=90)) == t
    # Another default_ttl changes it in place; none keeps it.
    assert client.create_table(name, default_ttl=timedelta(hours=2)).default_ttl == timedelta(hours=2)
    assert client.create_table(name).default_ttl == timedelta(hours=2)
    assert client.create_table(name, default_ttl=timedelta(minutes=90)) == t
    assert client.get_table(name) == t
    plain = client.create_table(name + "_plain")
    assert plain.default_ttl == timedelta(0)
    assert {name, name + "_plain"} <= {x.name for x in client.list_tables()}
    client.delete_table(name + "_plain")
    with pytest.raises(ebb_client.NotFound):
        client.get_table(name + "_plain")
    client.delete_table(name + "_plain")


def test_items(client, name):
    client.create_table(name, default_ttl=timedelta(hours=1))
    now = datetime.now(timezone.utc).replace(microsecond=0)
    keys = ["..", ".", "a/b?c#d", "ü", "plain"]
    for i, k in enumerate(keys):
        item = client.put_table_item(
            name, k, timestamp=now + timedelta(seconds=i), attributes={"n": i, "tags": ["x"]}
        )
        assert item.key == k and item.attributes == {"n": i, "tags": ["x"]}
        assert item.expires_at is not None and item.expires_at > now
    forever = client.put_table_item(name, "forever", timestamp=now + timedelta(seconds=10), ttl=timedelta(0))
    assert forever.expires_at is None and forever.attributes == {}
    got = client.get_table_item(name, "..")
    assert got.timestamp == now and got.attributes["n"] == 0
    assert client.get_table_item(name, "a/b?c#d").attributes["n"] == 2

    page = client.list_table_items(name, limit=2)
    assert [i.key for i in page.items] == ["..", "."] and page.next_page_token
    everything = list(client.iter_table_items(name, page_size=2))
    assert [i.key for i in everything] == keys + ["forever"]
    later = client.list_table_items(name, after=now + timedelta(seconds=2))
    assert [i.key for i in later.items] == ["ü", "plain", "forever"]

    client.delete_table_item(name, "..")
    with pytest.raises(ebb_client.NotFound):
        client.get_table_item(name, "..")
    client.delete_table_item(name, "..")
    with pytest.raises(ebb_client.InvalidArgument):
        client.put_table_item(name, "k" * 1001, timestamp=now)
    # A table must exist before its items.
    with pytest.raises(ebb_client.NotFound):
        client.put_table_item(name + "_missing", "k", timestamp=now)


def test_conditional_writes(client, name):
    client.create_table(name)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    v1 = client.put_table_item(name, "k", timestamp=now, attributes={"a": 1, "b": 2}, if_absent=True)
    assert v1.version
    with pytest.raises(ebb_client.FailedPrecondition):
        client.put_table_item(name, "k", timestamp=now, if_absent=True)
    v2 = client.patch_table_item(name, "k", attributes={"b": None, "c": {"d": 3}}, if_version=v1.version)
    assert v2.attributes == {"a": 1, "c": {"d": 3}} and v2.version != v1.version and v2.timestamp == now
    with pytest.raises(ebb_client.FailedPrecondition):
        client.put_table_item(name, "k", timestamp=now, if_version=v1.version)
    with pytest.raises(ebb_client.FailedPrecondition):
        client.delete_table_item(name, "k", if_version=v1.version)
    with pytest.raises(ebb_client.NotFound):
        client.patch_table_item(name, "none", attributes={"a": 1})
    batch = client.batch_get_table_items(name, ["none", "k"])
    assert [i.key for i in batch.items] == ["k"] and batch.missing == ["none"]
    with pytest.raises(ebb_client.InvalidArgument):
        client.batch_get_table_items(name, [f"k{i}" for i in range(101)])
    client.delete_table_item(name, "k", if_version=v2.version)
    with pytest.raises(ebb_client.NotFound):
        client.get_table_item(name, "k")
