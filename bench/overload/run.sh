#!/usr/bin/env bash
# run.sh measures `ebb serve` (embedded backend, a fresh data directory)
# past saturation, with vegeta (github.com/tsenart/vegeta), for a write
# route (event ingest, POST /v1/indexes/load/events, 10 events a request)
# and a read route (GET /v1/indexes/load/events?index_id=...&limit=10):
#
#  1. saturation: closed loop, each of WORKERS workers sending its next
#     request when the last is answered; the saturation rate is the highest
#     2xx rate over the worker counts (throughput stops growing there);
#  2. overload: open loop at FACTOR (2) times that rate for OVERLOAD
#     seconds, with /healthz probed 50 times a second beside it. It prints
#     the share of requests shed (503), the p50/p99 of admitted (2xx)
#     requests, the p99 of shed ones, the p99 of /healthz, and (on Linux)
#     the cores the server used and the average number of its threads
#     runnable but waiting for a CPU, taken by the machine's other work.
#
# The saturation runs have a server of their own (default bounds). The
# overload runs are repeated in each of MODES, each on a fresh server
# holding the same data (PREFILL seconds of writes): `default` (the default
# admission bounds, 256 reads and 128 writes in flight), `tight`
# (--max-reads/--max-writes $TIGHT, 16) and `off` (in-flight bounds raised
# out of reach, 1000000; the CPU guard stays on). MODES=none also turns
# the CPU guard off (--max-runnable 0): no admission control at all.
#
#   bench/overload/run.sh [path to the ebb binary]          # bin/ebb
#   WORKERS="8 64" SAT=5 OVERLOAD=10 bench/overload/run.sh  # a quicker run
#
# SATWRITE and SATREAD, when both set, skip the saturation runs and take
# these rates as saturation, so that two binaries are measured at the same
# rate (alternate them on a shared machine, which drifts). ROUTES (write
# read) picks the routes of the overload runs. SERVE_FLAGS adds flags to
# both servers; MAX_WORKERS (2000) caps vegeta's open-loop workers, so
# with admission off the attack can fall below the rate it aims at (the
# table says what it achieved). vegeta is installed
# into bin/ with `go install` when it is not on PATH.
#
# SERVER_CPUS and LOAD_CPUS (taskset lists, for example 0 and 1), when
# set, pin the server and the load generator to CPUs of their own, so
# that the load generator does not take the server's CPU: what a server
# with its cores to itself and its clients elsewhere sees. The server's
# Go runtime then sizes GOMAXPROCS to its CPUs.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
EBB=${1:-$root/bin/ebb}
WORKERS=${WORKERS:-1 4 16 64 256 1024}
SAT=${SAT:-8}
OVERLOAD=${OVERLOAD:-20}
PREFILL=${PREFILL:-5}
FACTOR=${FACTOR:-2}
MODES=${MODES:-default tight off}
TIGHT=${TIGHT:-16}
MAX_WORKERS=${MAX_WORKERS:-2000}
ROUTES=${ROUTES:-write read}
SATWRITE=${SATWRITE:-}
SATREAD=${SATREAD:-}
SERVE_FLAGS=${SERVE_FLAGS:-}
SERVER_CPUS=${SERVER_CPUS:-}
LOAD_CPUS=${LOAD_CPUS:-}

[[ -x "$EBB" ]] || { echo "run.sh: $EBB is not an executable; run make build" >&2; exit 1; }
for cmd in curl base64 awk sort; do
	command -v "$cmd" >/dev/null || { echo "run.sh: $cmd is missing" >&2; exit 1; }
done
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# shellcheck source=../../scripts/lib.sh
source "$root/scripts/lib.sh"
use_vegeta "$root" run.sh
scratch

# probe CMD... runs the /healthz prober: with real-time priority (chrt)
# where allowed, so that what it measures is the server's answer and not
# its own wait for a CPU behind the load generator, which it shares the
# machine with. PROBE_RT=0 runs it as any other process.
probe() {
	if [[ ${PROBE_RT:-1} != 0 ]] && chrt -f 10 true 2>/dev/null; then
		chrt -f 10 "$@"
	else
		"$@"
	fi
}
# vegeta runs the load generator, pinned to LOAD_CPUS when set.
vegeta_bin=$(command -v vegeta)
vegeta() { ${LOAD_CPUS:+taskset -c "$LOAD_CPUS"} "$vegeta_bin" "$@"; }

