"""Indexes: lifecycle, writes, paged queries, reconcile and the errors of a write."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from conftest import create_index

import ebb_client
from ebb_client import Event


def test_index_lifecycle(client, name):
    ix = create_index(client, name)
    assert ix.name == name
    assert ix.table_bucket == timedelta(hours=1)
    assert ix.partition_bucket == timedelta(minutes=1)
    assert ix.retention == timedelta(hours=2)
    assert ix.runway == 2
    assert ix.shards and all(s.start.tzinfo is not None for s in ix.shards)
    assert ix.runway_remaining > timedelta(0)
    # The same configuration again is answered as is.
    assert create_index(client, name).shards == ix.shards
    # Another table bucket is a layout change from a boundary past the
    # runway, which the plan shows; changing back before it took effect
    # cancels it. Table buckets that do not divide one another are refused.
    changed = client.create_index(
        name,
        table_bucket=timedelta(hours=2),
        partition_bucket=timedelta(minutes=1),
        retention=timedelta(hours=2),
    )
    assert changed.layouts and [lay.table_bucket for lay in changed.layouts] == [timedelta(hours=1), timedelta(hours=2)]
    plan = client.plan_index(name)
    assert plan.transitions and plan.transitions[0].from_ == changed.layouts[1].from_
    assert not plan.transitions[0].created
    with pytest.raises(ebb_client.InvalidArgument) as e:
        client.create_index(
            name,
            table_bucket=timedelta(minutes=90),
            partition_bucket=timedelta(minutes=1),
            retention=timedelta(hours=2),
        )
    assert "table_bucket" in e.value.message
    assert create_index(client, name).layouts is None
    # A longer retention is a change the PUT makes.
    longer = create_index(client, name, retention=timedelta(hours=3))
    assert longer.retention == timedelta(hours=3) and longer.held_retention is None
    got = client.get_index(name, stats=True)
    assert [s.table for s in got.shards] == [s.table for s in longer.shards]
    assert all(s.rows is not None for s in got.shards)
    assert name in [i.name for i in client.list_indexes()]
    client.delete_index(name)
    with pytest.raises(ebb_client.NotFound) as e:
        client.get_index(name)
    assert e.value.status == 404 and e.value.code == "not_found"
    # Deleting what is gone is answered as deleted.
    client.delete_index(name)


def test_events_pages_and_order(client, name):
    create_index(client, name)
    now = datetime.now(timezone.utc).replace(microsecond=123000)
    events = [
        Event(
            index_id="user/ü 1",
            event_id=f"e{i:02d}",
            timestamp=now - timedelta(minutes=i),
            payload=None if i == 3 else bytes([i, 0xFF, 0xFB]),
        )
        for i in range(25)
    ]
    assert client.write_events(name, events) == 25
    # A write is an idempotent upsert.
    assert client.write_events(name, events[:5]) == 5
    client.write_events(name, [Event(index_id="other", event_id="x", timestamp=now)])

    page = client.query_events(name, "user/ü 1", limit=10)
    assert len(page.events) == 10 and page.next_page_token
    asc = list(client.iter_events(name, "user/ü 1", page_size=7))
    assert [e.event_id for e in asc] == [f"e{i:02d}" for i in reversed(range(25))]
    first = asc[-1]
    assert first.timestamp == now and first.timestamp.tzinfo is not None
    assert first.payload == bytes([0, 0xFF, 0xFB])
    # No payload reads back as empty bytes in both encodings.
    assert not [e for e in asc if e.event_id == "e03"][0].payload
    desc = list(client.iter_events(name, "user/ü 1", order="desc", page_size=4))
    assert [e.event_id for e in desc] == [e.event_id for e in reversed(asc)]
    # [start, end): start inclusive, end exclusive.
    window = list(
        client.iter_events(name, "user/ü 1", start=now - timedelta(minutes=5), end=now)
    )
    assert [e.event_id for e in window] == ["e05", "e04", "e03", "e02", "e01"]
    # An index_id never written reads empty.
    assert client.query_events(name, "nobody").events == []


def test_write_errors(client, name):
    create_index(client, name)
    now = datetime.now(timezone.utc)
    with pytest.raises(ebb_client.NoShard) as e:
        client.write_events(name, [Event(index_id="a", event_id="b", timestamp=now + timedelta(days=3))])
    assert e.value.status == 422 and "event 0" in e.value.message
    with pytest.raises(ebb_client.Expired) as e:
        client.write_events(
            name,
            [
                Event(index_id="a", event_id="ok", timestamp=now),
                Event(index_id="a", event_id="old", timestamp=now - timedelta(days=3)),
            ],
        )
    assert "event 1" in e.value.message
    # All or nothing: the good event of the refused batch is not there.
    assert client.query_events(name, "a").events == []
    with pytest.raises(ebb_client.InvalidArgument):
        client.get_index("Not-A-Name")
    with pytest.raises(ebb_client.InvalidArgument):
        client.query_events(name, "a", limit=0)
    with pytest.raises(ebb_client.TooLarge):
        client.write_events(name, [Event(index_id="a", event_id="big", timestamp=now, payload=b"x" * 7_000_000)])
    with pytest.raises(ValueError):
        # A naive datetime names no zone: refused before anything is sent.
        client.write_events(name, [Event(index_id="a", event_id="b", timestamp=datetime.now())])


def test_reconcile(client, name):
    create_index(client, name, retention=timedelta(hours=4))
    assert client.plan_index(name).applied is False
    # A shorter retention drops nothing by itself: a plan shows the drops,
    # and only an apply makes them.
    shorter = create_index(client, name, retention=timedelta(hours=1))
    assert shorter.held_retention == timedelta(hours=4)
    plan = client.plan_index(name)
    assert plan.applied is False
    drops = [a for a in plan.actions if a.op == "drop"]
    assert drops and all(a.reason for a in drops)
    assert client.reconcile_index(name).applied is False
    assert client.get_index(name).held_retention == timedelta(hours=4)
    applied = client.apply_index(name)
    assert applied.applied is True
    assert {a.table for a in applied.actions if a.op == "drop"} == {a.table for a in drops}
    after = client.get_index(name)
    assert after.held_retention is None
    assert not {s.table for s in after.shards} & {a.table for a in drops}
    assert client.reconcile_index(name, dry_run=False, allow_clock_jump=True).applied is True
    with pytest.raises(ebb_client.NotFound):
        client.plan_index(name + "x")


def test_erase_events(client, name):
    create_index(client, name)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    events = [
        Event(index_id=who, event_id=f"e{i:02d}", timestamp=now - timedelta(minutes=i), payload=None)
        for i in range(10)
        for who in ("user/ü 1", "user_2")
    ]
    assert client.write_events(name, events) == 20
    # One event, then again: idempotent.
    one = {"timestamp": now - timedelta(minutes=3), "event_id": "e03"}
    assert client.erase_events(name, "user_2", **one)["removed"] == 1
    assert client.erase_events(name, "user_2", **one)["removed"] == 0
    # A range [now-5m, now): e01..e05.
    got = client.erase_events(name, "user/ü 1", start=now - timedelta(minutes=5), end=now)
    assert got["removed"] == 5 and got["shards"] >= 1
    # Everything left of user/ü 1; user_2 keeps its nine.
    assert client.erase_events(name, "user/ü 1")["removed"] == 5
    assert list(client.iter_events(name, "user/ü 1")) == []
    assert len(list(client.iter_events(name, "user_2"))) == 9
    with pytest.raises(ebb_client.InvalidArgument):
        client.erase_events(name, "user_2", start=now, end=now - timedelta(minutes=1))


def test_event_ttl(client, name):
    create_index(client, name)
    now = datetime.now(timezone.utc)
    assert client.write_events(name, [Event(index_id="a", event_id="own", timestamp=now, ttl=timedelta(hours=1))]) == 1
    assert [e.event_id for e in client.query_events(name, "a").events] == ["own"]
    # A ttl already past, or not shorter than the retention, refuses the batch.
    with pytest.raises(ebb_client.Expired) as e:
        client.write_events(name, [Event(index_id="b", event_id="old", timestamp=now - timedelta(hours=2), ttl=timedelta(hours=1))])
    assert "event 0" in e.value.message
    with pytest.raises(ebb_client.InvalidArgument) as e:
        client.write_events(name, [Event(index_id="b", event_id="long", timestamp=now, ttl=timedelta(days=400))])
    assert "retention" in e.value.message
    assert client.query_events(name, "b").events == []
