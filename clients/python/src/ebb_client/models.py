"""The API's bodies as dataclasses.

Times are timezone-aware datetimes (UTC as answered), durations
timedeltas, binary values bytes. Decoding keeps what it does not know: a
field the server adds after this client was written lands in the model's
extra mapping, under its JSON name, rather than failing the call.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Optional, TypeVar, Union

from . import _wire

M = TypeVar("M", bound="Model")


def _wire_name(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("wire", f.name))


def _hints(cls: type) -> dict[str, Any]:
    cached = cls.__dict__.get("_ebb_hints")
    if cached is None:
        cached = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
        setattr(cls, "_ebb_hints", cached)
    return cached


def _decode(tp: Any, v: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin is Union or origin is getattr(types, "UnionType", None):
        if v is None:
            return None
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _decode(inner[0], v) if len(inner) == 1 else v
    if v is None:
        return None
    if origin is list:
        (item,) = typing.get_args(tp)
        return [_decode(item, x) for x in v]
    if origin is dict:
        _, item = typing.get_args(tp)
        return {k: _decode(item, x) for k, x in v.items()}
    if tp is datetime:
        return v if isinstance(v, datetime) else _wire.parse_time(v)
    if tp is timedelta:
        return _wire.parse_duration(v)
    if tp is bytes:
        return bytes(v) if isinstance(v, (bytes, bytearray)) else _wire.decode_bytes(v)
    if tp is float and isinstance(v, int):
        return float(v)
    if isinstance(tp, type) and issubclass(tp, Model):
        return tp.from_wire(v)
    return v


def _encode(v: Any) -> Any:
    if isinstance(v, Model):
        return v.to_wire()
    if isinstance(v, datetime):
        return _wire.format_time(v)
    if isinstance(v, timedelta):
        return _wire.format_duration(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return _wire.encode_bytes(v)
    if isinstance(v, list):
        return [_encode(x) for x in v]
    if isinstance(v, dict):
        return {k: _encode(x) for k, x in v.items()}
    return v


@dataclass(kw_only=True)
class Model:
    """The base of every body: decoding from and encoding to the wire.

    extra holds the fields the server sent that this client does not know
    (by JSON name, as decoded from JSON); on a request, extra fields are
    sent as they are, so a field newer than the client can still be set.
    """

    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls: type[M], d: dict[str, Any]) -> M:
        """Builds the model from a decoded JSON object."""
        hints = _hints(cls)
        kwargs: dict[str, Any] = {}
        known = set()
        for f in dataclasses.fields(cls):
            if f.name == "extra":
                continue
            name = _wire_name(f)
            known.add(name)
            if name in d:
                kwargs[f.name] = _decode(hints[f.name], d[name])
        extra = {k: v for k, v in d.items() if k not in known}
        return cls(**kwargs, extra=extra)

    def to_wire(self) -> dict[str, Any]:
        """The model as a JSON object; fields that are None are left out."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name == "extra":
                continue
            v = getattr(self, f.name)
            if v is None:
                continue
            out[_wire_name(f)] = _encode(v)
        out.update(_encode(self.extra))
        return out


# Health.


@dataclass(kw_only=True)
class Health(Model):
    """GET /healthz: "ok" while the server serves."""

    status: str


@dataclass(kw_only=True)
class Ready(Model):
    """GET /readyz: "ready", or "not_ready" with the reason."""

    status: str
    reason: Optional[str] = None

    @property
    def ready(self) -> bool:
        return self.status == "ready"


# Admin.


@dataclass(kw_only=True)
class PhysicalTable(Model):
    name: str
    rows: int
    bytes: int
    capacity: str


@dataclass(kw_only=True)
class LogicalTable(Model):
    name: str
    default_ttl: timedelta
    items: int
    bytes: int


@dataclass(kw_only=True)
class AdminTables(Model):
    """GET /v1/admin/tables: every physical table and every shared table's usage."""

    tables: list[PhysicalTable]
    logical_tables: list[LogicalTable]


