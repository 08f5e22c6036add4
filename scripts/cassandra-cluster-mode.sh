#!/usr/bin/env bash
# cassandra-cluster-mode.sh puts the test cluster that
# `EBB_CASSANDRA_NODES=3 scripts/with-cassandra.sh` started (its directory
# in EBB_CQL_CLUSTER_DIR) in a mode, restarting its nodes when they run in
# the other one:
#
#   scripts/cassandra-cluster-mode.sh durable|fast|fresh
#
# durable (the mode the cluster starts in): every node flushes its schema
# tables at each schema change, as a deployment does, so a node that is
# SIGKILLed comes back knowing every table (the tests of
# store/cql/cqlcluster need it). fast: the nodes skip those flushes, as the
# lone test node does (measured in one run on a quiet moment: CREATE
# TABLE 0.8 to 1.0 s on a durable cluster, DROP 2 to 2.5 s, against 50 ms
# and 0.4 s on a lone node without the flushes). Nothing else
# differs: replication, consistency levels, Paxos and the commit log's
# periodic fsync are the same in both. fresh: the nodes are killed
# (SIGKILL), their data deleted, and started again empty in mode fast,
# always (the cluster keeps its addresses, ports and tokens): a cluster with
# no test keyspace on it, for a suite that leaves its keyspaces behind
# instead of dropping each (EBB_CQL_KEEP_KEYSPACES, see internal/testselect).
#
# The nodes are stopped with SIGTERM (Cassandra drains: it flushes every
# table before it exits; SIGKILL after EBB_CASSANDRA_STOP_TIMEOUT seconds,
# default 120) and started again with nI/start, which reads the mode from
# the file mode in the cluster's directory. The script returns once every
# node serves CQL and has seen every other node UP, and fails, printing the
# node's log, when one does not within EBB_CASSANDRA_START_TIMEOUT seconds
# (default 180).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

mode="${1:-}"
if [[ "$mode" != durable && "$mode" != fast && "$mode" != fresh ]]; then
	echo "usage: $0 durable|fast|fresh" >&2
	exit 2
fi
dir="${EBB_CQL_CLUSTER_DIR:-}"
if [[ -z "$dir" || ! -f "$dir/mode" ]]; then
	echo "cassandra-cluster-mode: EBB_CQL_CLUSTER_DIR=$dir does not hold a cluster of scripts/with-cassandra.sh" >&2
	exit 2
fi
if [[ "$(cat "$dir/mode")" == "$mode" ]]; then
	exit 0
fi
begin=$SECONDS

nodes=()
for d in "$dir"/n[0-9]*; do
	nodes+=("$d")
done

# yaml KEY D prints the value of KEY in node D's cassandra.yaml.
yaml() {
	sed -n "s/^$1: *//p" "$2/conf/cassandra.yaml"
}

stop_timeout="${EBB_CASSANDRA_STOP_TIMEOUT:-120}"
signal=TERM
# Data about to be deleted needs no drain.
[[ "$mode" == fresh ]] && signal=KILL
for d in "${nodes[@]}"; do
	p="$(cat "$d/pid")"
	kill -"$signal" "$p" 2>/dev/null || true
done
for d in "${nodes[@]}"; do
	p="$(cat "$d/pid")"
	start=$SECONDS
	while running "$p"; do
		if ((SECONDS - start >= stop_timeout)); then
			echo "cassandra-cluster-mode: $d did not stop within ${stop_timeout}s: killed" >&2
			kill -KILL "$p" 2>/dev/null || true
		fi
		sleep 0.1
	done
done

if [[ "$mode" == fresh ]]; then
	for d in "${nodes[@]}"; do
		rm -rf "$d/data"
		mkdir "$d/data"
	done
	mode=fast
	emptied=", empty"
fi
echo "$mode" >"$dir/mode"
# Each node's log grows: only what follows this offset is the new start.
declare -A offset
for d in "${nodes[@]}"; do
	offset[$d]=$(($(stat -c %s "$d/node.log" 2>/dev/null || echo 0) + 1))
	"$d/start"
done

timeout="${EBB_CASSANDRA_START_TIMEOUT:-180}"
start=$SECONDS
for d in "${nodes[@]}"; do
	addr="$(yaml listen_address "$d")"
	port="$(yaml native_transport_port "$d")"
	storage="$(yaml storage_port "$d")"
	pid="$(cat "$d/pid")"
	while :; do
		log="$(tail -c "+${offset[$d]}" "$d/node.log" 2>/dev/null || true)"
		ready=1
		grep -q 'Startup complete' <<<"$log" || ready=
		for o in "${nodes[@]}"; do
			[[ "$o" == "$d" || -z "$ready" ]] && continue
			grep -q "/$(yaml listen_address "$o"):$storage is now UP" <<<"$log" || ready=
		done
		if [[ -n "$ready" ]] && (exec 3<>"/dev/tcp/$addr/$port") 2>/dev/null; then
			break
		fi
		if ! running "$pid" || ((SECONDS - start >= timeout)); then
			echo "cassandra-cluster-mode: node $d did not serve CQL on $addr:$port, with every other node UP, within ${timeout}s:" >&2
			tail -c "+${offset[$d]}" "$d/node.log" >&2 || true
			exit 1
		fi
		sleep 0.2
	done
done
echo "cassandra-cluster-mode: the cluster runs $mode${emptied:-} (restarted in $((SECONDS - begin)) s)" >&2
