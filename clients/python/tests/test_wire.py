"""Times, durations and names as the API writes them."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from ebb_client import _wire


@pytest.mark.parametrize(
    "text,want",
    [
        ("0s", timedelta(0)),
        ("0", timedelta(0)),
        ("90s", timedelta(seconds=90)),
        ("1m30s", timedelta(seconds=90)),
        ("720h0m0s", timedelta(days=30)),
        ("1.5h", timedelta(minutes=90)),
        ("100ms", timedelta(milliseconds=100)),
        ("2us", timedelta(microseconds=2)),
        ("2µs", timedelta(microseconds=2)),
        ("1500ns", timedelta(microseconds=1)),
    ],
)
def test_parse_duration(text, want):
    assert _wire.parse_duration(text) == want


@pytest.mark.parametrize("text", ["", "1d", "h", "1h x", "1.h2"])
def test_parse_duration_refuses(text):
    with pytest.raises(ValueError):
        _wire.parse_duration(text)


@pytest.mark.parametrize(
    "d,want",
    [
        (timedelta(0), "0s"),
        (timedelta(seconds=90), "1m30s"),
        (timedelta(days=7), "168h"),
        (timedelta(milliseconds=250), "0.25s"),
        (timedelta(hours=1, microseconds=5), "1h0.000005s"),
    ],
)
def test_format_duration(d, want):
    assert _wire.format_duration(d) == want
    assert _wire.parse_duration(want) == d


def test_times():
    t = _wire.parse_time("2026-11-22T10:00:00.123456789Z")
    assert t == datetime(2026, 11, 22, 10, 0, 0, 123456, tzinfo=timezone.utc)
    assert _wire.format_time(t) == "2026-11-22T10:00:00.123456Z"
    assert _wire.parse_time("2026-11-22T12:00:00+02:00") == datetime(2026, 11, 22, 10, tzinfo=timezone.utc)
    plus2 = timezone(timedelta(hours=2))
    assert _wire.format_time(datetime(2026, 11, 22, 12, tzinfo=plus2)) == "2026-11-22T10:00:00Z"
    with pytest.raises(ValueError):
        _wire.format_time(datetime(2026, 11, 22))
    with pytest.raises(ValueError):
        _wire.parse_time("yesterday")


def test_segments():
    assert _wire.segment("..") == "%2E%2E"
    assert _wire.segment(".") == "%2E"
    assert _wire.segment("a/b?c#d e") == "a%2Fb%3Fc%23d%20e"
    assert _wire.version_segment("") == "_"
    assert _wire.encode_bytes(b"\xfb\xff") == "+/8="