@dataclass(kw_only=True)
class Backup(Model):
    """POST /v1/admin/backup: where the checkpoint is, its size and how long it took."""

    dir: str
    bytes: int
    took: timedelta


@dataclass(kw_only=True)
class OpUsage(Model):
    """One table class and operation's metered usage."""

    table_class: str = field(metadata={"wire": "class"})
    op: str
    requests: int
    rows: int
    bytes: int
    units: dict[str, dict[str, int]]


@dataclass(kw_only=True)
class StorageUsage(Model):
    table_class: str = field(metadata={"wire": "class"})
    tables: int
    rows: int
    bytes: int


@dataclass(kw_only=True)
class Projection(Model):
    """One provider's monthly bill for the usage's rate."""

    provider: str
    writes: float
    reads: float
    expiry: float
    storage: float
    total: float
    native_ttl: float
    saved: float


@dataclass(kw_only=True)
class CostProjection(Model):
    since: datetime
    at: datetime
    seconds: float
    region: str
    currency: str
    prices_checked: str
    storage_known: bool
    projections: list[Projection]


@dataclass(kw_only=True)
class Usage(Model):
    """GET /v1/admin/usage: metered request units since the server started."""

    since: datetime
    at: datetime
    operations: list[OpUsage]
    storage: Optional[list[StorageUsage]] = None
    cost: Optional[CostProjection] = None


@dataclass(kw_only=True)
class Expiration(Model):
    """One entry of GET /v1/expirations: a removed row or a dropped shard."""

    cursor: str
    type: str
    kind: str
    name: str
    removed_at: datetime
    feature: Optional[str] = None
    version: Optional[str] = None
    key: Optional[list[str]] = None
    expires_at: Optional[datetime] = None
    shard: Optional[str] = None
    from_: Optional[datetime] = field(default=None, metadata={"wire": "from"})
    to: Optional[datetime] = None
    rows: Optional[int] = None
    archive: Optional[str] = None


@dataclass(kw_only=True)
class ExpirationsPage(Model):
    """GET /v1/expirations: a page of the log and the cursor after it."""

    expirations: list[Expiration]
    next: str


@dataclass(kw_only=True)
class Lease(Model):
    role: str
    holder: str
    epoch: int
    held_here: bool
    expires: Optional[datetime] = None


@dataclass(kw_only=True)
class Capabilities(Model):
    atomic_partition_batch: bool
    max_atomic_batch: int
    max_row_bytes: int
    native_ttl: bool
    warm_throughput: bool
    drop_keeps_snapshot: bool
    shared_across_processes: bool


@dataclass(kw_only=True)
class Cluster(Model):
    """GET /v1/admin/cluster: who runs each background role."""

    replica: str
    leases: list[Lease]
    backend: Optional[str] = None
    capabilities: Optional[Capabilities] = None


# Indexes.


@dataclass(kw_only=True)
class CapacityPolicy(Model):
    hot_read_units: int
    hot_write_units: int
    peak_read_units: Optional[int] = None
    peak_write_units: Optional[int] = None


@dataclass(kw_only=True)
class Shard(Model):
    table: str
    start: datetime
    end: datetime
    state: str
    capacity: str
    rows: Optional[int] = None
    bytes: Optional[int] = None


@dataclass(kw_only=True)
class Layout(Model):
    """One layout epoch of an index: its buckets from `from_` on."""

    from_: datetime = field(metadata={"wire": "from"})
    table_bucket: timedelta
    partition_bucket: timedelta


@dataclass(kw_only=True)
class Index(Model):
    """An index, its configuration and its shards (sorted by start).

    layouts lists its layout epochs, oldest first, once its buckets
    changed; None for an index with one layout.
    """

    name: str
    table_bucket: timedelta
    partition_bucket: timedelta
    retention: timedelta
    runway: int
    shards: list[Shard]
    runway_remaining: timedelta
    held_retention: Optional[timedelta] = None
    capacity: Optional[CapacityPolicy] = None
    layouts: Optional[list[Layout]] = None


