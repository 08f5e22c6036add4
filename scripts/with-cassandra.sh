#!/usr/bin/env bash
# with-cassandra.sh runs a command with EBB_CQL_HOSTS pointing at a CQL
# endpoint (Apache Cassandra, ScyllaDB or Amazon Keyspaces).
#
#   scripts/with-cassandra.sh go test -race ./store/cql/
#
# When EBB_CQL_HOSTS is already set, the command runs against those hosts as
# is. Otherwise the Apache Cassandra pinned in tools/cassandra/pom.xml is
# installed when missing (its jars are copied into tools/cassandra/lib by
# Maven), a single node is started on free loopback ports with its data in
# a fresh temporary directory, and the node is stopped and that directory
# deleted when the command ends. The script exits with the command's status,
# and fails (never skips), printing the node's log, when the node does not
# serve CQL within EBB_CASSANDRA_START_TIMEOUT seconds (default 180).
# With EBB_TEST_SERVERS_PENDING set (make test), the wait is left to
# scripts/await-test-servers.sh (see scripts/lib.sh).
#
# The node is a throw-away test node, tuned to start fast and stay small:
# one token, no gossip settling, no fsync, no flush of its own schema
# tables, a 1 GiB heap, serial GC and the C1 compiler only, no JMX,
# user-defined functions and materialized views off. Everything else
# (auto_snapshot on DROP TABLE, batch size limits, tombstone thresholds,
# gc_grace_seconds, the 2038 expiry limit of storage_compatibility_mode
# CASSANDRA_4) keeps the defaults of Cassandra 5.0's own cassandra.yaml, so
# the tests see what a stock node does. On a 2-core machine the node serves
# CQL about 2.5 s after it is started, and holds about 660 MB.
#
# EBB_CASSANDRA_NODES=N (1 to 9; default 1) starts a cluster of N nodes
# instead, on 127.0.0.1 to 127.0.0.N (Linux routes all of 127/8 to the
# loopback interface, so they share the port numbers), every one a seed
# with one token of an even split. A cluster's nodes are not throw-away
# nodes: they fsync the commit log every 10 s (commitlog_sync: periodic,
# Cassandra's default) and flush their schema tables, as a deployment
# does, since its tests SIGKILL nodes. The script waits until each serves
# CQL and has seen every other node UP, then runs the command with
# EBB_CQL_CLUSTER_HOSTS (the N host:port contact points, node 1 first) and
# EBB_CQL_CLUSTER_DIR (node I's files are in nI: its pid in nI/pid, and
# nI/start starts it again after a test killed it; the file mode says
# whether the nodes run "durable", as described here, or "fast", without
# the schema flushes, see scripts/cassandra-cluster-mode.sh); EBB_CQL_HOSTS
# is left as it is. With EBB_CQL_CLUSTER_HOSTS already set, the command runs
# against that cluster as is.
#
# EBB_CASSANDRA_HEAP (default 1g, for a lone node and for each node of a
# cluster; at least 256m) sets the maximum heap; EBB_CASSANDRA_KEEP=1
# keeps the data directory and log after the command, for a post-mortem.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$root/scripts/lib.sh"

