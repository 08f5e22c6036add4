"""The asynchronous client, and the source of the synchronous one.

scripts/gen_sync.py writes _sync_client.py from this file by taking the
async out of it, so the two clients cannot drift apart; a test checks the
generated file is current. Edit this file, then run the script.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, Optional

import httpx

from . import _core, _wire
from ._core import ListItemLike
from .errors import Unavailable
from .models import (
    AddResult,
    AdminTables,
    ArchiveList,
    Backup,
    CapacityPolicy,
    Cluster,
    Event,
    EventPage,
    ExpirationsPage,
    Health,
    Index,
    LegacyRow,
    LegacyTable,
    ListFeature,
    ListItem,
    ListItemsPage,
    Migration,
    Plan,
    Ready,
    RestoredShard,
    Table,
    TableItem,
    TableItemsBatch,
    TableItemsPage,
    Usage,
)


class AsyncClient:
    """A client of one ebb server, for asyncio.

    base_url is the server (ebb serve's --addr), token a bearer token of
    its --auth-file; as for the ebb command, they default to $EBB_SERVER
    (else http://127.0.0.1:7070) and $EBB_TOKEN. msgpack chooses the
    encoding of the two hot reads (list items and events): None uses
    MessagePack when the msgpack package is installed, True requires it,
    False keeps JSON. http_client replaces the httpx client the client
    makes, for proxies, TLS or hooks: it must have the server as its
    base_url, and its timeout stays its own; the token and headers are
    sent on each request. Close a given httpx client yourself.

    retries is how many times a call answered 503 unavailable is sent
    again, after the Retry-After the server asked for (else a backoff from
    50 ms), each wait at most 10 s: safe for every call, since every write
    is an idempotent upsert or delete. 0, the default, raises Unavailable
    at once.

    Use it as an async context manager, or call aclose.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        *,
        token: Optional[str] = None,
        timeout: float = 30.0,
        msgpack: Optional[bool] = None,
        headers: Optional[dict[str, str]] = None,
        http_client: Optional[httpx.AsyncClient] = None,
        retries: int = 0,
    ) -> None:
        self._msgpack = _core.use_msgpack(msgpack)
        self._retries = retries
        self._own = http_client is None
        common = _core.headers(_core.token(token), headers)
        # A client made here carries the headers; a given one gets them on
        # each request.
        self._headers: dict[str, str] = {} if self._own else common
        self._http = http_client or httpx.AsyncClient(
            base_url=_core.base_url(base_url), headers=common, timeout=timeout
        )

    async def aclose(self) -> None:
        """Closes the connections, unless the httpx client was given."""
        if self._own:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(
        self,
        method: str,
        path: str,
        *,
        params: Optional[Mapping[str, Any]] = None,
        json: Any = None,
        msgpack: bool = False,
        headers: Optional[Mapping[str, str]] = None,
    ) -> httpx.Response:
        headers = {**self._headers, **(headers or {})}
        if msgpack and self._msgpack:
            headers["Accept"] = _core.MSGPACK
        attempt = 0
        while True:
            resp = await self._http.request(method, path, params=params, json=json, headers=headers)
            if resp.status_code != 503 or attempt >= self._retries:
                return _core.check(resp)
            await asyncio.sleep(_core.retry_delay(resp, attempt))
            attempt += 1

    async def _json(self, method: str, path: str, **kw: Any) -> Any:
        return _core.body(await self._send(method, path, **kw))

    async def _each(
        self, fetch: Callable[[Optional[str]], Awaitable[Any]], field: str
    ) -> AsyncIterator[Any]:
        # Pages are fetched one after another, each with the token of the
        # one before, until a page has none; a short or empty page is not
        # the end.
        token: Optional[str] = None
        while True:
            page = await fetch(token)
            for x in getattr(page, field):
                yield x
            if not page.next_page_token:
                return
            token = page.next_page_token

    # Health.

    async def health(self) -> Health:
        """GET /healthz: liveness."""
        return Health.from_wire(await self._json("GET", "/healthz"))

    async def ready(self) -> Ready:
        """GET /readyz: readiness; a server not ready yet answers Ready(status="not_ready")."""
        resp = await self._http.request("GET", "/readyz", headers=self._headers)
        if resp.status_code == 503:
            return Ready.from_wire(_core.body(resp))
        return Ready.from_wire(_core.body(_core.check(resp)))

    async def wait_ready(self, timeout: float = 30.0, interval: float = 0.1) -> Ready:
        """Polls /readyz until the server is ready, for at most timeout seconds.

        Connection errors count as not ready yet; past the timeout the
        last answer or error is raised as Unavailable.
        """
        deadline = time.monotonic() + timeout
        last = "no answer"
        while True:
            try:
                r = await self.ready()
                if r.ready:
                    return r
                last = r.reason or r.status
            except httpx.TransportError as e:
                last = str(e) or type(e).__name__
            if time.monotonic() >= deadline:
                raise Unavailable(f"not ready after {timeout}s: {last}")
            await asyncio.sleep(interval)

    async def metrics(self) -> str:
        """GET /metrics: the Prometheus text (scope metrics or admin)."""
        return (await self._send("GET", "/metrics")).text

    # Admin.

    async def admin_tables(self) -> AdminTables:
        """GET /v1/admin/tables: every physical table and every shared table's usage."""
        return AdminTables.from_wire(await self._json("GET", "/v1/admin/tables"))

    async def admin_cluster(self) -> Cluster:
        """GET /v1/admin/cluster: the background roles' leases."""
        return Cluster.from_wire(await self._json("GET", "/v1/admin/cluster"))

    async def admin_usage(self, *, cost: bool = False, storage: bool = False) -> Usage:
        """GET /v1/admin/usage: metered units; cost adds a monthly projection, storage what tables hold."""
        p = _core.params(
            cost=_wire.flag(True) if cost else None, storage=_wire.flag(True) if storage else None
        )
        return Usage.from_wire(await self._json("GET", "/v1/admin/usage", params=p))

    async def admin_backup(self, to: str) -> Backup:
        """POST /v1/admin/backup: a checkpoint of the embedded store into a new directory on the server."""
        return Backup.from_wire(await self._json("POST", "/v1/admin/backup", json={"to": to}))

    # Expirations.

    async def expirations(
        self, *, after: Optional[str] = None, limit: Optional[int] = None, timeout: Optional[timedelta] = None
    ) -> ExpirationsPage:
        """GET /v1/expirations: removed rows and dropped shards after a cursor, those the token may read.

        With timeout, the server waits that long for one when there is none
        yet (a long poll); keep it below this client's own timeout.
        """
        p = _core.params(
            after=after,
            limit=limit,
            timeout=_wire.format_duration(timeout) if timeout is not None else None,
        )
        return ExpirationsPage.from_wire(await self._json("GET", "/v1/expirations", params=p))

    # Indexes.

    async def list_indexes(self) -> list[Index]:
        """GET /v1/indexes: every index, sorted by name (scope admin or *:*)."""
        d = await self._json("GET", "/v1/indexes")
        return [Index.from_wire(x) for x in d["indexes"]]

    async def create_index(
        self,
        name: str,
        *,
        table_bucket: timedelta,
        partition_bucket: timedelta,
        retention: timedelta,
        runway: Optional[int] = None,
        capacity: Optional[CapacityPolicy] = None,
        extra: Optional[Mapping[str, Any]] = None,
    ) -> Index:
        """PUT /v1/indexes/{name}: creates the index and its shards (an identical one is answered as is).

        extra holds fields this client does not know yet, sent as they are.
        """
        cfg: dict[str, Any] = {
            "table_bucket": _wire.format_duration(table_bucket),
            "partition_bucket": _wire.format_duration(partition_bucket),
            "retention": _wire.format_duration(retention),
        }
        if runway is not None:
            cfg["runway"] = runway
        if capacity is not None:
            cfg["capacity"] = capacity.to_wire()
        cfg.update(extra or {})
        return Index.from_wire(await self._json("PUT", _core.index_path(name), json=cfg))

    async def get_index(self, name: str, *, stats: bool = False) -> Index:
        """GET /v1/indexes/{name}: the index and its shards; stats adds each shard's rows and bytes."""
        p = {"stats": _wire.flag(True)} if stats else None
        return Index.from_wire(await self._json("GET", _core.index_path(name), params=p))

    async def delete_index(self, name: str) -> None:
        """DELETE /v1/indexes/{name}: drops every shard (a missing index is answered as deleted)."""
        await self._send("DELETE", _core.index_path(name))

    async def write_events(self, name: str, events: Iterable[Event]) -> int:
        """POST /v1/indexes/{name}/events: up to 10,000 events, all or nothing; answers how many were written."""
        body = {"events": [_core.event_body(e) for e in events]}
        return int((await self._json("POST", _core.index_path(name) + "/events", json=body))["written"])

    async def query_events(
        self,
        name: str,
        index_id: str,
        *,
        start: Optional[datetime] = None,
        end: Optional[datetime] = None,
        order: Optional[str] = None,
        limit: Optional[int] = None,
        page_token: Optional[str] = None,
    ) -> EventPage:
        """GET /v1/indexes/{name}/events: one page of index_id's events in [start, end).

        start and end are the API's from and to; order is "asc" (default)
        or "desc". A short or empty page is not the end: follow
        next_page_token until it is None, or use iter_events.
        """
        p = _core.params(
            index_id=index_id,
            **{"from": _core.opt_time(start), "to": _core.opt_time(end)},
            order=order,
            limit=limit,
            page_token=page_token,
        )
        resp = await self._send("GET", _core.index_path(name) + "/events", params=p, msgpack=True)
        return _core.event_page(resp)

    async def iter_events(
        self,
        name: str,
        index_id: str,
        *,
        start: Optional[datetime] = None,
        end: Optional[datetime] = None,
        order: Optional[str] = None,
        page_size: Optional[int] = None,
    ) -> AsyncIterator[Event]:
        """Every event of query_events, page after page."""
        def page(token: Optional[str]) -> Awaitable[EventPage]:
            return self.query_events(
                name, index_id, start=start, end=end, order=order, limit=page_size, page_token=token
            )

        async for e in self._each(page, "events"):
            yield e

    async def erase_events(
        self,
        name: str,
        index_id: str,
        *,
        start: Optional[datetime] = None,
        end: Optional[datetime] = None,
        timestamp: Optional[datetime] = None,
        event_id: Optional[str] = None,
    ) -> dict[str, int]:
        """DELETE /v1/indexes/{name}/events: erases index_id's events in [start, end), or the one (timestamp, event_id).

        start and end are the API's from and to (both None: every event of
        index_id). Idempotent; answers {"removed": N, "shards": M}.
        """
        p = _core.params(
            index_id=index_id,
            **{"from": _core.opt_time(start), "to": _core.opt_time(end)},
            timestamp=_core.opt_time(timestamp),
            event_id=event_id,
        )
        d = await self._json("DELETE", _core.index_path(name) + "/events", params=p)
        return {"removed": int(d["removed"]), "shards": int(d["shards"])}

    async def reconcile_index(
        self, name: str, *, dry_run: bool = True, allow_clock_jump: bool = False
    ) -> Plan:
        """POST /v1/indexes/{name}/reconcile: plans the shard changes, and applies them unless dry_run."""
        p = {"dry_run": _wire.flag(dry_run)}
        if allow_clock_jump:
            p["allow_clock_jump"] = _wire.flag(True)
        return Plan.from_wire(await self._json("POST", _core.index_path(name) + "/reconcile", params=p))

    async def plan_index(self, name: str) -> Plan:
        """The shard changes reconcile would make now, without making them (ebb index plan)."""
        return await self.reconcile_index(name, dry_run=True)

    async def apply_index(self, name: str, *, allow_clock_jump: bool = False) -> Plan:
        """Makes the shard changes now (ebb index apply); a deferred action needs another apply later."""
        return await self.reconcile_index(name, dry_run=False, allow_clock_jump=allow_clock_jump)

    async def list_archives(self, name: str) -> ArchiveList:
        """GET /v1/indexes/{name}/archives: the shards archived before their drop, and those restored."""
        return ArchiveList.from_wire(await self._json("GET", _core.index_path(name) + "/archives"))

    async def restore_archive(self, name: str, shard: str) -> RestoredShard:
        """POST /v1/indexes/{name}/archives/{shard}/restore: brings an archived shard back, read-only."""
        path = _core.index_path(name) + "/archives/" + _wire.segment(shard) + "/restore"
        return RestoredShard.from_wire(await self._json("POST", path))

    async def release_archive(self, name: str, shard: str) -> None:
        """POST /v1/indexes/{name}/archives/{shard}/release: drops a restored shard; the archive stays."""
        await self._send("POST", _core.index_path(name) + "/archives/" + _wire.segment(shard) + "/release")

    # Migration.

    async def get_migration(self, name: str) -> Migration:
        """GET /v1/indexes/{name}/migration: phase, counters and backfill progress (NotFound when none)."""
        return Migration.from_wire(await self._json("GET", _core.index_path(name) + "/migration"))

    async def start_migration(
        self,
        name: str,
        legacy: LegacyTable,
        *,
        write_legacy: Optional[bool] = None,
        sample_percent: Optional[float] = None,
    ) -> Migration:
        """PUT /v1/indexes/{name}/migration: starts migrating off legacy, in phase shadow-write."""
        body: dict[str, Any] = {"legacy": legacy.to_wire()}
        if write_legacy is not None:
            body["write_legacy"] = write_legacy
        if sample_percent is not None:
            body["sample_percent"] = sample_percent
        return Migration.from_wire(await self._json("PUT", _core.index_path(name) + "/migration", json=body))

    async def end_migration(self, name: str, *, force: bool = False) -> None:
        """DELETE /v1/indexes/{name}/migration: ends it, in cutover only unless force."""
        p = {"force": _wire.flag(True)} if force else None
        await self._send("DELETE", _core.index_path(name) + "/migration", params=p)

    async def set_migration_phase(self, name: str, phase: str, *, force: bool = False) -> Migration:
        """POST /v1/indexes/{name}/migration/phase: moves to phase; Conflict says why a change is refused."""
        body: dict[str, Any] = {"phase": phase}
        if force:
            body["force"] = True
        return Migration.from_wire(
            await self._json("POST", _core.index_path(name) + "/migration/phase", json=body)
        )

    async def start_backfill(
        self,
        name: str,
        *,
        rows_per_second: Optional[float] = None,
        units_per_second: Optional[float] = None,
        batch_size: Optional[int] = None,
        dry_run: Optional[bool] = None,
        restart: Optional[bool] = None,
    ) -> Migration:
        """POST /v1/indexes/{name}/migration/backfill: copies live legacy rows in the background."""
        body = _core.params(
            rows_per_second=rows_per_second,
            units_per_second=units_per_second,
            batch_size=batch_size,
            dry_run=dry_run,
            restart=restart,
        )
        return Migration.from_wire(
            await self._json("POST", _core.index_path(name) + "/migration/backfill", json=body)
        )

    async def stop_backfill(self, name: str) -> None:
        """DELETE /v1/indexes/{name}/migration/backfill: stops it; its checkpoint keeps the progress."""
        await self._send("DELETE", _core.index_path(name) + "/migration/backfill")

    async def write_legacy_rows(self, name: str, rows: Iterable[LegacyRow]) -> int:
        """POST /v1/indexes/{name}/migration/legacy-rows: imports rows into the legacy table."""
        body = {"rows": [r.to_wire() for r in rows]}
        d = await self._json("POST", _core.index_path(name) + "/migration/legacy-rows", json=body)
        return int(d["written"])

    # List features.

    async def list_all_list_features(self) -> list[ListFeature]:
        """GET /v1/list-features: every feature version (scope admin or *:*)."""
        d = await self._json("GET", "/v1/list-features")
        return [ListFeature.from_wire(x) for x in d["features"]]

    async def list_list_features(self, entity_type: str) -> list[ListFeature]:
        """GET /v1/list-features/{entity_type}: the entity type's feature versions."""
        d = await self._json("GET", "/v1/list-features/" + _wire.segment(entity_type))
        return [ListFeature.from_wire(x) for x in d["features"]]

    async def create_list_feature(
        self,
        entity_type: str,
        feature: str,
        *,
        ttl: timedelta,
        version: str = "",
        max_items: Optional[int] = None,
        rewrite: bool = False,
        extra: Optional[Mapping[str, Any]] = None,
    ) -> ListFeature:
        """PUT /v1/list-features/...: declares a feature version whose items live for ttl.

        version "" is the default version. max_items caps each list (an
        add beyond it trims the oldest items; 0 lifts the cap, None keeps
        an existing version's). rewrite gives the items an existing
        version already holds the ttl too, by a background job whose
        progress the answer's rewrite shows. extra holds fields this
        client does not know yet, sent as they are.
        """
        body: dict[str, Any] = {"ttl": _wire.format_duration(ttl)}
        if max_items is not None:
            body["max_items"] = max_items
        if rewrite:
            body["rewrite"] = True
        body.update(extra or {})
        path = _core.feature_path(entity_type, feature, version)
        return ListFeature.from_wire(await self._json("PUT", path, json=body))

    async def get_list_feature(
        self, entity_type: str, feature: str, *, version: str = ""
    ) -> ListFeature:
        """GET /v1/list-features/...: one feature version (NotFound when undeclared)."""
        return ListFeature.from_wire(
            await self._json("GET", _core.feature_path(entity_type, feature, version))
        )

    async def delete_list_feature(self, entity_type: str, feature: str, *, version: str = "") -> None:
        """DELETE /v1/list-features/...: the version and every list of it go at once."""
        await self._send("DELETE", _core.feature_path(entity_type, feature, version))

    async def delete_whole_list_feature(self, entity_type: str, feature: str) -> None:
        """DELETE /v1/list-features/{entity_type}/{feature}: every version, with every list of each."""
        seg = _wire.segment
        await self._send("DELETE", f"/v1/list-features/{seg(entity_type)}/{seg(feature)}")

    # Lists.

    async def add_list_items(
        self,
        entity_type: str,
        feature: str,
        entity_id: str,
        items: Iterable[ListItemLike],
        *,
        version: str = "",
    ) -> AddResult:
        """POST /v1/lists/.../items: adds up to 1,000 items, ListItem or (value, timestamp) pairs.

        Items already expired when added are skipped and counted.
        """
        body = {"items": [_core.list_item_body(i) for i in items]}
        path = _core.list_path(entity_type, feature, version, entity_id)
        return AddResult.from_wire(await self._json("POST", path, json=body))

    async def get_list_items(
        self,
        entity_type: str,
        feature: str,
        entity_id: str,
        *,
        version: str = "",
        min_timestamp: Optional[datetime] = None,
        limit: Optional[int] = None,
        page_token: Optional[str] = None,
    ) -> ListItemsPage:
        """GET /v1/lists/.../items: one page of the list's live items, newest first.

        limit bounds the page (the server's default is 100); follow
        next_page_token for more, or use iter_list_items.
        """
        p = _core.params(
            min_timestamp=_core.opt_time(min_timestamp), limit=limit, page_token=page_token
        )
        path = _core.list_path(entity_type, feature, version, entity_id)
        return _core.list_items_page(await self._send("GET", path, params=p, msgpack=True))

    async def iter_list_items(
        self,
        entity_type: str,
        feature: str,
        entity_id: str,
        *,
        version: str = "",
        min_timestamp: Optional[datetime] = None,
        page_size: Optional[int] = None,
    ) -> AsyncIterator[ListItem]:
        """Every live item of the list, newest first, page after page."""
        def page(token: Optional[str]) -> Awaitable[ListItemsPage]:
            return self.get_list_items(
                entity_type,
                feature,
                entity_id,
                version=version,
                min_timestamp=min_timestamp,
                limit=page_size,
                page_token=token,
            )

        async for it in self._each(page, "items"):
            yield it

    async def remove_list_items(
        self,
        entity_type: str,
        feature: str,
        entity_id: str,
        value: Optional[bytes],
        *,
        version: str = "",
    ) -> None:
        """DELETE /v1/lists/.../items: removes the items holding value, or, with None, the whole list."""
        p = {"value": _wire.encode_bytes(value)} if value is not None else None
        await self._send("DELETE", _core.list_path(entity_type, feature, version, entity_id), params=p)

    async def count_list_items(
        self, entity_type: str, feature: str, entity_id: str, *, version: str = ""
    ) -> int:
        """GET /v1/lists/.../items/count: the list's live items (the server reads the whole list)."""
        path = _core.list_path(entity_type, feature, version, entity_id) + "/count"
        return int((await self._json("GET", path))["count"])

    # Shared tables.

    async def list_tables(self) -> list[Table]:
        """GET /v1/tables: every shared table (scope admin or *:*)."""
        d = await self._json("GET", "/v1/tables")
        return [Table.from_wire(x) for x in d["tables"]]

    async def create_table(
        self,
        table: str,
        *,
        default_ttl: Optional[timedelta] = None,
        rewrite: bool = False,
        extra: Optional[Mapping[str, Any]] = None,
    ) -> Table:
        """PUT /v1/tables/{table}: creates a shared table, or changes one's default_ttl (None keeps it).

        rewrite gives the items an existing table holds without a ttl of
        their own the default_ttl too, by a background job whose progress
        the answer's rewrite shows. extra holds fields this client does
        not know yet, sent as they are.
        """
        body: dict[str, Any] = {}
        if default_ttl is not None:
            body["default_ttl"] = _wire.format_duration(default_ttl)
        if rewrite:
            body["rewrite"] = True
        body.update(extra or {})
        return Table.from_wire(await self._json("PUT", _core.table_path(table), json=body))

    async def get_table(self, table: str) -> Table:
        """GET /v1/tables/{table}."""
        return Table.from_wire(await self._json("GET", _core.table_path(table)))

    async def delete_table(self, table: str) -> None:
        """DELETE /v1/tables/{table}: the table and every item in it (a missing table is answered as deleted)."""
        await self._send("DELETE", _core.table_path(table))

    async def list_table_items(
        self,
        table: str,
        *,
        after: Optional[datetime] = None,
        limit: Optional[int] = None,
        page_token: Optional[str] = None,
    ) -> TableItemsPage:
        """GET /v1/tables/{table}/items: a page of live items with timestamp after after, oldest first."""
        p = _core.params(after=_core.opt_time(after), limit=limit, page_token=page_token)
        return TableItemsPage.from_wire(await self._json("GET", _core.table_path(table) + "/items", params=p))

    async def iter_table_items(
        self,
        table: str,
        *,
        after: Optional[datetime] = None,
        page_size: Optional[int] = None,
    ) -> AsyncIterator[TableItem]:
        """Every live item of list_table_items, page after page."""
        def page(token: Optional[str]) -> Awaitable[TableItemsPage]:
            return self.list_table_items(table, after=after, limit=page_size, page_token=token)

        async for it in self._each(page, "items"):
            yield it

    async def put_table_item(
        self,
        table: str,
        key: str,
        *,
        timestamp: datetime,
        attributes: Optional[Mapping[str, Any]] = None,
        ttl: Optional[timedelta] = None,
        if_absent: bool = False,
        if_version: Optional[str] = None,
        extra: Optional[Mapping[str, Any]] = None,
    ) -> TableItem:
        """PUT /v1/tables/{table}/items/{key}: replaces the item; ttl overrides the table's default.

        if_absent creates only (If-None-Match: *); if_version writes only
        over the item of that version, "*" any (If-Match); otherwise
        FailedPrecondition, and nothing is written.
        """
        body: dict[str, Any] = {"timestamp": _wire.format_time(timestamp)}
        if attributes is not None:
            body["attributes"] = dict(attributes)
        if ttl is not None:
            body["ttl"] = _wire.format_duration(ttl)
        body.update(extra or {})
        h = _preconditions(if_absent, if_version)
        return TableItem.from_wire(await self._json("PUT", _core.item_path(table, key), json=body, headers=h))

    async def patch_table_item(
        self,
        table: str,
        key: str,
        *,
        attributes: Optional[Mapping[str, Any]] = None,
        timestamp: Optional[datetime] = None,
        ttl: Optional[timedelta] = None,
        if_version: Optional[str] = None,
        extra: Optional[Mapping[str, Any]] = None,
    ) -> TableItem:
        """PATCH /v1/tables/{table}/items/{key}: merges attributes (a JSON merge patch, None removes) into an existing item."""
        body: dict[str, Any] = {}
        if attributes is not None:
            body["attributes"] = dict(attributes)
        if timestamp is not None:
            body["timestamp"] = _wire.format_time(timestamp)
        if ttl is not None:
            body["ttl"] = _wire.format_duration(ttl)
        body.update(extra or {})
        h = _preconditions(False, if_version)
        return TableItem.from_wire(await self._json("PATCH", _core.item_path(table, key), json=body, headers=h))

    async def batch_get_table_items(self, table: str, keys: Iterable[str]) -> TableItemsBatch:
        """POST /v1/tables/{table}/batch-get: up to 100 items in one request, and the keys missing."""
        body = {"keys": list(keys)}
        return TableItemsBatch.from_wire(await self._json("POST", _core.table_path(table) + "/batch-get", json=body))

    async def get_table_item(self, table: str, key: str) -> TableItem:
        """GET /v1/tables/{table}/items/{key} (NotFound when missing or expired)."""
        return TableItem.from_wire(await self._json("GET", _core.item_path(table, key)))

    async def delete_table_item(self, table: str, key: str, *, if_version: Optional[str] = None) -> None:
        """DELETE /v1/tables/{table}/items/{key} (a missing item is answered as deleted, unless if_version is given)."""
        await self._send("DELETE", _core.item_path(table, key), headers=_preconditions(False, if_version))


def _preconditions(if_absent: bool, if_version: Optional[str]) -> dict[str, str]:
    """The If-None-Match and If-Match headers of a conditional write."""
    h: dict[str, str] = {}
    if if_absent:
        h["If-None-Match"] = "*"
    if if_version is not None:
        h["If-Match"] = "*" if if_version == "*" else f'"{if_version}"'
    return h