# start FLAGS... starts a server on a fresh data directory with an index
# of daily shards, and sets base.
start() {
	local port
	port=$(free_port)
	rm -rf "$work/data"
	# exec, so that server is the server's PID, pinned or not.
	# shellcheck disable=SC2086
	(exec ${SERVER_CPUS:+taskset -c "$SERVER_CPUS"} "$EBB" serve --addr "127.0.0.1:$port" --data "$work/data" --log-level error $SERVE_FLAGS "$@" >"$work/serve.log" 2>&1) &
	server=$!
	wait_port "$server" "$port" 100 || { cat "$work/serve.log" >&2; exit 1; }
	base="http://127.0.0.1:$port"
	curl -fsS -X PUT "$base/v1/indexes/load" -d '{"table_bucket":"24h","partition_bucket":"1h","retention":"168h"}' >/dev/null
}
stop() {
	kill "$server"
	wait "$server" 2>/dev/null || true
	server=
}

# targets writes vegeta's JSON targets: 1000 distinct writes of 10 events
# (100-byte payloads) to 100 index ids, and reads of those ids.
targets() {
	local payload now i j ts body
	payload=$(head -c 100 /dev/zero | tr '\0' 'x' | base64 -w0)
	now=$(date -u +%s)
	: >"$work/writes.jsonl"
	: >"$work/reads.jsonl"
	for i in $(seq 0 999); do
		body='{"events":['
		for j in $(seq 0 9); do
			TZ=UTC printf -v ts '%(%Y-%m-%dT%H:%M:%SZ)T' $((now - 3600 + i * 3 + j % 3))
			[[ $j -gt 0 ]] && body+=','
			body+="{\"index_id\":\"acc_$((i % 100))\",\"event_id\":\"e$i-$j\",\"timestamp\":\"$ts\",\"payload\":\"$payload\"}"
		done
		body+=']}'
		printf '{"method":"POST","url":"%s/v1/indexes/load/events","body":"%s","header":{"Content-Type":["application/json"]}}\n' \
			"$base" "$(printf '%s' "$body" | base64 -w0)" >>"$work/writes.jsonl"
	done
	for i in $(seq 0 99); do
		printf '{"method":"GET","url":"%s/v1/indexes/load/events?index_id=acc_%d&order=desc&limit=10"}\n' "$base" "$i" >>"$work/reads.jsonl"
	done
}

# stats FILE prints the results of one vegeta attack: achieved request
# rate, 2xx rate, share of 503, other failures, p50/p99 of the 2xx and p99
# of the 503.
stats() {
	vegeta encode --to csv <"$1" | awk -F, -v ok="$work/ok.ms" -v shed="$work/shed.ms" '
		BEGIN { printf "" > ok; printf "" > shed }
		{ n++; t = $1 / 1e9; if (n == 1 || t < t0) t0 = t; if (t > t1) t1 = t
		  if ($2 >= 200 && $2 < 300) { nok++; print $3 / 1e6 > ok } else if ($2 == 503) { nshed++; print $3 / 1e6 > shed } else other++ }
		END { d = t1 - t0; if (d <= 0) d = 1
		      printf "%.0f %.0f %.1f %d ", n / d, nok / d, 100 * nshed / n, other }'
	printf '%s %s %s\n' "$(pct "$work/ok.ms" 0.50)" "$(pct "$work/ok.ms" 0.99)" "$(pct "$work/shed.ms" 0.99)"
}

# pct FILE Q prints the Q quantile of the numbers in FILE, or - when empty.
pct() {
	sort -n "$1" | awk -v q="$2" '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit } i = int(NR * q); if (i < 1) i = 1; printf "%.1f", v[i] }'
}

# p99 FILE prints the p99 latency (ms) of every request of an attack.
p99() {
	vegeta encode --to csv <"$1" | awk -F, '{ print $3 / 1e6 }' | sort -n | awk '{ v[NR] = $1 } END { i = int(NR * 0.99); if (i < 1) i = 1; printf "%.1f", v[i] }'
}

# saturation NAME TARGETS prints the 2xx rate at each worker count and
# sets sat to the highest.
saturation() {
	local name=$1 file=$2 w line ok
	sat=0
	for w in $WORKERS; do
		vegeta attack -format json -targets "$file" -rate 0 -workers "$w" -max-workers "$w" -duration "${SAT}s" -timeout 30s >"$work/sat.bin"
		line=$(stats "$work/sat.bin")
		ok=$(awk '{ print $2 }' <<<"$line")
		printf '%-6s closed loop %4d workers: %6s req/s 2xx, p50 %s ms, p99 %s ms\n' "$name" "$w" "$ok" \
			"$(awk '{ print $5 }' <<<"$line")" "$(awk '{ print $6 }' <<<"$line")"
		((ok > sat)) && sat=$ok
	done
	echo "$name saturation: $sat req/s"
}

