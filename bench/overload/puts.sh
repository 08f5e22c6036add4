#!/usr/bin/env bash
# puts.sh measures shared-table puts over HTTP: `ebb serve` (embedded
# backend, synced, a fresh data directory per run) answering
# PUT /v1/tables/load/items/{key} from a closed loop of W writers (each
# sending its next put when the last is answered), for each W in WRITERS,
# on each listener in LISTENERS ("main": net/http, --addr; "hot": the hot
# listener, --hot-addr), driven by each client in CLIENTS: "wrk" (C, one
# thread, put.lua; light, so most of the machine is left to ebb) and
# "vegeta" (Go; it takes about a third of a 2-core machine itself). Each
# put writes a new key with two small attributes. With more than one
# binary, each round runs every binary in turn, so that the machine's
# drift hits them alike and the ratio is taken within a round.
#
#   bench/overload/puts.sh bin/ebb [bin/ebb-old ...]
#   ROUNDS=3 DURATION=8 WRITERS="8 64" LISTENERS="main hot" CLIENTS="wrk vegeta" bench/overload/puts.sh bin/ebb
#
# It prints one line per round, binary, client and writer count: puts/s
# answered 2xx, other answers, p50/p99 latency in ms, and the CPU ebb and
# the client each used, in cores. Unless CEILING=0, each round ends with
# the harness's own ceiling, "ceiling" in the binary column: the same puts
# from as many writers, to a table that does not exist, answered 404 by
# the first binary after decoding the body and reading the table catalog
# once, with no write. Its answers/s are the most that this machine's
# share of CPU lets the client and the listener exchange: a put figure
# near it is bound by the loop, not by the store.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
[[ $# -gt 0 ]] || set -- "$root/bin/ebb"
ROUNDS=${ROUNDS:-3}
CEILING=${CEILING:-1}
DURATION=${DURATION:-8}
WRITERS=${WRITERS:-8 64}
LISTENERS=${LISTENERS:-main hot}
CLIENTS=${CLIENTS:-wrk vegeta}

for b in "$@"; do
	[[ -x "$b" ]] || { echo "puts.sh: $b is not an executable; run make build" >&2; exit 1; }
done
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# shellcheck source=../../scripts/lib.sh
source "$root/scripts/lib.sh"
for c in $CLIENTS; do
	case $c in
	vegeta) use_vegeta "$root" puts.sh ;;
	wrk) command -v wrk >/dev/null || { echo "puts.sh: wrk is missing (apt-get install -y wrk)" >&2; exit 1; } ;;
	*) echo "puts.sh: unknown client $c (wrk or vegeta)" >&2; exit 1 ;;
	esac
done
scratch

# targets BASE TABLE writes 200,000 puts of distinct keys as vegeta JSON
# targets.
targets() {
	local body
	body=$(printf '{"timestamp":"%s","attributes":{"user":"u-123456","score":42}}' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" | base64 -w0)
	awk -v base="$1" -v table="$2" -v body="$body" 'BEGIN {
		for (i = 0; i < 200000; i++)
			printf "{\"method\":\"PUT\",\"url\":\"%s/v1/tables/%s/items/k%07d\",\"body\":\"%s\",\"header\":{\"Content-Type\":[\"application/json\"]}}\n", base, table, i, body
	}' >"$work/puts.jsonl"
}

# cores PID: the CPU time PID has used so far, in clock ticks.
cores() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# attack_vegeta W BASE TABLE OK: W vegeta writers for DURATION seconds;
# writes answers/s with status class OK and other answers to $work/rate,
# p50 and p99 latency in ms of the OK answers to $work/lat, and the cores
# used to $work/cpu.
attack_vegeta() {
	local w=$1 base=$2 table=$3 ok=$4
	targets "$base" "$table"
	vegeta attack -format json -targets "$work/puts.jsonl" -rate 0 -workers "$w" -max-workers "$w" \
		-duration "${DURATION}s" -timeout 30s >"$work/out.bin" &
	client=$!
	measure
	vegeta encode --to csv <"$work/out.bin" | awk -F, -v ms="$work/ms.raw" -v okc="$ok" '
		{ n++; t = $1 / 1e9; if (n == 1 || t < t0) t0 = t; if (t > t1) t1 = t
		  if (int($2 / 100) == okc) { ok++; print $3 / 1e6 > ms } else other++ }
		END { d = t1 - t0; if (d <= 0) d = 1; printf "%.0f %d\n", ok / d, other }' >"$work/rate"
	touch "$work/ms.raw"
	sort -n "$work/ms.raw" >"$work/ms"
	rm -f "$work/ms.raw"
	awk '{ v[NR] = $1 } END { i = int(NR * 0.5); if (i < 1) i = 1; j = int(NR * 0.99); if (j < 1) j = 1; printf "%.1f %.1f\n", v[i], v[j] }' "$work/ms" >"$work/lat"
}

