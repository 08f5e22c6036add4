"""What the sync and async clients share: headers, answers and errors.

Nothing here does I/O, so both clients send the same requests and read the
same answers; they differ only in how they wait.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Optional, Union

import httpx

from . import _wire, errors
from .models import Event, EventPage, ListItem, ListItemsPage

try:
    import msgpack as _msgpack  # type: ignore[import-untyped]
except ImportError:  # The optional extra is not installed: JSON only.
    _msgpack = None

DEFAULT_URL = "http://127.0.0.1:7070"
"""The default address of ebb serve."""

USER_AGENT = "ebb-client-python"

MSGPACK = "application/msgpack"

# A status whose body is not the API's error (a proxy's page) still raises
# the class its status stands for.
_STATUS_ERRORS: dict[int, type[errors.EbbError]] = {
    400: errors.InvalidArgument,
    401: errors.Unauthenticated,
    403: errors.PermissionDenied,
    404: errors.NotFound,
    405: errors.MethodNotAllowed,
    409: errors.Conflict,
    413: errors.TooLarge,
    500: errors.Internal,
    502: errors.BadGateway,
    503: errors.Unavailable,
    507: errors.InsufficientStorage,
}


def use_msgpack(choice: Optional[bool]) -> bool:
    """Decides whether the hot reads ask for MessagePack.

    None uses it when the msgpack package is installed; True requires it.
    """
    if choice is None:
        return _msgpack is not None
    if choice and _msgpack is None:
        raise ImportError(
            "ebb_client: msgpack=True needs the msgpack package (pip install 'ebb-client[msgpack]')"
        )
    return bool(choice)


def base_url(url: Optional[str]) -> str:
    """The server's URL: url, else $EBB_SERVER, else the default address."""
    return (url or os.environ.get("EBB_SERVER") or DEFAULT_URL).rstrip("/")


def token(tok: Optional[str]) -> Optional[str]:
    """The bearer token: tok, else $EBB_TOKEN, else none."""
    return tok if tok is not None else (os.environ.get("EBB_TOKEN") or None)


def headers(token: Optional[str], extra: Optional[dict[str, str]]) -> dict[str, str]:
    """The headers every request carries."""
    h = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if token:
        h["Authorization"] = f"Bearer {token}"
    if extra:
        h.update(extra)
    return h


def retry_after(resp: httpx.Response) -> Optional[float]:
    """The seconds a Retry-After header asks to wait (delay or HTTP date), or None."""
    v = resp.headers.get("Retry-After")
    if v is None:
        return None
    v = v.strip()
    if v.isdigit():
        return float(v)
    try:
        at = parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    return max(0.0, (at - datetime.now(timezone.utc)).total_seconds())


def retry_delay(resp: httpx.Response, attempt: int) -> float:
    """How long to wait before sending again a call answered 503, at most 10 s."""
    wait = retry_after(resp)
    if wait is None:
        wait = 0.05 * 2**attempt
    return min(wait, 10.0)


def error(resp: httpx.Response) -> errors.EbbError:
    """The exception for a non-2xx answer."""
    code, message = "", ""
    try:
        body = resp.json()
        code = str(body["error"]["code"])
        message = str(body["error"]["message"])
    except (ValueError, KeyError, TypeError):
        message = resp.text.strip()[:500] or resp.reason_phrase
    cls = errors.ERRORS.get(code) or _STATUS_ERRORS.get(resp.status_code, errors.EbbError)
    return cls(
        message,
        code=code or None,
        status=resp.status_code,
        retry_after=retry_after(resp),
    )


def check(resp: httpx.Response) -> httpx.Response:
    """Raises the answer's error unless it is a 2xx."""
    if not resp.is_success:
        raise error(resp)
    return resp


def body(resp: httpx.Response) -> Any:
    """The answer's body, decoded from JSON or MessagePack by its Content-Type."""
    ctype = resp.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if ctype in (MSGPACK, "application/x-msgpack"):
        if _msgpack is None:
            raise ImportError("ebb_client: the server answered MessagePack but msgpack is not installed")
        # timestamp=3 turns the timestamp extension into aware UTC datetimes.
        return _msgpack.unpackb(resp.content, raw=False, timestamp=3)
    return json.loads(resp.content)


def event_page(resp: httpx.Response) -> EventPage:
    """A page of events, from either encoding (MessagePack sends each event as an array)."""
    d = body(resp)
    events = d.get("events") or []
    if events and isinstance(events[0], list):
        d = dict(d)
        d["events"] = [
            Event(index_id=e[0], event_id=e[1], timestamp=_aware(e[2]), payload=e[3]) for e in events
        ]
        return EventPage(events=d.pop("events"), next_page_token=d.pop("next_page_token", None), extra=d)
    return EventPage.from_wire(d)


def list_items_page(resp: httpx.Response) -> ListItemsPage:
    """A page of list items, from either encoding (MessagePack sends [value, timestamp] pairs)."""
    d = body(resp)
    items = d.get("items") or []
    if items and isinstance(items[0], list):
        d = dict(d)
        d["items"] = [ListItem(value=i[0], timestamp=_aware(i[1])) for i in items]
        return ListItemsPage(items=d.pop("items"), next_page_token=d.pop("next_page_token", None), extra=d)
    return ListItemsPage.from_wire(d)


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


def params(**kw: Any) -> dict[str, Any]:
    """Query parameters, those that are None left out."""
    return {k: v for k, v in kw.items() if v is not None}


# Paths and bodies.

ListItemLike = Union[ListItem, tuple[bytes, datetime]]
"""A list item: a ListItem, or a (value, timestamp) pair."""


def index_path(name: str) -> str:
    return "/v1/indexes/" + _wire.segment(name)


def feature_path(entity_type: str, feature: str, version: str) -> str:
    seg = _wire.segment
    return f"/v1/list-features/{seg(entity_type)}/{seg(feature)}/{_wire.version_segment(version)}"


def list_path(entity_type: str, feature: str, version: str, entity_id: str) -> str:
    seg = _wire.segment
    ver = _wire.version_segment(version)
    return f"/v1/lists/{seg(entity_type)}/{seg(feature)}/{ver}/{seg(entity_id)}/items"


def table_path(table: str) -> str:
    return "/v1/tables/" + _wire.segment(table)


def item_path(table: str, key: str) -> str:
    return table_path(table) + "/items/" + _wire.segment(key)


def opt_time(t: Optional[datetime]) -> Optional[str]:
    return None if t is None else _wire.format_time(t)


def event_body(e: Event) -> dict[str, Any]:
    if not isinstance(e, Event):
        raise TypeError(f"ebb_client: an event must be an Event, not {type(e).__name__}")
    return e.to_wire()


def list_item_body(i: ListItemLike) -> dict[str, Any]:
    if isinstance(i, ListItem):
        return i.to_wire()
    value, timestamp = i
    return {"value": _wire.encode_bytes(value), "timestamp": _wire.format_time(timestamp)}
