"""The log of expirations: a swept list item appears once it is removed."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone


def test_expirations(client, name):
    client.create_list_feature(name, "seen", ttl=timedelta(seconds=1), extra={"expiry": "sweep"})
    client.add_list_items(name, "seen", "u1", [(b"v", datetime.now(timezone.utc))])
    got, after = [], None
    deadline = time.monotonic() + 30
    while not got and time.monotonic() < deadline:
        page = client.expirations(after=after, limit=1000, timeout=timedelta(seconds=5))
        got += [e for e in page.expirations if e.name == name]
        after = page.next
    assert len(got) == 1, got
    e = got[0]
    assert (e.type, e.kind, e.feature, e.key[0]) == ("row", "list", "seen", "u1")
    assert e.expires_at <= e.removed_at
    # Reading on from the entry's own cursor does not give it again.
    later = client.expirations(after=e.cursor, limit=1000)
    assert all(x.cursor != e.cursor for x in later.expirations)