if [[ $# -eq 0 ]]; then
	echo "usage: $0 command [args...]" >&2
	exit 2
fi

nodes="${EBB_CASSANDRA_NODES:-1}"
if ! [[ "$nodes" =~ ^[1-9]$ ]]; then
	echo "with-cassandra: EBB_CASSANDRA_NODES=$nodes: want 1 to 9" >&2
	exit 2
fi
if ((nodes == 1)) && [[ -n "${EBB_CQL_HOSTS:-}" ]]; then
	exec "$@"
fi
if ((nodes > 1)) && [[ -n "${EBB_CQL_CLUSTER_HOSTS:-}" ]]; then
	exec "$@"
fi
# The command may run this script again for a lone node (make test).
unset EBB_CASSANDRA_NODES

tooldir="$root/tools/cassandra"
lib="$tooldir/lib"

if ! command -v java >/dev/null 2>&1; then
	echo "with-cassandra: java (17) is required to run Cassandra" >&2
	exit 1
fi

# The jars are installed once per version of pom.xml: the stamp holds the
# pom's checksum, so bumping the pinned version reinstalls on next use.
stamp="$(cksum <"$tooldir/pom.xml" | cut -d' ' -f1)"
install_cassandra() {
	if [[ -f "$lib/.installed" && "$(cat "$lib/.installed")" == "$stamp" ]]; then
		return
	fi
	if ! command -v mvn >/dev/null 2>&1; then
		echo "with-cassandra: mvn is required to install Cassandra (tools/cassandra)" >&2
		exit 1
	fi
	echo "with-cassandra: installing Cassandra (mvn dependency:copy-dependencies in tools/cassandra)" >&2
	local tmp="$tooldir/lib.tmp.$$"
	rm -rf "$tmp"
	local out
	if ! out="$(mvn -q -B -Dstyle.color=never -f "$tooldir/pom.xml" dependency:copy-dependencies -Dcassandra.lib="$tmp" 2>&1)"; then
		rm -rf "$tmp"
		echo "$out" >&2
		echo "with-cassandra: mvn could not fetch the Cassandra jars" >&2
		exit 1
	fi
	echo "$stamp" >"$tmp/.installed"
	rm -rf "$lib"
	mv "$tmp" "$lib"
}
# Two runs installing at once would step on each other's lib/: the first
# installs under a lock, the second then finds the stamp.
if command -v flock >/dev/null 2>&1; then
	exec 9>"$tooldir/lib.lock"
	flock 9
	install_cassandra
	flock -u 9
	exec 9>&-
else
	install_cassandra
fi


cql_port="$(free_port)"
storage_port="$(free_port)"
while [[ "$storage_port" == "$cql_port" ]]; do
	storage_port="$(free_port)"
done

dir="$(mktemp -d -t cassandra.XXXXXX)"
cleanup() {
	# The data is thrown away, so the nodes are killed rather than drained.
	# A node restarted by a test is known by its pid file only.
	local f p pids=()
	for f in "$dir"/pid "$dir"/n*/pid; do
		[[ -f "$f" ]] || continue
		p="$(cat "$f")"
		[[ -n "$p" ]] && kill -KILL "$p" 2>/dev/null && pids+=("$p")
	done
	# Not children of this shell (see write_node): wait for every one to
	# be gone before their files are removed.
	for p in "${pids[@]}"; do
		while running "$p"; do sleep 0.02; done
	done
	if [[ -n "${EBB_CASSANDRA_KEEP:-}" ]]; then
		echo "with-cassandra: kept $dir" >&2
	else
		rm -rf "$dir"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A cluster's nodes get the lone node's 1 GiB too: with 512 MiB each, a
# node under the feature suites' schema changes filled its old generation
# and ran a full collection of 1 to 1.4 s every half minute or so, during
# which its peers' schema pushes and pulls timed out.
heap="${EBB_CASSANDRA_HEAP:-1g}"
jvm=(
	# Heap: small, grown on demand. Serial GC and the C1 compiler alone cost
	# least on a shared 2-core machine: C2's compile threads would compete
	# with the tests for the cores, and a test node never runs long enough
	# to repay them.
	-Xms256m "-Xmx$heap" -Xss256k -XX:+UseSerialGC -XX:TieredStopAtLevel=1
	-XX:+UseThreadPriorities -XX:+PerfDisableSharedMem
	-XX:+ExitOnOutOfMemoryError
	-Djava.net.preferIPv4Stack=true
	"-javaagent:$(echo "$lib"/jamm-*.jar)"
	-ea -da:net.openhft...
	# Java 17 module access, as in Cassandra's conf/jvm17-server.options.
	-Djdk.attach.allowAttachSelf=true
	--add-exports java.base/jdk.internal.misc=ALL-UNNAMED
	--add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
	--add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
	--add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
	--add-exports java.sql/java.sql=ALL-UNNAMED
	--add-exports java.base/java.lang.ref=ALL-UNNAMED
	--add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
	--add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
	--add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED
	--add-opens java.base/java.lang.module=ALL-UNNAMED
	--add-opens java.base/jdk.internal.loader=ALL-UNNAMED
	--add-opens java.base/jdk.internal.ref=ALL-UNNAMED
	--add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
	--add-opens java.base/jdk.internal.math=ALL-UNNAMED
	--add-opens java.base/jdk.internal.module=ALL-UNNAMED
	--add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
	--add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
	--add-opens java.base/sun.nio.ch=ALL-UNNAMED
	--add-opens java.base/java.io=ALL-UNNAMED
	--add-opens java.base/java.lang.reflect=ALL-UNNAMED
	--add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED
	--add-opens java.base/java.lang=ALL-UNNAMED
	--add-opens java.base/java.util=ALL-UNNAMED
	-Dio.netty.tryReflectionSetAccessible=true
	-Dio.netty.allocator.useCacheForAllThreads=true
	-Dio.netty.allocator.maxOrder=11
	# Fast start: nothing to wait for from a ring (a cluster's nodes are
	# all seeds, and own their tokens from the start).
	-Dcassandra-foreground=yes
	-Dcassandra.skip_wait_for_gossip_to_settle=0
	-Dcassandra.ring_delay_ms=100
	-Dcassandra.schema_delay_ms=100
)
# fast_schema skips the flushes of the node's own schema and system
# tables at every schema change, which make each CREATE and DROP TABLE
# slow: about 50 ms on a lone node without them, 0.8 to 2.5 s on each of
# three nodes with them.
fast_schema=(-Dcassandra.unsafesystem=true -Dcassandra.test.flush_local_schema_changes=false)
if ((nodes == 1)); then
	jvm+=(
		# Throw-away data: skip fsync and the schema flushes.
		# A cluster's nodes keep both: its tests SIGKILL nodes, and a node
		# restarted without its schema flushed loads the schema from its
		# sstables before replaying the commit log, so it would not know
		# the tables created since (measured: "keyspace does not exist"
		# from a node that agreed on the schema version). The suites that
		# kill no node may put the cluster in mode "fast", without the
		# schema flushes (scripts/cassandra-cluster-mode.sh).
		-Dcassandra.skip_sync=true
		"${fast_schema[@]}"
	)
fi

# The nodes' addresses, 127.0.0.1 up: Linux routes all of 127/8 to the
# loopback interface, so each node listens on the same ports at its own
# address. Every node is a seed, so that they may all start at once.
addrs=()
seeds=()
for ((i = 1; i <= nodes; i++)); do
	addrs+=("127.0.0.$i")
	seeds+=("127.0.0.$i:$storage_port")
done
seedlist="$(IFS=,; echo "${seeds[*]}")"

# node_dir I is node I's directory: the temporary directory itself for a
# lone node (as before clusters existed), n<I> in it for a cluster's.
node_dir() {
	if ((nodes == 1)); then echo "$dir"; else echo "$dir/n$1"; fi
}

# write_node I writes node I's configuration and its start script, which
# starts the node in the background and records its pid in the pid file
# beside it. Tests of a cluster run the script again to restart a node
# they killed.
write_node() {
	local i=$1 d addr token
	d="$(node_dir "$i")"
	addr="${addrs[$((i - 1))]}"
	# One token per node, spread evenly over Murmur3's range.
	token=$((-9223372036854775807 - 1 + (i - 1) * (9223372036854775807 / nodes * 2)))
	mkdir -p "$d/conf/triggers" "$d/data" "$d/logs"
	# Only what differs from Cassandra's defaults, plus the settings a
	# node cannot start without. commitlog_sync is the default's: periodic,
	# every 10 s (a lone test node skips the fsync itself, see jvm above).
	cat >"$d/conf/cassandra.yaml" <<YAML
cluster_name: ebb-test
num_tokens: 1
initial_token: $token
auto_bootstrap: false
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
listen_address: $addr
rpc_address: $addr
storage_port: $storage_port
native_transport_port: $cql_port
start_native_transport: true
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "$seedlist"
endpoint_snitch: SimpleSnitch
data_file_directories:
  - $d/data/data
commitlog_directory: $d/data/commitlog
saved_caches_directory: $d/data/saved_caches
hints_directory: $d/data/hints
cdc_raw_directory: $d/data/cdc_raw
commitlog_sync: periodic
commitlog_sync_period: 10000ms
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
user_defined_functions_enabled: false
materialized_views_enabled: false
concurrent_compactors: 1
# As in the cassandra.yaml shipped with 5.0: sstables readable by 4.x, and
# expiry times capped at 2038-01-19 (a later one is refused).
storage_compatibility_mode: CASSANDRA_4
YAML
	cat >"$d/conf/logback.xml" <<XML
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>$d/node.log</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.cassandra" level="INFO"/>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
XML
	local args=(
		"${jvm[@]}"
		"-Dcassandra.config=file://$d/conf/cassandra.yaml"
		"-Dlogback.configurationFile=$d/conf/logback.xml"
		"-Dcassandra.logdir=$d/logs"
		"-Dcassandra.storagedir=$d/data"
		"-Dcassandra.triggers_dir=$d/conf/triggers"
	)
	{
		echo '#!/usr/bin/env bash'
		echo "# Starts Cassandra node $i ($addr) in the background; its pid goes to pid."
		if ((nodes > 1)); then
			# A cluster in mode "fast" (scripts/cassandra-cluster-mode.sh)
			# skips its schema flushes, as a lone node does.
			echo 'fast=()'
			printf 'if [[ "$(cat %q 2>/dev/null)" == fast ]]; then\n' "$dir/mode"
			printf '\tfast=(%s)\n' "${fast_schema[*]}"
			echo 'fi'
		fi
		printf 'java'
		printf ' %q' "${args[@]}"
		((nodes > 1)) && printf ' "${fast[@]}"'
		printf ' %q' -cp "$lib/*" org.apache.cassandra.service.CassandraDaemon
		printf ' >>%q 2>&1 </dev/null &\n' "$d/logs/stdout.log"
		printf 'echo $! >%q\n' "$d/pid"
	} >"$d/start"
	chmod +x "$d/start"
}

((nodes > 1)) && echo durable >"$dir/mode"
for ((i = 1; i <= nodes; i++)); do
	write_node "$i"
	"$(node_dir "$i")/start"
done

hosts=()
for addr in "${addrs[@]}"; do
	hosts+=("$addr:$cql_port")
done
hostlist="$(IFS=,; echo "${hosts[*]}")"
timeout="${EBB_CASSANDRA_START_TIMEOUT:-180}"
start=$SECONDS
started_ms=$(date +%s%3N)

# node_ready I says whether node I serves: it logs that its native
# transport listens and that start-up is complete, a connection to its
# port is accepted, and, in a cluster, it has seen every other node UP.
node_ready() {
	local i=$1 d addr other
	d="$(node_dir "$i")"
	addr="${addrs[$((i - 1))]}"
	grep -q 'Starting listening for CQL clients' "$d/node.log" 2>/dev/null &&
		grep -q 'Startup complete' "$d/node.log" 2>/dev/null &&
		(exec 3<>"/dev/tcp/$addr/$cql_port") 2>/dev/null || return 1
	for other in "${addrs[@]}"; do
		[[ "$other" == "$addr" ]] && continue
		grep -q "/$other:$storage_port is now UP" "$d/node.log" 2>/dev/null || return 1
	done
}

# fail_node I WHY prints why node I did not serve, with its log, and fails
# the script.
fail_node() {
	local i=$1 d
	d="$(node_dir "$i")"
	echo "with-cassandra: Cassandra node $i $2:" >&2
	cat "$d/node.log" "$d/logs/stdout.log" >&2 2>/dev/null || true
	exit 1
}

deferred=""
if ((nodes == 1)) && defer_wait "with-cassandra: Cassandra" "$(cat "$dir/pid")" "$cql_port" "$timeout" \
	"$dir/node.log:$dir/logs/stdout.log" 'Starting listening for CQL clients' 'Startup complete'; then
	deferred=1
fi
if ((nodes > 1)) && [[ -n "${EBB_TEST_SERVERS_PENDING:-}" ]]; then
	# The cluster's nodes are awaited like a lone node, each by its log;
	# the tests of a cluster wait for every node UP and one schema version
	# themselves before each test (store/cql/cqlcluster).
	for ((i = 1; i <= nodes; i++)); do
		d="$(node_dir "$i")"
		defer_wait "with-cassandra: Cassandra node $i" "$(cat "$d/pid")" "$cql_port" "$timeout" \
			"$d/node.log:$d/logs/stdout.log" 'Starting listening for CQL clients' 'Startup complete'
	done
	deferred=1
fi
for ((i = 1; i <= nodes && !deferred; i++)); do
	pid="$(cat "$(node_dir "$i")/pid")"
	until node_ready "$i"; do
		if ! running "$pid"; then
			fail_node "$i" "exited before serving CQL on ${hosts[$((i - 1))]}"
		fi
		if ((SECONDS - start >= timeout)); then
			fail_node "$i" "did not serve CQL on ${hosts[$((i - 1))]}, with every other node UP, within ${timeout}s"
		fi
		sleep 0.2
	done
done

what="Cassandra"
((nodes > 1)) && what="a Cassandra cluster of $nodes nodes"
if [[ -n "$deferred" ]]; then
	echo "with-cassandra: $what starting on $hostlist" >&2
else
	ms=$(($(date +%s%3N) - started_ms))
	echo "with-cassandra: $what on $hostlist (started in $((ms / 1000)).$(printf %03d $((ms % 1000)))s)" >&2
fi
if ((nodes == 1)); then
	export EBB_CQL_HOSTS="$hostlist"
else
	export EBB_CQL_CLUSTER_HOSTS="$hostlist" EBB_CQL_CLUSTER_DIR="$dir"
fi
status=0
"$@" || status=$?
exit "$status"
