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
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

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

# A free loopback port: bind port 0 and read what the kernel picked. The
# port is released before dynalite binds it; a collision in between makes
# dynalite fail to start, which the wait below reports.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null && return
	local p
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 30000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	return 1
}

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
ready=""
for _ in $(seq 1 100); do
	if ! kill -0 "$pid" 2>/dev/null; then
		break
	fi
	# A connection accepted on the port means it is serving.
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		ready=1
		break
	fi
	sleep 0.1
done
if [[ -z "$ready" ]]; then
	echo "with-dynalite: dynalite did not start on $endpoint:" >&2
	cat "$log" >&2
	exit 1
fi

echo "with-dynalite: dynalite on $endpoint" >&2
export EBB_DYNAMODB_ENDPOINT="$endpoint"
status=0
"$@" || status=$?
exit "$status"
