"""The hot listener (ebb serve --hot-addr) serves the client as the main one does."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from conftest import create_index, make_client

import ebb_client
from ebb_client import Event


@pytest.mark.parametrize("msgpack", [False, True])
def test_hot_listener(kind, msgpack, server, name):
    c, close = make_client(kind, server.hot_url, msgpack=msgpack)
    try:
        assert c.health().status == "ok"
        now = datetime.now(timezone.utc)
        c.create_list_feature(name, "shown", ttl=timedelta(hours=1))
        res = c.add_list_items(name, "shown", "u/1", [(b"s%d" % i, now - timedelta(seconds=i)) for i in range(120)])
        assert res.written == 120
        page = c.get_list_items(name, "shown", "u/1", limit=100)
        assert [i.value for i in page.items] == [b"s%d" % i for i in range(100)]
        assert len(list(c.iter_list_items(name, "shown", "u/1", page_size=50))) == 120
        c.remove_list_items(name, "shown", "u/1", b"s0")
        assert c.get_list_items(name, "shown", "u/1", limit=1).items[0].value == b"s1"

        create_index(c, name)
        events = [
            Event(index_id="a", event_id=f"e{i}", timestamp=now - timedelta(seconds=i), payload=b"p")
            for i in range(30)
        ]
        c.write_events(name, events)
        assert len(list(c.iter_events(name, "a", page_size=7, order="desc"))) == 30

        c.create_table(name, default_ttl=timedelta(hours=1))
        c.put_table_item(name, "..", timestamp=now, attributes={"x": 1})
        assert c.get_table_item(name, "..").attributes == {"x": 1}
        with pytest.raises(ebb_client.NotFound):
            c.get_table_item(name, "missing")
        with pytest.raises(ebb_client.NoShard):
            c.write_events(name, [Event(index_id="a", event_id="x", timestamp=now + timedelta(days=3))])
    finally:
        close()
