#!/usr/bin/env bash
# listget.sh measures list reads over the wire, ebb beside Redis, in one run
# on one machine: wrk against `ebb serve` reading the newest 100 items of a
# 1000-item list, then redis-benchmark against a local redis-server running
# ZREVRANGE over a 1000-member sorted set, at 1 and at 64 connections. ebb
# is read on its main listener (net/http) and on its hot listener
# (--hot-addr, fasthttp), in JSON and in MessagePack. It prints requests/s
# and the ratios ebb/Redis.
#
#   bench/peers/listget.sh [path to the ebb binary]
#
# ROUNDS (default 3), DURATION (seconds per wrk run, default 10) and
# REQUESTS (per redis-benchmark run, default 200000) tune it; the table
# holds the medians over the rounds, the ratio being the median of the
# rounds' ratios. Where /proc is, it also prints the CPU time ebb and
# redis-server each spent per request (user and system, from
# /proc/PID/stat), and their ratio, which drift much less than requests/s
# on a shared machine. The environment reaches ebb serve,
# so GOMAXPROCS=1 bench/peers/listget.sh runs it on one P, and EBB_SERVE_FLAGS
# go to ebb serve (EBB_SERVE_FLAGS='--list-cache-bytes 0' reads the store
# every time). The load generators share the machine with the servers, so
# their CPU per request is printed too (user and system, from bash's time).
# It needs wrk, redis-server,
# redis-benchmark, redis-cli, curl and base64; Debian packages wrk,
# redis-server and redis-tools have them.
set -euo pipefail

EBB=${1:-bin/ebb}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
REQUESTS=${REQUESTS:-200000}
# shellcheck source=bench/peers/lib.sh
. "$(dirname "$0")/lib.sh"
need listget.sh wrk redis-server redis-benchmark redis-cli curl base64

# ebb: one feature, one list of 1000 items, 16-byte values, one second apart.
eport=$(freeport)
hport=$(freeport)
# shellcheck disable=SC2086 # EBB_SERVE_FLAGS are words
"$EBB" serve --addr "127.0.0.1:$eport" --hot-addr "127.0.0.1:$hport" --data "$work/ebb" --log-level error ${EBB_SERVE_FLAGS:-} >"$work/ebb.log" 2>&1 &
pids+=($!)
epid=$!
base="http://127.0.0.1:$eport"
for _ in $(seq 100); do curl -fs "$base/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS -X PUT "$base/v1/list-features/user/stories/_" -d '{"ttl":"720h"}' >/dev/null
now=$(date -u +%s)
{
	printf '{"items":['
	for i in $(seq 0 999); do
		[ "$i" -gt 0 ] && printf ','
		printf '{"value":"%s","timestamp":"%s"}' "$(printf 'story-%010d' "$i" | base64)" "$(date -u -d "@$((now - i))" +%Y-%m-%dT%H:%M:%SZ)"
	done
	printf ']}'
} >"$work/items.json"
curl -fsS -X POST "$base/v1/lists/user/stories/_/user-000042/items" --data-binary "@$work/items.json" >/dev/null
path="/v1/lists/user/stories/_/user-000042/items?limit=100"
url="$base$path"
hoturl="http://127.0.0.1:$hport$path"
for u in "$url" "$hoturl"; do
	got=$(curl -fsS "$u" | grep -o '"value"' | wc -l)
	[ "$got" -eq 100 ] || { echo "listget.sh: ebb returned $got items at $u, want 100" >&2; exit 1; }
done

# Redis: the same 1000 members in one sorted set, scored by timestamp; no
# persistence, since nothing is written during the run.
rport=$(freeport)
redis-server --port "$rport" --save '' --appendonly no --daemonize no --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)
rpid=$!
for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
{
	for i in $(seq 0 999); do printf 'ZADD list %d story-%010d\n' $((now - i)) "$i"; done
} | redis-cli -p "$rport" >/dev/null
[ "$(redis-cli -p "$rport" zcard list)" -eq 1000 ] || { echo "listget.sh: redis set not filled" >&2; exit 1; }

# ebbcpu prints the CPU ticks (user and system) ebb has used, or nothing
# without /proc.
ebbcpu() { [ -r "/proc/$epid/stat" ] && awk '{print $14 + $15}' "/proc/$epid/stat"; return 0; }
rediscpu() { [ -r "/proc/$rpid/stat" ] && awk '{print $14 + $15}' "/proc/$rpid/stat"; return 0; }
tick=$(getconf CLK_TCK 2>/dev/null || echo 100)

# clientcpu FILE N: the CPU µs per request of N requests in a client
# whose bash time (TIMEFORMAT='%U %S') is in FILE.
clientcpu() { awk -v n="$2" '{ printf "%.1f", ($1 + $2) * 1e6 / n }' "$1"; }

