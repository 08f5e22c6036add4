"""An index's migration off its own legacy table, through every migration call."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest
from conftest import create_index

import ebb_client
from ebb_client import LegacyRow, LegacyTable


def test_migration(client, name):
    create_index(client, name)
    with pytest.raises(ebb_client.NotFound):
        client.get_migration(name)
    legacy = LegacyTable(kind="table", table=f"{name}_legacy", ttl=timedelta(hours=2))
    m = client.start_migration(name, legacy, write_legacy=True, sample_percent=100)
    assert m.index == name and m.phase == "shadow-write"
    assert m.legacy.table == f"{name}_legacy" and m.legacy.ttl == timedelta(hours=2)
    assert m.write_legacy is True and m.sample_percent == 100.0
    assert m.started_at.tzinfo is not None
    # Another legacy table while migrating is a conflict.
    with pytest.raises(ebb_client.Conflict):
        client.start_migration(name, LegacyTable(kind="table", table="elsewhere"))

    now = datetime.now(timezone.utc)
    rows = [
        LegacyRow(index_id="u1", event_id=f"l{i}", timestamp=now - timedelta(minutes=i), payload=b"legacy")
        for i in range(5)
    ]
    rows.append(
        LegacyRow(
            index_id="u1",
            event_id="gone",
            timestamp=now - timedelta(hours=1),
            expires_at=now - timedelta(minutes=1),
        )
    )
    assert client.write_legacy_rows(name, rows) == 5

    m = client.start_backfill(name, rows_per_second=10_000, batch_size=100)
    assert m.backfill_running or (m.backfill and m.backfill.done)
    deadline = time.monotonic() + 30
    while True:
        m = client.get_migration(name)
        if m.backfill and m.backfill.done and not m.backfill_running:
            break
        assert time.monotonic() < deadline, m
        time.sleep(0.05)
    assert m.backfill.copied == 5
    assert m.backfill.eta is not None and m.backfill.eta >= timedelta(0)
    # Stopping when none runs succeeds.
    client.stop_backfill(name)

    # One phase forward at a time: skipping to cutover is refused.
    with pytest.raises(ebb_client.Conflict):
        client.set_migration_phase(name, "cutover")
    m = client.set_migration_phase(name, "shadow-read")
    assert m.phase == "shadow-read"
    assert [(h.from_phase, h.to) for h in m.history] == [("shadow-write", "shadow-read")]
    assert m.history[0].at.tzinfo is not None
    ids = {e.event_id for e in client.iter_events(name, "u1")}
    assert ids >= {f"l{i}" for i in range(5)}
    m = client.set_migration_phase(name, "cutover", force=True)
    assert m.phase == "cutover" and m.history[-1].forced

    client.end_migration(name, force=True)
    with pytest.raises(ebb_client.NotFound):
        client.get_migration(name)
