"""An index's archive: configured by its PUT, listed, and restore and
release of a shard that has no archive refused as NotFound. The round
trip of a shard archived, restored and released runs in Go
(timeseries/archive_test.go), on a fake clock."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

import ebb_client


def test_archive_routes(client, name, tmp_path: Path):
    idx = client.create_index(
        name,
        table_bucket=timedelta(hours=1),
        partition_bucket=timedelta(minutes=1),
        retention=timedelta(hours=2),
        extra={"archive": {"to": tmp_path.as_uri()}},
    )
    assert idx.name == name
    listed = client.list_archives(name)
    assert listed.archives == [] and listed.restored == []
    shard = name + "_0"
    with pytest.raises(ebb_client.NotFound):
        client.restore_archive(name, shard)
    with pytest.raises(ebb_client.NotFound):
        client.release_archive(name, shard)
    assert client.list_archives(name).restored == []
