"""Feature-store lists: the feature lifecycle, adds, newest-first reads, paging and removal."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import ebb_client
from ebb_client import ListItem


def test_feature_lifecycle(client, name):
    entity = f"user:{name}"
    f = client.create_list_feature(entity, "stories", ttl=timedelta(days=7))
    assert (f.entity_type, f.feature, f.version) == (entity, "stories", "")
    assert f.ttl == timedelta(days=7)
    assert f.created_at.tzinfo is not None and f.table
    # The same again is answered as is; another TTL changes it in place.
    assert client.create_list_feature(entity, "stories", ttl=timedelta(days=7)).created_at == f.created_at
    changed = client.create_list_feature(entity, "stories", ttl=timedelta(days=8))
    assert changed.ttl == timedelta(days=8) and changed.table == f.table and changed.created_at == f.created_at
    assert client.create_list_feature(entity, "stories", ttl=timedelta(days=7)).ttl == timedelta(days=7)
    v2 = client.create_list_feature(entity, "stories", ttl=timedelta(hours=1, seconds=30), version="v2")
    assert v2.version == "v2" and v2.ttl == timedelta(hours=1, seconds=30)
    assert client.get_list_feature(entity, "stories").ttl == timedelta(days=7)
    assert client.get_list_feature(entity, "stories", version="v2").version == "v2"
    got = client.list_list_features(entity)
    assert [(x.feature, x.version) for x in got] == [("stories", ""), ("stories", "v2")]
    everything = client.list_all_list_features()
    assert {(x.entity_type, x.version) for x in everything} >= {(entity, ""), (entity, "v2")}
    client.delete_list_feature(entity, "stories", version="v2")
    with pytest.raises(ebb_client.NotFound):
        client.get_list_feature(entity, "stories", version="v2")
    client.delete_list_feature(entity, "stories", version="v2")
    client.delete_list_feature(entity, "stories")
    assert client.list_list_features(entity) == []


def test_items_newest_first(client, name):
    entity = f"user:{name}"
    client.create_list_feature(entity, "stories", ttl=timedelta(days=1))
    now = datetime.now(timezone.utc).replace(microsecond=456000)
    # Names that must be escaped, and values base64 writes with + and /.
    uid = "u/42 ?#.."
    items = [(f"story-{i}".encode(), now - timedelta(seconds=i)) for i in range(150)]
    res = client.add_list_items(entity, "stories", uid, items[:100])
    assert (res.written, res.skipped_expired) == (100, 0)
    res = client.add_list_items(
        entity,
        "stories",
        uid,
        [ListItem(value=v, timestamp=t) for v, t in items[100:]]
        + [ListItem(value=b"\xfb\xff\xfe", timestamp=now - timedelta(days=2))],
    )
    assert (res.written, res.skipped_expired) == (50, 1)

    page = client.get_list_items(entity, "stories", uid, limit=100)
    assert [i.value for i in page.items] == [v for v, _ in items[:100]]
    assert page.items[0].timestamp == now
    assert page.next_page_token
    rest = client.get_list_items(entity, "stories", uid, limit=100, page_token=page.next_page_token)
    assert [i.value for i in rest.items] == [v for v, _ in items[100:]]
    assert not rest.next_page_token
    # The default page is the server's (100).
    assert len(client.get_list_items(entity, "stories", uid).items) == 100
    everything = list(client.iter_list_items(entity, "stories", uid, page_size=40))
    assert [i.value for i in everything] == [v for v, _ in items]
    recent = client.get_list_items(entity, "stories", uid, min_timestamp=now - timedelta(seconds=2))
    assert [i.value for i in recent.items] == [b"story-0", b"story-1", b"story-2"]

    # Removal by a value base64 writes with '+' and '/'.
    odd = b"\xfb\xff\xfe"
    client.add_list_items(entity, "stories", uid, [(odd, now + timedelta(seconds=1))])
    assert client.get_list_items(entity, "stories", uid, limit=1).items[0].value == odd
    client.remove_list_items(entity, "stories", uid, odd)
    client.remove_list_items(entity, "stories", uid, b"story-0")
    assert client.get_list_items(entity, "stories", uid, limit=1).items[0].value == b"story-1"
    client.remove_list_items(entity, "stories", uid, None)
    assert client.get_list_items(entity, "stories", uid).items == []
    # A list never written is empty.
    assert client.get_list_items(entity, "stories", "nobody").items == []


def test_list_errors(client, name):
    entity = f"user:{name}"
    now = datetime.now(timezone.utc)
    with pytest.raises(ebb_client.NotFound):
        client.add_list_items(entity, "missing", "u", [(b"x", now)])
    client.create_list_feature(entity, "f", ttl=timedelta(hours=1))
    with pytest.raises(ebb_client.InvalidArgument) as e:
        client.add_list_items(entity, "f", "u", [(b"x", now)] * 1001)
    assert "1000" in e.value.message
    with pytest.raises(ebb_client.InvalidArgument):
        client.get_list_items(entity, "f", "u", limit=10_001)


def test_capped_list_count_and_whole_feature(client, name):
    entity = f"user:{name}"
    f = client.create_list_feature(entity, "seen", ttl=timedelta(days=1), max_items=2)
    assert f.max_items == 2
    # Without max_items the cap is kept; 0 would lift it.
    assert client.create_list_feature(entity, "seen", ttl=timedelta(days=1)).max_items == 2
    now = datetime.now(timezone.utc)
    items = [(f"s{i}".encode(), now - timedelta(seconds=i)) for i in range(3)]
    res = client.add_list_items(entity, "seen", "u-1", items)
    assert (res.written, res.skipped_expired, res.trimmed) == (3, 0, 1)
    assert [i.value for i in client.get_list_items(entity, "seen", "u-1").items] == [b"s0", b"s1"]
    assert client.count_list_items(entity, "seen", "u-1") == 2
    assert client.count_list_items(entity, "seen", "never") == 0
    client.create_list_feature(entity, "seen", ttl=timedelta(hours=1), version="v2")
    client.delete_whole_list_feature(entity, "seen")
    assert client.list_list_features(entity) == []
    client.delete_whole_list_feature(entity, "seen")


def test_ttl_rewrite(client, name):
    import time

    entity = f"user:{name}"
    client.create_list_feature(entity, "seen", ttl=timedelta(hours=1))
    now = datetime.now(timezone.utc)
    client.add_list_items(entity, "seen", "u1", [(b"new", now), (b"old", now - timedelta(minutes=30))])
    f = client.create_list_feature(entity, "seen", ttl=timedelta(minutes=10), rewrite=True)
    assert f.ttl == timedelta(minutes=10)
    assert f.rewrite is not None and f.rewrite.ttl == timedelta(minutes=10)
    deadline = time.monotonic() + 20
    while f.rewrite.state == "running":
        assert time.monotonic() < deadline, f.rewrite
        time.sleep(0.1)
        f = client.get_list_feature(entity, "seen")
    assert (f.rewrite.state, f.rewrite.rewritten, f.rewrite.removed) == ("done", 1, 1)
    assert f.rewrite.finished_at is not None
    assert [i.value for i in client.get_list_items(entity, "seen", "u1").items] == [b"new"]
    assert client.list_list_features(entity)[0].rewrite is None
