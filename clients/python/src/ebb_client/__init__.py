"""A Python client of ebb's HTTP API (docs/openapi.yaml), sync and async.

    from datetime import datetime, timedelta, timezone
    import ebb_client

    with ebb_client.Client("http://127.0.0.1:7070") as ebb:
        ebb.create_list_feature("user", "stories", ttl=timedelta(days=7))
        ebb.add_list_items("user", "stories", "u42", [(b"story-1", datetime.now(timezone.utc))])
        newest = ebb.get_list_items("user", "stories", "u42", limit=100).items

AsyncClient has the same methods, each a coroutine (the iter_* ones async
iterators). Errors are the classes of ebb_client.errors, one per API error
code; docs/python.md in the repository is the guide.
"""

from . import errors
from ._async_client import AsyncClient
from ._sync_client import Client
from .errors import (
    BadGateway,
    Conflict,
    EbbError,
    Expired,
    FailedPrecondition,
    InsufficientStorage,
    Internal,
    InvalidArgument,
    MethodNotAllowed,
    NoShard,
    NotFound,
    PermissionDenied,
    TooLarge,
    Unauthenticated,
    Unavailable,
)
from .models import (
    Action,
    AddResult,
    AdminTables,
    Archive,
    ArchiveList,
    BackfillProgress,
    Backup,
    Capabilities,
    CapacityPolicy,
    Cluster,
    CostProjection,
    Event,
    EventPage,
    Expiration,
    ExpirationsPage,
    Health,
    Index,
    Layout,
    Lease,
    LegacyMapping,
    LegacyRow,
    LegacyTable,
    ListFeature,
    ListItem,
    ListItemsPage,
    LogicalTable,
    Migration,
    MigrationCounters,
    Mismatch,
    Model,
    OpUsage,
    PhaseChange,
    PhysicalTable,
    Plan,
    Projection,
    Ready,
    RestoredShard,
    Shard,
    StorageUsage,
    Table,
    TableItem,
    TableItemsBatch,
    TableItemsPage,
    TTLRewrite,
    Transition,
    Usage,
)

__version__ = "0.1.0"

__all__ = [name for name in dir() if not name.startswith("_")]
