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
# EBB_CASSANDRA_HEAP (default 1g, at least 256m) sets the maximum heap;
# EBB_CASSANDRA_KEEP=1 keeps the data directory and log after the command,
# for a post-mortem.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$root/scripts/lib.sh"

if [[ $# -eq 0 ]]; then
	echo "usage: $0 command [args...]" >&2
	exit 2
fi

if [[ -n "${EBB_CQL_HOSTS:-}" ]]; then
	exec "$@"
fi

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
log="$dir/node.log"
pid=""
cleanup() {
	# The data is thrown away, so the node is killed rather than drained.
	if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	if [[ -n "${EBB_CASSANDRA_KEEP:-}" ]]; then
		echo "with-cassandra: kept $dir" >&2
	else
		rm -rf "$dir"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$dir/conf" "$dir/data" "$dir/logs"

# Only what differs from Cassandra's defaults, plus the settings a node
# cannot start without.
cat >"$dir/conf/cassandra.yaml" <<EOF
cluster_name: ebb-test
num_tokens: 1
initial_token: 0
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
listen_address: 127.0.0.1
rpc_address: 127.0.0.1
storage_port: $storage_port
native_transport_port: $cql_port
start_native_transport: true
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.1:$storage_port"
endpoint_snitch: SimpleSnitch
data_file_directories:
  - $dir/data/data
commitlog_directory: $dir/data/commitlog
saved_caches_directory: $dir/data/saved_caches
hints_directory: $dir/data/hints
cdc_raw_directory: $dir/data/cdc_raw
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
EOF

cat >"$dir/conf/logback.xml" <<EOF
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>$log</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.cassandra" level="INFO"/>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
EOF

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
	# The node and its files.
	-Dcassandra-foreground=yes
	"-Dcassandra.config=file://$dir/conf/cassandra.yaml"
	"-Dlogback.configurationFile=$dir/conf/logback.xml"
	"-Dcassandra.logdir=$dir/logs"
	"-Dcassandra.storagedir=$dir/data"
	"-Dcassandra.triggers_dir=$dir/conf/triggers"
	# Fast start of a lone node: nothing to wait for from a ring.
	-Dcassandra.skip_wait_for_gossip_to_settle=0
	-Dcassandra.ring_delay_ms=100
	-Dcassandra.schema_delay_ms=100
	# Throw-away data: skip fsync and the flushes of the node's own schema
	# tables, which make every CREATE and DROP TABLE slow.
	-Dcassandra.skip_sync=true
	-Dcassandra.unsafesystem=true
	-Dcassandra.test.flush_local_schema_changes=false
)
mkdir -p "$dir/conf/triggers"

java "${jvm[@]}" -cp "$lib/*" org.apache.cassandra.service.CassandraDaemon >"$dir/logs/stdout.log" 2>&1 &
pid=$!

hosts="127.0.0.1:$cql_port"
timeout="${EBB_CASSANDRA_START_TIMEOUT:-180}"
start=$SECONDS
started_ms=$(date +%s%3N)
ready=""
if defer_wait "with-cassandra: Cassandra" "$pid" "$cql_port" "$timeout" "$log:$dir/logs/stdout.log" \
	'Starting listening for CQL clients' 'Startup complete'; then
	ready=deferred
fi
while [[ -z "$ready" ]] && ((SECONDS - start < timeout)); do
	if ! kill -0 "$pid" 2>/dev/null; then
		break
	fi
	# Serving means both: the node logs that its native transport listens
	# and that start-up is complete, and a connection to the port is
	# accepted.
	if grep -q 'Starting listening for CQL clients' "$log" 2>/dev/null &&
		grep -q 'Startup complete' "$log" 2>/dev/null &&
		(exec 3<>"/dev/tcp/127.0.0.1/$cql_port") 2>/dev/null; then
		ready=1
		break
	fi
	sleep 0.2
done
if [[ -z "$ready" ]]; then
	if kill -0 "$pid" 2>/dev/null; then
		echo "with-cassandra: Cassandra did not serve CQL on $hosts within ${timeout}s:" >&2
	else
		code=0
		wait "$pid" || code=$?
		echo "with-cassandra: Cassandra exited (status $code) before serving CQL on $hosts:" >&2
	fi
	cat "$log" "$dir/logs/stdout.log" >&2 2>/dev/null || true
	exit 1
fi

if [[ "$ready" == deferred ]]; then
	echo "with-cassandra: Cassandra starting on $hosts" >&2
else
	ms=$(($(date +%s%3N) - started_ms))
	echo "with-cassandra: Cassandra on $hosts (started in $((ms / 1000)).$(printf %03d $((ms % 1000)))s)" >&2
fi
export EBB_CQL_HOSTS="$hosts"
status=0
"$@" || status=$?
exit "$status"
