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

# Short state transitions keep table creation fast while still exercising
# the wait for ACTIVE. tools/dynalite/serve.js runs dynalite's own command
# line, except that a client hanging up mid-request no longer ends the
# server (see there).
start_dynalite() {
	exec node "$tooldir/serve.js" --host 127.0.0.1 --port "$1" --createTableMs 20 --deleteTableMs 20 --updateTableMs 20
}
serve_and_run with-dynalite dynalite EBB_DYNAMODB_ENDPOINT 10 start_dynalite "$@"
