#!/usr/bin/env bash
# turnaround.sh measures what serving a request costs ebb before any read:
# the CPU time `ebb serve` spends per GET /healthz (no store read, a 16-byte
# body) under wrk on its hot and main listeners, beside the CPU time
# redis-server spends per ZREVRANGE 0 99 of a 1000-member sorted set (the
# read listget.sh compares with) and per PING, under redis-benchmark, at 1
# and at 64 connections, in one run. It prints requests/s and CPU µs per
# request (user and system, from /proc/PID/stat) for each, each round.
#
#   bench/peers/turnaround.sh [path to the ebb binary]
#
# ROUNDS (default 3), DURATION (seconds per wrk run, default 5) and REQUESTS
# (per redis-benchmark run, default 100000) tune it. It needs /proc, wrk,
# redis-server, redis-benchmark, redis-cli, curl and python3.
set -euo pipefail
# shellcheck source=bench/peers/lib.sh
. "$(dirname "$0")/lib.sh"
need turnaround.sh wrk redis-server redis-benchmark redis-cli curl python3
EBB=${1:-bin/ebb} ROUNDS=${ROUNDS:-3} DURATION=${DURATION:-5} REQUESTS=${REQUESTS:-100000}

eport=$(freeport)
hport=$(freeport)
rport=$(freeport)
"$EBB" serve --addr "127.0.0.1:$eport" --hot-addr "127.0.0.1:$hport" --data "$work/ebb" --log-level error >"$work/ebb.log" 2>&1 &
pids+=($!)
epid=$!
redis-server --port "$rport" --save '' --appendonly no --daemonize no --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)
rpid=$!
for _ in $(seq 100); do
	curl -fs "http://127.0.0.1:$hport/healthz" >/dev/null 2>&1 && redis-cli -p "$rport" ping >/dev/null 2>&1 && break
	sleep 0.1
done
now=$(date -u +%s)
for i in $(seq 0 999); do printf 'ZADD list %d story-%010d\n' $((now - i)) "$i"; done | redis-cli -p "$rport" >/dev/null
[ "$(redis-cli -p "$rport" zcard list)" -eq 1000 ] || { echo "turnaround.sh: redis set not filled" >&2; exit 1; }

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
tick=$(getconf CLK_TCK 2>/dev/null || echo 100)

wrkcpu() { # url connections; prints req/s and ebb's CPU µs per request
	local c0 c1 out
	c0=$(cpu "$epid")
	out=$(wrk -t"$(( $2 < 2 ? 1 : 2 ))" -c"$2" -d"${DURATION}s" "$1")
	c1=$(cpu "$epid")
	awk -v c0="$c0" -v c1="$c1" -v tick="$tick" '/requests in/ { n = $1 } /^Requests\/sec:/ { r = $2 }
		END { printf "%.0f req/s %.1f µs", r, (c1 - c0) * 1e6 / tick / n }' <<<"$out"
}
rediscpu() { # connections command...; prints req/s and Redis's CPU µs per request
	local c=$1 c0 c1 rps
	shift
	c0=$(cpu "$rpid")
	rps=$(redis-benchmark -p "$rport" -c "$c" -n "$REQUESTS" -q "$@" | tr '\r' '\n' | awk -F'[: ]+' '/requests per second/ {for (i=1;i<=NF;i++) if ($i=="requests") {print $(i-1); exit}}')
	c1=$(cpu "$rpid")
	awk -v r="$rps" -v c0="$c0" -v c1="$c1" -v tick="$tick" -v n="$REQUESTS" 'BEGIN { printf "%.0f req/s %.1f µs", r, (c1 - c0) * 1e6 / tick / n }'
}

for round in $(seq "$ROUNDS"); do
	for c in 1 64; do
		echo "round $round, $c connections: ebb hot /healthz $(wrkcpu "http://127.0.0.1:$hport/healthz" "$c"), main /healthz $(wrkcpu "http://127.0.0.1:$eport/healthz" "$c");" \
			"Redis ZREVRANGE $(rediscpu "$c" ZREVRANGE list 0 99), PING $(rediscpu "$c" PING) (CPU per request)"
	done
done
