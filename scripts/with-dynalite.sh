#!/usr/bin/env bash
# with-dynalite.sh runs a command with EBB_DYNAMODB_ENDPOINT pointing at a
# DynamoDB API endpoint.
#
#   scripts/with-dynalite.sh go test -race ./store/dynamo/
#
# When EBB_DYNAMODB_ENDPOINT is already set, the command runs against that
# endpoint as is. Otherwise the pinned dynalite in tools/dynalite is
# installed (npm ci) when missing, started in memory on a free loopback
# port, and stopped when the command ends. The script exits with the
# command's status, and fails (never skips) when dynalite cannot start.
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

if [[ -n "${EBB_DYNAMODB_ENDPOINT:-}" ]]; then
	exec "$@"
fi

tooldir="$root/tools/dynalite"
bin="$tooldir/node_modules/.bin/dynalite"
if [[ ! -x "$bin" ]]; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "with-dynalite: npm is required to install dynalite (tools/dynalite)" >&2
		exit 1
	fi
	echo "with-dynalite: installing dynalite (npm ci in tools/dynalite)" >&2
	(cd "$tooldir" && npm ci --no-audit --no-fund --loglevel=error) >&2
fi


port="$(free_port)"
log="$(mktemp -t dynalite.XXXXXX.log)"
# Short state transitions keep table creation fast while still exercising
# the wait for ACTIVE.
"$bin" --host 127.0.0.1 --port "$port" --createTableMs 20 --deleteTableMs 20 --updateTableMs 20 >"$log" 2>&1 &
pid=$!

cleanup() {
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -f "$log"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

endpoint="http://127.0.0.1:$port"
if ! start_wait "with-dynalite: dynalite" "$pid" "$port" 10 "$log"; then
	exit 1
fi
echo "with-dynalite: dynalite on $endpoint" >&2
export EBB_DYNAMODB_ENDPOINT="$endpoint"
status=0
"$@" || status=$?
exit "$status"
