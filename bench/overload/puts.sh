#!/usr/bin/env bash
# puts.sh measures shared-table puts over HTTP: `ebb serve` (embedded
# backend, synced, a fresh data directory per run) answering
# PUT /v1/tables/load/items/{key} from a closed loop of W writers (vegeta,
# each writer sending its next put when the last is answered), for each W
# in WRITERS, on each listener in LISTENERS ("main": net/http, --addr;
# "hot": the hot listener, --hot-addr). Each put writes a new key with two
# small attributes. With
# more than one binary, each round runs every binary in turn, so that the
# machine's drift hits them alike and the ratio is taken within a round.
#
#   bench/overload/puts.sh bin/ebb [bin/ebb-old ...]
#   ROUNDS=3 DURATION=8 WRITERS="8 64" LISTENERS="main hot" bench/overload/puts.sh bin/ebb
#
# It prints one line per round, binary and writer count: puts/s answered
# 2xx, other answers, and p50/p99 latency in ms. Unless CEILING=0, each
# round ends with the harness's own ceiling, "ceiling" in the binary
# column: the same puts from as many writers, to a table that does not
# exist, answered 404 by the first binary after decoding the body and
# reading the table catalog once, with no write. Its answers/s are the
# most that this machine's share of CPU lets vegeta and the listener
# exchange: a put figure near it is bound by the loop, not by the store.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
[[ $# -gt 0 ]] || set -- "$root/bin/ebb"
ROUNDS=${ROUNDS:-3}
CEILING=${CEILING:-1}
DURATION=${DURATION:-8}
WRITERS=${WRITERS:-8 64}
LISTENERS=${LISTENERS:-main hot}

for b in "$@"; do
	[[ -x "$b" ]] || { echo "puts.sh: $b is not an executable; run make build" >&2; exit 1; }
done
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# shellcheck source=../../scripts/lib.sh
source "$root/scripts/lib.sh"
use_vegeta "$root" puts.sh
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

# run ROUND BIN W LABEL TABLE OK LISTENER: one measurement against a fresh
# server, on LISTENER (main or hot); answers with status OK (2 for 2xx, 4
# for 4xx) count as done.
run() {
	local round=$1 bin=$2 w=$3 label=$4 table=$5 ok=$6 listener=$7 port hport base rate other p50 p99
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
	targets "$base" "$table"
	vegeta attack -format json -targets "$work/puts.jsonl" -rate 0 -workers "$w" -max-workers "$w" \
		-duration "${DURATION}s" -timeout 30s >"$work/out.bin"
	vegeta encode --to csv <"$work/out.bin" | awk -F, -v ms="$work/ms.raw" -v okc="$ok" '
		{ n++; t = $1 / 1e9; if (n == 1 || t < t0) t0 = t; if (t > t1) t1 = t
		  if (int($2 / 100) == okc) { ok++; print $3 / 1e6 > ms } else other++ }
		END { d = t1 - t0; if (d <= 0) d = 1; printf "%.0f %d\n", ok / d, other }' >"$work/rate"
	touch "$work/ms.raw"
	sort -n "$work/ms.raw" >"$work/ms"
	rm -f "$work/ms.raw"
	read -r rate other <"$work/rate"
	p50=$(awk '{ v[NR] = $1 } END { i = int(NR * 0.5); if (i < 1) i = 1; printf "%.1f", v[i] }' "$work/ms")
	p99=$(awk '{ v[NR] = $1 } END { i = int(NR * 0.99); if (i < 1) i = 1; printf "%.1f", v[i] }' "$work/ms")
	printf '%-6s %-28s %8s %10s %7s %8s %8s\n' "$round" "$label" "$w" "$rate" "$other" "$p50" "$p99"
	kill "$server"
	wait "$server" 2>/dev/null || true
	server=
}

printf '%-6s %-28s %8s %10s %7s %8s %8s\n' round binary writers "puts/s" other "p50 ms" "p99 ms"
for round in $(seq 1 "$ROUNDS"); do
	for l in $LISTENERS; do
		for bin in "$@"; do
			for w in $WRITERS; do
				run "$round" "$bin" "$w" "$(basename "$bin"), $l" load 2 "$l"
			done
		done
		if [[ "$CEILING" != 0 ]]; then
			for w in $WRITERS; do
				run "$round" "$1" "$w" "ceiling, $l" absent 4 "$l"
			done
		fi
	done
done