# overload NAME TARGETS RATE MODE drives RATE req/s open loop with /healthz
# probed beside, and prints one row of the table.
overload() {
	local name=$1 file=$2 rate=$3 mode=$4 hz line
	local cpu0 cpu1
	echo "GET $base/healthz" | probe "$vegeta_bin" attack -rate 50 -duration "${OVERLOAD}s" -timeout 30s >"$work/healthz.bin" &
	hz=$!
	cpu0=$(cpu)
	vegeta attack -format json -targets "$file" -rate "$rate" -max-workers "$MAX_WORKERS" -duration "${OVERLOAD}s" -timeout 30s >"$work/over.bin"
	cpu1=$(cpu)
	wait "$hz"
	line=$(stats "$work/over.bin")
	# shellcheck disable=SC2086
	printf '| %s | %s | %s | %s | %s | %s%% | %s | %s | %s | %s | %s | %s |\n' "$name" "$mode" "$rate" $line "$(p99 "$work/healthz.bin")" \
		"$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { split(a, x); split(b, y); d = y[1] - x[1]; if (d <= 0 || x[2] == "-") { print "-"; exit }
			printf "%.2f / %.2f", (y[2] - x[2]) / d, (y[3] - x[3]) / d }')"
}

# cpu prints the time now, the CPU time the server has used and the time
# its threads have spent runnable but waiting for a CPU (Linux
# schedstat), all in seconds; "-" for the last two off Linux. Over an
# attack, these give the cores the server had and how many more it
# wanted: a machine shared with the load generator and other jobs shows
# here, not in the server.
cpu() {
	local now
	now=$(date +%s.%N)
	if [[ -r /proc/$server/stat && -r /proc/$server/schedstat ]]; then
		awk -v now="$now" -v tck="$(getconf CLK_TCK)" '
			FILENAME ~ /stat$/ && FILENAME !~ /schedstat$/ { sub(/.*\) /, ""); cpu = ($12 + $13) / tck }
			FILENAME ~ /schedstat$/ { wait += $2 / 1e9 }
			END { printf "%s %.3f %.3f", now, cpu, wait }' "/proc/$server/stat" /proc/"$server"/task/*/schedstat
	else
		echo "$now - -"
	fi
}

# Each mode is a name and the flags of its server.
declare -A modeflags=(
	[default]=""
	[tight]="--max-reads $TIGHT --max-writes $TIGHT"
	[off]="--max-reads 1000000 --max-writes 1000000"
	[none]="--max-reads 1000000 --max-writes 1000000 --max-runnable 0"
)
# Saturation, on a server with the default bounds of its own.
if [[ -n "$SATWRITE" && -n "$SATREAD" ]]; then
	satwrite=$SATWRITE satread=$SATREAD
	echo "saturation given: $satwrite writes/s, $satread reads/s"
else
	start
	targets
	saturation write "$work/writes.jsonl"
	satwrite=$sat
	saturation read "$work/reads.jsonl"
	satread=$sat
	stop
fi

# Each mode on a fresh server holding the same data: the writes of
# PREFILL seconds at 16 workers, which the reads then read.
table=()
for mode in $MODES; do
	[[ -v "modeflags[$mode]" ]] || { echo "run.sh: unknown mode $mode (default, tight, off, none)" >&2; exit 2; }
	# shellcheck disable=SC2086
	start ${modeflags[$mode]}
	targets
	vegeta attack -format json -targets "$work/writes.jsonl" -rate 0 -workers 16 -max-workers 16 -duration "${PREFILL}s" >/dev/null
	for route in $ROUTES; do
		case $route in
		write) table+=("$(overload write "$work/writes.jsonl" $((FACTOR * satwrite)) "$mode")") ;;
		read) table+=("$(overload read "$work/reads.jsonl" $((FACTOR * satread)) "$mode")") ;;
		*) echo "run.sh: unknown route $route (write, read)" >&2; exit 2 ;;
		esac
	done
	stop
done

echo
echo "| route | admission | aimed req/s | sent req/s | 2xx req/s | shed (503) | other failures | 2xx p50 ms | 2xx p99 ms | 503 p99 ms | /healthz p99 ms | server cores used / waiting |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${table[@]}"
