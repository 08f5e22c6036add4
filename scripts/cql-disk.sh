#!/usr/bin/env bash
# cql-disk.sh measures what leaves a Cassandra node's disk, and when, for
# each table role of ebb's CQL backend, with stock table options beside
# ebb's (bench/cqldisk; its figures are in docs/backends.md). It starts a
# throw-away node with scripts/with-cassandra.sh, since the measure reads
# the node's data directory; arguments go to bench/cqldisk (-ttl, -write,
# -observe, -every, -rate, -flush, -value). About ten minutes with the
# defaults.
#
#   scripts/cql-disk.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
go build -o "${TMPDIR:-/tmp}/ebb-cqldisk" ./bench/cqldisk
unset EBB_CQL_HOSTS
exec scripts/with-cassandra.sh "${TMPDIR:-/tmp}/ebb-cqldisk" "$@"