wrkrps() { # url connections [extra wrk arguments]; prints req/s, ebb's CPU µs per request ("-" without /proc) and wrk's
	local u=$1 c=$2 threads=$(( $2 < 2 ? 1 : 2 )) out c0 c1 TIMEFORMAT='%U %S'
	shift 2
	c0=$(ebbcpu)
	out=$( { time wrk -t"$threads" -c"$c" -d"${DURATION}s" "$@" "$u"; } 2>"$work/wrk.time")
	c1=$(ebbcpu)
	# Only 2xx answers count: a 503 shed under load is not a list read.
	awk -v c0="$c0" -v c1="$c1" -v tick="$tick" '
		/requests in/ { n = $1 }
		/^Requests\/sec:/ { rps = $2 }
		/Non-2xx or 3xx responses:/ { bad = $NF }
		END { if (bad > 0) { printf "listget.sh: %d of %d answers were not 2xx; counting the 2xx only\n", bad, n > "/dev/stderr"; rps = rps * (n - bad) / n }
		      if (c0 == "" || n == 0) printf "%.2f -", rps; else printf "%.2f %.1f", rps, (c1 - c0) * 1e6 / tick / n
		      print " " n }' <<<"$out" | { read -r rps cpu n; echo "$rps $cpu $(clientcpu "$work/wrk.time" "$n")"; }
}
redisrps() { # connections; prints req/s, Redis's CPU µs per request ("-" without /proc) and redis-benchmark's
	local c0 c1 rps TIMEFORMAT='%U %S'
	c0=$(rediscpu)
	rps=$( { time redis-benchmark -p "$rport" -c "$1" -n "$REQUESTS" -q ZREVRANGE list 0 99; } 2>"$work/rb.time" | tr '\r' '\n' | awk -F'[: ]+' '/requests per second/ {for (i=1;i<=NF;i++) if ($i=="requests") {print $(i-1); exit}}')
	c1=$(rediscpu)
	awk -v rps="$rps" -v c0="$c0" -v c1="$c1" -v tick="$tick" -v n="$REQUESTS" \
		'BEGIN { if (c0 == "") printf "%s -", rps; else printf "%s %.1f", rps, (c1 - c0) * 1e6 / tick / n }'
	echo " $(clientcpu "$work/rb.time" "$REQUESTS")"
}

# Rounds alternate ebb (main listener in JSON and MessagePack, then the hot
# listener in both) and Redis at each connection count, so that a machine
# whose speed drifts affects all of them; the ratios of each round are
# taken, then the median of each column over the rounds.
msgpack=(-H 'Accept: application/msgpack')
rows=()
for round in $(seq "$ROUNDS"); do
	for c in 1 64; do
		read -r e ecpu _ < <(wrkrps "$url" "$c")
		read -r m mcpu _ < <(wrkrps "$url" "$c" "${msgpack[@]}")
		read -r he hecpu _ < <(wrkrps "$hoturl" "$c")
		read -r hm hmcpu wcpu < <(wrkrps "$hoturl" "$c" "${msgpack[@]}")
		read -r r rcpu rbcpu < <(redisrps "$c")
		rows+=("$c $e $m $he $hm $r $ecpu $mcpu $hecpu $hmcpu $rcpu $wcpu $rbcpu")
		echo "round $round, $c connections: Redis $r req/s ($rcpu µs CPU/req, redis-benchmark $rbcpu); ebb main JSON $e ($ecpu µs CPU/req), MessagePack $m ($mcpu);" \
			"hot JSON $he ($hecpu), MessagePack $hm ($hmcpu, wrk $wcpu); ratios to Redis:" \
			"$(awk -v r="$r" -v a="$e" -v b="$m" -v d="$he" -v f="$hm" 'BEGIN {printf "%.2f %.2f %.2f %.2f", a / r, b / r, d / r, f / r}')" >&2
	done
done
printf '| connections | Redis req/s | listener | JSON req/s | MessagePack req/s | JSON/Redis | MessagePack/Redis | CPU µs/req, JSON | CPU µs/req, MessagePack | CPU µs/req, Redis | MessagePack CPU/Redis CPU | client CPU µs/req: wrk (hot MessagePack), redis-benchmark |\n'
printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n'
for c in 1 64; do
	for l in main hot; do
		printf '%s\n' "${rows[@]}" | awk -v c="$c" -v l="$l" '
			$1 == c { n++; o = (l == "hot") ? 2 : 0; e[n] = $(2 + o); m[n] = $(3 + o); r[n] = $6; qe[n] = e[n] / $6; qm[n] = m[n] / $6; ue[n] = $(7 + o); um[n] = $(8 + o); ur[n] = $11; qc[n] = ($11 == "-" || um[n] == "-" || $11 == 0) ? "-" : um[n] / $11; uw[n] = $12; ub[n] = $13 }
			function median(a, n,   i, j, t) {
				for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
				return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
			}
			function cpu(a, n) { return a[1] == "-" ? "-" : sprintf("%.1f", median(a, n)) }
			function ratio(a, n) { return a[1] == "-" ? "-" : sprintf("%.2f", median(a, n)) }
			END {
				printf "| %d | %.0f | %s | %.0f | %.0f | %.2f | %.2f | %s | %s | %s | %s | %s |\n", c, median(r, n), l, median(e, n), median(m, n), median(qe, n), median(qm, n), cpu(ue, n), cpu(um, n), cpu(ur, n), ratio(qc, n), (l == "hot" ? cpu(uw, n) ", " cpu(ub, n) : "")
			}'
	done
done
