"""Health, readiness, metrics and the admin routes."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import ebb_client


def test_health(client):
    assert client.health().status == "ok"
    r = client.ready()
    assert r.ready and r.status == "ready"
    assert client.wait_ready(timeout=5).ready
    assert "ebb_build_info" in client.metrics()


def test_admin(client, name, tmp_path):
    client.create_table(name, default_ttl=timedelta(seconds=90))
    client.put_table_item(name, "k", timestamp=datetime.now(timezone.utc))
    tables = client.admin_tables()
    assert any(t.name == "ebb_meta" for t in tables.tables)
    assert all(t.capacity in ("on_demand", "provisioned") for t in tables.tables)
    logical = [t for t in tables.logical_tables if t.name == name]
    assert logical and logical[0].items == 1 and logical[0].default_ttl == timedelta(seconds=90)

    cluster = client.admin_cluster()
    assert cluster.backend == "pebble" and cluster.replica
    assert {lease.role for lease in cluster.leases} >= {"shard-manager", "sweeper"}
    assert all(lease.held_here for lease in cluster.leases)
    assert cluster.capabilities is not None and cluster.capabilities.max_row_bytes > 0

    usage = client.admin_usage()
    assert usage.since <= usage.at and usage.operations
    assert usage.cost is None and usage.storage is None
    ops = {(o.table_class, o.op) for o in usage.operations}
    assert ("shared_table", "upsert") in ops
    full = client.admin_usage(cost=True, storage=True)
    assert full.storage and full.cost is not None
    assert {p.provider for p in full.cost.projections} == {"dynamodb", "keyspaces"}

    target = tmp_path / "backup"
    b = client.admin_backup(str(target))
    assert b.dir == str(target) and b.bytes > 0 and b.took >= timedelta(0)
    assert (target).is_dir()
    with pytest.raises(ebb_client.Conflict):
        client.admin_backup(str(target))
    with pytest.raises(ebb_client.InvalidArgument):
        client.admin_backup("relative/path")


def test_insufficient_storage(kind, full_server):
    from conftest import make_client

    c, close = make_client(kind, full_server.url)
    try:
        c.create_table("full", default_ttl=timedelta(hours=1))
        with pytest.raises(ebb_client.InsufficientStorage) as e:
            c.put_table_item("full", "k", timestamp=datetime.now(timezone.utc))
        assert e.value.status == 507
        # Deletes go on while the disk is full.
        c.delete_table_item("full", "k")
    finally:
        close()
