"""Conversions between Python values and the API's wire forms.

The API speaks RFC 3339 times, Go duration strings and standard base64;
the client's models speak timezone-aware datetime, timedelta and bytes.
Every conversion lives here so that the models and both clients agree.
"""

from __future__ import annotations

import base64
import re
from datetime import datetime, timedelta, timezone
from urllib.parse import quote

_TIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$"
)


def parse_time(s: str) -> datetime:
    """Parses an RFC 3339 time into a timezone-aware datetime.

    Python keeps microseconds: digits past the sixth are dropped (the
    server answers up to nanoseconds).
    """
    m = _TIME.match(s)
    if m is None:
        raise ValueError(f"ebb_client: not an RFC 3339 time: {s!r}")
    year, month, day, hour, minute, second, frac, zone = m.groups()
    micro = int((frac or "").ljust(6, "0")[:6])
    if zone in ("Z", "z"):
        tz = timezone.utc
    else:
        sign = 1 if zone[0] == "+" else -1
        tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    return datetime(
        int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tzinfo=tz
    )


def format_time(t: datetime) -> str:
    """Formats a timezone-aware datetime as RFC 3339 in UTC.

    A naive datetime is refused: the server cannot know which zone it
    meant, and guessing would shift every time by the local offset.
    """
    if not isinstance(t, datetime):
        raise TypeError(f"ebb_client: a time must be a datetime, not {type(t).__name__}")
    if t.tzinfo is None or t.tzinfo.utcoffset(t) is None:
        raise ValueError(
            "ebb_client: a naive datetime has no zone; give one, e.g. datetime.now(timezone.utc)"
        )
    u = t.astimezone(timezone.utc)
    s = u.strftime("%Y-%m-%dT%H:%M:%S")
    if u.microsecond:
        s += f".{u.microsecond:06d}".rstrip("0")
    return s + "Z"


_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(s: str) -> timedelta:
    """Parses a Go duration string ("90s", "720h0m0s", "1.5h") into a timedelta."""
    text = s
    sign = 1
    if text[:1] in "+-" and text:
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if text == "0":
        return timedelta(0)
    if not text:
        raise ValueError(f"ebb_client: not a duration: {s!r}")
    micros = 0
    pos = 0
    for m in _DURATION_PART.finditer(text):
        if m.start() != pos:
            raise ValueError(f"ebb_client: not a duration: {s!r}")
        pos = m.end()
        number, unit = m.groups()
        whole, _, frac = number.partition(".")
        # Integer arithmetic in nanoseconds keeps "1m30s" exact.
        scale = round(_DURATION_UNITS[unit] * 1e9)
        nanos = int(whole or "0") * scale
        if frac:
            nanos += int(frac) * scale // 10 ** len(frac)
        micros += nanos // 1000
    if pos != len(text):
        raise ValueError(f"ebb_client: not a duration: {s!r}")
    return sign * timedelta(microseconds=micros)


def format_duration(d: timedelta) -> str:
    """Formats a timedelta as a Go duration string ("168h", "1m30s", "0.25s")."""
    if not isinstance(d, timedelta):
        raise TypeError(f"ebb_client: a duration must be a timedelta, not {type(d).__name__}")
    micros = (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds
    if micros == 0:
        return "0s"
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    hours, micros = divmod(micros, 3600 * 1_000_000)
    minutes, micros = divmod(micros, 60 * 1_000_000)
    seconds, micros = divmod(micros, 1_000_000)
    out = sign
    if hours:
        out += f"{hours}h"
    if minutes:
        out += f"{minutes}m"
    if seconds or micros:
        out += f"{seconds}"
        if micros:
            out += f".{micros:06d}".rstrip("0")
        out += "s"
    return out


def encode_bytes(b: bytes | bytearray | memoryview) -> str:
    """Encodes bytes as standard base64 with padding."""
    if not isinstance(b, (bytes, bytearray, memoryview)):
        raise TypeError(f"ebb_client: a value must be bytes, not {type(b).__name__}")
    return base64.b64encode(bytes(b)).decode("ascii")


def decode_bytes(s: str) -> bytes:
    """Decodes standard base64 with padding."""
    return base64.b64decode(s, validate=True)


def segment(s: str) -> str:
    """Escapes one path segment.

    Everything outside the unreserved characters is escaped, and the dot
    segments, which HTTP libraries and proxies would otherwise resolve, are
    sent as %2E and %2E%2E, as the API asks.
    """
    if not isinstance(s, str):
        raise TypeError(f"ebb_client: a name must be a str, not {type(s).__name__}")
    if s in (".", ".."):
        return "%2E" * len(s)
    return quote(s, safe="")


def version_segment(version: str) -> str:
    """Names a list feature's version in a path: "_" is the default (empty) version."""
    return segment(version) if version else "_"


def flag(b: bool) -> str:
    """Formats a boolean query parameter."""
    return "true" if b else "false"