# attack_wrk W BASE TABLE OK: the same with wrk (one thread, W
# connections, put.lua); wrk's latencies cover every answer.
attack_wrk() {
	local w=$1 base=$2 table=$3 ok=$4
	TABLE=$table wrk -t1 -c"$w" -d"${DURATION}s" --timeout 30s --latency -s "$root/bench/overload/put.lua" "$base" >"$work/wrk.out" &
	client=$!
	measure
	awk -v okc="$ok" '
		function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
		/requests in/ { total = $1 }
		/Non-2xx or 3xx responses:/ { non2 = $NF }
		/Socket errors:/ { for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) errs += $i }
		/Requests\/sec:/ { rps = $2 }
		/^ +50%/ { p50 = ms($2) } /^ +99%/ { p99 = ms($2) }
		END { good = (okc == 2) ? total - non2 : non2; other = total - good + errs
		      printf "%.0f %d\n", (total > 0 ? rps * good / total : 0), other > "'"$work/rate"'"
		      printf "%.1f %.1f\n", p50, p99 > "'"$work/lat"'" }' "$work/wrk.out"
}

# measure waits for the client started in the background (PID in client)
# and records, over its middle, the cores that ebb and the client used.
measure() {
	local e0 c0 t0 e1 c1 t1 span
	span=$((DURATION > 3 ? DURATION - 2 : 1))
	sleep 1
	e0=$(cores "$server") c0=$(cores "$client") t0=$(date +%s%N)
	sleep "$span"
	e1=$(cores "$server") c1=$(cores "$client") t1=$(date +%s%N)
	wait "$client"
	client=
	awk -v e="$((e1 - e0))" -v c="$((c1 - c0))" -v ns="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { s = ns / 1e9; printf "%.2f %.2f\n", e / hz / s, c / hz / s }' >"$work/cpu"
}

# run ROUND BIN W LABEL TABLE OK LISTENER CLIENT: one measurement against
# a fresh server, on LISTENER (main or hot), driven by CLIENT; answers
# with status class OK (2 for 2xx, 4 for 4xx) count as done.
run() {
	local round=$1 bin=$2 w=$3 label=$4 table=$5 ok=$6 listener=$7 cl=$8 port hport base rate other p50 p99 ecpu ccpu
	port=$(free_port)
	hport=$(free_port)
	rm -rf "$work/data"
	"$bin" serve --addr "127.0.0.1:$port" --hot-addr "127.0.0.1:$hport" --data "$work/data" --log-level error >"$work/serve.log" 2>&1 &
	server=$!
	wait_port "$server" "$port" 100 || { cat "$work/serve.log" >&2; exit 1; }
	base="http://127.0.0.1:$port"
	curl -fsS -X PUT "$base/v1/tables/load" -d '{}' >/dev/null
	if [[ "$listener" == hot ]]; then
		wait_port "$server" "$hport" 100 || { cat "$work/serve.log" >&2; exit 1; }
		base="http://127.0.0.1:$hport"
	fi
	"attack_$cl" "$w" "$base" "$table" "$ok"
	read -r rate other <"$work/rate"
	read -r p50 p99 <"$work/lat"
	read -r ecpu ccpu <"$work/cpu"
	printf '%-6s %-32s %8s %10s %7s %8s %8s %6s %6s\n' "$round" "$label" "$w" "$rate" "$other" "$p50" "$p99" "$ecpu" "$ccpu"
	kill "$server"
	wait "$server" 2>/dev/null || true
	server=
}

printf '%-6s %-32s %8s %10s %7s %8s %8s %6s %6s\n' round "binary, listener, client" writers "puts/s" other "p50 ms" "p99 ms" "ebb" "client"
for round in $(seq 1 "$ROUNDS"); do
	for cl in $CLIENTS; do
		for l in $LISTENERS; do
			for bin in "$@"; do
				for w in $WRITERS; do
					run "$round" "$bin" "$w" "$(basename "$bin"), $l, $cl" load 2 "$l" "$cl"
				done
			done
			if [[ "$CEILING" != 0 ]]; then
				for w in $WRITERS; do
					run "$round" "$1" "$w" "ceiling, $l, $cl" absent 4 "$l" "$cl"
				done
			fi
		done
	done
done