@dataclass(kw_only=True)
class Archive(Model):
    """One shard archived before its drop, from its manifest."""

    table: str
    start: datetime
    end: datetime
    location: str
    object: str
    rows: int
    bytes: int
    columns: list[str]
    object_sha256: str
    rows_sha256: str
    archived_at: datetime
    restored: bool
    min_time: Optional[datetime] = None
    max_time: Optional[datetime] = None
    verified_at: Optional[datetime] = None


@dataclass(kw_only=True)
class RestoredShard(Model):
    """A shard restored from its archive: read by queries until released."""

    table: str
    start: datetime
    end: datetime
    location: str
    rows: int
    restored_at: datetime
    complete: bool


@dataclass(kw_only=True)
class ArchiveList(Model):
    """An index's archived shards and those restored now."""

    archives: list[Archive]
    restored: list[RestoredShard]


@dataclass(kw_only=True)
class Event(Model):
    """An event: written with write_events, read with query_events.

    payload is bytes, or None for an event without one. ttl, when set on a
    written event, is its own lifetime, shorter than the index's retention:
    it is hidden at timestamp + ttl. Read events leave it None.
    """

    index_id: str
    event_id: str
    timestamp: datetime
    payload: Optional[bytes] = None
    ttl: Optional[timedelta] = None


@dataclass(kw_only=True)
class EventPage(Model):
    events: list[Event]
    next_page_token: Optional[str] = None


@dataclass(kw_only=True)
class Action(Model):
    op: str
    table: str
    reason: str
    capacity: Optional[str] = None
    deferred: Optional[bool] = None
    error: Optional[str] = None
    rows: Optional[int] = None
    bytes: Optional[int] = None


@dataclass(kw_only=True)
class Transition(Model):
    """A layout change in a plan: from when, its first shard, what changes."""

    from_: datetime = field(metadata={"wire": "from"})
    table: str
    change: str
    created: bool


@dataclass(kw_only=True)
class Plan(Model):
    """An index's shard changes; applied is false for a dry run."""

    actions: list[Action]
    applied: bool
    unrecognized: Optional[list[str]] = None
    transitions: Optional[list[Transition]] = None


# Migration.


@dataclass(kw_only=True)
class LegacyMapping(Model):
    """How a DynamoDB or CQL legacy table's attributes map to an event."""

    index_id: str
    sort_key: str
    payload: str
    sort_key_format: Optional[str] = None
    event_id: Optional[str] = None
    ttl: Optional[str] = None


@dataclass(kw_only=True)
class LegacyTable(Model):
    """The table a migration reads from and, optionally, writes to.

    kind is "table" (an embedded or same-backend table, NAME_legacy for the
    index's own), "dynamodb" or "cql".
    """

    kind: str
    table: str
    ttl: Optional[timedelta] = None
    endpoint: Optional[str] = None
    region: Optional[str] = None
    mapping: Optional[LegacyMapping] = None


@dataclass(kw_only=True)
class LegacyRow(Model):
    """A row written to a legacy table (an import); expires_at defaults to timestamp + its TTL."""

    index_id: str
    event_id: str
    timestamp: datetime
    payload: Optional[bytes] = None
    expires_at: Optional[datetime] = None


@dataclass(kw_only=True)
class PhaseChange(Model):
    from_phase: str = field(metadata={"wire": "from"})
    to: str
    at: datetime
    forced: Optional[bool] = None


@dataclass(kw_only=True)
class Mismatch(Model):
    kind: str
    index_id: str
    event_id: str
    timestamp: Optional[datetime] = None
    at: Optional[datetime] = None


@dataclass(kw_only=True)
class MigrationCounters(Model):
    shadow_write_failures: int = 0
    shadow_read_failures: int = 0
    reads_compared: int = 0
    mismatches: Optional[dict[str, int]] = None
    mismatch_sample: Optional[list[Mismatch]] = None


