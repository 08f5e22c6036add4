"""The async client as asyncio code uses it: concurrent calls on one client."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import ebb_client


def test_concurrent_adds_and_reads(server, name):
    async def run():
        async with ebb_client.AsyncClient(server.url) as ebb:
            await ebb.wait_ready(timeout=10)
            await ebb.create_list_feature(name, "seen", ttl=timedelta(hours=1))
            now = datetime.now(timezone.utc)
            users = [f"u{i}" for i in range(20)]
            results = await asyncio.gather(
                *(
                    ebb.add_list_items(name, "seen", u, [(u.encode(), now - timedelta(seconds=s)) for s in range(3)])
                    for u in users
                )
            )
            assert [r.written for r in results] == [3] * 20
            pages = await asyncio.gather(*(ebb.get_list_items(name, "seen", u) for u in users))
            assert [len(p.items) for p in pages] == [3] * 20
            items = [i async for i in ebb.iter_list_items(name, "seen", "u7", page_size=1)]
            assert [i.timestamp for i in items] == sorted((i.timestamp for i in items), reverse=True)

    asyncio.run(run())


def test_msgpack_is_asked_for(server, name):
    seen = []

    def hook(resp):
        seen.append(resp.headers.get("Content-Type"))

    import httpx

    http = httpx.Client(base_url=server.url, event_hooks={"response": [hook]})
    with ebb_client.Client(http_client=http, msgpack=True) as ebb:
        ebb.create_list_feature(name, "f", ttl=timedelta(hours=1))
        ebb.add_list_items(name, "f", "u", [(b"v", datetime.now(timezone.utc))])
        assert ebb.get_list_items(name, "f", "u").items[0].value == b"v"
        packed = ebb.get_list_items(name, "f", "u")
    with ebb_client.Client(http_client=http, msgpack=False) as ebb:
        plain = ebb.get_list_items(name, "f", "u")
    http.close()
    assert seen[-2:] == ["application/msgpack", "application/json"]
    # Both encodings read the same items.
    assert plain == packed