@dataclass(kw_only=True)
class BackfillProgress(Model):
    pass_: Optional[int] = field(default=None, metadata={"wire": "pass"})
    dry_run: Optional[bool] = None
    done: Optional[bool] = None
    started_at: Optional[datetime] = None
    updated_at: Optional[datetime] = None
    finished_at: Optional[datetime] = None
    scanned: Optional[int] = None
    copied: Optional[int] = None
    skipped_expired: Optional[int] = None
    skipped_retention: Optional[int] = None
    skipped_no_shard: Optional[int] = None
    units: Optional[float] = None
    total_estimate: Optional[int] = None
    rows_per_second: Optional[float] = None
    eta: Optional[timedelta] = None
    error: Optional[str] = None
    last_copy_started_at: Optional[datetime] = None


@dataclass(kw_only=True)
class Migration(Model):
    """An index's migration off a legacy table (docs/migration.md)."""

    index: str
    phase: str
    legacy: LegacyTable
    write_legacy: bool
    sample_percent: float
    started_at: datetime
    phase_since: datetime
    history: list[PhaseChange]
    counters: MigrationCounters
    backfill_running: bool
    cutover_ready: bool
    legacy_deletable: bool
    cutover_at: Optional[datetime] = None
    backfill: Optional[BackfillProgress] = None
    cutover_blocked_by: Optional[str] = None
    legacy_live_rows: Optional[int] = None
    legacy_newest_expiry: Optional[datetime] = None


# TTL rewrites.


@dataclass(kw_only=True)
class TTLRewrite(Model):
    """A TTL rewrite: the background job a TTL change with rewrite=True starts.

    state is "running", "done" or "superseded" (the TTL changed again, or
    the feature or table was deleted, before it finished).
    """

    state: str
    ttl: timedelta
    scanned: int
    rewritten: int
    removed: int
    skipped: int
    started_at: datetime
    updated_at: datetime
    finished_at: Optional[datetime] = None


# Lists.


@dataclass(kw_only=True)
class ListFeature(Model):
    """A list feature version; version is "" for the default one."""

    entity_type: str
    feature: str
    version: str
    ttl: timedelta
    created_at: datetime
    table: str
    # max_items is the cap on a list's live items; None when there is none.
    max_items: Optional[int] = None
    # rewrite is the version's last TTL rewrite, when one was asked for
    # (set by get_list_feature and create_list_feature only).
    rewrite: Optional[TTLRewrite] = None


@dataclass(kw_only=True)
class ListItem(Model):
    """An item of a list: a value and the time it happened (it expires at timestamp + the feature's TTL)."""

    value: bytes
    timestamp: datetime


@dataclass(kw_only=True)
class ListItemsPage(Model):
    items: list[ListItem]
    next_page_token: Optional[str] = None


@dataclass(kw_only=True)
class AddResult(Model):
    """What an add wrote, how many items were already expired and skipped, and how many max_items trimmed."""

    written: int
    skipped_expired: int
    trimmed: int = 0


# Shared tables.


@dataclass(kw_only=True)
class Table(Model):
    """A shared table; default_ttl 0 means items never expire unless given a TTL."""

    name: str
    default_ttl: timedelta
    created_at: datetime
    # rewrite is the table's last default-TTL rewrite, when one was asked
    # for (set by get_table and create_table only).
    rewrite: Optional[TTLRewrite] = None


@dataclass(kw_only=True)
class TableItem(Model):
    """A shared table's item; expires_at is None when it never expires."""

    key: str
    timestamp: datetime
    attributes: dict[str, Any]
    expires_at: Optional[datetime] = None
    # version changes with every write of the item; if_version compares it.
    version: Optional[str] = None


@dataclass(kw_only=True)
class TableItemsBatch(Model):
    """batch_get_table_items: the live items in the order asked, and the keys missing."""

    items: list[TableItem]
    missing: list[str]


@dataclass(kw_only=True)
class TableItemsPage(Model):
    items: list[TableItem]
    next_page_token: Optional[str] = None
